-- sale_register: claim a sale id in the registry (the prefix's own slot) for a sale group, before
-- the sale is written in its group. An id registered to another group is refused ('taken'), unless
-- that registration is older than ARGV[4] ms and its sale was never written (a create that
-- crashed in between; the caller checked that the sale does not exist).
-- KEYS[1] id -> 'group|ms' hash, KEYS[2] ids zset, KEYS[3] set of groups.
-- ARGV[1] id, [2] group, [3] '1' = the stale registration may be replaced, [4] staleness ms.
-- Returns {'ok'} | {'taken', group, age ms}
local id, group = ARGV[1], ARGV[2]
local now = now_ms()
local prior = redis.call('HGET', KEYS[1], id)
if prior then
  local g, at = string.match(prior, '^(%w+)|(%d+)$')
  if g ~= group and not (ARGV[3] == '1' and now - tonumber(at) > tonumber(ARGV[4])) then return { 'taken', g, tostring(now - tonumber(at)) } end
  if g == group then
    redis.call('SADD', KEYS[3], group)
    return { 'ok' }
  end
end
redis.call('HSET', KEYS[1], id, group .. '|' .. now)
redis.call('ZADD', KEYS[2], 0, id)
redis.call('SADD', KEYS[3], group)
return { 'ok' }
