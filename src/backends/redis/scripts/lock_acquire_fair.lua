-- lock_acquire_fair: a fair (FIFO across instances) grant. The line is a second set of holder keys
-- on the same slot: tickets taken with lock_acquire on KEYS[4..6], a ticket's number being that
-- fence counter's value (the server's own sequence).
-- KEYS[1] holders zset, KEYS[2] fence counter, KEYS[3] tokens hash (as lock_acquire);
-- KEYS[4] line zset (ticket token → expiry ms), KEYS[5] line tokens hash (ticket token → number)
-- ARGV[1] token, ARGV[2] limit, ARGV[3] ttl ms, ARGV[4] ticket token ('' = none: every live ticket is ahead)
-- Grants only if live holders + live tickets ahead of ARGV[4] < limit, and removes the ticket in
-- this same script. Returns {fence, expiresAt, now} on a grant | {0} (no grant, or the ticket lapsed).
-- Clock: the server's TIME, never the caller's.
local now = now_ms()
-- the token is new per request: holding the slot already means this very request ran (a re-send
-- after a dropped connection; its ticket is gone), so answer its grant
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
if mine and tonumber(mine) > now then return { tonumber(redis.call('HGET', KEYS[3], ARGV[1])), tonumber(mine), now } end
sweep_holders(KEYS[1], KEYS[3], now)
sweep_holders(KEYS[4], KEYS[5], now)
local limit = tonumber(ARGV[2])
local held = redis.call('ZCARD', KEYS[1])
if held >= limit then return { 0 } end
local ahead
if ARGV[4] == '' then
  ahead = redis.call('HLEN', KEYS[5])
else
  local mine = redis.call('HGET', KEYS[5], ARGV[4])
  if not mine then return { 0 } end
  mine = tonumber(mine)
  ahead = 0
  for _, number in ipairs(redis.call('HVALS', KEYS[5])) do
    if tonumber(number) < mine then ahead = ahead + 1 end
  end
end
if held + ahead >= limit then return { 0 } end
local fence = next_fence(KEYS[2])
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expires, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], string.format('%.0f', fence))
expire_with_holders(KEYS[1], KEYS[3])
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[4], ARGV[4])
  redis.call('HDEL', KEYS[5], ARGV[4])
end
return { fence, expires, now_ms() }
