-- tiered_seal: stops the fast path selling from its current grant so the ledger can take the
-- unsold units back (a reservation or a ledger-path buy found everything granted; an update).
-- KEYS[1] state hash
-- Returns {grant, left}: the caller gives `left` units of `grant` back to the ledger. {'', 0} when none.
local st = KEYS[1]
if redis.call('HGET', st, 'mode') ~= 'fast' then return { '', 0 } end
local grant = redis.call('HGET', st, 'grant')
local left = tonumber(redis.call('HGET', st, 'left'))
if grant == '' or left == 0 then return { '', 0 } end
redis.call('HSET', st, 'left', 0, 'grant', '', 'soldout_until', 0)
return { grant, left }
