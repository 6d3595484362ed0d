-- claim(message key, token, ttl_ms, bounds_ms...): take exclusive hold of a key for one
-- reconcile. With fairness off that is the message's own key; with it on, whichever key's turn
-- it is (fair.lua): every queued key has one message outstanding, so any message may take any
-- queued key, and one arriving when no class queue holds a key falls back to its own.
-- KEYS: queued, active(hash key->owner record, see owner.lua), leases(zset key->deadline ms,
--       of the records of the layout before), dirty, stats, metrics(hash: the queue-duration
--       histogram `queue|b<i>` over the bucket bounds given in ms, and `queue|sum` in us),
--       held(hash key->who has its message in hand), dirty_own(hash, see add.lua),
--       fair prefix, tenants, fair.lua's fixed keys, then optionally a guard key
-- Returns {code, key, guard, waited}: the key taken (or the message's, when stale) and 1 claimed,
-- 0 stale (the key is not queued: a duplicate or late message), 2 busy (another live owner holds
-- it: the key is marked dirty so that owner's done() requeues it); guard is 1 when the guard key
-- exists (or none is given), read with a claim so that the reconcile need not read it (the cache
-- epoch: cache/epoch.py); waited is the ms the key was queued. With no bounds given, the caller
-- counts that in its queue-duration histogram itself (counters.PendingCounts).
local msg, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = clock()
fair_keys(KEYS[9], KEYS[10])
-- Whatever the outcome, no host has this message in hand any more. The key taken may be
-- another one: its own message is still out there, and keeps its record.
redis.call('HDEL', KEYS[7], msg)
local k, enqueued = nil, nil
if FAIR_MODE ~= 'off' then k, enqueued = fair_next(KEYS[1]) end
if not k then
  k = msg
  enqueued = redis.call('ZSCORE', KEYS[1], k)
  if not enqueued then
    redis.call('HINCRBY', KEYS[5], 'stale', 1)
    return {0, k}
  end
end
redis.call('ZREM', KEYS[1], k)
local owner = owner_record(token, now, now + ttl)
if redis.call('HSETNX', KEYS[2], k, owner) == 0 then
  local held = redis.call('HGET', KEYS[2], k)
  if owner_deadline(KEYS[3], k, held) > now then
    redis.call('SADD', KEYS[4], k)
    redis.call('HDEL', KEYS[8], k)
    redis.call('HINCRBY', KEYS[5], 'busy', 1)
    return {2, k}
  end
  -- The holder's lease ran out (it died or stalled); it is fenced off by the owner token.
  redis.call('HINCRBY', KEYS[5], 'lease_expired', 1)
  owner_end(KEYS[3], k, held)
  redis.call('HSET', KEYS[2], k, owner)
  -- The reconcile that starts now reads state at least as new as every add before this point.
  -- Only a held key is dirty (whatever ends a hold clears it: done, the tick's take-back,
  -- release), and a key has a dirty_own entry only while it is dirty (add.lua sets both).
  if redis.call('SREM', KEYS[4], k) == 1 then redis.call('HDEL', KEYS[8], k) end
end
local waited = math.max(0, now - tonumber(enqueued))
if #ARGV > 3 then
  local bucket = #ARGV - 3
  for i = 4, #ARGV do
    if waited <= tonumber(ARGV[i]) then bucket = i - 4 break end
  end
  redis.call('HINCRBY', KEYS[6], 'queue|b' .. bucket, 1)
  redis.call('HINCRBY', KEYS[6], 'queue|sum', waited * 1000)
end
local guard = 1
if KEYS[14] then guard = redis.call('EXISTS', KEYS[14]) end
return {1, k, guard, waited}
