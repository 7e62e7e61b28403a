-- update: limit, threshold, metadata of a pool.
-- KEYS[1] pool hash, KEYS[2] held hash
-- ARGV[1] limit ('' = keep), ARGV[2] threshold ('' = keep, 'null' = none), ARGV[3] metadata JSON ('' = keep),
-- ARGV[4] starts, ARGV[5] expires (epoch ms; '' = keep, 'null' = open), ARGV[6] max redemptions,
-- ARGV[7] per claimant ('' = keep, 'null' = none), ARGV[8] public codes ('' = keep, '1' / '0'),
-- ARGV[9] code format JSON ('' = keep, 'null' = none)
-- Returns 'ok' | 'not_found' | {'refused', 'limit_below_holdings', 'held', maxHeld} (a refusal id of
-- core/refusals.ts, field, value)
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
if ARGV[1] ~= '' then
  local limit = tonumber(ARGV[1])
  if limit < tonumber(redis.call('HGET', KEYS[1], 'limit')) then
    local max = 0
    for _, raw in ipairs(redis.call('HVALS', KEYS[2])) do
      local n = #cjson.decode(raw)
      if n > max then max = n end
    end
    if max > limit then return { 'refused', 'limit_below_holdings', 'held', max } end
  end
  redis.call('HSET', KEYS[1], 'limit', ARGV[1])
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'threshold', ARGV[2] == 'null' and '' or ARGV[2])
  after_free_rose(KEYS[1], tonumber(redis.call('HGET', KEYS[1], 'free')))
end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'metadata', ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'starts', ARGV[4] == 'null' and '' or ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'expires', ARGV[5] == 'null' and '' or ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'maxr', ARGV[6] == 'null' and '' or ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'maxrc', ARGV[7] == 'null' and '' or ARGV[7]) end
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'public', ARGV[8]) end
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'format', ARGV[9] == 'null' and '' or ARGV[9]) end
return 'ok'
