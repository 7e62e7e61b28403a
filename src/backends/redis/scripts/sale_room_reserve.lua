-- sale_room_reserve: reserves with an admitted ticket, in one step with admission, the ticket
-- check, the hold and the per-customer limit. The caller has verified the token's signature and
-- passes the number it carries; the ticket is then used. A used ticket replays its reservation
-- (idempotency key 'ticket:<n>').
-- KEYS[1] T:room:<id>. ARGV[1] tag, [2] sale id, [3] customer, [4] ticket number, [5] quantity,
-- [6] ttl ms, [7] id for a new hold, [8] a draw seed (sale_room_step).
-- Returns 'not_found' | {'invalid_ticket'} | {'not_admitted', room/ticket JSON}
--   | the replies of reserve_step (sale_lib.lua)
local id, c, number = ARGV[2], ARGV[3], tonumber(ARGV[4])
local room = admit(id, now_ms(), ARGV[8])
if not room then return 'not_found' end
local t = ticket_of(id, c)
if not t or t.n ~= number then return { 'invalid_ticket' } end
local key = 'ticket:' .. t.n
if t.s == 'used' then return reserve_step(id, c, tonumber(ARGV[5]), tonumber(ARGV[6]), key, ARGV[7], true) end
if t.s ~= 'admitted' then return { 'not_admitted', room_reply(room, t) } end
local reply = reserve_step(id, c, tonumber(ARGV[5]), tonumber(ARGV[6]), key, ARGV[7], true)
if reply[1] == 'ok' or reply[1] == 'replayed' then
  t.h = cjson.decode(reply[2]).id
  set_status(id, t, 'used')
  redis.call('ZREM', k('adm', id), t.n)
end
return reply
