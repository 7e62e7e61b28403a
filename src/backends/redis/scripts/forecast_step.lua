-- forecast_step: sets, clears or advances an "empty soon" watch. The alert decision is made by the
-- caller from a snapshot (forecast_pool / sale_forecast); this script applies it only if the watch
-- is still as that snapshot saw it (armed, fired), so racing checks record one crossing once.
-- KEYS[1] watch hash, KEYS[2] the subject's event stream.
-- ARGV[1] 'set' | 'clear' | 'step'. set: ARGV[2] within ms. step: ARGV[2] expected armed,
-- ARGV[3] expected fired, ARGV[4] new armed, ARGV[5] '1' = record the event, ARGV[6] type,
-- ARGV[7] idempotency key, ARGV[8] payload JSON.
-- Returns 1 when applied, 0 when the watch moved (or is gone).
local op = ARGV[1]
if op == 'set' then
  redis.call('HSET', KEYS[1], 'within', ARGV[2])
  redis.call('HSETNX', KEYS[1], 'armed', 1)
  redis.call('HSETNX', KEYS[1], 'fired', 0)
  return 1
end
if op == 'clear' then return redis.call('DEL', KEYS[1]) end
local state = redis.call('HMGET', KEYS[1], 'armed', 'fired')
if state[1] ~= ARGV[2] or state[2] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'armed', ARGV[4])
if ARGV[5] == '1' then
  redis.call('HINCRBY', KEYS[1], 'fired', 1)
  redis.call('XADD', KEYS[2], '*', 'type', ARGV[6], 'key', ARGV[7], 'payload', ARGV[8], 'at', tostring(now_ms()))
end
return 1
