-- sale_cancel: stop a sale for good; its active holds are cancelled and it leaves the SKU's
-- overlap index and the activation index. Idempotent.
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id. Returns 'ok' | 'not_found'
local id = ARGV[2]
local s = sale_state(id)
if not s then return 'not_found' end
if s.cancelled ~= '' then return 'ok' end
local now = now_ms()
redis.call('HSET', KEYS[1], 'cancelled', now, 'held', 0)
for _, hold_id in ipairs(redis.call('ZRANGE', k('active', id), 0, -1)) do
  local rec = hold_of(hold_id)
  if rec and rec.s == 'active' then
    rec.s = 'cancelled'
    save_hold(rec)
    drop_active(rec)
  end
end
redis.call('DEL', k('active', id))
redis.call('HDEL', k('sku', s.sku), id)
redis.call('INCR', k('skuv', s.sku))
redis.call('ZREM', T .. ':starts', id)
return 'ok'
