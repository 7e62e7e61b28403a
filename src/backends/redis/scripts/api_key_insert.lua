-- api_key_insert: stores an API key's record and lists it, in one step (one slot: the {prefix:svc} tag).
-- KEYS[1] the key's record, KEYS[2] the listing (sorted set by creation time).
-- ARGV[1] the record (JSON), ARGV[2] created at (ms), ARGV[3] the key's id. Returns 1.
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
