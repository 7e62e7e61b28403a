-- sale_cancel_hold: release an active hold; cancelled/expired holds answer as they are.
-- KEYS[1] T:holds. ARGV[1] tag, [2] hold id.
-- Returns {'ok', hold JSON} | {'not_found'}
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (hold_confirmed, hold_in_cart)
local hold_id = ARGV[2]
local rec = hold_of(hold_id)
if not rec then return { 'not_found' } end
if rec.s == 'confirmed' then return { 'refused', 'hold_confirmed', 'order', rec.o } end
if rec.cart then return { 'refused', 'hold_in_cart', 'cart', rec.cart } end
expire_stale(rec.sale, now_ms())
rec = hold_of(hold_id)
if rec.s == 'active' then
  rec.s = 'cancelled'
  save_hold(rec)
  drop_active(rec)
  redis.call('HINCRBY', k('sale', rec.sale), 'held', -rec.q)
end
return { 'ok', cjson.encode(rec) }
