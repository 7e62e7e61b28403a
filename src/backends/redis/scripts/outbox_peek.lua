-- outbox_peek (the first half of claimDue): up to ARGV[1] events of this source that are due now,
-- soonest due first. Nothing is leased here: outbox_lease re-checks each one.
-- KEYS: see outbox_lib.lua. Returns padded event ids.
sync()
return redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now_ms(), 'LIMIT', 0, tonumber(ARGV[1]))
