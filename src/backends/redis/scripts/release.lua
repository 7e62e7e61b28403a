-- release: a claimed (not redeemed) code goes back to the pool.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] codes hash, KEYS[4] held hash, KEYS[5] parked zset,
-- KEYS[6] claim times zset
-- ARGV[1] code, ARGV[2] required holder ('' = any), ARGV[3] request id (new per request, kept in the
-- freed record: a re-send after a dropped connection answers as its first run)
-- Returns code reply {code, status, holder, claimedAt, redeemedAt} | {'not_found', what} | {'refused', reason (a refusal id of core/refusals.ts)}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if ARGV[3] ~= '' and rec.rr == ARGV[3] then return code_reply(ARGV[1], { s = 'free', q = rec.q, vs = rec.vs, ve = rec.ve }) end
if rec.s == 'redeemed' then return { 'refused', 'redeemed_not_releasable' } end
if rec.s ~= 'claimed' then return { 'refused', 'not_held', rec.s } end
if ARGV[2] ~= '' and rec.h ~= ARGV[2] then return { 'refused', 'other_holder' } end
save_held(KEYS[4], rec.h, without(held_of(KEYS[4], rec.h), ARGV[1]))
-- free again: its own window stays, a checkout hold ends
rec = { s = 'free', q = rec.q, vs = rec.vs, ve = rec.ve, rr = ARGV[3] ~= '' and ARGV[3] or nil }
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(rec))
put_free(KEYS[2], KEYS[5], ARGV[1], rec, now_ms())
redis.call('HINCRBY', KEYS[1], 'claimed', -1)
after_free_rose(KEYS[1], redis.call('HINCRBY', KEYS[1], 'free', 1))
return code_reply(ARGV[1], rec)
