-- hold_release: end a live checkout hold before it expires.
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] free zset, KEYS[4] parked zset, KEYS[5] multi-use codes hash
-- ARGV[1] code, ARGV[2] the hold's claimant ('' = any)
-- Returns code reply | {'not_found', what}
--   | {'refused', reason (a refusal id of core/refusals.ts), status, max, holder, instant ms}
--     (multi_use_not_holdable; held until: another claimant's hold)
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if raw == false then
  if redis.call('HEXISTS', KEYS[5], ARGV[1]) == 1 then return { 'refused', 'multi_use_not_holdable' } end
  return { 'not_found', 'code' }
end
local rec = cjson.decode(raw)
local now = now_ms()
if not hold_live(rec, now) then return code_reply(ARGV[1], rec, now) end
if ARGV[2] ~= '' and rec.hc ~= ARGV[2] then return { 'refused', 'held', rec.s, '', '', tostring(rec.hu) } end
rec.hc, rec.hu = nil, nil
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
if rec.s == 'free' then put_free(KEYS[3], KEYS[4], ARGV[1], rec, now) end
return code_reply(ARGV[1], rec, now)
