-- sale_room_step: admission for the sale (and, at the first step after the opening, the fair
-- start's draw), then ARGV[3]: 'get' (the room and its ticket counts), 'join' (one ticket per
-- customer ARGV[4], numbered in the order this store saw the arrivals; admission runs again after
-- it, so a newcomer to an empty line is admitted at once), 'ticket' (the customer's ticket as it
-- is now) or 'verify' (mark the customer's ticket verified, then admission again).
-- KEYS[1] T:room:<id>. ARGV[1] tag, [2] sale id, [3] op, [4] customer, [5] a draw seed (16 hex
-- digits, used only if this step makes the draw).
-- Returns 'not_found' (no room) | JSON {room, ticket?, counts?}
local id, op, c, seed = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = now_ms()
local room = admit(id, now, seed)
if not room then return 'not_found' end
if op == 'join' then
  if not ticket_of(id, c) then
    local n = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
    local t = { n = n, c = c, s = 'waiting', j = now }
    -- placed now unless this is a fair start's pre-queue (placed by the draw at the opening)
    if room.fair ~= '1' or room.drawn ~= nil then
      t.p = n
      redis.call('HSET', k('tplace', id), n, c)
    end
    if room.verify == '1' then t.v = 0 end
    save_ticket(id, t)
    redis.call('HSET', k('tnum', id), n, c)
  end
  room = admit(id, now, seed)
elseif op == 'verify' then
  local t = ticket_of(id, c)
  if t and t.v == 0 then
    t.v = nil
    save_ticket(id, t)
    local p = place_of(room, t)
    -- passed over already: first in line at the next admission
    if t.s == 'waiting' and p and p <= room.through then redis.call('ZADD', k('vq', id), p, p) end
    room = admit(id, now, seed)
  end
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
