-- stream-append: appends one outbox event to a Redis stream, once. A redelivery of the same event
-- (a retry after an answer that never came back, or after a dispatcher died mid-delivery) finds
-- its marker and appends nothing, answering with the entry id the first delivery made.
-- KEYS[1] the stream; KEYS[2] the event's marker (same hash slot as the stream)
-- ARGV[1] how long the marker is kept (ms); ARGV[2] MAXLEN for an approximate trim, '' = none;
-- ARGV[3..] the entry's field/value pairs
-- Returns {1, entry id} when appended now, {0, entry id} when it was already there.
local seen = redis.call('GET', KEYS[2])
if seen then return {0, seen} end
local id
if ARGV[2] ~= '' then
  id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
else
  id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
end
redis.call('SET', KEYS[2], id, 'PX', ARGV[1])
return {1, id}
