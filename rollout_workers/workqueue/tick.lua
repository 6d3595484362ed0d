-- tick(limit, stale_ms, lapse_ms, forget_ms, lost_ms, ttl_ms, gap_ms, timers_only): move work whose
-- time has come onto the queue. With timers_only '1', only the due timers (the beat's timer
-- pass between ticks); the ticks' record (`ticked`) is left alone.
--   due timers      -> added (dirty if a worker holds the key)
--   expired leases  -> the dead or stalled holder loses the key; it is queued again
--   lapsed hosts    -> a still-queued key whose message a host without a heartbeat for lapse_ms
--                      had reserved (or was publishing) is sent again; a key such a host holds
--                      whose lease was not extended for lapse_ms either is taken back and
--                      queued again, as if its lease had expired (the holder is fenced by its
--                      token). Only once the ticks have run without a gap for lapse_ms: after a
--                      Redis failover or a beat restart every host looks lapsed until it stamps.
--   lost messages   -> while no message waits on the broker list, a key queued longer than
--                      lost_ms whose message no host has in hand was lost (a host killed
--                      between popping it and recording it): sent again
--   stale queued    -> a key queued longer than stale_ms whose message was lost is sent again
-- KEYS: queued, active(owner records, see owner.lua), leases(of the layout before), dirty,
--       timers, stats, metrics(hash: `adds`),
--       held(hash key->host, or host|pub while that host publishes the key's message),
--       hosts(zset host->last heartbeat ms, shared by every kind), dirty_own(hash, see add.lua),
--       fair prefix, tenants (see fair.lua), broker(the Celery queue's list that carries this
--       kind's messages), ticked(hash: `last` tick ms, `since`: when the ticks last resumed
--       after a gap longer than gap_ms), fair.lua's fixed keys
-- Owner tokens are `<host>/<pid>:<unique>` (workqueue.token_prefix): the host is read back here.
-- With fairness on, a lapsed host's message whose key was claimed by another message stood for
-- another queued key: one is sent for the oldest queued key not already sent (fair_fill).
-- Returns {keys to send..., } followed by six counts: due, expired, stale, lapsed, lost, and
-- taken (claims of lapsed hosts queued again), then the ms until the earliest timer left (-1:
-- none).
local limit, stale = tonumber(ARGV[1]), tonumber(ARGV[2])
local lapse, forget, lost = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, gap = tonumber(ARGV[6]), tonumber(ARGV[7])
local now = clock()
fair_keys(KEYS[11], KEYS[12])
local send = {}
local adds = 0
local timers_only = ARGV[8] == '1'
local since = 0
if not timers_only then
  local ticked = redis.call('HMGET', KEYS[14], 'last', 'since')
  since = tonumber(ticked[2] or '0')
  if now - tonumber(ticked[1] or '0') > gap then
    since = now
    redis.call('HSET', KEYS[14], 'last', now, 'since', now)
  else
    redis.call('HSET', KEYS[14], 'last', now)
  end
end
-- k's holder (owner record v) lost it (lease expired, or its host lapsed): fence it and queue
-- k again.
local function take_back(k, v)
  owner_drop(KEYS[2], KEYS[3], KEYS[4], KEYS[10], k, v)
  if redis.call('ZADD', KEYS[1], 'NX', now, k) == 1 then
    adds = adds + 1
    send[#send + 1] = k
    fair_push(k, 'e')
  end
end
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
for _, k in ipairs(due) do
  redis.call('ZREM', KEYS[5], k)
  if redis.call('HEXISTS', KEYS[2], k) == 1 then
    adds = adds + redis.call('SADD', KEYS[4], k)
    redis.call('HDEL', KEYS[10], k)
  elseif redis.call('ZADD', KEYS[1], 'NX', now, k) == 1 then
    adds = adds + 1
    send[#send + 1] = k
    fair_push(k, 'e')
  end
end
-- The reply: the keys to send, the six counts, then the ms until the earliest timer left (-1:
-- none), for the beat to wake then.
local function finish(counts)
  if adds > 0 then redis.call('HINCRBY', KEYS[7], 'adds', adds) end
  for _, n in ipairs(counts) do send[#send + 1] = n end
  local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  send[#send + 1] = #first == 0 and -1 or math.max(0, tonumber(first[2]) - now)
  return send
end
if timers_only then return finish({#due, 0, 0, 0, 0, 0}) end
fair_migrate(KEYS[1])
-- The leases: every owner record (one per key held: as many as the pool reconciles at once).
local expired, ended = 0, {}
local owners = redis.call('HGETALL', KEYS[2])
for i = 1, #owners, 2 do
  if expired == limit then break end
  if owner_deadline(KEYS[3], owners[i], owners[i + 1]) <= now then
    take_back(owners[i], owners[i + 1])
    ended[owners[i]] = true
    expired = expired + 1
  end
end
if expired > 0 then redis.call('HINCRBY', KEYS[6], 'lease_expired', expired) end
-- Only when some host has lapsed is the (small: one entry per message in hand) held hash read.
-- A lapsed host stays listed for forget_ms so that every kind's tick sees it.
local resent_lapsed, taken = 0, 0
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', now - lapse, 'LIMIT', 0, limit)
if #lapsed > 0 then
  local dead, sending = {}, {}
  local missing = 0
  for _, h in ipairs(lapsed) do dead[h] = true end
  for _, k in ipairs(send) do sending[k] = true end
  local held = redis.call('HGETALL', KEYS[8])
  for i = 1, #held, 2 do
    local k, host = held[i], string.match(held[i + 1], '^[^|]*')
    if dead[host] then
      redis.call('HDEL', KEYS[8], k)
      if not sending[k] and redis.call('ZSCORE', KEYS[1], k) then
        redis.call('ZADD', KEYS[1], 'XX', now, k)
        send[#send + 1] = k
        sending[k] = true
        resent_lapsed = resent_lapsed + 1
      else
        missing = missing + 1
      end
    end
  end
  resent_lapsed = resent_lapsed + fair_fill(KEYS[1], now, send, sending, missing)
  -- A live holder extends its lease every lapse/2 at most, so one not extended for lapse_ms on a
  -- lapsed host is as dead as its host: two signals, not one stalled heartbeat thread.
  if now - since >= lapse then
    local extended_before = now + ttl - lapse
    for i = 1, #owners, 2 do
      local k, v = owners[i], owners[i + 1]
      local host = string.match(owner_parse(v), '^(.*)/[^/]*$')
      if not ended[k] and host and dead[host]
          and owner_deadline(KEYS[3], k, v) <= extended_before then
        take_back(k, v)
        taken = taken + 1
      end
    end
    if taken > 0 then redis.call('HINCRBY', KEYS[6], 'host_lapsed_claims', taken) end
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', now - forget)
  if resent_lapsed > 0 then redis.call('HINCRBY', KEYS[6], 'host_lapsed', resent_lapsed) end
end
-- A message is on the broker list, in a host's hands (held), or lost. With the list empty, a key
-- queued lost_ms ago and held by no one has none; lost_ms is far longer than a publish takes.
local resent_lost = 0
if redis.call('LLEN', KEYS[13]) == 0 then
  local sending = {}
  for _, k in ipairs(send) do sending[k] = true end
  local waiting = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - lost, 'LIMIT', 0, limit)
  for _, k in ipairs(waiting) do
    if not sending[k] and redis.call('HEXISTS', KEYS[8], k) == 0 then
      redis.call('ZADD', KEYS[1], 'XX', now, k)
      send[#send + 1] = k
      resent_lost = resent_lost + 1
    end
  end
  if resent_lost > 0 then redis.call('HINCRBY', KEYS[6], 'message_lost', resent_lost) end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - stale, 'LIMIT', 0, limit)
for _, k in ipairs(old) do
  redis.call('ZADD', KEYS[1], 'XX', now, k)
  send[#send + 1] = k
end
if #old > 0 then redis.call('HINCRBY', KEYS[6], 'resent', #old) end
return finish({#due, expired, #old, resent_lapsed, resent_lost, taken})
