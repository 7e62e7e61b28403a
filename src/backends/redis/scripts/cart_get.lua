-- cart_get (read-only): a cart as of now. KEYS[1] T:carts. ARGV[1] T (the cart's group), [2] cart id.
-- Returns {'ok', cart view JSON} | {'not_found'}
local cart = cart_of(ARGV[2])
if not cart then return { 'not_found' } end
return { 'ok', cart_view(cart, now_ms()) }
