-- Statements of the SQLite sharded counters.

-- name: shardCount
-- Params: name. Result: { shards } or no row.
SELECT shards FROM dibs_counters WHERE name = ?

-- name: ensureCounter
-- Params: name.
INSERT INTO dibs_counters (name, shards) VALUES (?, 1) ON CONFLICT (name) DO NOTHING

-- name: growShards
-- Params: @name, @shards. Never shrinks.
UPDATE dibs_counters SET shards = MAX(shards, @shards) WHERE name = @name

-- name: addToShard
-- Params: @name, @shard, @by.
INSERT INTO dibs_counter_shards (name, shard, value) VALUES (@name, @shard, @by)
ON CONFLICT (name, shard) DO UPDATE SET value = value + excluded.value

-- name: sum
-- Params: name, name. Result: { value, shards } (one statement = one consistent snapshot).
SELECT COALESCE((SELECT SUM(value) FROM dibs_counter_shards WHERE name = ?), 0) AS value,
       COALESCE((SELECT shards FROM dibs_counters WHERE name = ?), 0) AS shards

-- name: deleteShards
-- Params: name.
DELETE FROM dibs_counter_shards WHERE name = ?

-- name: deleteCounter
-- Params: name.
DELETE FROM dibs_counters WHERE name = ?

-- name: listNames
-- Params: after, limit. Counter names in name order.
SELECT name FROM dibs_counters WHERE name > ? ORDER BY name LIMIT ?
