-- sale_buy: buy `quantity` units outright, every rule in this one script.
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id, [3] customer, [4] quantity, [5] idempotency key
-- ('' = none), [6] id for a new order.
-- Returns {'ok'|'replayed', order JSON} | {'not_found'} | {'conflict', key record JSON}
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (sale_not_live,
--   sale_ticket_required, sale_limit, sale_sold_out; numbers as integer replies)
local sale_id, c, q, key, order_id = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found' } end
-- The order id is new per request, so an order under it means this very request already ran: the
-- client re-sent it after its connection dropped (ioredis re-sends scripts in flight). Answer what
-- the first run did; running it again would count the units twice for one order.
local done = redis.call('HGET', k('orders', sale_id), order_id)
if done then return { 'ok', done } end
local r = replay_of(sale_id, key, 'buy', c, q)
if r then
  if r[1] == 'conflict' then return r end
  return { 'replayed', redis.call('HGET', k('orders', sale_id), r[2]) }
end
local now = now_ms()
expire_stale(sale_id, now)
local s = sale_state(sale_id)
local status = status_of(s, now)
if status ~= 'live' then return { 'refused', 'sale_not_live', 'status', status } end
-- a sale with a waiting room sells only through admitted tickets (reserve, then confirm)
if s.room == '1' then return { 'refused', 'sale_ticket_required' } end
local units = units_of(sale_id, cust_of(sale_id, c))
if units + q > tonumber(s.limit) then return { 'refused', 'sale_limit', 'units', units, 'quantity', q, 'limit', tonumber(s.limit) } end
if s.cap ~= '' then
  local available = tonumber(s.cap) - tonumber(s.sold) - tonumber(s.held)
  if q > available then return { 'refused', 'sale_sold_out', 'available', math.max(0, available) } end
end
local order = insert_order(s, sale_id, c, q, nil, order_id, now)
save_key(sale_id, key, 'buy', c, q, order_id)
return { 'ok', cjson.encode(order) }
