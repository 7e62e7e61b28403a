-- outbox_settle: records one delivery attempt of a pending event. ARGV[1] padded event id,
-- ARGV[2] 'ok' | 'fail', ARGV[3] detail, ARGV[4] retry in ms ('' = give up: dead letter), ARGV[5]
-- request id (kept in the attempt's log entry: a re-send after a dropped connection finds its
-- attempt logged and records it only once).
-- A delivered (or unknown, or dead) event is left as it is: a late duplicate success is not logged.
-- KEYS: see outbox_lib.lua. Returns 1 when recorded, 0 when not.
sync()
local p, ok, detail, retry = ARGV[1], ARGV[2] == 'ok', ARGV[3], ARGV[4]
if not redis.call('ZSCORE', KEYS[3], p) then return 0 end
local log = cjson.decode(redis.call('HGET', KEYS[4], 'l:' .. p) or '[]')
if ARGV[5] and ARGV[5] ~= '' and #log > 0 and log[#log].rq == ARGV[5] then return 1 end
local now = now_ms()
local attempt = redis.call('HINCRBY', KEYS[4], 'a:' .. p, 1)
log[#log + 1] = { attempt = attempt, ok = ok, detail = detail, at = now, rq = ARGV[5] }
redis.call('HSET', KEYS[4], 'l:' .. p, cjson.encode(log))
if ok then
  redis.call('ZREM', KEYS[2], p)
  redis.call('ZREM', KEYS[3], p)
  redis.call('HSET', KEYS[4], 'x:' .. p, 'd')
  redis.call('HINCRBY', KEYS[4], 'delivered', 1)
elseif retry == '' then
  redis.call('ZREM', KEYS[2], p)
  redis.call('ZREM', KEYS[3], p)
  redis.call('HSET', KEYS[4], 'x:' .. p, 'x')
  redis.call('ZADD', KEYS[5], now, p)
  redis.call('HINCRBY', KEYS[4], 'dead', 1)
else
  redis.call('ZADD', KEYS[2], now + tonumber(retry), p)
end
return 1
