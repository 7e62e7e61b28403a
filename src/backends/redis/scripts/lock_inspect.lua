-- lock_inspect: live holders and the last fence, read in one step.
-- KEYS[1] holders zset, KEYS[2] fence counter, KEYS[3] tokens hash
-- Returns {lastFence, token1, fence1, expires1, token2, …} (holders in fence order by the caller).
local now = now_ms()
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
local reply = { tonumber(redis.call('GET', KEYS[2]) or '0') }
for i = 1, #live, 2 do
  reply[#reply + 1] = live[i]
  reply[#reply + 1] = tonumber(redis.call('HGET', KEYS[3], live[i]) or '0')
  reply[#reply + 1] = live[i + 1]
end
return reply
