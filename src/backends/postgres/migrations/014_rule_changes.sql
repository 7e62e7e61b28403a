-- Rule changes that claims cannot slip past (I2, I8).
--
-- 1. rules_version, on a pool and on each of its counter shards, always equal once committed.
--    updatePool raises both in its transaction (the shards first, waiting for every claim that has
--    already moved a shard to commit, and holding them until it commits). A claim moves its shard
--    only where the shard's version is still the one it read with the pool's rules; an UPDATE that
--    finds the row changed since its snapshot re-checks that condition on the newest row, so a
--    claim that judged the old rules and reaches its shard after the change takes nothing and runs
--    again under the new rules. A claim therefore commits wholly under the old rules (before the
--    change, which then sees its codes) or wholly under the new ones — with no lock on the pool
--    row, which would make it a hot row for every claim again.
-- 2. A claimant's slots stay within 1..perClaimantLimit. The limit may be lowered to what a
--    claimant holds, but a holding could sit in a slot above the new limit with a lower slot free,
--    and a claim would then fill the lower slot: one code too many with no concurrency at all.
--    updatePool now moves such holdings down into free slots when it lowers the limit; this
--    migration does it once for pools lowered before.
ALTER TABLE pools ADD COLUMN rules_version bigint NOT NULL DEFAULT 0;
ALTER TABLE pool_counters ADD COLUMN rules_version bigint NOT NULL DEFAULT 0;

WITH high AS (
  SELECT c.id, c.pool_id, c.claimant, row_number() OVER (PARTITION BY c.pool_id, c.claimant ORDER BY c.slot) AS k
  FROM codes c JOIN pools p ON p.id = c.pool_id
  WHERE c.claimant IS NOT NULL AND c.slot > p.per_claimant_limit
),
free_slots AS (
  SELECT h.pool_id, h.claimant, s.slot, row_number() OVER (PARTITION BY h.pool_id, h.claimant ORDER BY s.slot) AS k
  FROM (SELECT DISTINCT pool_id, claimant FROM high) h
  JOIN pools p ON p.id = h.pool_id, generate_series(1, p.per_claimant_limit) AS s(slot)
  WHERE NOT EXISTS (SELECT 1 FROM codes c WHERE c.pool_id = h.pool_id AND c.claimant = h.claimant AND c.slot = s.slot)
)
UPDATE codes c SET slot = f.slot
FROM high h JOIN free_slots f ON f.pool_id = h.pool_id AND f.claimant = h.claimant AND f.k = h.k
WHERE c.id = h.id;
