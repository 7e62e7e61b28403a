-- cart_confirm: every line of an active, unexpired cart becomes an order, in one step.
-- KEYS[1] T:carts. ARGV[1] T (the cart's group), [2] cart id, then one new order id per line.
-- Returns {'ok'|'replayed', cart view JSON, orders JSON [{sale, order}]} | {'not_found'}
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (cart_cancelled,
--   cart_expired, cart_line_cancelled)
local cart = cart_of(ARGV[2])
if not cart then return { 'not_found' } end
local now = now_ms()
local function orders()
  local out = {}
  for i, line in ipairs(cart.l) do
    T = line.t
    local h = hold_of(line.h)
    out[i] = { sale = line.sale, order = cjson.decode(redis.call('HGET', k('orders', line.sale), h.o)) }
  end
  T = CART_T
  return cjson.encode(out)
end
if cart.s == 'confirmed' then
  -- the orders carry this request's new ids only if this very request confirmed it (a driver's
  -- re-send after a lost reply): it answers as its first run did; any other confirm is a replay
  T = cart.l[1].t
  local first = hold_of(cart.l[1].h).o == ARGV[3]
  T = CART_T
  return { first and 'ok' or 'replayed', cart_view(cart, now), orders() }
end
if cart.s == 'cancelled' then return { 'refused', 'cart_cancelled' } end
if cart.e <= now then return { 'refused', 'cart_expired', 'expiresAt', iso_ms(cart.e) } end
-- unexpired, so no line is stale; a line that is not active was cancelled with its sale
for _, line in ipairs(cart.l) do
  T = line.t
  if hold_of(line.h).s ~= 'active' then
    T = CART_T
    return { 'refused', 'cart_line_cancelled', 'sale', line.sale }
  end
end
for i, line in ipairs(cart.l) do
  T = line.t
  local rec = hold_of(line.h)
  drop_active(rec)
  redis.call('HINCRBY', k('sale', line.sale), 'held', -rec.q)
  insert_order(sale_state(line.sale), line.sale, rec.c, rec.q, rec.id, ARGV[2 + i], now)
  rec.s = 'confirmed'
  rec.o = ARGV[2 + i]
  save_hold(rec)
end
T = CART_T
cart.s = 'confirmed'
save_cart(cart)
return { 'ok', cart_view(cart, now), orders() }
