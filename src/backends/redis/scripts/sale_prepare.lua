-- sale_prepare (read-only): what the shared preflight (core/sales/rules.ts) needs, read in one
-- snapshot: the clock, the SKU's other non-cancelled sales, the version of that index (the write
-- that follows is refused as 'retry' if the index moved) and, for an update, the stored sale with
-- its committed units (sold + unexpired holds).
-- KEYS[1] T:sku:<sku>. ARGV[1] tag, [2] sku, [3] sale id.
-- Returns JSON {now, version, same = [{id, s, e}], sale?, committed}
local sku, sale_id = ARGV[2], ARGV[3]
local now = now_ms()
local same = {}
local index = redis.call('HGETALL', KEYS[1])
for i = 1, #index, 2 do
  if index[i] ~= sale_id then
    local w = cjson.decode(index[i + 1])
    same[#same + 1] = { id = index[i], s = w.s, e = w.e }
  end
end
local out = { now = now, version = tonumber(redis.call('GET', k('skuv', sku)) or '0'), same = same }
local s = sale_state(sale_id)
if s then
  out.sale = s
  out.committed = tonumber(s.sold) + tonumber(s.held) - stale_units(sale_id, now)
end
return cjson.encode(out)
