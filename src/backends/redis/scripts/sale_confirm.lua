-- sale_confirm: turn an active hold into an order (a confirmed hold replays its order).
-- KEYS[1] T:holds. ARGV[1] tag, [2] hold id, [3] id for the new order.
-- Returns {'ok'|'replayed', order JSON, sale id} | {'not_found'}
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (hold_cancelled, hold_expired,
--   sale_not_live, hold_in_cart: a cart's line is confirmed with its cart)
local hold_id, order_id = ARGV[2], ARGV[3]
local rec = hold_of(hold_id)
if not rec then return { 'not_found' } end
if rec.s == 'confirmed' then return { 'replayed', redis.call('HGET', k('orders', rec.sale), rec.o), rec.sale } end
if rec.s == 'cancelled' then return { 'refused', 'hold_cancelled' } end
if rec.cart then return { 'refused', 'hold_in_cart', 'cart', rec.cart } end
local now = now_ms()
expire_stale(rec.sale, now)
rec = hold_of(hold_id)
if rec.s == 'expired' then return { 'refused', 'hold_expired', 'expiresAt', iso_ms(rec.e) } end
local s = sale_state(rec.sale)
if s.cancelled ~= '' then return { 'refused', 'sale_not_live', 'status', 'cancelled', 'sale', rec.sale } end
-- an active hold already counts against the cap: it becomes an order without another stock check
-- (also after the sale's end: its holds stay confirmable until they expire)
drop_active(rec)
redis.call('HINCRBY', k('sale', rec.sale), 'held', -rec.q)
local order = insert_order(s, rec.sale, rec.c, rec.q, hold_id, order_id, now)
rec.s = 'confirmed'
rec.o = order_id
save_hold(rec)
return { 'ok', cjson.encode(order), rec.sale }
