-- Coupon pools: codes, idempotency keys, counters and the outbox.
-- Counters live on the pool row and move in the same transaction as the codes they count
-- (SQLite has one writer at a time, so the row is never contended by concurrent writers).

CREATE TABLE dibs_pools (
  id                  INTEGER PRIMARY KEY,
  name                TEXT    NOT NULL UNIQUE,
  per_claimant_limit  INTEGER NOT NULL CHECK (per_claimant_limit >= 1),
  low_stock_threshold INTEGER CHECK (low_stock_threshold >= 0),
  metadata            TEXT    NOT NULL DEFAULT '{}',
  created_at          TEXT    NOT NULL,
  total               INTEGER NOT NULL DEFAULT 0,
  free                INTEGER NOT NULL DEFAULT 0 CHECK (free >= 0),
  claimed             INTEGER NOT NULL DEFAULT 0 CHECK (claimed >= 0),
  redeemed            INTEGER NOT NULL DEFAULT 0 CHECK (redeemed >= 0),
  revoked             INTEGER NOT NULL DEFAULT 0 CHECK (revoked >= 0),
  -- 1 while free is above the threshold; the claim that takes free to/below it fires the
  -- low-stock event and clears it; an import or release that lifts free above re-arms it.
  low_stock_armed     INTEGER NOT NULL DEFAULT 1,
  low_stock_events    INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE dibs_codes (
  id          INTEGER PRIMARY KEY,  -- import order: free codes are handed out oldest first
  pool_id     INTEGER NOT NULL REFERENCES dibs_pools (id) ON DELETE CASCADE,
  code        TEXT    NOT NULL,
  status      TEXT    NOT NULL DEFAULT 'free' CHECK (status IN ('free', 'claimed', 'redeemed', 'revoked')),
  claimant    TEXT,
  claim_key   TEXT,
  claimed_at  TEXT,
  redeemed_at TEXT,
  UNIQUE (pool_id, code),
  -- I1 by construction: a code has a holder exactly when it is claimed or redeemed.
  CHECK ((claimant IS NOT NULL) = (status IN ('claimed', 'redeemed')))
) STRICT;

CREATE INDEX dibs_codes_free ON dibs_codes (pool_id, id) WHERE status = 'free';
CREATE INDEX dibs_codes_claimant ON dibs_codes (pool_id, claimant) WHERE claimant IS NOT NULL;
CREATE INDEX dibs_codes_claim_key ON dibs_codes (pool_id, claim_key) WHERE claim_key IS NOT NULL;

CREATE TABLE dibs_claim_keys (
  pool_id    INTEGER NOT NULL REFERENCES dibs_pools (id) ON DELETE CASCADE,
  key        TEXT    NOT NULL,
  claimant   TEXT    NOT NULL,
  count      INTEGER NOT NULL,
  created_at TEXT    NOT NULL,
  PRIMARY KEY (pool_id, key)
) STRICT, WITHOUT ROWID;

CREATE TABLE dibs_outbox (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  type            TEXT NOT NULL,
  idempotency_key TEXT NOT NULL UNIQUE,
  pool            TEXT,
  payload         TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  delivered_at    TEXT
) STRICT;

CREATE INDEX dibs_outbox_pool ON dibs_outbox (pool, id);
