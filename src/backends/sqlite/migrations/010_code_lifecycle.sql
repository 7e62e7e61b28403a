-- The rest of the coupon lifecycle, every rule judged by SQLite's clock inside the
-- step that changes the code (BEGIN IMMEDIATE):
-- - checkout holds: a code held by hold_claimant until hold_until (ISO 8601 UTC). A hold whose
--   time has passed is ignored by every step (lazy expiry); claims skip codes with a live hold;
--   redeem by the hold's claimant consumes it; release, revoke and redeem clear it;
-- - a code's own validity window (starts_at inclusive, expires_at exclusive), combined with the
--   pool's: claims skip a code outside it, redeems and holds refuse it;
-- - multi-use codes (one code, N uses): their own table, so a claim never hands one out and the
--   single-use counters and invariants stay as they are; each use is one row keyed by its order.
ALTER TABLE dibs_codes ADD COLUMN hold_claimant TEXT;
ALTER TABLE dibs_codes ADD COLUMN hold_until TEXT;
ALTER TABLE dibs_codes ADD COLUMN starts_at TEXT;
ALTER TABLE dibs_codes ADD COLUMN expires_at TEXT;

CREATE TABLE dibs_multi_codes (
  pool_id      INTEGER NOT NULL REFERENCES dibs_pools (id) ON DELETE CASCADE,
  code         TEXT    NOT NULL,
  max_uses     INTEGER NOT NULL CHECK (max_uses >= 1),
  per_claimant INTEGER CHECK (per_claimant >= 1),
  -- the uses recorded (rows of dibs_code_uses), moved in the same step; never above max_uses
  uses         INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
  starts_at    TEXT,
  expires_at   TEXT,
  created_at   TEXT    NOT NULL,
  PRIMARY KEY (pool_id, code)
) STRICT, WITHOUT ROWID;

CREATE TABLE dibs_code_uses (
  pool_id  INTEGER NOT NULL REFERENCES dibs_pools (id) ON DELETE CASCADE,
  code     TEXT    NOT NULL,
  -- one use per order: a retried checkout finds its use instead of taking a second one
  order_id TEXT    NOT NULL,
  claimant TEXT,
  used_at  TEXT    NOT NULL,
  PRIMARY KEY (pool_id, code, order_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX dibs_code_uses_claimant ON dibs_code_uses (pool_id, code, claimant) WHERE claimant IS NOT NULL;
