-- The rest of the coupon lifecycle, every rule judged by the server's clock (now())
-- inside the statement or transaction that changes the code:
-- - checkout holds: a code held by hold_claimant until hold_until. A hold whose time has passed is
--   ignored by every step (lazy expiry); claims skip codes with a live hold; redeem by the hold's
--   claimant consumes it; release, revoke and redeem clear it;
-- - a code's own validity window (starts_at inclusive, expires_at exclusive), combined with the
--   pool's: claims skip a code outside it, redeems and holds refuse it;
-- - multi-use codes (one code, N uses) in their own table, so claims never hand one out and the
--   single-use counters stay as they are; each use is one row keyed by its order. A redeem locks
--   the code's row (FOR UPDATE), so concurrent uses count one after the other.
ALTER TABLE codes
  ADD COLUMN hold_claimant text,
  ADD COLUMN hold_until timestamptz,
  ADD COLUMN starts_at timestamptz,
  ADD COLUMN expires_at timestamptz;

-- Whether a free code may be handed out now: no live hold, inside its own window. One rule for
-- claim.sql, claim-group.sql and claim-fast.sql (inlined by the planner: a SQL function).
CREATE FUNCTION code_open(p_hold_until timestamptz, p_starts timestamptz, p_expires timestamptz) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT (p_hold_until IS NULL OR p_hold_until <= now())
     AND (p_starts IS NULL OR p_starts <= now())
     AND (p_expires IS NULL OR p_expires > now())
$$;

CREATE TABLE multi_codes (
  pool_id      bigint  NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
  code         text    NOT NULL,
  max_uses     integer NOT NULL CHECK (max_uses >= 1),
  per_claimant integer CHECK (per_claimant >= 1),
  uses         integer NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
  starts_at    timestamptz,
  expires_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pool_id, code)
);

CREATE TABLE code_uses (
  pool_id  bigint NOT NULL,
  code     text   NOT NULL,
  -- one use per order: a retried checkout finds its use instead of taking a second one
  order_id text   NOT NULL,
  claimant text,
  used_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pool_id, code, order_id),
  FOREIGN KEY (pool_id, code) REFERENCES multi_codes (pool_id, code) ON DELETE CASCADE
);

CREATE INDEX code_uses_claimant ON code_uses (pool_id, code, claimant) WHERE claimant IS NOT NULL;
