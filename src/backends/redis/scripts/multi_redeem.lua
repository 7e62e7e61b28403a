-- multi_redeem: one use of a multi-use code, once per order.
-- KEYS[1] pool hash, KEYS[2] multi-use codes hash, KEYS[3] uses hash ("code\norder" -> JSON {c, at}),
-- KEYS[4] uses per claimant hash ("code\nclaimant" -> n)
-- ARGV[1] code, ARGV[2] claimant ('' = none), ARGV[3] order
-- Returns {'use', record JSON, claimant, at, order} | {'not_found', what} | {'not_yet_valid'|'expired', at[, 'code']}
--   | {'refused', reason (a refusal id of core/refusals.ts), '', max}
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then return { 'not_found', 'code' } end
local rec = cjson.decode(raw)
local use_key = ARGV[1] .. '\n' .. ARGV[3]
local prior = redis.call('HGET', KEYS[3], use_key)
if prior then
  -- the same checkout again: its use, unchanged
  local p = cjson.decode(prior)
  if ARGV[2] ~= '' and p.c ~= ARGV[2] then return { 'refused', 'order_of_other_claimant' } end
  return { 'use', raw, p.c, tostring(p.at), ARGV[3] }
end
local now = now_ms()
local closed = window_closed(KEYS[1], now) or code_window_closed(rec, now)
if closed then return closed end
if rec.u >= rec.m then return { 'refused', 'uses_exhausted', '', tostring(rec.m) } end
if rec.p then
  if ARGV[2] == '' then return { 'refused', 'claimant_required' } end
  local mine = tonumber(redis.call('HGET', KEYS[4], ARGV[1] .. '\n' .. ARGV[2]) or '0')
  if mine >= rec.p then return { 'refused', 'uses_per_claimant', '', tostring(rec.p) } end
end
if ARGV[2] ~= '' then redis.call('HINCRBY', KEYS[4], ARGV[1] .. '\n' .. ARGV[2], 1) end
redis.call('HSET', KEYS[3], use_key, cjson.encode({ c = ARGV[2], at = now }))
rec.u = rec.u + 1
raw = cjson.encode(rec)
redis.call('HSET', KEYS[2], ARGV[1], raw)
return { 'use', raw, ARGV[2], tostring(now), ARGV[3] }
