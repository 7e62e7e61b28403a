-- sale_audit (read-only): one snapshot of everything the audit of a sale reads (I2, I3, I4, I7).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id.
-- Returns JSON {now, sale, holds = [hold], orders = [order], cust = {customer: rec}, events = {type: n},
--   active = {hold id: expiry}, carts = [cart], room = false | {counted, counts = {status: counter},
--   ledger = {status: tickets}, unplaced = drawn room's tickets without a place, misplaced = [number]}}
--   | 'not_found'
-- carts: every cart with a line on the sale, read whole for the cart rule (core/sales/cart-audit.ts):
--   {id, rec = the cart record (cart_lib.lua) or false, lines = [{h = hold id, listed = the cart's
--   own line or false, hold = its record or false, sc = its sale is cancelled, orders = [order made
--   from it]}]}: the cart's listed lines in order, then holds of this sale that name the cart unlisted.
-- A cart lives in the group of its first line (its id carries it: cart_<gggg>…), each line's hold in
-- its sale's group (the line's t): on a single node every group is in reach, on a Cluster a cart's
-- sales share this sale's slot.
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
local group_tag = function(group) return string.sub(T, 1, -6) .. group .. '}' end
local sale_orders = {}
-- the orders of a sale (tag t), by the hold they were made from; read once per sale
local function orders_by_hold(t, sale)
  local at = t .. ':orders:' .. sale
  if not sale_orders[at] then
    local by = {}
    for _, o in ipairs(redis.call('HVALS', at)) do
      local rec = cjson.decode(o)
      if rec.h then
        by[rec.h] = by[rec.h] or {}
        table.insert(by[rec.h], rec)
      end
    end
    sale_orders[at] = by
  end
  return sale_orders[at]
end
local function line_of(t, sale, hold_id, listed)
  local raw = redis.call('HGET', t .. ':holds', hold_id)
  local cancelled = redis.call('HGET', t .. ':sale:' .. sale, 'cancelled')
  return {
    h = hold_id,
    listed = listed,
    hold = raw ~= false and cjson.decode(raw) or false,
    sc = cancelled ~= false and cancelled ~= '',
    orders = orders_by_hold(t, sale)[hold_id] or {},
  }
end
-- the sale's holds of each cart, in one pass (a cart has at most one line on a sale)
local carts, of_cart = {}, {}
for _, h in ipairs(holds) do
  if h.cart then
    if not of_cart[h.cart] then
      of_cart[h.cart] = {}
      carts[#carts + 1] = { id = h.cart, lines = {} }
    end
    table.insert(of_cart[h.cart], h)
  end
end
for _, cart in ipairs(carts) do
  local raw = redis.call('HGET', group_tag(string.sub(cart.id, 6, 9)) .. ':carts', cart.id)
  cart.rec = raw ~= false and cjson.decode(raw) or false
  local listed = {}
  if cart.rec then
    for _, l in ipairs(cart.rec.l) do
      listed[l.h] = true
      table.insert(cart.lines, line_of(l.t, l.sale, l.h, { sale = l.sale, q = l.q }))
    end
  end
  for _, h in ipairs(of_cart[cart.id]) do
    if not listed[h.id] then table.insert(cart.lines, line_of(T, id, h.id, false)) end
  end
end
-- the waiting room, if any: its status counters (set_status) against its tickets, and once drawn,
-- every ticket in its own place (T:tplace names it back) — a draw half done or done twice shows
local room = false
local state = room_state(id)
if state then
  local counted = {}
  for _, st in ipairs({ 'waiting', 'admitted', 'used', 'expired', 'sold_out' }) do
    counted[st] = tonumber(redis.call('HGET', k('room', id), 'n_' .. st) or '0')
  end
  local ledger = { waiting = 0, admitted = 0, used = 0, expired = 0, sold_out = 0 }
  local unplaced, misplaced = 0, {}
  local drawn = state.drawn ~= nil and not state.legacy
  for _, raw in ipairs(redis.call('HVALS', k('tickets', id))) do
    local t = cjson.decode(raw)
    ledger[t.s] = (ledger[t.s] or 0) + 1
    if t.p then
      if redis.call('HGET', k('tplace', id), t.p) ~= t.c and #misplaced < 10 then misplaced[#misplaced + 1] = t.n end
    elseif drawn then
      unplaced = unplaced + 1
    end
  end
  room = { counted = state.counted == '1', counts = counted, ledger = ledger, unplaced = unplaced, misplaced = misplaced }
end
-- empty tables would encode as {} either way; the TypeScript side accepts both
return cjson.encode({ now = now_ms(), sale = s, holds = holds, orders = orders, cust = cust, events = events, active = active, carts = carts, room = room })
