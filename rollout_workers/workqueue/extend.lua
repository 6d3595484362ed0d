-- extend(key, token, ttl_ms): heartbeat. Returns 1 if the caller still owns the key, else 0.
-- KEYS: active(hash key->owner record, see owner.lua), leases(of the layout before)
local k, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local held = redis.call('HGET', KEYS[1], k)
if not held then return 0 end
local owner, since, deadline = owner_parse(held)
if owner ~= token then return 0 end
local now = clock()
if deadline then
  redis.call('HSET', KEYS[1], k, owner_record(owner, since, now + ttl))
else
  redis.call('ZADD', KEYS[2], 'XX', now + ttl, k)
end
return 1
