-- Shared fragment, prepended by the loader (scripts.ts) to every pool script.
-- Conventions: the pool hash holds the definition and the counters; each code is a field of the
-- codes hash whose value is a small JSON record {s=status, h=holder, k=claim key, ca=claimed at,
-- ra=redeemed at, o=order redeemed for, q=import sequence}; times are the server's clock in epoch
-- milliseconds.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The pool's low-stock threshold from its raw field value (nil: no alert).
local function threshold_from(raw)
  if raw == false or raw == nil or raw == '' then return nil end
  return tonumber(raw)
end

local function threshold_of(pool_key)
  return threshold_from(redis.call('HGET', pool_key, 'threshold'))
end

-- After free went DOWN to `free`, with the pool's threshold and 'armed' field already read (a
-- caller that reads them with the rest of the pool saves two commands): record one
-- pool.low_stock event when free crossed the threshold while the alert was armed.
local function low_stock_check(pool_key, events_key, free, threshold, armed, now)
  if threshold == nil or free > threshold or armed ~= '1' then return end
  redis.call('HSET', pool_key, 'armed', '0')
  local crossing = redis.call('HINCRBY', pool_key, 'low_events', 1)
  local name = redis.call('HGET', pool_key, 'name')
  redis.call('XADD', events_key, '*',
    'type', 'pool.low_stock',
    'key', 'pool.low_stock:' .. name .. ':' .. crossing,
    'payload', cjson.encode({ pool = name, free = free, threshold = threshold, crossing = crossing }),
    'at', tostring(now))
end

-- After free went DOWN: record one pool.low_stock event when it crossed the threshold.
local function after_free_dropped(pool_key, events_key, free, now)
  local threshold = threshold_of(pool_key)
  if threshold == nil or free > threshold then return end
  low_stock_check(pool_key, events_key, free, threshold, redis.call('HGET', pool_key, 'armed'), now)
end

-- After free went UP (import, release): re-arm the alert once free is above the threshold.
local function after_free_rose(pool_key, free)
  local threshold = threshold_of(pool_key)
  if threshold == nil or free > threshold then redis.call('HSET', pool_key, 'armed', '1') end
end

local function held_of(held_key, claimant)
  local raw = redis.call('HGET', held_key, claimant)
  if raw == false then return {} end
  return cjson.decode(raw)
end

local function save_held(held_key, claimant, list)
  if #list == 0 then redis.call('HDEL', held_key, claimant) else redis.call('HSET', held_key, claimant, cjson.encode(list)) end
end

local function without(list, item)
  local out = {}
  for _, v in ipairs(list) do if v ~= item then out[#out + 1] = v end end
  return out
end

-- The pool's validity window ('starts'/'expires', epoch ms, '' = open on that side) at `now`:
-- nil when open, else the reply {'not_yet_valid', starts} / {'expired', expires}.
-- window_closed_at: the same from the two fields' values, already read.
local function window_closed_at(starts, expires, now)
  if starts and starts ~= '' and now < tonumber(starts) then return { 'not_yet_valid', starts } end
  if expires and expires ~= '' and now >= tonumber(expires) then return { 'expired', expires } end
  return nil
end

local function window_closed(pool_key, now)
  local w = redis.call('HMGET', pool_key, 'starts', 'expires')
  return window_closed_at(w[1], w[2], now)
end

-- A code's record as the flat reply the TypeScript side decodes: code, status, holder, claimed at,
-- redeemed at, order, hold claimant and until (only while live at `now`), own window start and end.
local function code_reply(code, rec, now)
  local live = now and rec.hu and rec.hu > now
  return { code, rec.s, rec.h or '', tostring(rec.ca or ''), tostring(rec.ra or ''), rec.o or '',
    live and rec.hc or '', live and tostring(rec.hu) or '', tostring(rec.vs or ''), tostring(rec.ve or '') }
end

-- Is a checkout hold on `rec` live at `now`?
local function hold_live(rec, now)
  return rec.hu ~= nil and rec.hu > now
end

-- Where `now` falls in a code's own window: nil when open, else the reply {'not_yet_valid', starts,
-- 'code'} / {'expired', expires, 'code'}.
local function code_window_closed(rec, now)
  if rec.vs and now < rec.vs then return { 'not_yet_valid', tostring(rec.vs), 'code' } end
  if rec.ve and now >= rec.ve then return { 'expired', tostring(rec.ve), 'code' } end
  return nil
end

-- When a free code that cannot be handed out now may return to the free set (epoch ms; '+inf':
-- not by itself), or nil when it can be handed out now.
local function parked_until(rec, now)
  if rec.ve and now >= rec.ve then return '+inf' end
  local until_ms = nil
  if rec.hu and rec.hu > now then until_ms = rec.hu end
  if rec.vs and now < rec.vs and (until_ms == nil or rec.vs > until_ms) then until_ms = rec.vs end
  return until_ms
end

-- A free code goes back to the free set, or to the parked set while it cannot be handed out.
local function put_free(free_key, parked_key, code, rec, now)
  local until_ms = parked_until(rec, now)
  if until_ms then
    redis.call('ZREM', free_key, code)
    redis.call('ZADD', parked_key, until_ms, code)
  else
    redis.call('ZREM', parked_key, code)
    redis.call('ZADD', free_key, rec.q, code)
  end
end

-- Epoch milliseconds as ISO 8601 UTC (…T…Z, ms), the format every backend puts in event payloads.
local function iso_ms(ms)
  local days = math.floor(ms / 86400000)
  local rem = ms - days * 86400000
  -- civil_from_days (H. Hinnant)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d, math.floor(rem / 3600000), math.floor(rem / 60000) % 60, math.floor(rem / 1000) % 60, rem % 1000)
end

-- Locks: drops lapsed holders (and their fence entries) of one key.
local function sweep_holders(holders_key, tokens_key, now)
  local expired = redis.call('ZRANGEBYSCORE', holders_key, '-inf', now)
  if #expired == 0 then return end
  redis.call('ZREMRANGEBYSCORE', holders_key, '-inf', now)
  for _, token in ipairs(expired) do redis.call('HDEL', tokens_key, token) end
end

-- Locks: the next fence of a key = max(last + 1, the server's clock in microseconds), stored
-- back. A fence counter that lost its history (a restart without persistence, a failover to a
-- replica that missed the last writes) thus starts again above every fence it handed out before
-- the loss — the clock has moved on since — and a clock that steps back never makes fences go
-- back or repeat (last + 1). Microseconds since 1970 (~1.8e15) stay below 2^53: exact in Lua's
-- doubles and in a JavaScript number. string.format keeps all digits when storing.
local function next_fence(fence_key)
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local fence = math.max(tonumber(redis.call('GET', fence_key) or '0') + 1, clock)
  redis.call('SET', fence_key, string.format('%.0f', fence))
  return fence
end

-- Locks: the holder keys vanish by themselves when their last lease lapses (abandoned keys
-- cost no memory); the fence counter is kept.
local function expire_with_holders(holders_key, tokens_key)
  local last = redis.call('ZRANGE', holders_key, -1, -1, 'WITHSCORES')
  if #last == 0 then return end
  local at = math.floor(tonumber(last[2])) + 1
  redis.call('PEXPIREAT', holders_key, at)
  redis.call('PEXPIREAT', tokens_key, at)
end

-- Counters: sum of shards s0..s<n-1> (fields may be absent = 0).
local function counter_total(counter_key, n)
  local total = 0
  for i = 0, n - 1 do total = total + tonumber(redis.call('HGET', counter_key, 's' .. i) or '0') end
  return total
end

-- A request the client re-sent after its connection dropped (ioredis re-sends scripts in flight)
-- finds here the reply its first run gave, under a key of its own request id in the script's slot:
-- answered again instead of acting twice. nil when this is the first run.
local function replay_reply(memo_key)
  local raw = redis.call('GET', memo_key)
  if raw then return cjson.decode(raw) end
  return nil
end

-- Remembers `reply` under the request's key for `ttl_ms` (longer than a command may wait for its
-- reply, so every re-send finds it) and returns it.
local function remember_reply(memo_key, ttl_ms, reply)
  redis.call('SET', memo_key, cjson.encode(reply), 'PX', ttl_ms)
  return reply
end
