-- sale_hold (read-only): a hold as of now; an active hold past its expiry reads as expired.
-- KEYS[1] T:holds. ARGV[1] tag, [2] hold id. Returns {'ok', hold JSON} | {'not_found'}
local rec = hold_of(ARGV[2])
if not rec then return { 'not_found' } end
if rec.s == 'active' and rec.e <= now_ms() then rec.s = 'expired' end
return { 'ok', cjson.encode(rec) }
