-- sale_sweep: the hold-expiry job for one sale group: expires up to `limit` stale holds of any
-- sale of the group (T:due, hold id -> expiry), each recording hold.expired once.
-- KEYS[1] T:due. ARGV[1] tag, [2] limit. Returns the number of holds expired.
local now = now_ms()
local n = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
  local rec = hold_of(id)
  if rec and rec.s == 'active' then
    expire_hold(rec, now)
    n = n + 1
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return n
