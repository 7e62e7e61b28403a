-- multi_unredeem: the refund of one order's use of a multi-use code, recorded as code.unredeemed.
-- KEYS[1] pool hash, KEYS[2] multi-use codes hash, KEYS[3] uses hash, KEYS[4] uses per claimant hash,
-- KEYS[5] events stream, KEYS[6] this request's reply (a re-send answers it: lib.lua replay_reply)
-- ARGV[1] code, ARGV[2] order, ARGV[3] event nonce, ARGV[4] ms the reply is kept
-- Returns {'ok', record JSON} | {'not_found', what} | {'refused', 'other_order'}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local again = replay_reply(KEYS[6])
if again then return again end
local use_key = ARGV[1] .. '\n' .. ARGV[2]
local prior = redis.call('HGET', KEYS[3], use_key)
if not prior then return { 'refused', 'other_order' } end
local use = cjson.decode(prior)
local rec = cjson.decode(raw)
local now = now_ms()
redis.call('HDEL', KEYS[3], use_key)
if use.c ~= '' and redis.call('HINCRBY', KEYS[4], ARGV[1] .. '\n' .. use.c, -1) <= 0 then redis.call('HDEL', KEYS[4], ARGV[1] .. '\n' .. use.c) end
rec.u = rec.u - 1
raw = cjson.encode(rec)
redis.call('HSET', KEYS[2], ARGV[1], raw)
local name = redis.call('HGET', KEYS[1], 'name')
redis.call('XADD', KEYS[5], '*',
  'type', 'code.unredeemed',
  'key', 'code.unredeemed:' .. name .. ':' .. ARGV[1] .. ':' .. ARGV[3],
  'payload', cjson.encode({ pool = name, code = ARGV[1], claimant = use.c, orderId = ARGV[2], redeemedAt = iso_ms(use.at), unredeemedAt = iso_ms(now) }),
  'at', tostring(now))
return remember_reply(KEYS[6], ARGV[4], { 'ok', raw })
