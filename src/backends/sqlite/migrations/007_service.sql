-- The HTTP service's own state: API keys (hashed, never the key itself) and
-- idempotency records of mutating requests. Times are Unix milliseconds from SQLite's clock.

CREATE TABLE dibs_api_keys (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,          -- JSON array of scope strings
  hash TEXT NOT NULL,            -- sha256 hex of the whole key
  created_at TEXT NOT NULL,
  revoked_at TEXT
) STRICT;
CREATE INDEX dibs_api_keys_tenant ON dibs_api_keys (tenant, created_at);

-- One row per (scope, key): `response` is NULL while the first request is in flight.
CREATE TABLE dibs_idempotency (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  response TEXT,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX dibs_idempotency_expiry ON dibs_idempotency (expires_ms);
