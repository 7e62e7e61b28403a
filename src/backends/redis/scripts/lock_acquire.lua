-- lock_acquire: grants a slot of a lock/semaphore when fewer than `limit` live holders remain.
-- KEYS[1] holders zset (token → expiry ms), KEYS[2] last fence (kept forever; next_fence: fences
-- only grow, also across lost data), KEYS[3] tokens hash (token → fence). All three share the key's hash tag.
-- ARGV[1] token, ARGV[2] limit, ARGV[3] ttl ms
-- Returns {fence, expiresAt, now} on a grant | {0, msUntilEarliestExpiry} when every slot is taken.
-- Clock: the server's TIME, never the caller's.
local now = now_ms()
-- the token is new per request: holding the slot already means this very request ran (a re-send
-- after a dropped connection), so answer its grant instead of refusing the slot it holds
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
if mine and tonumber(mine) > now then return { tonumber(redis.call('HGET', KEYS[3], ARGV[1])), tonumber(mine), now } end
sweep_holders(KEYS[1], KEYS[3], now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return { 0, tonumber(first[2]) - now }
end
local fence = next_fence(KEYS[2])
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expires, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], string.format('%.0f', fence))
expire_with_holders(KEYS[1], KEYS[3])
return { fence, expires, now_ms() }
