-- tiered_install: puts what the ledger answered into a sale's fast-path state (tiered mode).
-- KEYS[1] state hash, KEYS[2] customers hash, KEYS[3] keys hash
-- ARGV[1] how: 'fresh' (after reconciling: only over our own 'reconciling' placeholder),
--              'refill' (only while the sealed grant ARGV[6] is still the current one),
--              'ledger' (the ledger path sells this sale for ARGV[8] ms)
-- ARGV[2] grant id ('' = nothing granted: sold out for ARGV[8] ms), ARGV[3] units granted,
-- ARGV[4] per-customer limit, ARGV[5] sale end (epoch ms), ARGV[6] the grant being replaced ('' none),
-- ARGV[7] ms the state lives (past the sale's end), ARGV[8] ms a 'ledger' or sold-out answer is kept
-- Sets `gen` to the grant installed (the newest grant this state knows; '0' after a fresh install of none).
-- Returns 1 when installed; 0 when the state moved on meanwhile — the caller then gives its grant back.
local st, cust, keys = KEYS[1], KEYS[2], KEYS[3]
local how, grant, size, limit, ends, prev = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
local ttl, hold = tonumber(ARGV[7]), tonumber(ARGV[8])
local now = now_ms()
local mode = redis.call('HGET', st, 'mode')
local soldout = 0
if grant == '' then soldout = now + hold end
if how == 'ledger' then
  if mode ~= false and mode ~= 'reconciling' and mode ~= 'fast' then return 0 end
  redis.call('DEL', st, cust, keys)
  redis.call('HSET', st, 'mode', 'ledger')
  redis.call('PEXPIRE', st, hold)
  return 1
end
if how == 'fresh' then
  if mode ~= 'reconciling' then return 0 end
  redis.call('DEL', cust, keys)
  -- gen: every open grant was revoked before this one, so any open grant newer than it is orphaned.
  local gen = grant
  if gen == '' then gen = '0' end
  redis.call('HSET', st, 'mode', 'fast', 'grant', grant, 'left', size, 'limit', limit, 'ends', ends, 'soldout_until', soldout, 'refill_until', 0, 'gen', gen)
  redis.call('PEXPIRE', st, ttl)
  return 1
end
-- refill
if mode ~= 'fast' or redis.call('HGET', st, 'grant') ~= prev then return 0 end
redis.call('HSET', st, 'grant', grant, 'left', size, 'limit', limit, 'ends', ends, 'soldout_until', soldout, 'refill_until', 0)
if grant ~= '' then redis.call('HSET', st, 'gen', grant) end
redis.call('PEXPIRE', st, ttl)
redis.call('PEXPIRE', cust, ttl)
redis.call('PEXPIRE', keys, ttl)
return 1
