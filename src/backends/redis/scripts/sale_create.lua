-- sale_create: insert a sale the shared preflight accepted, if the SKU index is still at the
-- version the preflight read (else 'retry': the caller reads again and re-runs the preflight).
-- KEYS[1] T:sku:<sku>, KEYS[2] this request's reply (a re-send answers it: lib.lua replay_reply). ARGV[1] tag, [2] version, [3] id, [4] sku, [5] starts ms, [6] ends ms,
-- [7] cap ('' = unlimited), [8] per-customer limit, [9] metadata JSON, [10] ms the reply is kept.
-- Returns 'ok' | 'retry' | {'refused', 'sale_exists'} (a refusal id of core/refusals.ts)
local version, id, sku, starts, ends = tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if redis.call('EXISTS', k('sale', id)) == 1 then return replay_reply(KEYS[2]) or { 'refused', 'sale_exists' } end
if tonumber(redis.call('GET', k('skuv', sku)) or '0') ~= version then return 'retry' end
local now = now_ms()
redis.call('HSET', k('sale', id), 'id', id, 'sku', sku, 'starts', starts, 'ends', ends, 'cap', ARGV[7], 'limit', ARGV[8],
  'meta', ARGV[9], 'cancelled', '', 'created', now, 'sold', 0, 'held', 0, 'announced', '', 'ended', '')
redis.call('HSET', KEYS[1], id, cjson.encode({ s = tonumber(starts), e = tonumber(ends) }))
redis.call('INCR', k('skuv', sku))
redis.call('ZADD', k('skuall', sku), 0, id)
redis.call('ZADD', T .. ':starts', starts, id)
redis.call('ZADD', T .. ':ends', ends, id)
return remember_reply(KEYS[2], ARGV[10], 'ok')
