-- Shared outbox fragment, prepended (after lib.lua) to every outbox_*.lua script. One event
-- source is one event stream (a pool's or a sale's) with its delivery state beside it, in the
-- stream's slot: KEYS[1] the stream, KEYS[2] due zset (event -> when it is due: its creation, the
-- end of its lease or its next retry), KEYS[3] pending zset (event -> creation ms; delivered and
-- dead events leave it), KEYS[4] info hash: 'cursor' (last stream id taken into the zsets),
-- 'delivered', 'dead', and per event 'a:<e>' attempts, 'l:<e>' JSON log of attempts, 'x:<e>'
-- final state ('d' delivered, 'x' dead); KEYS[5] dead zset (event -> when it died: the dead
-- letters, newest listed first). Events are named in the zsets by their stream id
-- zero-padded ('%015d-%010d'), so ties within one millisecond sort in stream order.

local function padded(stream_id)
  local ms, seq = string.match(stream_id, '^(%d+)-(%d+)$')
  return string.format('%015d-%010d', tonumber(ms), tonumber(seq)), tonumber(ms)
end

local function unpadded(p)
  local ms, seq = string.match(p, '^(%d+)-(%d+)$')
  return tostring(tonumber(ms)) .. '-' .. tostring(tonumber(seq))
end

-- Takes events appended to the stream since the last call into the delivery zsets.
local function sync()
  local cursor = redis.call('HGET', KEYS[4], 'cursor') or '0-0'
  local entries = redis.call('XRANGE', KEYS[1], '(' .. cursor, '+')
  if #entries == 0 then return end
  for _, entry in ipairs(entries) do
    local p, ms = padded(entry[1])
    redis.call('ZADD', KEYS[2], ms, p)
    redis.call('ZADD', KEYS[3], ms, p)
  end
  redis.call('HSET', KEYS[4], 'cursor', entries[#entries][1])
end
