-- counter_get: the exact total of a sharded counter, read in one step.
-- KEYS[1] counter hash. Returns {total (string), shards} ({'0', 0} for an unknown counter).
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
return { string.format('%.0f', counter_total(KEYS[1], n)), n }
