-- claim: give up to `count` free codes to a claimant, every rule in this one script.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] codes hash, KEYS[4] held hash (claimant -> JSON list),
-- KEYS[5] idempotency keys hash (key -> JSON {c=claimant, n=count}), KEYS[6] events stream
-- ARGV[1] claimant, ARGV[2] count (>= 1), ARGV[3] idempotency key ('' = none)
-- Returns {status, taken codes, held codes} with status one of
--   'claimed' | 'replayed' | 'already_held'; or {'sold_out'} | {'not_found'} | {'conflict', claimant, count}
--   | {'not_yet_valid', starts} | {'expired', expires} (outside the pool's window; a replay still answers)
local limit = redis.call('HGET', KEYS[1], 'limit')
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

local closed = window_closed(KEYS[1], now_ms())
if closed then return closed end
local room = tonumber(limit) - #held
if room <= 0 then return { 'already_held', {}, held } end
local popped = redis.call('ZPOPMIN', KEYS[2], math.min(count, room))
if #popped == 0 then return { 'sold_out' } end

local now = now_ms()
local taken = {}
for i = 1, #popped, 2 do
  local code = popped[i]
  -- A free code's record is just {s='free', q=seq} and its score in the free set is q, so the
  -- new record is written without reading the old one.
  local rec = { s = 'claimed', h = claimant, ca = now, q = tonumber(popped[i + 1]) }
  if key ~= '' then rec.k = key end
  redis.call('HSET', KEYS[3], code, cjson.encode(rec))
  taken[#taken + 1] = code
  held[#held + 1] = code
end
save_held(KEYS[4], claimant, held)
if key ~= '' then redis.call('HSET', KEYS[5], key, cjson.encode({ c = claimant, n = count })) end
redis.call('HINCRBY', KEYS[1], 'claimed', #taken)
after_free_dropped(KEYS[1], KEYS[6], redis.call('HINCRBY', KEYS[1], 'free', -#taken), now)
return { 'claimed', taken, held }
