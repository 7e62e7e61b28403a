-- name: claim
-- One claim in ONE statement (autocommit), or the first statement of a transaction when the pool
-- has a low-stock threshold (then the caller settles the low-stock state before COMMIT).
--
-- Params:
--   $1 pool name            $2 claimant              $3 count wanted (>= 1)
--   $4 idempotency key|null $5 random start in [0,1) $6 random in [0,1): which counter shard
--   $7 settle: true when the caller runs this inside a transaction and settles low stock after it;
--      a pool WITH a threshold refuses to take codes when false (needs_tx, nothing changed).
-- How it enforces every rule inside the statement:
--   - limit: the claimant's free slots (1..perClaimantLimit minus the slots it holds) are numbered
--     and paired with the codes taken; UNIQUE (pool_id, claimant, slot) makes a racing second claim
--     of the same claimant fail (23505) instead of exceeding the limit — the caller retries it and
--     then sees the holding;
--   - idempotency: a key already recorded takes nothing (prior_* is returned for the caller to
--     replay); a new key is inserted with the codes — a racing second use fails on the primary key
--     (23505) and the retry replays;
--   - stock: free rows from a random start point upwards, wrapping around to below it, with
--     FOR UPDATE SKIP LOCKED so concurrent claims never wait on each other;
--   - counters: one of the pool's counter shards moves in the same statement — FIRST, and only if
--     the shard's rules_version is the one read with the pool's rules: a rule change (updatePool)
--     raises it, so a claim that judged the old rules and reaches its shard after the change takes
--     nothing (stale: the caller runs it again under the new rules) — I8 without locking the pool
--     row; the codes and the key are written only once the shard has moved (014).
-- Result (exactly one row):
--   pool_id (null: no such pool), threshold, per_claimant_limit, window_state ('open' | 'not_yet_valid' | 'expired') with
--   starts_at/expires_at, prior_claimant, prior_count (the key's earlier use),
--   key_codes (codes the claimant still holds under that key), held_before (claimant's codes before
--   this statement, oldest first), taken (codes taken now), room (free slots wanted and allowed),
--   free_seen (> 0 when nothing was taken but this statement's snapshot has a free code that may
--   be handed out now: all such rows were locked by in-flight claims — retry, not sold out),
--   stale (true: the pool's rules changed while this statement ran; it took nothing — run it again).
WITH p AS (
  SELECT id, per_claimant_limit, low_stock_threshold, counter_shards, starts_at, expires_at, rules_version,
    -- parked codes that are due come back, expired ones leave the free index (a bounded batch; 013)
    unpark_due(id) AS unparked
  FROM pools WHERE name = $1
),
prior AS (
  SELECT k.claimant, k.count FROM claim_keys k
  WHERE $4::text IS NOT NULL AND k.pool_id = (SELECT id FROM p) AND k.key = $4::text
),
mine AS (
  SELECT c.id, c.code, c.slot, c.claim_key, c.claimed_at FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.claimant = $2
),
slots AS (
  SELECT s.slot, row_number() OVER (ORDER BY s.slot) AS rn
  FROM p, generate_series(1, p.per_claimant_limit) AS s(slot)
  WHERE NOT EXISTS (SELECT 1 FROM mine WHERE mine.slot = s.slot)
    AND NOT EXISTS (SELECT 1 FROM prior)
    AND (p.low_stock_threshold IS NULL OR $7::boolean)
    -- new codes only inside the pool's validity window (a replayed key above still answers)
    AND pool_window_state(p.starts_at, p.expires_at) = 'open'
  ORDER BY s.slot
  LIMIT $3::int
),
above AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd >= $5::float8
  ORDER BY c.rnd
  LIMIT (SELECT count(*) FROM slots)
  FOR UPDATE SKIP LOCKED
),
below AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd < $5::float8
  ORDER BY c.rnd
  LIMIT (SELECT count(*) FROM slots) - (SELECT count(*) FROM above)
  FOR UPDATE SKIP LOCKED
),
picked AS (
  SELECT id, row_number() OVER (ORDER BY id) AS rn FROM (SELECT id FROM above UNION ALL SELECT id FROM below) AS x
),
counted AS (
  -- runs before the writes below (they read it): a shard whose rules_version moved since p was
  -- read — or that a rule change holds locked and then moves — matches no row, and nothing is taken
  UPDATE pool_counters pc SET free = pc.free - t.n, claimed = pc.claimed + t.n
  FROM (SELECT count(*) AS n FROM picked) AS t, p
  WHERE t.n > 0 AND pc.pool_id = p.id AND pc.shard = floor($6::float8 * p.counter_shards)::int
    AND pc.rules_version = p.rules_version
  RETURNING 1
),
key_row AS (
  INSERT INTO claim_keys (pool_id, key, claimant, count)
  SELECT p.id, $4::text, $2, $3::int FROM p
  WHERE $4::text IS NOT NULL AND EXISTS (SELECT 1 FROM counted)
  RETURNING 1
),
taken AS (
  UPDATE codes c
  SET status = 'claimed', claimant = $2, slot = s.slot, claim_key = $4::text, claimed_at = now(),
      -- a lapsed checkout hold ends here (claims skip live ones), as every other state change ends one
      hold_claimant = NULL, hold_until = NULL
  FROM picked pk JOIN slots s ON s.rn = pk.rn
  WHERE c.id = pk.id AND EXISTS (SELECT 1 FROM counted)
  RETURNING c.id, c.code
)
SELECT
  (SELECT id FROM p) AS pool_id,
  (SELECT low_stock_threshold FROM p) AS threshold,
  (SELECT per_claimant_limit FROM p) AS per_claimant_limit,
  (SELECT claimant FROM prior) AS prior_claimant,
  (SELECT count FROM prior) AS prior_count,
  ARRAY(SELECT m.code FROM mine m WHERE m.claim_key = $4::text ORDER BY m.claimed_at, m.id) AS key_codes,
  ARRAY(SELECT m.code FROM mine m ORDER BY m.claimed_at, m.id) AS held_before,
  ARRAY(SELECT t.code FROM taken t ORDER BY t.id) AS taken,
  (SELECT count(*) FROM slots)::int AS room,
  (SELECT count(*) FROM counted)::int + (SELECT count(*) FROM key_row)::int AS writes,
  -- only needed to tell "sold out" from "all free rows locked"; summing the shards on every
  -- successful claim cost measurable throughput
  -- (codes on hold or outside their own window count as free but cannot be handed out: not seen)
  CASE WHEN NOT EXISTS (SELECT 1 FROM taken) THEN (SELECT count(*) FROM (
    SELECT 1 FROM codes c WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at)
    UNION ALL -- parked codes that are due count too: unpark_due (in p) has just brought them back
    SELECT 1 FROM codes c WHERE c.pool_id = (SELECT id FROM p) AND c.parked_until IS NOT NULL AND c.parked_until <= now() AND code_open(c.hold_until, c.starts_at, c.expires_at)
    LIMIT 1
  ) AS open_free) ELSE 0 END::bigint AS free_seen,
  (SELECT pool_window_state(starts_at, expires_at) FROM p) AS window_state,
  (SELECT starts_at FROM p) AS starts_at,
  (SELECT expires_at FROM p) AS expires_at,
  $7::boolean AS settled,
  -- codes were locked but the rules changed under this statement: nothing taken, run it again
  (EXISTS (SELECT 1 FROM picked) AND NOT EXISTS (SELECT 1 FROM counted)) AS stale
