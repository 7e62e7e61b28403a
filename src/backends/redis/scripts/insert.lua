-- insert: one batch of codes, deduped against the pool and within the batch.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] all-codes zset (import order), KEYS[4] codes hash,
-- KEYS[5] multi-use codes hash (a code the pool has as a multi-use code is a duplicate too),
-- KEYS[6] parked zset (a code outside its own window waits there until it opens),
-- KEYS[7] this request's reply (a re-send answers it: lib.lua replay_reply)
-- ARGV[1] 'w' when the codes come with windows, else ''; ARGV[2] ms the reply is kept
-- ARGV[3..]: the codes; with windows, triples: code, starts, expires (epoch ms; '' = open on that side)
-- Returns {inserted, duplicates} | 'not_found'
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
local again = replay_reply(KEYS[7])
if again then return again end
local stride = ARGV[1] == 'w' and 3 or 1
local now = stride == 3 and now_ms() or nil
local inserted = 0
for i = 3, #ARGV, stride do
  local code = ARGV[i]
  if redis.call('HEXISTS', KEYS[4], code) == 0 and redis.call('HEXISTS', KEYS[5], code) == 0 then
    local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
    local rec = { s = 'free', q = seq }
    if stride == 3 then
      rec.vs = ARGV[i + 1] ~= '' and tonumber(ARGV[i + 1]) or nil
      rec.ve = ARGV[i + 2] ~= '' and tonumber(ARGV[i + 2]) or nil
    end
    redis.call('HSET', KEYS[4], code, cjson.encode(rec))
    if rec.vs or rec.ve then put_free(KEYS[2], KEYS[6], code, rec, now) else redis.call('ZADD', KEYS[2], seq, code) end
    redis.call('ZADD', KEYS[3], seq, code)
    inserted = inserted + 1
  end
end
local given = (#ARGV - 2) / stride
if inserted > 0 then
  redis.call('HINCRBY', KEYS[1], 'total', inserted)
  after_free_rose(KEYS[1], redis.call('HINCRBY', KEYS[1], 'free', inserted))
end
return remember_reply(KEYS[7], ARGV[2], { inserted, given - inserted })
