-- revoke: withdraw a code for good; its holder (if any) loses it.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] codes hash, KEYS[4] held hash, KEYS[5] events stream,
-- KEYS[6] parked zset, KEYS[7] claim times zset
-- ARGV[1] code, ARGV[2] request id (new per request, kept in the revoked record: a re-send after a
-- dropped connection answers as its first run)
-- Returns code reply | {'not_found', what} | {'refused', 'already_revoked'}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if rec.s == 'revoked' then
  if ARGV[2] ~= '' and rec.rr == ARGV[2] then return code_reply(ARGV[1], rec) end
  return { 'refused', 'already_revoked' }
end
local was = rec.s
if rec.h then save_held(KEYS[4], rec.h, without(held_of(KEYS[4], rec.h), ARGV[1])) end
if was == 'free' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[6], ARGV[1])
end
rec = { s = 'revoked', q = rec.q, vs = rec.vs, ve = rec.ve, rr = ARGV[2] ~= '' and ARGV[2] or nil }
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(rec))
redis.call('HINCRBY', KEYS[1], 'revoked', 1)
local left = redis.call('HINCRBY', KEYS[1], was, -1)
if was == 'free' then after_free_dropped(KEYS[1], KEYS[5], left, now_ms()) end
return code_reply(ARGV[1], rec)
