-- unredeem: the refund path — a redeemed code goes back to claimed by its holder, and a
-- code.unredeemed event records it.
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] events stream
-- ARGV[1] code, ARGV[2] order it must have been redeemed for ('' = any), ARGV[3] event nonce (new
-- per request, kept in the record: a re-send after a dropped connection answers as its first run)
-- Returns code reply | {'not_found', what} | {'refused', reason (a refusal id of core/refusals.ts), status}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if rec.s ~= 'redeemed' then
  if rec.un == ARGV[3] then return code_reply(ARGV[1], rec) end
  return { 'refused', 'not_redeemed', rec.s }
end
if ARGV[2] ~= '' and rec.o ~= ARGV[2] then return { 'refused', 'other_order' } end
local now = now_ms()
local name = redis.call('HGET', KEYS[1], 'name')
local redeemed_at = iso_ms(rec.ra)
redis.call('XADD', KEYS[3], '*',
  'type', 'code.unredeemed',
  'key', 'code.unredeemed:' .. name .. ':' .. ARGV[1] .. ':' .. ARGV[3],
  'payload', cjson.encode({ pool = name, code = ARGV[1], claimant = rec.h, orderId = rec.o or cjson.null, redeemedAt = redeemed_at, unredeemedAt = iso_ms(now) }),
  'at', tostring(now))
rec.s, rec.ra, rec.o, rec.rq, rec.un = 'claimed', nil, nil, nil, ARGV[3]
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
redis.call('HINCRBY', KEYS[1], 'redeemed', -1)
redis.call('HINCRBY', KEYS[1], 'claimed', 1)
return code_reply(ARGV[1], rec)
