-- extend(key, token, ttl_ms): heartbeat. Returns 1 if the caller still owns the key, else 0.
-- KEYS: active(hash key->owner: its token, a space and the claim's ms), leases
local k, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
if string.match(redis.call('HGET', KEYS[1], k) or '', '^%S*') ~= token then
  return 0
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[2], 'XX', now + ttl, k)
return 1
