-- insert: one batch of codes, deduped against the pool and within the batch.
-- KEYS[1] pool hash, KEYS[2] free zset, KEYS[3] all-codes zset (import order), KEYS[4] codes hash,
-- KEYS[5] multi-use codes hash (a code the pool has as a multi-use code is a duplicate too)
-- ARGV: the codes
-- Returns {inserted, duplicates} | 'not_found'
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
local inserted = 0
for i = 1, #ARGV do
  local code = ARGV[i]
  if redis.call('HEXISTS', KEYS[4], code) == 0 and redis.call('HEXISTS', KEYS[5], code) == 0 then
    local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
    redis.call('HSET', KEYS[4], code, cjson.encode({ s = 'free', q = seq }))
    redis.call('ZADD', KEYS[2], seq, code)
    redis.call('ZADD', KEYS[3], seq, code)
    inserted = inserted + 1
  end
end
if inserted > 0 then
  redis.call('HINCRBY', KEYS[1], 'total', inserted)
  after_free_rose(KEYS[1], redis.call('HINCRBY', KEYS[1], 'free', inserted))
end
return { inserted, #ARGV - inserted }
