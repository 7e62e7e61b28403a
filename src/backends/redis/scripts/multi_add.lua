-- multi_add: a multi-use code (one code, N uses), refused when the pool has the code already.
-- KEYS[1] pool hash, KEYS[2] codes hash, KEYS[3] multi-use codes hash, KEYS[4] this request's reply (a re-send answers it: lib.lua replay_reply)
-- ARGV[1] code, ARGV[2] max uses, ARGV[3] uses per claimant ('' = no limit), ARGV[4] starts, ARGV[5] expires ('' = open),
-- ARGV[6] ms the reply is kept
-- Returns {'ok', record JSON} | {'not_found', 'pool'} | {'refused', 'code_exists'} (a refusal id of core/refusals.ts)
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found', 'pool' } end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  return replay_reply(KEYS[4]) or { 'refused', 'code_exists' }
end
local rec = { m = tonumber(ARGV[2]), u = 0 }
if ARGV[3] ~= '' then rec.p = tonumber(ARGV[3]) end
if ARGV[4] ~= '' then rec.vs = tonumber(ARGV[4]) end
if ARGV[5] ~= '' then rec.ve = tonumber(ARGV[5]) end
local json = cjson.encode(rec)
redis.call('HSET', KEYS[3], ARGV[1], json)
return remember_reply(KEYS[4], ARGV[6], { 'ok', json })
