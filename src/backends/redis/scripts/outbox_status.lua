-- outbox_status: counts of this source. KEYS: see outbox_lib.lua.
-- Returns {pending, delivered, dead, creation ms of the oldest pending event or -1, now}
sync()
local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local info = redis.call('HMGET', KEYS[4], 'delivered', 'dead')
return { redis.call('ZCARD', KEYS[3]), tonumber(info[1] or '0'), tonumber(info[2] or '0'), oldest[2] and tonumber(oldest[2]) or -1, now_ms() }
