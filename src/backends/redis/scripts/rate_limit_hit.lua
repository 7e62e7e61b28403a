-- rate_limit_hit: counts one request against a fixed window (the HTTP service's per-key limit).
-- KEYS[1] counter key. ARGV[1] window in ms.
-- The window starts with its first request: the key is created with the window as its TTL and
-- expires with it, so the next request starts a new window at 1.
-- Returns {count so far in this window, ms left in it}.
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  -- A counter left without a TTL (written by something else): give it one now.
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { current, ttl }
