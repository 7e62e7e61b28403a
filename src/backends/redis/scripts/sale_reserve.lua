-- sale_reserve: hold `quantity` units for `ttl` ms; a customer's active hold is replaced.
-- KEYS[1] T:sale:<id>. ARGV[1] tag, [2] sale id, [3] customer, [4] quantity, [5] ttl ms,
-- [6] idempotency key ('' = none), [7] id for a new hold.
-- Returns {'not_found'} | the replies of reserve_step (sale_lib.lua)
local sale_id = ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 0 then return { 'not_found' } end
return reserve_step(sale_id, ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], false)
