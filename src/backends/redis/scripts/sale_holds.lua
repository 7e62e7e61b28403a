-- sale_holds (read-only): a sale's active, unexpired holds by the server's clock, soonest expiry
-- first (the T:active:<id> index, ties by hold id), or one customer's (at most one).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id, [3] limit, [4] customer ('' = every customer).
-- Returns {'ok', JSON array of hold records} | {'not_found'}
if not sale_state(ARGV[2]) then return { 'not_found' } end
local now = now_ms()
local out = {}
if ARGV[4] ~= '' then
  local _, h = units_of(ARGV[2], cust_of(ARGV[2], ARGV[4]))
  if h and h.e > now then out[1] = h end
else
  local ids = redis.call('ZRANGEBYSCORE', k('active', ARGV[2]), '(' .. now, '+inf', 'LIMIT', 0, tonumber(ARGV[3]))
  for _, id in ipairs(ids) do
    local h = hold_of(id)
    if h and h.s == 'active' then out[#out + 1] = h end
  end
end
-- cjson encodes an empty table as {}: the caller reads that as no holds
return { 'ok', cjson.encode(out) }
