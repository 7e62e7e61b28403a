-- claim: give up to `count` free codes to a claimant, every rule in this one script.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] codes hash, KEYS[4] held hash (claimant -> JSON list),
-- KEYS[5] idempotency keys hash (key -> JSON {c=claimant, n=count}), KEYS[6] events stream,
-- KEYS[7] parked zset (free codes on hold or outside their own window; they return when due),
-- KEYS[8] claim times zset (held code -> claimed at; the forecasts' index)
-- ARGV[1] claimant, ARGV[2] count (>= 1), ARGV[3] idempotency key ('' = none), ARGV[4] request id of
-- a claim without a key ('' = none), kept in the taken codes' records (cq)
-- Returns {status, taken codes, held codes} with status one of
--   'claimed' | 'replayed' | 'already_held'; or {'refused', 'pool_sold_out'} (a refusal id of
--   core/refusals.ts) | {'not_found'} | {'conflict', claimant, count}
--   | {'not_yet_valid', starts} | {'expired', expires} (outside the pool's window; a replay still answers)
-- Hot path: one read of the pool hash (definition, window, counters, alert state), one TIME, and
-- one write of the counters; the parked set is scanned only when it exists.
local p = redis.call('HMGET', KEYS[1], 'limit', 'starts', 'expires', 'free', 'claimed', 'threshold', 'armed')
local limit = p[1]
if limit == false then return { 'not_found' } end
local claimant, count, key = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local held = held_of(KEYS[4], claimant)

if key ~= '' then
  local prior = redis.call('HGET', KEYS[5], key)
  if prior then
    local p = cjson.decode(prior)
    if p.c ~= claimant or p.n ~= count then return { 'conflict', p.c, tostring(p.n) } end
    local codes = {}
    for _, code in ipairs(held) do
      if cjson.decode(redis.call('HGET', KEYS[3], code)).k == key then codes[#codes + 1] = code end
    end
    if #codes > 0 then return { 'replayed', codes, held } end
    redis.call('HDEL', KEYS[5], key) -- its codes were all released: the key is spent
  end
end

-- A claim without a key that the client re-sent after its connection dropped (ioredis re-sends
-- scripts in flight) finds its codes last in the claimant's list: answer what its first run did
-- instead of taking more. One read of the last held code per claim of a claimant holding some.
local rq = ARGV[4] or ''
local function taken_by_request(code)
  local raw = redis.call('HGET', KEYS[3], code)
  return raw and cjson.decode(raw).cq == rq
end
if rq ~= '' and #held > 0 and taken_by_request(held[#held]) then
  local codes = {}
  for _, code in ipairs(held) do
    if taken_by_request(code) then codes[#codes + 1] = code end
  end
  return { 'claimed', codes, held }
end

local now = now_ms()
local closed = window_closed_at(p[2], p[3], now)
if closed then return closed end
local room = tonumber(limit) - #held
if room <= 0 then return { 'already_held', {}, held } end
-- parked codes whose hold lapsed or whose window opened return to the free set (a bounded batch)
if redis.call('EXISTS', KEYS[7]) == 1 then
  for _, code in ipairs(redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', 0, 100)) do
    put_free(KEYS[2], KEYS[7], code, cjson.decode(redis.call('HGET', KEYS[3], code)), now)
  end
end
local want = math.min(count, room)
local taken = {}
-- a popped code on hold or outside its own window is parked instead: every round takes or parks
-- what it popped, so the loop ends
while #taken < want do
  local popped = redis.call('ZPOPMIN', KEYS[2], want - #taken)
  if #popped == 0 then break end
  for i = 1, #popped, 2 do
    local code = popped[i]
    local rec = cjson.decode(redis.call('HGET', KEYS[3], code))
    local parked = parked_until(rec, now)
    if parked then
      redis.call('ZADD', KEYS[7], parked, code)
    else
      rec.s, rec.h, rec.ca, rec.hc, rec.hu = 'claimed', claimant, now, nil, nil
      if key ~= '' then rec.k = key end
      if rq ~= '' then rec.cq = rq end
      redis.call('HSET', KEYS[3], code, cjson.encode(rec))
      redis.call('ZADD', KEYS[8], now, code)
      taken[#taken + 1] = code
      held[#held + 1] = code
    end
  end
end
if #taken == 0 then return { 'refused', 'pool_sold_out' } end
save_held(KEYS[4], claimant, held)
if key ~= '' then redis.call('HSET', KEYS[5], key, cjson.encode({ c = claimant, n = count })) end
local free = tonumber(p[4] or '0') - #taken
redis.call('HSET', KEYS[1], 'claimed', string.format('%d', tonumber(p[5] or '0') + #taken), 'free', string.format('%d', free))
low_stock_check(KEYS[1], KEYS[6], free, threshold_from(p[6]), p[7], now)
return { 'claimed', taken, held }
