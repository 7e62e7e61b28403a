-- outbox_lease: leases the named events for ARGV[1] ms — each only if it is still due (a racing
-- dispatcher may have leased it since the peek).
-- KEYS: see outbox_lib.lua. ARGV[2..] padded event ids.
-- Returns a flat list {padded id, type, key, payload, at, attempts, …} of the events leased.
local now = now_ms()
local out = {}
for i = 2, #ARGV do
  local p = ARGV[i]
  local due = redis.call('ZSCORE', KEYS[2], p)
  if due and tonumber(due) <= now then
    local entry = redis.call('XRANGE', KEYS[1], unpadded(p), unpadded(p))[1]
    if entry then
      redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), p)
      local f = {}
      for j = 1, #entry[2], 2 do f[entry[2][j]] = entry[2][j + 1] end
      out[#out + 1] = p
      out[#out + 1] = f.type
      out[#out + 1] = f.key
      out[#out + 1] = f.payload or '{}'
      out[#out + 1] = f.at
      out[#out + 1] = redis.call('HGET', KEYS[4], 'a:' .. p) or '0'
    else
      -- the stream lost the entry (trimmed or deleted): nothing left to deliver
      redis.call('ZREM', KEYS[2], p)
      redis.call('ZREM', KEYS[3], p)
    end
  end
end
return out
