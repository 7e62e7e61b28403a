-- redeem: mark a claimed code used (once).
-- KEYS[1] pool hash, KEYS[2] codes hash
-- ARGV[1] code, ARGV[2] required holder ('' = any)
-- Returns code reply | {'not_found', what} | {'already_redeemed', at} | {'conflict', reason}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if rec.s == 'redeemed' then return { 'already_redeemed', tostring(rec.ra) } end
if rec.s ~= 'claimed' then return { 'conflict', 'not_held', rec.s } end
if ARGV[2] ~= '' and rec.h ~= ARGV[2] then return { 'conflict', 'other_holder' } end
rec.s, rec.ra = 'redeemed', now_ms()
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
redis.call('HINCRBY', KEYS[1], 'claimed', -1)
redis.call('HINCRBY', KEYS[1], 'redeemed', 1)
return code_reply(ARGV[1], rec)
