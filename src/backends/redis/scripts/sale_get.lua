-- sale_get (read-only): the sale hash, the server's clock and the units of unexpired holds
-- (expired holds stop counting at once, before any step marks them).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id. Returns {'ok', JSON {sale, now, held}} | {'not_found'}
local s = sale_state(ARGV[2])
if not s then return { 'not_found' } end
local now = now_ms()
return { 'ok', cjson.encode({ sale = s, now = now, held = tonumber(s.held) - stale_units(ARGV[2], now) }) }
