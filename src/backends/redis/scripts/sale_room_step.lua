-- sale_room_step: admission for the sale (and, at the first step after the opening, the fair
-- start's draw), then ARGV[3]: 'get' (the room and its ticket counts), 'join' (one ticket per
-- customer ARGV[4], numbered in the order this store saw the arrivals; admission runs again after
-- it, so a newcomer to an empty line is admitted at once), 'ticket' (the customer's ticket as it
-- is now), 'verify' (mark the customer's ticket verified, then admission again) or 'recount' (begin a
-- recount of the tickets by status now, whatever the checks of sale_lib.lua `counters_drifted`
-- say; then as 'get').
-- KEYS[1] T:room:<id>. ARGV[1] tag, [2] sale id, [3] op, [4] customer, [5] a draw seed (16 hex
-- digits, used only if this step makes the draw).
-- Returns 'not_found' (no room) | JSON {room, ticket?, counts?}; room.more is true when this step did a
-- slice of a longer job (the opening's draw, the sell-out sweep) and more remain (the caller steps
-- again: each step does one more slice); room.recounting is set while a recount of the counters is
-- in progress ('get' and 'recount' step again until the recount they first saw has ended).
local id, op, c, seed = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = now_ms()
if op == 'recount' then
  local state = room_state(id)
  if not state then return 'not_found' end
  recount_begin(id, state)
end
local room = admit(id, now, seed)
if not room then return 'not_found' end
if op == 'join' then
  if not ticket_of(id, c) then
    local n = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
    local t = { n = n, c = c, j = now }
    -- placed now unless this is a fair start's pre-queue (placed by the draw at the opening; once a
    -- draw has begun, its pre-queue is fixed and a newcomer comes after it)
    if room.fair ~= '1' or room.drawn ~= nil or room.dsize ~= nil then
      t.p = n
      redis.call('HSET', k('tplace', id), n, c)
    else
      redis.call('HINCRBY', KEYS[1], 'unplaced', 1)
    end
    if room.verify == '1' then t.v = 0 end
    set_status(id, t, 'waiting')
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
if op == 'get' or op == 'recount' then
  -- the counters kept with every ticket's status (set_status), re-read: admission above moved them
  local n = redis.call('HMGET', KEYS[1], 'n_waiting', 'n_admitted', 'n_used', 'n_expired', 'n_sold_out')
  local counts = { waiting = tonumber(n[1]) or 0, admitted = tonumber(n[2]) or 0, used = tonumber(n[3]) or 0, expired = tonumber(n[4]) or 0, sold_out = tonumber(n[5]) or 0 }
  return cjson.encode({ room = room, counts = counts })
end
return room_reply(room, ticket_of(id, c))
