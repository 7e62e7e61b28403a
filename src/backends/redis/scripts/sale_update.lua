-- sale_update: write a merged definition the shared preflight accepted, if nothing it judged has
-- moved since (SKU index version; the cap still covers sold + held after expiring stale holds).
-- KEYS[1] T:sku:<sku>. ARGV[1] tag, [2] version, [3] id, [4] starts ms, [5] ends ms, [6] cap,
-- [7] limit, [8] metadata JSON. Returns 'ok' | 'retry' | 'not_found'
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (sale_cancelled,
--   sale_limit_below_units with the most units a customer has)
local version, id, sku_starts, ends, cap = tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local s = sale_state(id)
if not s then return 'not_found' end
if s.cancelled ~= '' then return { 'refused', 'sale_cancelled' } end
if tonumber(redis.call('GET', k('skuv', s.sku)) or '0') ~= version then return 'retry' end
local now = now_ms()
expire_stale(id, now)
s = sale_state(id)
if cap ~= '' and tonumber(cap) < tonumber(s.sold) + tonumber(s.held) then return 'retry' end
-- a per-customer limit goes down only to what a customer has (orders and live holds)
if tonumber(ARGV[7]) < tonumber(s.limit) then
  local max = 0
  for _, raw in ipairs(redis.call('HVALS', k('cust', id))) do
    local units = units_of(id, cjson.decode(raw))
    if units > max then max = units end
  end
  if max > tonumber(ARGV[7]) then return { 'refused', 'sale_limit_below_units', 'units', max } end
end
redis.call('HSET', k('sale', id), 'starts', sku_starts, 'ends', ends, 'cap', cap, 'limit', ARGV[7], 'meta', ARGV[8])
-- a cap lowered to exactly what is sold sells the sale out in this step, as a last order would
if cap ~= '' and tonumber(cap) > 0 and tonumber(s.sold) >= tonumber(cap) and redis.call('HSETNX', k('sale', id), 'soldout', '1') == 1 then
  sale_event(id, 'sale.sold_out', 'sale.sold_out:' .. id, { sale = id, sku = s.sku, sold = tonumber(s.sold), cap = tonumber(cap) }, now)
end
redis.call('HSET', KEYS[1], id, cjson.encode({ s = tonumber(sku_starts), e = tonumber(ends) }))
redis.call('INCR', k('skuv', s.sku))
if s.announced == '' then redis.call('ZADD', T .. ':starts', sku_starts, id) end
if s.ended == '' then redis.call('ZADD', T .. ':ends', ends, id) end
return 'ok'
