-- Shared cart fragment, prepended (after lib.lua and sale_lib.lua) to every cart_*.lua script.
-- A cart lives in the group of its first line's sale (ARGV[1], the tag T every script starts in):
--   T:carts   hash cart id -> JSON {id, c, s ('active'|'confirmed'|'cancelled'), e (expires), ca,
--             f (the request's fingerprint), l = lines [{t = the sale's group tag, sale, q, h = hold id}]}
--   T:ckeys   hash idempotency key -> '<T>|<cart id>' (on a Cluster; a single node keeps one such
--             hash in the prefix's own slot, {prefix}:cart-keys)
-- A line's hold lives in its sale's group, as any hold ({..., cart = cart id}), so every sale step
-- counts it. A line of another group is reached by switching T to that line's tag: on a single
-- node every group is in reach; on a Cluster the caller only sends carts whose lines share T.
local CART_T = T

local function cart_of(id)
  local raw = redis.call('HGET', CART_T .. ':carts', id)
  if raw == false then return nil end
  return cjson.decode(raw)
end

local function save_cart(cart)
  redis.call('HSET', CART_T .. ':carts', cart.id, cjson.encode(cart))
end

-- The cart as read: the clock applied to its status, each line's order (once confirmed).
local function cart_view(cart, now)
  local view = { id = cart.id, c = cart.c, s = cart.s, e = cart.e, ca = cart.ca, l = {} }
  if view.s == 'active' and cart.e <= now then view.s = 'expired' end
  for i, line in ipairs(cart.l) do
    T = line.t
    local h = hold_of(line.h)
    view.l[i] = { sale = line.sale, q = line.q, h = line.h, o = h and h.o or false }
  end
  T = CART_T
  return cjson.encode(view)
end
