-- create: a pool, atomically refusing a second one of the same name.
-- KEYS[1] pool hash, KEYS[2] this request's reply (a re-send answers it: lib.lua replay_reply)
-- ARGV[1] name, ARGV[2] perClaimantLimit, ARGV[3] lowStockThreshold ('' = none), ARGV[4] metadata JSON,
-- ARGV[5] starts, ARGV[6] expires (epoch ms, '' = open), ARGV[7] max redemptions, ARGV[8] per claimant ('' = none),
-- ARGV[9] public codes ('1' / '0'), ARGV[10] code format JSON ('' = none), ARGV[11] ms the reply is kept
-- Returns 'ok' | {'refused', 'pool_exists'} (a refusal id of core/refusals.ts)
if redis.call('EXISTS', KEYS[1]) == 1 then return replay_reply(KEYS[2]) or { 'refused', 'pool_exists' } end
redis.call('HSET', KEYS[1],
  'name', ARGV[1], 'limit', ARGV[2], 'threshold', ARGV[3], 'metadata', ARGV[4], 'starts', ARGV[5], 'expires', ARGV[6], 'maxr', ARGV[7], 'maxrc', ARGV[8], 'public', ARGV[9], 'format', ARGV[10],
  'created_at', tostring(now_ms()),
  'total', 0, 'free', 0, 'claimed', 0, 'redeemed', 0, 'revoked', 0,
  'armed', '1', 'low_events', 0, 'seq', 0)
return remember_reply(KEYS[2], ARGV[11], 'ok')
