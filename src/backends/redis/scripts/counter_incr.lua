-- counter_incr: adds `by` to one shard of a sharded counter and returns the exact total.
-- One hash per counter (one slot, so the total is read in the same step): field n = shard count,
-- s0..s<n-1> = shard values, sec/w = writes seen in the current server second.
-- Contention signal (the store's, not the client's): more than ARGV[2] writes per shard within
-- one server second doubles n, up to ARGV[3]; n never shrinks.
-- KEYS[1] counter hash, KEYS[2] this request's reply (a re-send answers it: lib.lua replay_reply);
-- ARGV[1] by, ARGV[2] writes/s per shard that count as contention, ARGV[3] max shards, ARGV[4] ms the reply is kept
-- Returns {total (string), shards}.
local again = replay_reply(KEYS[2])
if again then return again end
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '1')
local sec = math.floor(now_ms() / 1000)
if tonumber(redis.call('HGET', KEYS[1], 'sec') or '-1') ~= sec then
  redis.call('HSET', KEYS[1], 'sec', sec, 'w', 0)
end
local w = redis.call('HINCRBY', KEYS[1], 'w', 1)
if w > tonumber(ARGV[2]) * n and n < tonumber(ARGV[3]) then
  n = math.min(n * 2, tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'w', 0)
end
redis.call('HSET', KEYS[1], 'n', n)
redis.call('HINCRBY', KEYS[1], 's' .. (w % n), ARGV[1])
return remember_reply(KEYS[2], ARGV[4], { string.format('%.0f', counter_total(KEYS[1], n)), n })
