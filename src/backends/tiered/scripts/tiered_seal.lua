-- tiered_seal: stops the fast path selling from its current grant so the ledger can take the
-- unsold units back (a reservation or a ledger-path buy found everything granted; an update).
-- KEYS[1] state hash
-- Returns {grant, left, gen}: the caller gives `left` units of `grant` back to the ledger ({'', 0, gen}
-- when none), and reclaims open grants newer than `gen`, the newest grant this state was given
-- ('' when unknown: no state, or one written before `gen` existed).
local st = KEYS[1]
local f = redis.call('HMGET', st, 'mode', 'grant', 'left', 'gen')
if f[1] ~= 'fast' then return { '', 0, '' } end
local gen = f[4] or ''
local grant, left = f[2], tonumber(f[3])
if grant == '' or left == 0 then return { '', 0, gen } end
redis.call('HSET', st, 'left', 0, 'grant', '', 'soldout_until', 0)
return { grant, left, gen }
