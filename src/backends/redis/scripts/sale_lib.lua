-- Shared sale fragment, prepended (after lib.lua) to every sale_*.lua script.
-- ARGV[1] of every sale script is the sale group's hash tag T = '{prefix:sg:gggg}' (keys.ts); every
-- key a script touches is named from T and so lives in KEYS[1]'s Cluster slot (KEYS[1] routes the
-- call). Keys of a group, per sale id or SKU:
--   T:sale:<id>    hash: id sku starts ends (epoch ms) cap ('' = unlimited) limit meta (JSON)
--                  cancelled ('' or ms) created sold held announced ended soldout
--   T:sku:<sku>    hash sale id -> JSON {s, e}: the non-cancelled sales of a SKU (overlap index)
--   T:skuv:<sku>   version of that index (the preflight's optimistic check)
--   T:skuall:<sku> zset of every sale id of the SKU (listing)
--   T:wish:<sku>   hash customer -> JSON {ch = channels, at}; T:wishx:<sku> zset (ordered listing)
--   T:holds        hash hold id -> JSON {id, sale, c, q, s, e (expires), ca, o (order id), cart (a cart's line)}
--   T:due          zset hold id -> expiry of every active hold of the group (the sweep)
--   T:starts       zset sale id -> start of sales not yet announced (the activation index)
--   T:ends         zset sale id -> end of sales whose end is not yet recorded
--   T:active:<id>  zset hold id -> expiry of the sale's active holds (lazy expiry)
--   T:hs:<id>      set of every hold id of the sale (audit)
--   T:cust:<id>    hash customer -> JSON {o = units ordered, h = active hold id}
--   T:orders:<id>  hash order id -> JSON {id, c, q, h (hold id), at}
--   T:keys:<id>    hash idempotency key -> JSON {k = 'buy'|'reserve', c, q, r = result id}
--   T:events:<id>  stream of the sale's outbox events (type, key, payload, at)
--   T:ot:<id>      zset '<quantity>|<order id>' -> order time (forecasts)
--   T:watch:<id>   hash: the sale's "empty soon" watch (within, armed, fired)
--   T:room:<id>    hash: the sale's waiting room (rate, window, secret, next, through, budget,
--                  refilled, created, swept, fair, verify, drawn, seed, preq; n_<status> counters of
--                  tickets by status, counted = '1' once kept; unplaced = tickets without a place; while
--                  the opening's draw is in progress dsize dseed dleft ds1 ds2 dstart, see `draw`; while
--                  the counters are recounted rcur r_<status>, and rgen numbers the recounts, see
--                  `recount_slice`; budget has 20 decimals when this build wrote it last, see
--                  `budget_text`); the sale hash has
--                  room = '1' while it has one. A room without `fair` predates the fair start: its
--                  line is in arrival order (place = number) and counts as drawn.
--   T:tickets:<id> hash customer -> JSON ticket {n, c, s, j (joined), u (admitted until), h (hold),
--                  p (place; absent in a fair start's pre-queue until the draw), v (0: unverified)}
--   T:tnum:<id>    hash ticket number -> customer; T:adm:<id> zset admitted number -> until
--   T:tplace:<id>  hash place -> customer; T:vq:<id> zset place of tickets verified after admission
--                  passed them over (admitted first)
--   T:dord:<id>    hash index -> arrival number: the not-yet-placed part of a draw in progress
-- Replies are {status, ...} with status from one set decoded by sales.ts.

local T = ARGV[1]
local function k(kind, id) return T .. ':' .. kind .. ':' .. id end

local function sale_event(sale_id, typ, key, payload, now)
  redis.call('XADD', k('events', sale_id), '*', 'type', typ, 'key', key, 'payload', cjson.encode(payload), 'at', tostring(now))
end

local function sale_state(sale_id)
  local raw = redis.call('HGETALL', k('sale', sale_id))
  if #raw == 0 then return nil end
  local s = {}
  for i = 1, #raw, 2 do s[raw[i]] = raw[i + 1] end
  return s
end

-- The rule of core/sales/rules.ts saleStatus, on the server's clock.
local function status_of(s, now)
  if s.cancelled ~= '' then return 'cancelled' end
  if now < tonumber(s.starts) then return 'scheduled' end
  if now >= tonumber(s.ends) then return 'ended' end
  if s.cap ~= '' and tonumber(s.sold) >= tonumber(s.cap) then return 'sold_out' end
  return 'live'
end

local function cust_of(sale_id, c)
  local raw = redis.call('HGET', k('cust', sale_id), c)
  if raw == false then return { o = 0 } end
  return cjson.decode(raw)
end

local function save_cust(sale_id, c, rec)
  redis.call('HSET', k('cust', sale_id), c, cjson.encode(rec))
end

local function hold_of(id)
  local raw = redis.call('HGET', T .. ':holds', id)
  if raw == false then return nil end
  return cjson.decode(raw)
end

local function save_hold(rec)
  redis.call('HSET', T .. ':holds', rec.id, cjson.encode(rec))
end

-- Units a customer has in a sale: ordered + their active hold; and the hold itself.
local function units_of(sale_id, cust)
  if cust.h then
    local h = hold_of(cust.h)
    if h and h.s == 'active' then return cust.o + h.q, h end
  end
  return cust.o, nil
end

-- A hold leaves the active state (confirmed, cancelled, expired): indexes and the customer's pointer.
local function drop_active(rec)
  redis.call('ZREM', k('active', rec.sale), rec.id)
  redis.call('ZREM', T .. ':due', rec.id)
  local cust = cust_of(rec.sale, rec.c)
  if cust.h == rec.id then
    cust.h = nil
    save_cust(rec.sale, rec.c, cust)
  end
end

local function expire_hold(rec, now)
  rec.s = 'expired'
  save_hold(rec)
  drop_active(rec)
  redis.call('HINCRBY', k('sale', rec.sale), 'held', -rec.q)
  sale_event(rec.sale, 'hold.expired', 'hold.expired:' .. rec.id, { sale = rec.sale, hold = rec.id, customer = rec.c, quantity = rec.q, expiresAt = iso_ms(rec.e) }, now)
end

-- Lazy expiry: every step first expires the sale's stale holds (expires <= now), once each.
local function expire_stale(sale_id, now)
  local stale = redis.call('ZRANGEBYSCORE', k('active', sale_id), '-inf', now)
  for _, id in ipairs(stale) do
    local rec = hold_of(id)
    if rec and rec.s == 'active' then expire_hold(rec, now) else redis.call('ZREM', k('active', sale_id), id) end
  end
end

-- Units of active holds that have already expired but are not marked yet (read-only scripts).
local function stale_units(sale_id, now)
  local units = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', k('active', sale_id), '-inf', now)) do
    local rec = hold_of(id)
    if rec and rec.s == 'active' then units = units + rec.q end
  end
  return units
end

local function insert_order(s, sale_id, c, q, hold_id, order_id, now)
  local order = { id = order_id, c = c, q = q, h = hold_id, at = now }
  redis.call('HSET', k('orders', sale_id), order_id, cjson.encode(order))
  redis.call('ZADD', k('ot', sale_id), now, q .. '|' .. order_id)
  local cust = cust_of(sale_id, c)
  cust.o = cust.o + q
  save_cust(sale_id, c, cust)
  local sold = redis.call('HINCRBY', k('sale', sale_id), 'sold', q)
  -- sale.sold_out once per sale (the flag is the event's idempotency)
  if s.cap ~= '' and sold >= tonumber(s.cap) and redis.call('HSETNX', k('sale', sale_id), 'soldout', '1') == 1 then
    sale_event(sale_id, 'sale.sold_out', 'sale.sold_out:' .. sale_id, { sale = sale_id, sku = s.sku, sold = sold, cap = tonumber(s.cap) }, now)
  end
  return order
end

-- The stored result of an idempotency key: nil (fresh), {'conflict', record} or {'replay', result id}.
local function replay_of(sale_id, key, kind, c, q)
  if key == '' then return nil end
  local raw = redis.call('HGET', k('keys', sale_id), key)
  if raw == false then return nil end
  local r = cjson.decode(raw)
  if r.k ~= kind or r.c ~= c or r.q ~= q then return { 'conflict', raw } end
  return { 'replay', r.r }
end

local function save_key(sale_id, key, kind, c, q, result)
  if key ~= '' then redis.call('HSET', k('keys', sale_id), key, cjson.encode({ k = kind, c = c, q = q, r = result })) end
end

-- The body of a reservation (sale_reserve.lua, and sale_room_reserve.lua with an admitted ticket).
-- Returns {'ok'|'replayed', hold JSON} | {'conflict', key record JSON}
--   | {'refused', reason (a refusal id of core/refusals.ts), field, value, …} (sale_not_live,
--   sale_ticket_required, sale_limit, sale_sold_out, hold_in_cart; numbers as integer replies)
local function reserve_step(sale_id, c, q, ttl, key, new_id, via_ticket)
  local r = replay_of(sale_id, key, 'reserve', c, q)
  if r then
    if r[1] == 'conflict' then return r end
    return { 'replayed', redis.call('HGET', T .. ':holds', r[2]) }
  end
  local now = now_ms()
  expire_stale(sale_id, now)
  local s = sale_state(sale_id)
  local status = status_of(s, now)
  if status ~= 'live' then return { 'refused', 'sale_not_live', 'status', status } end
  -- a sale behind a waiting room is reserved only with an admitted ticket (sale_room_reserve)
  if not via_ticket and s.room == '1' then return { 'refused', 'sale_ticket_required' } end
  local units, own = units_of(sale_id, cust_of(sale_id, c))
  -- a cart's line is replaced only with its whole cart
  if own and own.cart then return { 'refused', 'hold_in_cart', 'hold', own.id, 'cart', own.cart } end
  local own_units = own and own.q or 0
  if units + q - own_units > tonumber(s.limit) then return { 'refused', 'sale_limit', 'units', units, 'quantity', q - own_units, 'limit', tonumber(s.limit) } end
  if s.cap ~= '' then
    -- everyone else's holds count; the customer's own hold is being replaced
    local available = tonumber(s.cap) - tonumber(s.sold) - (tonumber(s.held) - own_units)
    if q > available then return { 'refused', 'sale_sold_out', 'available', math.max(0, available) } end
  end
  local rec = own
  if rec then
    rec.q = q
    rec.e = now + ttl
  else
    rec = { id = new_id, sale = sale_id, c = c, q = q, s = 'active', e = now + ttl, ca = now }
    redis.call('SADD', k('hs', sale_id), new_id)
    local cust = cust_of(sale_id, c)
    cust.h = new_id
    save_cust(sale_id, c, cust)
  end
  save_hold(rec)
  redis.call('ZADD', k('active', sale_id), rec.e, rec.id)
  redis.call('ZADD', T .. ':due', rec.e, rec.id)
  redis.call('HINCRBY', k('sale', sale_id), 'held', q - own_units)
  save_key(sale_id, key, 'reserve', c, q, rec.id)
  return { 'ok', cjson.encode(rec) }
end

-- Waiting rooms. Admission for one sale (core/sales/waiting-room.ts describes the rules; the token
-- bucket is `admissions` there, mirrored here because it must run inside this step): expire unused
-- windows, close the line when the sale is over or sold out, else admit the next tickets in
-- number order at the configured rate while units remain for them. Returns the room (a table) or
-- nil when the sale has no room.
local function ticket_of(sale_id, c)
  local raw = redis.call('HGET', k('tickets', sale_id), c)
  if raw == false then return nil end
  return cjson.decode(raw)
end

local function save_ticket(sale_id, t)
  redis.call('HSET', k('tickets', sale_id), t.c, cjson.encode(t))
end

-- A ticket's status changes (or a new ticket, `t.s` nil, enters as `s`): the room's counter of each
-- status moves in the same step as the ticket, so `get` reads counts without reading the tickets
-- (the audit checks they equal the tickets).
--
-- While a recount runs (recount_slice), the tickets it has already counted (numbers up to
-- recount_upto) move its partial counts r_<status> as well, so the recount ends on the counts of
-- the moment it ends. Set by `admit`, which every script that changes a status runs first.
local recount_upto = nil
local function set_status(sale_id, t, s)
  local room = k('room', sale_id)
  if t.s then redis.call('HINCRBY', room, 'n_' .. t.s, -1) end
  redis.call('HINCRBY', room, 'n_' .. s, 1)
  if recount_upto and t.s and t.n <= recount_upto then
    redis.call('HINCRBY', room, 'r_' .. t.s, -1)
    redis.call('HINCRBY', room, 'r_' .. s, 1)
  end
  t.s = s
  save_ticket(sale_id, t)
end

local function ticket_by_number(sale_id, n)
  local c = redis.call('HGET', k('tnum', sale_id), n)
  if c == false then return nil end
  return ticket_of(sale_id, c)
end

-- The token bucket's level as this build writes it: with 20 decimals. Builds before it wrote
-- tostring (at most 14 significant digits, so never 20 decimals), and every admission of theirs
-- writes the budget: a budget in another form says such a build has admitted, expired or used
-- tickets without (or, before the counters, without any) moving this build's counters.
local function budget_text(x)
  return string.format('%.20f', x)
end

local function budget_ours(raw)
  local decimals = raw and string.match(raw, '%.(%d+)$')
  return decimals ~= nil and #decimals == 20
end

local function room_state(sale_id)
  local raw = redis.call('HGETALL', k('room', sale_id))
  if #raw == 0 then return nil end
  local r = {}
  for i = 1, #raw, 2 do r[raw[i]] = raw[i + 1] end
  r.budget_ours = budget_ours(r.budget)
  for _, f in ipairs({ 'rate', 'window', 'next', 'through', 'budget', 'refilled', 'created', 'swept' }) do r[f] = tonumber(r[f] or '0') end
  for _, f in ipairs({ 'dsize', 'dleft', 'ds1', 'ds2', 'unplaced', 'rcur', 'rgen' }) do r[f] = r[f] and tonumber(r[f]) end
  if r.fair == nil then
    r.legacy, r.fair, r.verify, r.drawn, r.seed, r.preq = true, '0', '0', tostring(r.created), '', '0'
  end
  return r
end

-- The place of a ticket (nil in a fair start's pre-queue before the draw).
local function place_of(room, t)
  if t.p then return t.p end
  if room.legacy then return t.n end
  return nil
end

local function ticket_at(sale_id, room, place)
  local c = redis.call('HGET', k(room.legacy and 'tnum' or 'tplace', sale_id), place)
  if c == false then return nil end
  return ticket_of(sale_id, c)
end

-- The opening: every ticket so far is the pre-queue (numbers 1..size). A fair start places them by
-- the seeded Fisher–Yates shuffle of core/sales/fair-draw.ts, step for step (L'Ecuyer's combined
-- generator: every product stays below 2^47, exact in Lua's doubles), and records the seed;
-- otherwise their place is their number. `seed` is 16 hex digits from the stepping client.
--
-- The draw runs in slices of at most SLICE places per script run, so that a pre-queue of
-- 10,000 does not stop Redis (every other sale, lock and claim) for the whole shuffle. Fisher–Yates
-- from the top fixes place i at its step i, so each step writes one final place; what the next
-- slice needs is in the room hash: dsize (the pre-queue, fixed at the first slice), dseed (the seed
-- of the first slice: later slices ignore the seed their caller proposes), dleft (places 1..dleft
-- still to draw), ds1/ds2 (the generator's state after place dleft + 1), dstart (the opening's
-- step), and T:dord:<id> (hash index -> number: the not-yet-placed part of the shuffled array where
-- it differs from the identity). A slice is one script, so a caller that dies between slices
-- leaves a consistent half-done draw that the next step of anyone continues with the same seed and
-- state: one permutation however it is sliced and whoever runs the slices. Until the last slice
-- nobody is admitted (admit returns early), and arrivals meanwhile are placed after the pre-queue.
local SLICE = 500
-- tickets a long job (the draw, the sell-out sweep) may still touch in this script run, whatever
-- number of admissions it makes; a step that stops short says `more` (the caller steps again)
local slice_budget = SLICE

-- Whether the counters may have drifted: an older build's scripts (a rolling upgrade runs them on
-- the same keys for minutes) change ticket statuses without moving them. Each check is O(1) and
-- catches a kind of their writes: an admission (the budget's form), a join (more tickets than
-- counted), an expiry or use outside an admission (admitted tickets not as many as the admitted
-- index), a sell-out sweep (a line swept to its end with tickets counted as waiting).
local function counters_drifted(sale_id, room)
  if room.counted ~= '1' or not room.budget_ours then return true end
  local n = function(status) return tonumber(room['n_' .. status]) or 0 end
  if n('waiting') + n('admitted') + n('used') + n('expired') + n('sold_out') ~= redis.call('HLEN', k('tickets', sale_id)) then return true end
  if n('admitted') ~= redis.call('ZCARD', k('adm', sale_id)) then return true end
  return room.swept >= room.next - 1 and n('waiting') > 0
end

-- Gives the tickets of numbers[x] the place places[x], in a few batched calls (the draw's slices
-- are bounded by these calls, not by one round of calls per ticket); with only_unplaced, tickets
-- that have a place keep it. The draw and the recount (recount_slice) place tickets through it.
local function place_tickets(sale_id, numbers, places, only_unplaced)
  if #numbers == 0 then return end
  local cs = redis.call('HMGET', k('tnum', sale_id), unpack(numbers))
  local raws = redis.call('HMGET', k('tickets', sale_id), unpack(cs))
  local tickets, index = {}, {}
  for x = 1, #numbers do
    local t = cjson.decode(raws[x])
    if not (only_unplaced and t.p) then
      t.p = places[x]
      tickets[#tickets + 1] = cs[x]
      tickets[#tickets + 1] = cjson.encode(t)
      index[#index + 1] = places[x]
      index[#index + 1] = cs[x]
    end
  end
  if #tickets > 0 then
    redis.call('HSET', k('tickets', sale_id), unpack(tickets))
    redis.call('HSET', k('tplace', sale_id), unpack(index))
  end
end

-- Starts (or starts again) a recount of the room's tickets: r_<status> from zero, tickets counted
-- by number from 1 (rcur: counted up to), one slice per script run (recount_slice); rgen numbers
-- the recounts, so a caller waiting for one sees it end even if another begins. The budget is
-- written in this build's form, so that only an older build's later admission looks foreign.
local function recount_begin(sale_id, room)
  room.rcur, room.rgen = 0, (room.rgen or 0) + 1
  redis.call('HSET', k('room', sale_id), 'rcur', 0, 'rgen', room.rgen, 'budget', budget_text(room.budget), 'r_waiting', 0, 'r_admitted', 0, 'r_used', 0, 'r_expired', 0, 'r_sold_out', 0, 'r_unplaced', 0)
  room.budget_ours = true
end

-- One slice of a recount: the next tickets by number, as many as the script's slice budget
-- allows. Before the opening's draw it counts the tickets without a place too (an older build's
-- join in a fair start's pre-queue does not count them, and a draw that is not fair relies on
-- that count to skip placing). After the opening, a ticket an older build's join left without a
-- place (it does when its step does not draw first: a draw this build began on a sale that is no
-- longer live) is placed at its number, as this build's join places a newcomer after the
-- pre-queue, and queued first if admission has already passed that place. At the end the
-- counters are the recount's.
local function recount_slice(sale_id, room)
  local from, last = room.rcur + 1, math.min(room.next - 1, room.rcur + slice_budget)
  local counted = { waiting = 0, admitted = 0, used = 0, expired = 0, sold_out = 0, unplaced = 0 }
  if last >= from then
    local numbers = {}
    for n = from, last do numbers[#numbers + 1] = n end
    local cs = redis.call('HMGET', k('tnum', sale_id), unpack(numbers))
    local raws = redis.call('HMGET', k('tickets', sale_id), unpack(cs))
    local preq = room.drawn ~= nil and not room.legacy and tonumber(room.preq) or room.dsize
    local late = {}
    for x = 1, #numbers do
      local t = cjson.decode(raws[x])
      counted[t.s] = counted[t.s] + 1
      if t.p == nil then
        counted.unplaced = counted.unplaced + 1
        if preq and t.n > preq then
          late[#late + 1] = t.n
          if t.s == 'waiting' and t.n <= room.through and not (room.verify == '1' and t.v == 0) then redis.call('ZADD', k('vq', sale_id), t.n, t.n) end
        end
      end
    end
    -- each at its number
    place_tickets(sale_id, late, late, true)
    slice_budget = slice_budget - #numbers
  end
  local key = k('room', sale_id)
  for status, n in pairs(counted) do
    if n ~= 0 then redis.call('HINCRBY', key, 'r_' .. status, n) end
  end
  if last < room.next - 1 then
    room.rcur = last
    redis.call('HSET', key, 'rcur', last)
    return
  end
  local r = redis.call('HMGET', key, 'r_waiting', 'r_admitted', 'r_used', 'r_expired', 'r_sold_out')
  redis.call('HSET', key, 'n_waiting', r[1], 'n_admitted', r[2], 'n_used', r[3], 'n_expired', r[4], 'n_sold_out', r[5], 'counted', '1')
  if room.drawn == nil and room.dsize == nil then
    room.unplaced = tonumber(redis.call('HGET', key, 'r_unplaced'))
    redis.call('HSET', key, 'unplaced', room.unplaced)
  end
  redis.call('HDEL', key, 'rcur', 'r_waiting', 'r_admitted', 'r_used', 'r_expired', 'r_sold_out', 'r_unplaced')
  room.rcur, room.counted = nil, '1'
end

local function draw_begin(sale_id, room, now, seed)
  local size = room.next - 1
  local used, s1, s2, left = '', 0, 0, size
  if room.fair == '1' then
    used = seed
    s1 = tonumber(string.sub(seed, 1, 8), 16) % 2147483562 + 1
    s2 = tonumber(string.sub(seed, 9, 16), 16) % 2147483398 + 1
  elseif room.unplaced == 0 and room.rcur == nil then
    -- arrival order and every ticket placed at its join (place = number): nothing to write (unless
    -- a recount is under way: an older build's joins may have left tickets unplaced and uncounted)
    left = 0
  end
  room.dsize, room.dseed, room.dleft, room.ds1, room.ds2, room.dstart = size, used, left, s1, s2, tostring(now)
  redis.call('HSET', k('room', sale_id), 'dsize', size, 'dseed', used, 'dleft', left, 'ds1', s1, 'ds2', s2, 'dstart', room.dstart)
end

-- Draws the next slice (beginning the draw if need be); true once every place is drawn.
local function draw(sale_id, room, now, seed)
  if room.dleft == nil then draw_begin(sale_id, room, now, seed) end
  local i, s1, s2 = room.dleft, room.ds1, room.ds2
  local fair = room.dseed ~= ''
  local ord = k('dord', sale_id)
  -- this slice's view of T:dord (read through on first use, written back at the end)
  local cache, moved = {}, {}
  local function at(x)
    local v = cache[x]
    if v == nil then
      v = tonumber(redis.call('HGET', ord, x)) or x
      cache[x] = v
    end
    return v
  end
  if fair and i >= 1 and slice_budget > 0 then
    -- the indices this slice places, in one read (the swaps' other ends are read as they come)
    local range = {}
    for x = i, math.max(1, i - slice_budget + 1), -1 do range[#range + 1] = x end
    local got = redis.call('HMGET', ord, unpack(range))
    for n, x in ipairs(range) do cache[x] = tonumber(got[n]) or x end
  end
  local numbers, places = {}, {}
  while i >= 1 and slice_budget > 0 do
    local v = i
    if fair then
      v = at(i)
      if i >= 2 then
        s1 = (s1 * 40014) % 2147483563
        s2 = (s2 * 40692) % 2147483399
        local z = s1 - s2
        if z < 1 then z = z + 2147483562 end
        local j = 1 + z % i
        if j ~= i then
          -- swap: the number at j is placed at i, the one at i moves to j
          local vj = at(j)
          cache[j] = v
          moved[j] = true
          v = vj
        end
      end
    end
    -- (arrival order: place i is number i; only a fair pre-queue switched to it lacks a place)
    numbers[#numbers + 1] = v
    places[#places + 1] = i
    i = i - 1
    slice_budget = slice_budget - 1
  end
  -- indices above i are placed and never read again: only moves below it are kept for later slices
  local back = {}
  for x in pairs(moved) do
    if x <= i then
      back[#back + 1] = x
      back[#back + 1] = cache[x]
    end
  end
  if #back > 0 then redis.call('HSET', ord, unpack(back)) end
  place_tickets(sale_id, numbers, places, not fair)
  room.dleft, room.ds1, room.ds2 = i, s1, s2
  if i > 0 then
    redis.call('HSET', k('room', sale_id), 'dleft', i, 'ds1', s1, 'ds2', s2)
    return false
  end
  redis.call('DEL', ord)
  redis.call('HDEL', k('room', sale_id), 'dsize', 'dseed', 'dleft', 'ds1', 'ds2', 'dstart', 'unplaced')
  room.drawn, room.seed, room.preq = room.dstart, room.dseed, tostring(room.dsize)
  room.dsize, room.dseed, room.dleft, room.ds1, room.ds2, room.dstart, room.unplaced = nil, nil, nil, nil, nil, nil, nil
  redis.call('HSET', k('room', sale_id), 'drawn', room.drawn, 'seed', room.seed, 'preq', room.preq)
  return true
end

local function admit_ticket(sale_id, room, t, now)
  t.u = now + room.window
  set_status(sale_id, t, 'admitted')
  redis.call('ZADD', k('adm', sale_id), t.u, t.n)
end

local function admit_line(sale_id, room, now, seed)
  expire_stale(sale_id, now)
  local s = sale_state(sale_id)
  for _, n in ipairs(redis.call('ZRANGEBYSCORE', k('adm', sale_id), '-inf', now)) do
    local t = ticket_by_number(sale_id, n)
    if t and t.s == 'admitted' then set_status(sale_id, t, 'expired') end
    redis.call('ZREM', k('adm', sale_id), n)
  end
  local status = status_of(s, now)
  if status == 'ended' or status == 'cancelled' or (s.cap ~= '' and tonumber(s.sold) >= tonumber(s.cap)) then
    -- over for good: everyone still waiting is told (by number: places may be drawn, and tickets
    -- passed over for verification wait behind `through`), in slices like the draw: a caller is
    -- answered once the sweep is done, and admission never runs again for this sale
    local n, last = room.swept, room.next - 1
    while n < last and slice_budget > 0 do
      n = n + 1
      local t = ticket_by_number(sale_id, n)
      if t and t.s == 'waiting' then set_status(sale_id, t, 'sold_out') end
      slice_budget = slice_budget - 1
    end
    if n > room.swept then
      room.swept = n
      redis.call('HSET', k('room', sale_id), 'swept', n)
    end
    if n < last then room.more = true end
    return room
  end
  if status ~= 'live' or s.cap == '' then return room end -- the line forms before the start; admission begins at it
  -- a draw in progress: nobody is admitted before every place is drawn
  if room.drawn == nil and not draw(sale_id, room, now, seed) then
    -- told to the caller, who steps again (a room left half-drawn by a sale that ended says nothing)
    room.more = true
    return room
  end
  local limit = tonumber(s.limit)
  local unused = redis.call('ZCARD', k('adm', sale_id))
  local budget = math.min(math.max(1, room.rate), room.budget + (math.max(0, now - room.refilled) / 1000) * room.rate)
  local free = tonumber(s.cap) - tonumber(s.sold) - tonumber(s.held) - unused * limit
  local slots = math.max(0, math.ceil(free / limit))
  local n = math.max(0, math.min(math.floor(budget), slots))
  local admitted = 0
  -- first those verified after admission passed them over: their place is ahead of the rest
  if n > 0 then
    for _, p in ipairs(redis.call('ZRANGE', k('vq', sale_id), 0, n - 1)) do
      local t = ticket_at(sale_id, room, p)
      if t and t.s == 'waiting' then
        admit_ticket(sale_id, room, t, now)
        admitted = admitted + 1
      end
      redis.call('ZREM', k('vq', sale_id), p)
    end
  end
  local place = room.through
  while admitted < n and place < room.next - 1 do
    place = place + 1
    local t = ticket_at(sale_id, room, place)
    -- with verification on, an unverified ticket is passed over (it keeps its place: verify queues it)
    if t and t.s == 'waiting' and not (room.verify == '1' and t.v == 0) then
      admit_ticket(sale_id, room, t, now)
      admitted = admitted + 1
    end
  end
  room.budget = budget - admitted
  room.refilled = now
  room.through = place
  redis.call('HSET', k('room', sale_id), 'budget', budget_text(room.budget), 'refilled', now, 'through', room.through)
  return room
end

-- A draw of this build that an older build's step finished its own way (that build draws the whole
-- line in one script, with its own seed, over every ticket so far: a complete permutation, recorded
-- as drawn, made before anyone is admitted): this build's working state of the draw is dropped.
local function drop_overtaken_draw(sale_id, room)
  redis.call('DEL', k('dord', sale_id))
  redis.call('HDEL', k('room', sale_id), 'dsize', 'dseed', 'dleft', 'ds1', 'ds2', 'dstart', 'unplaced')
  room.dsize, room.dseed, room.dleft, room.ds1, room.ds2, room.dstart, room.unplaced = nil, nil, nil, nil, nil, nil, nil
end

-- Admission (admit_line), with the counters kept right under a mixed fleet: a recount begins when
-- they are missing or may have drifted (counters_drifted), begins again when an older build
-- admitted meanwhile, and goes on by one slice per step, with what the step's other slices left of
-- the budget. room.recounting is the recount's number while one is in progress (`get` waits for it).
local function admit(sale_id, now, seed)
  local room = room_state(sale_id)
  if not room then return nil end
  if room.drawn ~= nil and room.dleft ~= nil then drop_overtaken_draw(sale_id, room) end
  if (room.rcur == nil and counters_drifted(sale_id, room)) or (room.rcur ~= nil and not room.budget_ours) then
    recount_begin(sale_id, room)
  end
  recount_upto = room.rcur
  room = admit_line(sale_id, room, now, seed)
  if room.rcur ~= nil then recount_slice(sale_id, room) end
  recount_upto = room.rcur
  room.recounting = room.rcur and room.rgen
  room.budget_ours = nil
  return room
end

-- A ticket step's reply: the room (with its secret: tokens are signed by the caller) and the ticket.
local function room_reply(room, ticket)
  return cjson.encode({ room = room, ticket = ticket })
end
