-- lock_release: frees the LIVE slot held by the token and publishes the key on the release
-- channel in the same script (waiters subscribed there retry at once).
-- KEYS[1] holders zset, KEYS[2] tokens hash, KEYS[3] this request's reply (a re-send answers it:
-- lib.lua replay_reply); ARGV[1] token, ARGV[2] channel, ARGV[3] lock key, ARGV[4] ms the reply is kept
-- Returns 1 | 0 (expired or not the owner → not_owner).
local again = replay_reply(KEYS[3])
if again then return again[1] end
local now = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
remember_reply(KEYS[3], ARGV[4], { 1 })
return 1
