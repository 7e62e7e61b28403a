-- code_window: set a code's own validity window (single- or multi-use).
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] free zset, KEYS[4] parked zset, KEYS[5] multi-use codes hash
-- ARGV[1] code, ARGV[2] starts, ARGV[3] expires (epoch ms; '' = open on that side)
-- Returns code reply | {'multi', record JSON} | {'not_found', what}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local starts = ARGV[2] ~= '' and tonumber(ARGV[2]) or nil
local expires = ARGV[3] ~= '' and tonumber(ARGV[3]) or nil
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then
  local m = redis.call('HGET', KEYS[5], ARGV[1])
  if m == false then return { 'not_found', 'code' } end
  local rec = cjson.decode(m)
  rec.vs, rec.ve = starts, expires
  local json = cjson.encode(rec)
  redis.call('HSET', KEYS[5], ARGV[1], json)
  return { 'multi', json }
end
local rec = cjson.decode(raw)
rec.vs, rec.ve = starts, expires
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
local now = now_ms()
-- a free code moves between the free and the parked set as its window now says
if rec.s == 'free' then put_free(KEYS[3], KEYS[4], ARGV[1], rec, now) end
return code_reply(ARGV[1], rec, now)
