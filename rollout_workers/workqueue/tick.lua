-- tick(limit, stale_ms): move work whose time has come onto the queue.
--   due timers      -> added (dirty if a worker holds the key)
--   expired leases  -> the dead or stalled holder loses the key; it is queued again
--   stale queued    -> a key queued longer than stale_ms whose message was lost is sent again
-- KEYS: queued, active, leases, dirty, timers, stats, started, metrics(hash: `adds`)
-- Returns {keys to send..., } followed by three counts: due, expired, stale.
local limit, stale = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local send = {}
local adds = 0
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
for _, k in ipairs(due) do
  redis.call('ZREM', KEYS[5], k)
  if redis.call('HEXISTS', KEYS[2], k) == 1 then
    adds = adds + redis.call('SADD', KEYS[4], k)
  elseif redis.call('ZADD', KEYS[1], 'NX', now, k) == 1 then
    adds = adds + 1
    send[#send + 1] = k
  end
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, limit)
for _, k in ipairs(expired) do
  redis.call('HDEL', KEYS[2], k)
  redis.call('ZREM', KEYS[3], k)
  redis.call('SREM', KEYS[4], k)
  redis.call('HDEL', KEYS[7], k)
  redis.call('HINCRBY', KEYS[6], 'lease_expired', 1)
  if redis.call('ZADD', KEYS[1], 'NX', now, k) == 1 then
    adds = adds + 1
    send[#send + 1] = k
  end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - stale, 'LIMIT', 0, limit)
for _, k in ipairs(old) do
  redis.call('ZADD', KEYS[1], 'XX', now, k)
  send[#send + 1] = k
end
if #old > 0 then redis.call('HINCRBY', KEYS[6], 'resent', #old) end
if adds > 0 then redis.call('HINCRBY', KEYS[8], 'adds', adds) end
send[#send + 1] = #due
send[#send + 1] = #expired
send[#send + 1] = #old
return send
