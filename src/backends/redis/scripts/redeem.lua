-- redeem: mark a claimed code used (once), for an order when one is named.
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] held hash
-- ARGV[1] code, ARGV[2] required holder ('' = any), ARGV[3] order ('' = none)
-- Returns code reply | {'not_found', what} | {'already_redeemed', at} | {'conflict', reason}
--   | {'not_yet_valid', starts} | {'expired', expires} | {'limit_reached', which, max}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if rec.s == 'redeemed' then
  -- the same checkout again: its answer, unchanged
  if ARGV[3] ~= '' and rec.o == ARGV[3] then return code_reply(ARGV[1], rec) end
  return { 'already_redeemed', tostring(rec.ra) }
end
if rec.s ~= 'claimed' then return { 'conflict', 'not_held', rec.s } end
if ARGV[2] ~= '' and rec.h ~= ARGV[2] then return { 'conflict', 'other_holder' } end
local now = now_ms()
local closed = window_closed(KEYS[1], now)
if closed then return closed end
local limits = redis.call('HMGET', KEYS[1], 'maxr', 'maxrc', 'redeemed')
if limits[1] and limits[1] ~= '' and tonumber(limits[3]) >= tonumber(limits[1]) then return { 'limit_reached', 'pool', limits[1] } end
if limits[2] and limits[2] ~= '' then
  local n = 0
  for _, held in ipairs(held_of(KEYS[3], rec.h)) do
    if cjson.decode(redis.call('HGET', KEYS[2], held)).s == 'redeemed' then n = n + 1 end
  end
  if n >= tonumber(limits[2]) then return { 'limit_reached', 'claimant', limits[2] } end
end
rec.s, rec.ra = 'redeemed', now
if ARGV[3] ~= '' then rec.o = ARGV[3] end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
redis.call('HINCRBY', KEYS[1], 'claimed', -1)
redis.call('HINCRBY', KEYS[1], 'redeemed', 1)
return code_reply(ARGV[1], rec)
