-- cart_cancel: release every line of an active cart in one step; a cancelled or expired cart
-- answers as it is. KEYS[1] T:carts. ARGV[1] T (the cart's group), [2] cart id.
-- Returns {'ok', cart view JSON} | {'not_found'} | {'refused', 'cart_confirmed'}
local cart = cart_of(ARGV[2])
if not cart then return { 'not_found' } end
local now = now_ms()
if cart.s == 'confirmed' then return { 'refused', 'cart_confirmed' } end
if cart.s == 'active' and cart.e > now then
  for _, line in ipairs(cart.l) do
    T = line.t
    local rec = hold_of(line.h)
    if rec.s == 'active' then
      rec.s = 'cancelled'
      save_hold(rec)
      drop_active(rec)
      redis.call('HINCRBY', k('sale', line.sale), 'held', -rec.q)
    end
  end
  T = CART_T
  cart.s = 'cancelled'
  save_cart(cart)
end
return { 'ok', cart_view(cart, now) }
