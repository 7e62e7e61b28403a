-- outbox_retry: makes a dead or waiting event due now, keeping its attempts and log. A lease and
-- a back-off both look like a later due time, so an event being delivered right now is made due
-- again too (at least once still holds: receivers dedupe on the key).
-- KEYS: see outbox_lib.lua. ARGV[1] padded event id. Returns 'queued' | 'delivered' | 'missing'.
sync()
local p = ARGV[1]
local now = now_ms()
local final = redis.call('HGET', KEYS[4], 'x:' .. p)
if final == 'd' then return 'delivered' end
if final == 'x' then
  if not redis.call('XRANGE', KEYS[1], unpadded(p), unpadded(p))[1] then return 'missing' end
  local _, created = padded(unpadded(p))
  redis.call('HDEL', KEYS[4], 'x:' .. p)
  redis.call('HINCRBY', KEYS[4], 'dead', -1)
  redis.call('ZREM', KEYS[5], p)
  redis.call('ZADD', KEYS[3], created, p)
  redis.call('ZADD', KEYS[2], now, p)
  return 'queued'
end
if not redis.call('ZSCORE', KEYS[3], p) then return 'missing' end
redis.call('ZADD', KEYS[2], now, p)
return 'queued'
