-- hold: hold a single-use code for a claimant during checkout, until now + ttl (server clock).
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] held hash, KEYS[4] free zset, KEYS[5] parked zset,
-- KEYS[6] multi-use codes hash
-- ARGV[1] code, ARGV[2] claimant, ARGV[3] ttl ms
-- Returns code reply | {'not_found', what} | {'not_yet_valid'|'expired', at[, 'code']}
--   | {'refused', reason (a refusal id of core/refusals.ts), status, max, holder, instant ms}
--     (multi_use_not_holdable, already_redeemed at, held until, revoked, not_held, holder_at_limit, other_holder)
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then
  if redis.call('HEXISTS', KEYS[6], ARGV[1]) == 1 then return { 'refused', 'multi_use_not_holdable' } end
  return { 'not_found', 'code' }
end
local rec = cjson.decode(raw)
local claimant = ARGV[2]
if rec.s == 'redeemed' then return { 'refused', 'already_redeemed', rec.s, '', '', tostring(rec.ra) } end
if rec.s == 'revoked' then return { 'refused', 'revoked', rec.s } end
if rec.s == 'free' then
  -- only a public code is redeemable unclaimed; its redeemer will need room under the limit
  if redis.call('HGET', KEYS[1], 'public') ~= '1' then return { 'refused', 'not_held', rec.s } end
  local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
  if #held_of(KEYS[3], claimant) >= limit then return { 'refused', 'holder_at_limit', rec.s, tostring(limit), claimant } end
elseif rec.h ~= claimant then
  return { 'refused', 'other_holder' }
end
local now = now_ms()
if hold_live(rec, now) and rec.hc ~= claimant then return { 'refused', 'held', rec.s, '', '', tostring(rec.hu) } end
local closed = window_closed(KEYS[1], now) or code_window_closed(rec, now)
if closed then return closed end
rec.hc, rec.hu = claimant, now + tonumber(ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
-- a held free code is kept out of claims until the hold ends
if rec.s == 'free' then put_free(KEYS[4], KEYS[5], ARGV[1], rec, now) end
return code_reply(ARGV[1], rec, now)
