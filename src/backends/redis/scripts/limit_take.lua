-- limit_take: one rate-limit decision, a line-by-line port of src/core/limits/rules.ts `decide`.
-- KEYS[1] the (limit, key) state hash: shape, last (ms), tat (ms, GCRA), base + counts (window:
-- comma-separated counts, the first of bucket `base`). One key: one slot per limit key.
-- ARGV[1] kind ('gcra' | 'window'), ARGV[2] shape, ARGV[3] interval ms, ARGV[4] tolerance ms,
-- ARGV[5] width ms, ARGV[6] span, ARGV[7] limit, ARGV[8] idle ms (the state's TTL), ARGV[9] n,
-- ARGV[10] 'peek': answer the same decision but store nothing; else ARGV[10] ms a reply is kept and
-- KEYS[2] this request's reply (a re-send answers it instead of taking twice: lib.lua replay_reply).
-- Returns {1, remaining, 0, at} admitted | {0, remaining, retryMs, at} denied (at: a string, ms).
-- Clock: the server's TIME (µs resolution), never the caller's.
local peek = ARGV[10] == 'peek'
if not peek then
  local again = replay_reply(KEYS[2])
  if again then return again end
end
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local kind, shape = ARGV[1], ARGV[2]
local interval, tolerance = tonumber(ARGV[3]), tonumber(ARGV[4])
local width, span, limit = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local idle, n = tonumber(ARGV[8]), tonumber(ARGV[9])

local s = redis.call('HMGET', KEYS[1], 'shape', 'last', 'tat', 'base', 'counts')
local last, tat0, base, stored = 0, 0, 0, {}
if s[1] == shape then
  last = tonumber(s[2]) or 0
  tat0 = tonumber(s[3]) or 0
  base = tonumber(s[4]) or 0
  if s[5] and s[5] ~= '' then
    for c in string.gmatch(s[5], '[^,]+') do stored[#stored + 1] = tonumber(c) end
  end
end
local now = math.max(clock, last)
local at = string.format('%.17g', now)
local function save(fields)
  if peek then return end
  redis.call('HSET', KEYS[1], 'shape', shape, 'last', at, unpack(fields))
  redis.call('PEXPIRE', KEYS[1], math.ceil(idle))
end
-- an admission is remembered for a re-send (a denial stored nothing: running it again is harmless)
local function answer(reply)
  if peek then return reply end
  return remember_reply(KEYS[2], ARGV[10], reply)
end

if kind == 'gcra' then
  local tat = math.max(tat0, now)
  local new = tat + n * interval
  local over = new - now - tolerance
  if over > 0 then
    return { 0, math.max(0, math.floor((tolerance - (tat - now)) / interval + 1e-9)), math.ceil(over), at }
  end
  save({ 'tat', string.format('%.17g', new), 'base', '0', 'counts', '' })
  return answer({ 1, math.floor((tolerance - (new - now)) / interval + 1e-9), 0, at })
end

local first = math.floor(now / width) - span
local counts = {}
local used = 0
for i = 1, span + 1 do
  local j = first + (i - 1) - base
  local c = 0
  if j >= 0 and j < #stored then c = stored[j + 1] end
  counts[i] = c
  used = used + c
end
if used + n > limit then
  local excess = used + n - limit
  local freed = 0
  local i = 1
  while true do
    freed = freed + counts[i]
    if freed >= excess or i >= span + 1 then break end
    i = i + 1
  end
  return { 0, math.max(0, limit - used), math.max(1, math.ceil((first + i + span) * width - now)), at }
end
counts[span + 1] = counts[span + 1] + n
local parts = {}
for i = 1, #counts do parts[i] = string.format('%d', counts[i]) end
save({ 'tat', '0', 'base', string.format('%d', first), 'counts', table.concat(parts, ',') })
return answer({ 1, limit - used - n, 0, at })
