-- cart_hold: hold every line of a cart, or none. Every line is judged first (as reserve_step judges
-- a reservation: window, waiting room, an existing hold of the customer, the per-customer limit,
-- the cap); only when all pass are the holds written, all with one expiry.
-- KEYS[1] T:carts. ARGV[1] T (the cart's group: its first line's), [2] cart id, [3] customer,
-- [4] ttl ms, [5] idempotency key ('' = none), [6] the request's fingerprint, [7] line count n,
-- [8] the hash of idempotency keys (key -> '<cart's tag>|<cart id>': the prefix's own slot on a
-- single node, so a key is one key whatever its cart's sales; the cart's group on a Cluster),
-- then per line: tag, sale id, quantity, id for the hold.
-- Returns {'ok'|'replayed', cart view JSON} (replayed: + stored fingerprint)
--   | {'refused', reason (a refusal id of core/refusals.ts), 'line', line (0-based), 'sale', sale id,
--      field, value, …} (cart_line_no_sale, sale_not_live, cart_line_room, cart_line_held,
--      sale_limit, sale_sold_out)
local cart_id, c, ttl, key, fingerprint, n = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], tonumber(ARGV[7])
local key_index = ARGV[8]
local now = now_ms()
-- The cart id is new per request, so a cart under it means this very request already ran: the
-- client re-sent it after its connection dropped (ioredis re-sends scripts in flight). Answer what
-- the first run did; judging it again would refuse every line as already held.
local done = cart_of(cart_id)
if done then return { 'ok', cart_view(done, now) } end
if key ~= '' then
  local prior = redis.call('HGET', key_index, key)
  if prior ~= false then
    local sep = string.find(prior, '|', 1, true)
    CART_T = string.sub(prior, 1, sep - 1)
    T = CART_T
    local cart = cart_of(string.sub(prior, sep + 1))
    return { 'replayed', cart_view(cart, now), cart.f }
  end
end
local lines = {}
for i = 1, n do
  local at = 8 + (i - 1) * 4
  lines[i] = { t = ARGV[at + 1], sale = ARGV[at + 2], q = tonumber(ARGV[at + 3]), h = ARGV[at + 4] }
end
-- a refusal of line i: its reason and the context it names
local function refused(i, reason, ...)
  return { 'refused', reason, 'line', i - 1, 'sale', lines[i].sale, ... }
end
for i, line in ipairs(lines) do
  T = line.t
  local s = sale_state(line.sale)
  if not s then return refused(i, 'cart_line_no_sale') end
  expire_stale(line.sale, now)
  s = sale_state(line.sale)
  local status = status_of(s, now)
  if status ~= 'live' then return refused(i, 'sale_not_live', 'status', status) end
  if s.room == '1' then return refused(i, 'cart_line_room') end
  local units, own = units_of(line.sale, cust_of(line.sale, c))
  if own then return refused(i, 'cart_line_held', 'hold', own.id) end
  if units + line.q > tonumber(s.limit) then
    return refused(i, 'sale_limit', 'units', units, 'quantity', line.q, 'limit', tonumber(s.limit))
  end
  if s.cap ~= '' then
    local available = tonumber(s.cap) - tonumber(s.sold) - tonumber(s.held)
    if line.q > available then return refused(i, 'sale_sold_out', 'available', math.max(0, available)) end
  end
end
-- every line passed: write them all
local expires = now + ttl
for i, line in ipairs(lines) do
  T = line.t
  local rec = { id = line.h, sale = line.sale, c = c, q = line.q, s = 'active', e = expires, ca = now, cart = cart_id }
  redis.call('SADD', k('hs', line.sale), rec.id)
  local cust = cust_of(line.sale, c)
  cust.h = rec.id
  save_cust(line.sale, c, cust)
  save_hold(rec)
  redis.call('ZADD', k('active', line.sale), expires, rec.id)
  redis.call('ZADD', T .. ':due', expires, rec.id)
  redis.call('HINCRBY', k('sale', line.sale), 'held', line.q)
end
T = CART_T
local cart = { id = cart_id, c = c, s = 'active', e = expires, ca = now, f = fingerprint, l = lines }
save_cart(cart)
if key ~= '' then redis.call('HSET', key_index, key, CART_T .. '|' .. cart_id) end
return { 'ok', cart_view(cart, now) }
