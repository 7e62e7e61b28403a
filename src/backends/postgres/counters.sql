-- Statements of the PostgreSQL sharded counters (tables in migrations/003_locks.sql).
-- Rows (name, shard) for shard < counters.shards always exist (created by ensure/grow), so an
-- increment is a plain UPDATE of one row and never races an INSERT.

-- name: shards
-- $1 name → { shards } or no row.
SELECT shards FROM counters WHERE name = $1

-- name: ensure
-- $1 name → creates the counter with one shard (no-op when it exists) → { shards }.
WITH c AS (INSERT INTO counters (name, shards) VALUES ($1, 1) ON CONFLICT (name) DO NOTHING RETURNING shards),
     s AS (INSERT INTO counter_shards (name, shard, value) VALUES ($1, 0, 0) ON CONFLICT (name, shard) DO NOTHING)
SELECT coalesce((SELECT shards FROM c), (SELECT shards FROM counters WHERE name = $1)) AS shards

-- name: tryAdd
-- $1 name, $2 shard, $3 by → { added, present, value, shards }.
-- SKIP LOCKED: when another transaction holds that shard row, nothing is written (added = 0,
-- present = 1) — that miss IS the contention signal the caller grows on. present = 0 means the
-- shard row is gone (reset, or a stale shard count): the caller re-ensures and retries.
-- value = total in this statement's snapshot plus our own step (the CTE's write is not visible
-- to the rest of the statement).
WITH target AS (SELECT shard FROM counter_shards WHERE name = $1 AND shard = $2 FOR UPDATE SKIP LOCKED),
     upd AS (UPDATE counter_shards s SET value = s.value + $3 FROM target WHERE s.name = $1 AND s.shard = target.shard RETURNING 1)
SELECT (SELECT count(*) FROM upd)::int AS added,
       (SELECT count(*) FROM counter_shards WHERE name = $1 AND shard = $2)::int AS present,
       (coalesce((SELECT sum(value) FROM counter_shards WHERE name = $1), 0) + $3)::text AS value,
       coalesce((SELECT shards FROM counters WHERE name = $1), 0) AS shards

-- name: add
-- $1 name, $2 shard, $3 by → the blocking fallback after growing: waits for the row lock.
-- → { value, shards } or no row when the shard is gone.
WITH upd AS (UPDATE counter_shards SET value = value + $3 WHERE name = $1 AND shard = $2 RETURNING 1)
SELECT (coalesce((SELECT sum(value) FROM counter_shards WHERE name = $1), 0) + $3)::text AS value,
       coalesce((SELECT shards FROM counters WHERE name = $1), 0) AS shards
WHERE EXISTS (SELECT 1 FROM upd)

-- name: grow
-- $1 name, $2 wanted shard count → { shards } after growing (never shrinks), with the new shard
-- rows created in the same statement.
WITH c AS (UPDATE counters SET shards = greatest(shards, $2) WHERE name = $1 RETURNING shards),
     s AS (INSERT INTO counter_shards (name, shard, value)
           SELECT $1, g, 0 FROM c, generate_series(0, c.shards - 1) g
           ON CONFLICT (name, shard) DO NOTHING)
SELECT shards FROM c

-- name: get
-- $1 name → { value, shards }: the exact total, one statement = one consistent snapshot.
SELECT coalesce((SELECT sum(value) FROM counter_shards WHERE name = $1), 0)::text AS value,
       coalesce((SELECT shards FROM counters WHERE name = $1), 0) AS shards

-- name: deleteShards
-- $1 name.
DELETE FROM counter_shards WHERE name = $1

-- name: deleteCounter
-- $1 name.
DELETE FROM counters WHERE name = $1

-- name: listNames
-- $1 after, $2 limit: counter names in name order.
SELECT name FROM counters WHERE name > $1 ORDER BY name LIMIT $2
