-- tiered_take: the fast-path decision of a buy in tiered mode (a Redis fast path over a durable
-- ledger, src/backends/tiered/). Redis sells only units the ledger granted it: the state hash holds
-- the current grant and how many of its units are left; the ledger write that follows a win
-- consumes the unit of that grant again, so a wrong or late answer here can never oversell.
-- KEYS[1] state hash {grant, left, limit, ends (ms), mode fast|ledger|reconciling, soldout_until, refill_until,
--   gen: the newest grant this state was given ('0' none), kept when the grant is sealed or dropped}
-- KEYS[2] customers hash (customer -> units decided here), KEYS[3] keys hash (idempotency key -> "customer\tqty\torder\tgrant": the grant the
--   win is to be written against, so a retry that finds the win not yet written writes it itself; records
--   of earlier builds have no grant)
-- ARGV[1] customer, ARGV[2] quantity, ARGV[3] idempotency key ('' = none), ARGV[4] id for the new order,
-- ARGV[5] lease in ms for the one caller sent to reconcile/refill
-- Replies:
--   {'lost'}                  no state (never set, FLUSHALL, restart without persistence): the caller
--                             holds a reconciling lease and must reconcile with the ledger, then install
--   {'busy'}                  another caller is reconciling or refilling: retry shortly
--   {'ledger'}                this sale is sold by the ledger path (not live, unlimited, waiting room, over)
--   {'replay', record}        the key was decided here before ("customer\tqty\torder\tgrant")
--   {'refused', reason, field, value, …}  a refusal by its id in core/refusals.ts: sale_limit (the
--                             customer's units decided here plus this one exceed the limit), or
--                             sale_sold_out (the ledger had nothing left to grant, recently:
--                             soldout_until, or its recheck is under way)
--   {'refill', grant, left, gen}  the grant cannot serve this buy: it is sealed (left = 0 here) and the
--                             caller, holding the refill lease, returns `left` to the ledger and refills;
--                             the ledger reclaims open grants newer than `gen` (made for a state Redis lost)
--   {'ok', grant}             a win: write the order against `grant` in the ledger
local st, cust, keys = KEYS[1], KEYS[2], KEYS[3]
local customer, qty, key, order, lease = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
-- One read of the state: this runs for every buyer of the storm.
local f = redis.call('HMGET', st, 'mode', 'ends', 'limit', 'left', 'soldout_until', 'refill_until', 'grant', 'gen')
local mode = f[1]
if mode == false then
  redis.call('HSET', st, 'mode', 'reconciling')
  redis.call('PEXPIRE', st, lease)
  return { 'lost' }
end
if mode == 'reconciling' then return { 'busy' } end
if mode == 'ledger' then return { 'ledger' } end
if key ~= '' then
  local record = redis.call('HGET', keys, key)
  if record then return { 'replay', record } end
end
local now = now_ms()
if now >= tonumber(f[2]) then return { 'ledger' } end
local left = tonumber(f[4])
local soldout = tonumber(f[5] or '0')
-- Sold out when the ledger was last asked (or its recheck is under way): the same answer the
-- ledger path gives a sold-out sale, before any limit.
if left == 0 and soldout > 0 and (soldout > now or tonumber(f[6] or '0') > now) then return { 'refused', 'sale_sold_out', 'available', 0 } end
local units = tonumber(redis.call('HGET', cust, customer) or '0')
local limit = tonumber(f[3])
if units + qty > limit then return { 'refused', 'sale_limit', 'units', units, 'quantity', qty, 'limit', limit } end
if left < qty then
  if tonumber(f[6] or '0') > now then return { 'busy' } end
  redis.call('HSET', st, 'left', 0, 'refill_until', now + lease)
  return { 'refill', f[7], left, f[8] or '' }
end
redis.call('HINCRBY', st, 'left', -qty)
redis.call('HINCRBY', cust, customer, qty)
if key ~= '' then redis.call('HSET', keys, key, customer .. '\t' .. qty .. '\t' .. order .. '\t' .. f[7]) end
return { 'ok', f[7] }
