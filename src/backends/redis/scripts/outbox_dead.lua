-- outbox_dead: up to ARGV[1] dead letters of this source, most recently dead first.
-- KEYS: see outbox_lib.lua. Returns a flat list {padded id, type, at, attempts, last error, dead ms, …}.
local out = {}
local dead = redis.call('ZREVRANGE', KEYS[5], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #dead, 2 do
  local p = dead[i]
  local entry = redis.call('XRANGE', KEYS[1], unpadded(p), unpadded(p))[1]
  local f = {}
  if entry then
    for j = 1, #entry[2], 2 do f[entry[2][j]] = entry[2][j + 1] end
  end
  local log = cjson.decode(redis.call('HGET', KEYS[4], 'l:' .. p) or '[]')
  local last = log[#log]
  out[#out + 1] = p
  out[#out + 1] = f.type or ''
  out[#out + 1] = f.at or '0'
  out[#out + 1] = redis.call('HGET', KEYS[4], 'a:' .. p) or '0'
  out[#out + 1] = last and last.detail or ''
  out[#out + 1] = dead[i + 1]
end
return out
