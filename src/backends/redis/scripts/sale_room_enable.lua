-- sale_room_enable: puts a capped sale behind a waiting room, or changes its settings (the
-- tickets, numbering, secret and any draw made are kept).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id, [3] admits per second, [4] window ms, [5] a new
-- secret, [6] fair start '1'/'0', [7] verification '1'/'0' ('' keeps a setting as it is).
-- Returns 'not_found' | 'unlimited' | 'ok'
local id = ARGV[2]
local s = sale_state(id)
if not s then return 'not_found' end
if s.cap == '' then return 'unlimited' end
local now = now_ms()
local room = k('room', id)
if redis.call('EXISTS', room) == 0 then
  -- the bucket starts full: the first second's worth of tickets is admitted without a wait
  redis.call('HSET', room, 'secret', ARGV[5], 'next', 1, 'through', 0, 'budget', budget_text(math.max(1, tonumber(ARGV[3]))), 'refilled', now, 'created', now, 'swept', 0, 'fair', ARGV[6] == '1' and '1' or '0', 'verify', ARGV[7] == '1' and '1' or '0',
    -- counters of tickets by status (set_status) and of tickets still without a place (a fair pre-queue)
    'counted', '1', 'n_waiting', 0, 'n_admitted', 0, 'n_used', 0, 'n_expired', 0, 'n_sold_out', 0, 'unplaced', 0)
end
local state = room_state(id)
if state.legacy then
  -- a room from before the fair start: its line is in arrival order and counts as drawn
  redis.call('HSET', room, 'drawn', state.drawn, 'seed', '', 'preq', 0, 'fair', '0', 'verify', '0')
  for _, raw in ipairs(redis.call('HVALS', k('tickets', id))) do
    local t = cjson.decode(raw)
    t.p = t.n
    save_ticket(id, t)
    redis.call('HSET', k('tplace', id), t.n, t.c)
  end
end
if ARGV[7] == '0' and state.verify == '1' then
  -- verification turned off: tickets it passed over go in first
  for _, raw in ipairs(redis.call('HVALS', k('tickets', id))) do
    local t = cjson.decode(raw)
    local p = t.p or (state.legacy and t.n) or nil
    if t.s == 'waiting' and p and p <= state.through then redis.call('ZADD', k('vq', id), p, p) end
  end
end
redis.call('HSET', room, 'rate', ARGV[3], 'window', ARGV[4])
if ARGV[6] ~= '' then redis.call('HSET', room, 'fair', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', room, 'verify', ARGV[7]) end
redis.call('HSET', KEYS[1], 'room', '1')
return 'ok'
