-- name: claimFast
-- The common claim — one code, a pool with perClaimantLimit 1 and no low-stock threshold, no
-- validity window, with or without an idempotency key — as a statement nearly as cheap as a bare
-- SKIP LOCKED update. It answers only the happy path and leaves every other case to claim.sql,
-- which the caller runs next; nothing is changed when it does not answer, because the statement
-- succeeds or fails as a whole:
--   - no row: no such pool, the pool has other rules (limit > 1, a threshold, a window), this snapshot saw
--     no unlocked free code (claim.sql then tells sold out from busy), or the pool's rules changed
--     while it ran (see claim.sql: the counter shard moves first, under the rules read);
--   - 23505 on codes_holder_slot: the claimant already holds its one code (claim.sql answers
--     already-held);
--   - 23505 on claim_keys' primary key: the key was used before (claim.sql replays it, or tells a
--     conflict, or forgets a spent key) — a key is recorded only together with the code it took,
--     exactly as claim.sql records it.
-- Params: $1 pool name  $2 claimant  $3 random start in [0,1)
--   $4 the connection's slot (connection.ts): the counter shard is $4 mod the pool's shard count, so
--      claims in flight on different connections of one process never share a counter row
--   $5 idempotency key or null
WITH p AS (
  SELECT id, counter_shards, rules_version,
    -- parked codes that are due come back, expired ones leave the free index (a bounded batch; 013),
    -- in pools that have ever had such codes (026)
    CASE WHEN EXISTS (SELECT 1 FROM pools_never_parked n WHERE n.pool_id = pools.id) THEN 0 ELSE unpark_due(id) END AS unparked
  FROM pools
  WHERE name = $1 AND per_claimant_limit = 1 AND low_stock_threshold IS NULL
    AND starts_at IS NULL AND expires_at IS NULL
),
picked AS (
  SELECT coalesce(
    (SELECT c.id FROM codes c
     WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd >= $3::float8
     ORDER BY c.rnd LIMIT 1 FOR UPDATE SKIP LOCKED),
    (SELECT c.id FROM codes c
     WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd < $3::float8
     ORDER BY c.rnd LIMIT 1 FOR UPDATE SKIP LOCKED)
  ) AS id
),
counted AS (
  -- first, and only under the rules p read (see claim.sql); the code is written only after it, so
  -- a rule change under this statement leaves no row (claim.sql then runs under the new rules)
  UPDATE pool_counters pc SET free = pc.free - 1, claimed = pc.claimed + 1
  FROM p
  WHERE EXISTS (SELECT 1 FROM picked WHERE picked.id IS NOT NULL) AND pc.pool_id = p.id AND pc.shard = $4::int % p.counter_shards
    AND pc.rules_version = p.rules_version
  RETURNING 1
),
taken AS (
  UPDATE codes c
  SET status = 'claimed', claimant = $2, slot = 1, claim_key = $5::text, claimed_at = now(),
      -- a lapsed checkout hold ends here (claims skip live ones), as every other state change ends one
      hold_claimant = NULL, hold_until = NULL
  FROM picked
  WHERE c.id = picked.id AND EXISTS (SELECT 1 FROM counted)
  RETURNING c.code
),
key_row AS (
  INSERT INTO claim_keys (pool_id, key, claimant, count)
  SELECT p.id, $5::text, $2, 1 FROM p
  WHERE $5::text IS NOT NULL AND EXISTS (SELECT 1 FROM taken)
)
SELECT t.code FROM taken t;
