-- sale_activate: the activation job for one sale group. Cluster-safe design: a due index per
-- group (T:starts, sale id -> start), scanned group by group from the registry of groups; the
-- sale, its SKU's wishlist and its event stream share the group's slot, so announcing a sale —
-- the mark, the sale.live event and one sale.live.notify event per wishlister and channel — is
-- this one script, and a sale leaves the index in the same step: exactly once however many
-- processes run the job.
-- KEYS[1] T:starts. ARGV[1] tag. Returns a flat list {sale id, notifications, …}
local CHANNELS = { 'email', 'webPush', 'webhook' } -- core/sales/rules.ts CHANNELS, same order
local now = now_ms()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('ZREM', KEYS[1], id)
  local s = sale_state(id)
  -- a cancelled sale is never announced; one that ended before anyone ran the job neither
  if s and s.cancelled == '' and s.announced == '' and now < tonumber(s.ends) then
    redis.call('HSET', k('sale', id), 'announced', now)
    local about = { sale = id, sku = s.sku, startsAt = iso_ms(tonumber(s.starts)), endsAt = iso_ms(tonumber(s.ends)), metadata = cjson.decode(s.meta) }
    sale_event(id, 'sale.live', 'sale.live:' .. id, about, now)
    local sent = 0
    for _, customer in ipairs(redis.call('ZRANGE', k('wishx', s.sku), 0, -1)) do
      local raw = redis.call('HGET', k('wish', s.sku), customer)
      if raw then
        local channels = cjson.decode(raw).ch
        for _, channel in ipairs(CHANNELS) do
          local to = channels[channel]
          if to ~= nil then
            local payload = { sale = id, sku = s.sku, startsAt = about.startsAt, endsAt = about.endsAt, metadata = about.metadata, customer = customer, channel = channel, to = to }
            sale_event(id, 'sale.live.notify', 'sale.live:' .. id .. ':' .. customer .. ':' .. channel, payload, now)
            sent = sent + 1
          end
        end
      end
    end
    out[#out + 1] = id
    out[#out + 1] = sent
  end
end
return out
