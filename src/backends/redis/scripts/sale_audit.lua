-- sale_audit (read-only): one snapshot of everything the audit of a sale reads (I2, I3, I4, I7).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id.
-- Returns JSON {now, sale, holds = [hold], orders = [order], cust = {customer: rec}, events = {type: n}} | 'not_found'
local id = ARGV[2]
local s = sale_state(id)
if not s then return 'not_found' end
local holds = {}
for _, hold_id in ipairs(redis.call('SMEMBERS', k('hs', id))) do
  local rec = hold_of(hold_id)
  holds[#holds + 1] = rec or { id = hold_id, missing = true }
end
local orders = {}
local raw = redis.call('HVALS', k('orders', id))
for i = 1, #raw do orders[i] = cjson.decode(raw[i]) end
local cust = {}
local pairs_ = redis.call('HGETALL', k('cust', id))
for i = 1, #pairs_, 2 do cust[pairs_[i]] = cjson.decode(pairs_[i + 1]) end
local events = {}
for _, entry in ipairs(redis.call('XRANGE', k('events', id), '-', '+')) do
  local f = entry[2]
  for i = 1, #f, 2 do
    if f[i] == 'type' then events[f[i + 1]] = (events[f[i + 1]] or 0) + 1 end
  end
end
local active = {}
local a = redis.call('ZRANGE', k('active', id), 0, -1, 'WITHSCORES')
for i = 1, #a, 2 do active[a[i]] = tonumber(a[i + 1]) end
-- empty tables would encode as {} either way; the TypeScript side accepts both
return cjson.encode({ now = now_ms(), sale = s, holds = holds, orders = orders, cust = cust, events = events, active = active })
