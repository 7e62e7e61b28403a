-- name: claimGroup
-- Grouped claims: k single-code claims of ONE pool, waiting in one process, served by ONE
-- statement that takes up to k free rows with SKIP LOCKED and pairs them with the k claimants.
-- Every claimant's rules hold exactly as in claim.sql (same slots, same key rows, same unique
-- constraints); the caller guarantees the claimants of one group are distinct and so are the keys,
-- so a unique violation (23505) can only come from a race with another statement.
--
-- Params:
--   $1 pool name   $2 claimants text[]   $3 idempotency keys text[] (null entries: no key)
--   $4 random start in [0,1)   $5 random in [0,1): counter shard   $6 settle (see claim.sql)
-- Result: one row per request, ordered by i (1-based position in $2), with the same columns as
-- claim.sql (taken holds at most one code; stale is the same for every row).
WITH p AS (
  SELECT id, per_claimant_limit, low_stock_threshold, counter_shards, starts_at, expires_at, rules_version,
    -- parked codes that are due come back, expired ones leave the free index (a bounded batch; 013)
    unpark_due(id) AS unparked
  FROM pools WHERE name = $1
),
req AS (
  SELECT r.claimant, r.key, r.i FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS r(claimant, key, i)
),
prior AS (
  SELECT r.i, k.claimant, k.count FROM req r
  JOIN claim_keys k ON k.pool_id = (SELECT id FROM p) AND k.key = r.key
),
mine AS (
  SELECT r.i, c.id, c.code, c.slot, c.claim_key, c.claimed_at FROM req r
  JOIN codes c ON c.pool_id = (SELECT id FROM p) AND c.claimant = r.claimant
),
wanting AS (
  SELECT r.i, r.claimant, r.key,
    (SELECT s FROM generate_series(1, p.per_claimant_limit) AS s
     WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.i = r.i AND m.slot = s) ORDER BY s LIMIT 1) AS slot
  FROM req r, p
  WHERE NOT EXISTS (SELECT 1 FROM prior WHERE prior.i = r.i)
    AND (p.low_stock_threshold IS NULL OR $6::boolean)
    AND pool_window_state(p.starts_at, p.expires_at) = 'open'
),
eligible AS (
  SELECT i, claimant, key, slot, row_number() OVER (ORDER BY i) AS rn FROM wanting WHERE slot IS NOT NULL
),
above AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd >= $4::float8
  ORDER BY c.rnd
  LIMIT (SELECT count(*) FROM eligible)
  FOR UPDATE SKIP LOCKED
),
below AS (
  SELECT c.id FROM codes c
  WHERE c.pool_id = (SELECT id FROM p) AND c.status = 'free' AND c.parked_until IS NULL AND code_open(c.hold_until, c.starts_at, c.expires_at) AND c.rnd < $4::float8
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
  -- first, and only under the rules p read (see claim.sql): the writes below wait for it
  UPDATE pool_counters pc SET free = pc.free - t.n, claimed = pc.claimed + t.n
  FROM (SELECT count(*) AS n FROM assigned) AS t, p
  WHERE t.n > 0 AND pc.pool_id = p.id AND pc.shard = floor($5::float8 * p.counter_shards)::int
    AND pc.rules_version = p.rules_version
  RETURNING 1
),
key_rows AS (
  INSERT INTO claim_keys (pool_id, key, claimant, count)
  SELECT (SELECT id FROM p), a.key, a.claimant, 1 FROM assigned a WHERE a.key IS NOT NULL AND EXISTS (SELECT 1 FROM counted)
  RETURNING 1
),
taken AS (
  UPDATE codes c
  SET status = 'claimed', claimant = a.claimant, slot = a.slot, claim_key = a.key, claimed_at = now(),
      -- a lapsed checkout hold ends here (claims skip live ones), as every other state change ends one
      hold_claimant = NULL, hold_until = NULL
  FROM assigned a
  WHERE c.id = a.code_id AND EXISTS (SELECT 1 FROM counted)
  RETURNING a.i, c.id, c.code
),
free_seen AS (
  -- read only by requests that got nothing: is there a free code that may be handed out now (no
  -- live hold, inside its own window) that in-flight claims had locked? Then retry, not sold out.
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
  pr.claimant AS prior_claimant,
  pr.count AS prior_count,
  ARRAY(SELECT m.code FROM mine m WHERE m.i = r.i AND m.claim_key = r.key ORDER BY m.claimed_at, m.id) AS key_codes,
  ARRAY(SELECT m.code FROM mine m WHERE m.i = r.i ORDER BY m.claimed_at, m.id) AS held_before,
  ARRAY(SELECT t.code FROM taken t WHERE t.i = r.i) AS taken,
  (SELECT count(*) FROM wanting w WHERE w.i = r.i AND w.slot IS NOT NULL)::int AS room,
  (SELECT count(*) FROM counted)::int + (SELECT count(*) FROM key_rows)::int AS writes,
  (SELECT n FROM free_seen) AS free_seen,
  (SELECT pool_window_state(starts_at, expires_at) FROM p) AS window_state,
  (SELECT starts_at FROM p) AS starts_at,
  (SELECT expires_at FROM p) AS expires_at,
  $6::boolean AS settled,
  (EXISTS (SELECT 1 FROM assigned) AND NOT EXISTS (SELECT 1 FROM counted)) AS stale
FROM req r LEFT JOIN prior pr ON pr.i = r.i
ORDER BY r.i
