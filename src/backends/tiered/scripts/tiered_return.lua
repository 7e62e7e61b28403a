-- tiered_return: undoes a fast-path decision the ledger did not turn into an order (tiered mode).
-- KEYS[1] state hash, KEYS[2] customers hash, KEYS[3] keys hash
-- ARGV[1] grant, ARGV[2] customer, ARGV[3] quantity, ARGV[4] idempotency key ('' none),
-- ARGV[5] what happened to the units: 'give' (the grant still has them: back to `left` if the grant
-- is still current and no refill is replacing it), 'drop' (the ledger revoked the grant: stop selling from it), 'recheck' (units
-- went back to the ledger: forget a sold-out answer so the next buyer asks the ledger at once)
-- Returns 1 when the units went back to `left`; 0 when the caller must return them to the ledger.
local st, cust, keys = KEYS[1], KEYS[2], KEYS[3]
local grant, customer, qty, key, what = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
if what == 'recheck' then
  if redis.call('HGET', st, 'mode') == 'fast' then redis.call('HSET', st, 'soldout_until', 0) end
  return 0
end
if qty > 0 and redis.call('HINCRBY', cust, customer, -qty) <= 0 then redis.call('HDEL', cust, customer) end
if key ~= '' then redis.call('HDEL', keys, key) end
local f = redis.call('HMGET', st, 'grant', 'mode', 'refill_until')
local current = f[1] == grant and f[2] == 'fast'
if what == 'drop' then
  if current then redis.call('HSET', st, 'left', 0, 'grant', '', 'soldout_until', 0) end
  return 0
end
-- A refill under way (tiered_take handed out its lease: the grant is sealed, `left` 0) replaces
-- `left` with the next grant's size when it installs: units given here would be overwritten and stay
-- in the old grant's escrow, unsold, until it expires. They go back to the ledger instead.
if what == 'give' and current and tonumber(f[3] or '0') > now_ms() then return 0 end
if what == 'give' and current then
  redis.call('HINCRBY', st, 'left', qty)
  return 1
end
return 0
