-- sale_end: the expiration job for one sale group (due index T:ends, sale id -> end): records
-- sale.ended once per sale whose end has come (none for a cancelled sale). Its unexpired holds
-- stay confirmable until they expire.
-- KEYS[1] T:ends. ARGV[1] tag. Returns the sale ids whose end was recorded now.
local now = now_ms()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('ZREM', KEYS[1], id)
  local s = sale_state(id)
  if s and s.ended == '' then
    redis.call('HSET', k('sale', id), 'ended', now)
    expire_stale(id, now)
    if s.cancelled == '' then
      sale_event(id, 'sale.ended', 'sale.ended:' .. id, { sale = id, sku = s.sku, sold = tonumber(redis.call('HGET', k('sale', id), 'sold')), cap = s.cap ~= '' and tonumber(s.cap) or cjson.null }, now)
    end
    out[#out + 1] = id
  end
end
return out
