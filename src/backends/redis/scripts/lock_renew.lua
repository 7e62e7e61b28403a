-- lock_renew: extends a LIVE slot held by the token to now + ttl. An expired slot is never
-- revived (someone else may hold it by now): the caller gets lease_lost.
-- KEYS[1] holders zset, KEYS[2] tokens hash; ARGV[1] token, ARGV[2] ttl ms
-- Returns {fence, expiresAt, now} | false (expired or not the owner).
local now = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return false end
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[1])
expire_with_holders(KEYS[1], KEYS[2])
return { tonumber(redis.call('HGET', KEYS[2], ARGV[1])), expires, now_ms() }
