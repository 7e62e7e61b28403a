-- redeem: mark a claimed code used (once), for an order when one is named.
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] held hash, KEYS[4] free zset, KEYS[5] events stream,
-- KEYS[6] parked zset, KEYS[7] claim times zset (held code -> claimed at; the forecasts' index)
-- ARGV[1] code, ARGV[2] required holder ('' = any; for a direct redeem of a public code: the redeemer),
-- ARGV[3] order ('' = none), ARGV[4] request id (new per request: a redeem without an order keeps it
-- in the code's record, so a re-send after a dropped connection answers as its first run)
-- Returns code reply | {'not_found', what} | {'not_yet_valid', starts[, 'code']} | {'expired', expires[, 'code']}
--   | {'refused', reason (a refusal id of core/refusals.ts), status, max, holder, instant ms}
--     (already_redeemed at; held until: another claimant's live checkout hold; …)
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
if rec.s == 'redeemed' then
  -- the same checkout again: its answer, unchanged
  if ARGV[3] ~= '' and rec.o == ARGV[3] then return code_reply(ARGV[1], rec) end
  if ARGV[3] == '' and rec.rq ~= nil and rec.rq == ARGV[4] then return code_reply(ARGV[1], rec) end
  return { 'refused', 'already_redeemed', rec.s, '', '', tostring(rec.ra) }
end
-- a never-claimed code of a public pool: its redeemer becomes its holder, within their limit
local direct = rec.s == 'free' and redis.call('HGET', KEYS[1], 'public') == '1'
if direct then
  if ARGV[2] == '' then return { 'refused', 'claimant_required' } end
  local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
  if #held_of(KEYS[3], ARGV[2]) >= limit then return { 'refused', 'holder_at_limit', rec.s, tostring(limit), ARGV[2] } end
else
  if rec.s ~= 'claimed' then return { 'refused', 'not_held', rec.s } end
  if ARGV[2] ~= '' and rec.h ~= ARGV[2] then return { 'refused', 'other_holder' } end
end
local holder = direct and ARGV[2] or rec.h
local now = now_ms()
-- another checkout's live hold (a claimed code's hold is its holder's); the holder's is consumed
if hold_live(rec, now) and rec.hc ~= holder then return { 'refused', 'held', rec.s, '', '', tostring(rec.hu) } end
local closed = window_closed(KEYS[1], now) or code_window_closed(rec, now)
if closed then return closed end
local limits = redis.call('HMGET', KEYS[1], 'maxr', 'maxrc', 'redeemed')
if limits[1] and limits[1] ~= '' and tonumber(limits[3]) >= tonumber(limits[1]) then return { 'refused', 'redemptions_pool', rec.s, limits[1], holder } end
if limits[2] and limits[2] ~= '' then
  local n = 0
  for _, held in ipairs(held_of(KEYS[3], holder)) do
    if cjson.decode(redis.call('HGET', KEYS[2], held)).s == 'redeemed' then n = n + 1 end
  end
  if n >= tonumber(limits[2]) then return { 'refused', 'redemptions_claimant', rec.s, limits[2], holder } end
end
rec.s, rec.ra, rec.hc, rec.hu, rec.un = 'redeemed', now, nil, nil, nil
if ARGV[3] ~= '' then rec.o = ARGV[3] elseif ARGV[4] ~= '' then rec.rq = ARGV[4] end
if direct then
  rec.h, rec.ca = holder, now
  redis.call('ZADD', KEYS[7], now, ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('ZREM', KEYS[6], ARGV[1])
  local list = held_of(KEYS[3], holder)
  list[#list + 1] = ARGV[1]
  save_held(KEYS[3], holder, list)
end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
redis.call('HINCRBY', KEYS[1], direct and 'free' or 'claimed', -1)
redis.call('HINCRBY', KEYS[1], 'redeemed', 1)
if direct then after_free_dropped(KEYS[1], KEYS[5], tonumber(redis.call('HGET', KEYS[1], 'free')), now) end
return code_reply(ARGV[1], rec, now)
