-- name: claim
-- Claims of ONE pool in ONE statement: a single claim (one request, one or more codes) and a group
-- of concurrent single-code claims waiting in one process (claim-grouper.ts) are the same step,
-- this statement, with one request per claimant. It runs autocommit, or as the first statement of
-- a transaction when the pool has a low-stock threshold (then the caller settles the low-stock
-- state before COMMIT). The caller guarantees the claimants of one call are distinct and so are
-- the keys, so a unique violation (23505) can only come from a race with another statement.
--
-- Params:
--   $1 pool name   $2 claimants text[]   $3 idempotency keys text[] (null entries: no key)
--   $4 counts wanted int[] (each >= 1)   $5 random start in [0,1)   $6 random in [0,1): which counter shard
--   $7 settle: true when the caller runs this inside a transaction and settles low stock after it;
--      a pool WITH a threshold refuses to take codes when false (needs_tx, nothing changed).
-- How it enforces every rule inside the statement:
--   - limit: each claimant's free slots (1..perClaimantLimit minus the slots it holds) are numbered
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
--     row; the codes and the keys are written only once the shard has moved (014).
-- Result: one row per request, ordered by i (1-based position in $2):
--   pool_id (null: no such pool), threshold, per_claimant_limit, window_state ('open' | 'not_yet_valid' | 'expired') with
--   starts_at/expires_at, prior_claimant, prior_count (the key's earlier use),
--   key_codes (codes the claimant still holds under that key), held_before (claimant's codes before
--   this statement, oldest first), taken (codes taken now), room (free slots wanted and allowed),
--   free_seen (> 0 when a request got nothing but this statement's snapshot has a free code that may
--   be handed out now: all such rows were locked by in-flight claims — retry, not sold out),
--   stale (true: the pool's rules changed while this statement ran; it took nothing — run it again;
--   the same for every row).
WITH p AS (
  SELECT id, per_claimant_limit, low_stock_threshold, counter_shards, starts_at, expires_at, rules_version,
    -- parked codes that are due come back, expired ones leave the free index (a bounded batch; 013),
    -- in pools that have ever had such codes (026)
    CASE WHEN EXISTS (SELECT 1 FROM pools_never_parked n WHERE n.pool_id = pools.id) THEN 0 ELSE unpark_due(id) END AS unparked
  FROM pools WHERE name = $1
),
req AS (
  SELECT r.claimant, r.key, r.n, r.i FROM unnest($2::text[], $3::text[], $4::int[]) WITH ORDINALITY AS r(claimant, key, n, i)
),
prior AS (
  SELECT r.i, k.claimant, k.count FROM req r
  JOIN claim_keys k ON k.pool_id = (SELECT id FROM p) AND k.key = r.key
),
mine AS (
  SELECT r.i, c.id, c.code, c.slot, c.claim_key, c.claimed_at FROM req r
  JOIN codes c ON c.pool_id = (SELECT id FROM p) AND c.claimant = r.claimant
),
slots AS (
  -- the slots each request may fill now: its lowest free ones, as many as it wants
  SELECT r.i, r.claimant, r.key, s.slot
  FROM req r CROSS JOIN p
  CROSS JOIN LATERAL (
    SELECT g.slot FROM generate_series(1, p.per_claimant_limit) AS g(slot)
    WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.i = r.i AND m.slot = g.slot)
    ORDER BY g.slot
    LIMIT r.n
  ) AS s
  WHERE NOT EXISTS (SELECT 1 FROM prior WHERE prior.i = r.i)
    AND (p.low_stock_threshold IS NULL OR $7::boolean)
    -- new codes only inside the pool's validity window (a replayed key above still answers)
    AND pool_window_state(p.starts_at, p.expires_at) = 'open'
),
eligible AS (
  SELECT i, claimant, key, slot, row_number() OVER (ORDER BY i, slot) AS rn FROM slots
),
above AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd >= $5::float8
  ORDER BY c.rnd
  LIMIT (SELECT count(*) FROM eligible)
  FOR UPDATE SKIP LOCKED
),
below AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd < $5::float8
  ORDER BY c.rnd
  LIMIT (SELECT count(*) FROM eligible) - (SELECT count(*) FROM above)
  FOR UPDATE SKIP LOCKED
),
picked AS (
  SELECT id, row_number() OVER (ORDER BY id) AS rn FROM (SELECT id FROM above UNION ALL SELECT id FROM below) AS x
),
assigned AS (
  SELECT e.i, e.claimant, e.key, e.slot, pk.id AS code_id FROM eligible e JOIN picked pk ON pk.rn = e.rn
),
counted AS (
  -- runs before the writes below (they read it): a shard whose rules_version moved since p was
  -- read — or that a rule change holds locked and then moves — matches no row, and nothing is taken
  UPDATE pool_counters pc SET free = pc.free - t.n, claimed = pc.claimed + t.n
  FROM (SELECT count(*) AS n FROM assigned) AS t, p
  WHERE t.n > 0 AND pc.pool_id = p.id AND pc.shard = floor($6::float8 * p.counter_shards)::int
    AND pc.rules_version = p.rules_version
  RETURNING 1
),
key_rows AS (
  -- a request's key is recorded with the count it asked for, once it has taken at least one code
  INSERT INTO claim_keys (pool_id, key, claimant, count)
  SELECT (SELECT id FROM p), r.key, r.claimant, r.n FROM req r
  WHERE r.key IS NOT NULL AND EXISTS (SELECT 1 FROM assigned a WHERE a.i = r.i) AND EXISTS (SELECT 1 FROM counted)
  RETURNING 1
),
taken AS (
  UPDATE codes c
  SET status = 'claimed', claimant = a.claimant, slot = a.slot, claim_key = a.key, claimed_at = now(),
      -- a lapsed checkout hold ends here (claims skip live ones), as every other state change ends one
      hold_claimant = NULL, hold_until = NULL
  FROM assigned a
  -- the array keeps this on the primary key whatever the planner guesses the CTEs above return
  -- (a guess of thousands of rows made it hash all of the table's codes)
  WHERE c.id = ANY (ARRAY(SELECT code_id FROM assigned)) AND c.id = a.code_id AND EXISTS (SELECT 1 FROM counted)
  RETURNING a.i, c.id, c.code
),
free_seen AS (
  -- read only by requests that got nothing, and only needed to tell "sold out" from "all free rows
  -- locked": is there a free code that may be handed out now (no live hold, inside its own window)?
  -- Skipped when every slot asked for was filled: summing on every successful claim cost throughput.
  SELECT CASE WHEN (SELECT count(*) FROM taken) >= (SELECT count(*) FROM eligible) AND (SELECT count(*) FROM eligible) > 0 THEN 0 ELSE (SELECT count(*) FROM (
    SELECT 1 FROM codes c WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at)
    UNION ALL -- parked codes that are due count too: unpark_due (in p) has just brought them back
    SELECT 1 FROM codes c WHERE c.pool_id = (SELECT id FROM p) AND c.parked_until IS NOT NULL AND c.parked_until <= now() AND code_open(c.hold_until, c.starts_at, c.expires_at)
    LIMIT 1
  ) AS open_free) END::bigint AS n
)
SELECT
  r.i,
  (SELECT id FROM p) AS pool_id,
  (SELECT low_stock_threshold FROM p) AS threshold,
  (SELECT per_claimant_limit FROM p) AS per_claimant_limit,
  pr.claimant AS prior_claimant,
  pr.count AS prior_count,
  coalesce(km.codes, '{}') AS key_codes,
  coalesce(hm.codes, '{}') AS held_before,
  coalesce(tk.codes, '{}') AS taken,
  coalesce(sl.n, 0)::int AS room,
  (SELECT count(*) FROM counted)::int + (SELECT count(*) FROM key_rows)::int AS writes,
  (SELECT n FROM free_seen) AS free_seen,
  (SELECT pool_window_state(starts_at, expires_at) FROM p) AS window_state,
  (SELECT starts_at FROM p) AS starts_at,
  (SELECT expires_at FROM p) AS expires_at,
  $7::boolean AS settled,
  -- codes were locked but the rules changed under this statement: nothing taken, run it again
  (EXISTS (SELECT 1 FROM assigned) AND NOT EXISTS (SELECT 1 FROM counted)) AS stale
-- each request's codes and slots are gathered once per request here, not by a subquery per
-- request over the whole group's rows (which grew with the square of the group's size)
FROM req r
LEFT JOIN prior pr ON pr.i = r.i
LEFT JOIN (SELECT m.i, array_agg(m.code ORDER BY m.claimed_at, m.id) AS codes FROM mine m GROUP BY m.i) AS hm ON hm.i = r.i
LEFT JOIN (
  SELECT m.i, array_agg(m.code ORDER BY m.claimed_at, m.id) AS codes FROM mine m JOIN req q ON q.i = m.i AND m.claim_key = q.key GROUP BY m.i
) AS km ON km.i = r.i
LEFT JOIN (SELECT t.i, array_agg(t.code ORDER BY t.id) AS codes FROM taken t GROUP BY t.i) AS tk ON tk.i = r.i
LEFT JOIN (SELECT s.i, count(*) AS n FROM slots s GROUP BY s.i) AS sl ON sl.i = r.i
ORDER BY r.i
