-- release(holder, token_prefixes...): a host that must exit before its reconciles finish hands
-- back every key held under a token starting with one of the prefixes (its processes' tokens). The
-- key is queued again at once (the caller sends a message) instead of after the lease TTL, and
-- the old holder is fenced: its heartbeat and done() no longer find their token.
-- KEYS: queued, active(hash key->owner record, see owner.lua), leases, dirty, stats,
--       held(hash key->who has its message in hand: the caller, as publisher, until its new
--       message is sent),
--       dirty_own(hash, see add.lua), fair prefix, tenants, fair.lua's fixed keys
local now = clock()
fair_keys(KEYS[8], KEYS[9])
local held = redis.call('HGETALL', KEYS[2])
local send = {}
for i = 1, #held, 2 do
  local k, owner = held[i], held[i + 1]
  for j = 2, #ARGV do
    local prefix = ARGV[j]
    if string.sub(owner, 1, #prefix) == prefix then
      owner_drop(KEYS[2], KEYS[3], KEYS[4], KEYS[7], k, owner)
      redis.call('HINCRBY', KEYS[5], 'released', 1)
      if redis.call('ZADD', KEYS[1], 'NX', now, k) == 1 then
        send[#send + 1] = k
        fair_push(k, 'e')
        if ARGV[1] ~= '' then redis.call('HSET', KEYS[6], k, ARGV[1]) end
      end
      break
    end
  end
end
return send
