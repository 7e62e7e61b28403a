-- name: claimFast
-- The common claim — one code, no idempotency key, a pool with perClaimantLimit 1 and no low-stock
-- threshold, no validity window — as a statement nearly as cheap as a bare SKIP LOCKED update. It answers only the
-- happy path and leaves every other case to claim.sql, which the caller runs next:
--   - no row: no such pool, the pool has other rules (limit > 1, a threshold, a window), or this snapshot saw
--     no unlocked free code (claim.sql then tells sold out from busy);
--   - 23505 on codes_holder_slot: the claimant already holds its one code (claim.sql answers
--     already-held); nothing was changed because the statement failed as a whole.
-- Params: $1 pool name  $2 claimant  $3 random start in [0,1)  $4 random in [0,1): counter shard
WITH p AS (
  SELECT id, counter_shards FROM pools
  WHERE name = $1 AND per_claimant_limit = 1 AND low_stock_threshold IS NULL
    AND starts_at IS NULL AND expires_at IS NULL
),
picked AS (
  SELECT coalesce(
    (SELECT c.id FROM codes c
     WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.rnd >= $3::float8
     ORDER BY c.rnd LIMIT 1 FOR UPDATE SKIP LOCKED),
    (SELECT c.id FROM codes c
     WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.rnd < $3::float8
     ORDER BY c.rnd LIMIT 1 FOR UPDATE SKIP LOCKED)
  ) AS id
),
taken AS (
  UPDATE codes c
  SET status = 'claimed', claimant = $2, slot = 1, claim_key = NULL, claimed_at = now()
  FROM picked
  WHERE c.id = picked.id
  RETURNING c.code
),
counted AS (
  UPDATE pool_counters pc SET free = pc.free - 1, claimed = pc.claimed + 1
  FROM p
  WHERE EXISTS (SELECT 1 FROM taken) AND pc.pool_id = p.id AND pc.shard = floor($4::float8 * p.counter_shards)::int
  RETURNING 1
)
SELECT t.code, (SELECT count(*) FROM counted)::int AS counted FROM taken t;
