-- sale_wish: add/replace (ARGV[3] = channels JSON) or remove (ARGV[3] = '') a customer's wish for
-- a SKU. A replaced wish keeps its creation time.
-- KEYS[1] T:wish:<sku>, KEYS[2] T:wishx:<sku>, KEYS[3] (a removal) this request's reply (a re-send answers it: lib.lua replay_reply).
-- ARGV[1] tag, [2] customer, [3] channels JSON or '', [4] (a removal) ms the reply is kept.
-- Returns the stored JSON {ch, at}; for a removal 1 (removed) or 0 (there was none).
local customer, channels = ARGV[2], ARGV[3]
local sku_index = KEYS[2]
if channels == '' then
  local again = replay_reply(KEYS[3])
  if again then return again end
  redis.call('ZREM', sku_index, customer)
  return remember_reply(KEYS[3], ARGV[4], redis.call('HDEL', KEYS[1], customer))
end
local prior = redis.call('HGET', KEYS[1], customer)
local at = prior and cjson.decode(prior).at or now_ms()
local value = '{"ch":' .. channels .. ',"at":' .. string.format('%d', at) .. '}'
redis.call('HSET', KEYS[1], customer, value)
redis.call('ZADD', sku_index, 0, customer)
return value
