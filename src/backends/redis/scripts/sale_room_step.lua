-- sale_room_step: admission for the sale, then ARGV[3]: 'get' (the room and its ticket counts),
-- 'join' (one ticket per customer ARGV[4], numbered in the order this store saw the arrivals;
-- admission runs again after it, so a newcomer to an empty line is admitted at once) or 'ticket'
-- (the customer's ticket as it is now).
-- KEYS[1] T:room:<id>. ARGV[1] tag, [2] sale id, [3] op, [4] customer.
-- Returns 'not_found' (no room) | JSON {room, ticket?, counts?}
local id, op, c = ARGV[2], ARGV[3], ARGV[4]
local now = now_ms()
local room = admit(id, now)
if not room then return 'not_found' end
if op == 'join' then
  if not ticket_of(id, c) then
    local n = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
    save_ticket(id, { n = n, c = c, s = 'waiting', j = now })
    redis.call('HSET', k('tnum', id), n, c)
  end
  room = admit(id, now)
end
if op == 'get' then
  local counts = { waiting = 0, admitted = 0, used = 0, expired = 0, sold_out = 0 }
  for _, raw in ipairs(redis.call('HVALS', k('tickets', id))) do
    local t = cjson.decode(raw)
    counts[t.s] = counts[t.s] + 1
  end
  return cjson.encode({ room = room, counts = counts })
end
return room_reply(room, ticket_of(id, c))
