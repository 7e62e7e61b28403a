-- The HTTP service's own state: API keys (hashed, never the key itself) and
-- idempotency records of mutating requests. Number 004 is reserved for this (002/003 are sales
-- and locks, landing separately).

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  tenant text NOT NULL,
  name text NOT NULL,
  scopes text[] NOT NULL,
  hash text NOT NULL,              -- sha256 hex of the whole key
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

-- One row per (scope, key): `response` is NULL while the first request is in flight.
CREATE TABLE idempotency_records (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  response jsonb,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);

-- Per-API-key rate-limit windows shared by every service instance (fixed window).
CREATE TABLE rate_limits (
  key text PRIMARY KEY,
  count bigint NOT NULL,
  reset_at timestamptz NOT NULL
);
