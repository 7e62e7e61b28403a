-- sale_room_enable: puts a capped sale behind a waiting room, or changes its rate/window (the
-- tickets, numbering and secret are kept).
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id, [3] admits per second, [4] window ms, [5] a new secret.
-- Returns 'not_found' | 'unlimited' | 'ok'
local id = ARGV[2]
local s = sale_state(id)
if not s then return 'not_found' end
if s.cap == '' then return 'unlimited' end
local now = now_ms()
local room = k('room', id)
if redis.call('EXISTS', room) == 0 then
  -- the bucket starts full: the first second's worth of tickets is admitted without a wait
  redis.call('HSET', room, 'secret', ARGV[5], 'next', 1, 'through', 0, 'budget', tostring(math.max(1, tonumber(ARGV[3]))), 'refilled', now, 'created', now, 'swept', 0)
end
redis.call('HSET', room, 'rate', ARGV[3], 'window', ARGV[4])
redis.call('HSET', KEYS[1], 'room', '1')
return 'ok'
