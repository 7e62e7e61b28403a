-- sale_forecast (read-only): what a sale's forecast needs, in one snapshot on the store's clock:
-- units ordered in the last 1, 5 and 15 minutes with the first order time inside each window
-- (T:ot:<id>, member '<quantity>|<order id>' scored by its time), what is left (cap − sold −
-- unexpired holds; nil when unlimited) and the sale's "empty soon" watch (T:watch:<id>).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id.
-- Returns 'not_found' | JSON {now, remaining?, w = [[taken, first], …], watch?}
local id = ARGV[2]
local s = sale_state(id)
if not s then return 'not_found' end
local now = now_ms()
local recent = redis.call('ZRANGEBYSCORE', k('ot', id), now - 900000, '+inf', 'WITHSCORES')
local w = {}
for i, ms in ipairs({ 60000, 300000, 900000 }) do
  local from, taken, first = now - ms, 0, -1
  for j = 1, #recent, 2 do
    local at = tonumber(recent[j + 1])
    if at >= from then
      taken = taken + tonumber(string.match(recent[j], '^(%d+)|'))
      if first < 0 then first = at end
    end
  end
  w[i] = { taken, first }
end
local out = { now = now, w = w }
if s.cap ~= '' then out.remaining = tonumber(s.cap) - tonumber(s.sold) - (tonumber(s.held) - stale_units(id, now)) end
local watch = redis.call('HMGET', k('watch', id), 'within', 'armed', 'fired')
if watch[1] then out.watch = { within = tonumber(watch[1]), armed = tonumber(watch[2]), fired = tonumber(watch[3]) } end
return cjson.encode(out)
