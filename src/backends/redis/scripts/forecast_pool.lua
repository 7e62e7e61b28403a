-- forecast_pool (read-only): what a pool's forecast needs, in one snapshot on the store's clock:
-- codes claimed (still held or redeemed) in the last 1, 5 and 15 minutes with the first claim time
-- inside each window, the free counter, and the pool's "empty soon" watch.
-- KEYS[1] pool hash, KEYS[2] claim times zset, KEYS[3] watch hash.
-- Returns 'not_found' | JSON {now, remaining, w = [[taken, first], …], watch = {within, armed, fired}?}
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
local now = now_ms()
local w = {}
for i, ms in ipairs({ 60000, 300000, 900000 }) do
  local from = now - ms
  local first = redis.call('ZRANGEBYSCORE', KEYS[2], from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  w[i] = { redis.call('ZCOUNT', KEYS[2], from, '+inf'), first[2] and tonumber(first[2]) or -1 }
end
local out = { now = now, remaining = tonumber(redis.call('HGET', KEYS[1], 'free')), w = w }
local watch = redis.call('HMGET', KEYS[3], 'within', 'armed', 'fired')
if watch[1] then out.watch = { within = tonumber(watch[1]), armed = tonumber(watch[2]), fired = tonumber(watch[3]) } end
return cjson.encode(out)
