-- done(key, token, outcome, delay_ms, duration_ms, base_ms, max_ms, keep, holder, message,
--      held_ms, n, ttl, versions..., increments...):
-- release a claim and record the outcome in one step.
-- KEYS: queued, active(hash key->owner record, see owner.lua), leases, dirty, failures(hash
--       key->count), timers(zset key->due ms), known, stats(hash), durations(list of recent
--       reconcile milliseconds), metrics(hash: `retries`), held(hash key->who has its message
--       in hand),
--       dirty_own(hash key->resourceVersion, see add.lua), own_written(string: the newest
--       resourceVersion of the object that its controller wrote, kept by the caller's
--       controller; absent when it records none), fair prefix, tenants, fair.lua's three fixed
--       keys (see fair.lua), the broker list `message` goes on, then the keys the versions
--       name and the hashes the increments name
-- holder: the caller's host ('' for none), recorded as the publisher of a dirty key's message
-- message: the dirty key's message as the broker holds it, pushed here when the key is queued
--          again ('' for none: the caller sends it, and `holder` records who is publishing)
-- held_ms: the ms since the claim answered, by the caller's clock ('' for none): the time now is
-- then the claim's (Redis time, in the owner record) plus that, and no clock is read
-- versions: n pairs (index into KEYS, resourceVersion): what the reconcile wrote, each kept
-- for ttl seconds unless a newer one is (cache/written.py; applied first, whoever holds the
-- key: they are facts about the API server)
-- increments: triples (index into KEYS, field, amount), applied with the outcome (the
-- caller's metrics ride on this call instead of costing another round trip)
-- keep: how many durations the durations list keeps; 0 when the caller counts the reconcile
-- (`reconciles`, the outcome, `retries` and the duration) itself (counters.PendingCounts)
-- outcome: ok (reset backoff), after (reset backoff, run again after delay_ms; at once when
--          delay_ms is 0, as client-go's AddAfter of no delay is an Add: not on the next tick),
--          error (per-key exponential backoff), gone (the object no longer exists)
-- Returns {owned, send}: owned is 0 when the lease was lost to another owner (nothing is
-- changed); send is 1 when the key was dirty (or its `after` had no delay) and is queued again
-- (the caller sends a message), 2 when it is queued again and its message pushed here.
-- A key dirty only by its own watch events, none newer than what its controller wrote, is not
-- queued again: the reconcile that wrote it acted on everything up to its writes, which are
-- fenced by resourceVersion, so no one else's change lies between (counted as `own_skipped`).
local k, token, outcome = ARGV[1], ARGV[2], ARGV[3]
local delay, duration = tonumber(ARGV[4]), ARGV[5]
local base, max, keep = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local versions = tonumber(ARGV[12])
for i = 14, 13 + 2 * versions, 2 do
  local key, rv = KEYS[tonumber(ARGV[i])], ARGV[i + 1]
  -- Written at once (SET's GET: Redis 6.2), the newer one put back in the rare case it was.
  local was = redis.call('SET', key, rv, 'EX', ARGV[13], 'GET')
  if was and (tonumber(was) or 0) > tonumber(rv) then
    redis.call('SET', key, was, 'EX', ARGV[13])
  end
end
local held = redis.call('HGET', KEYS[2], k)
if not held or owner_parse(held) ~= token then
  redis.call('HINCRBY', KEYS[8], 'lease_lost', 1)
  return {0, 0}
end
-- The time, for a timer set or the key queued again: the claim's plus the time held, else
-- Redis' clock (clock.lua, read only then).
local _, claimed = owner_parse(held)
local held_ms = tonumber(ARGV[11])
local function now()
  if claimed and held_ms then return claimed + held_ms end
  return clock()
end
redis.call('HDEL', KEYS[2], k)
owner_end(KEYS[3], k, held)
fair_keys(KEYS[14], KEYS[15])
for i = 14 + 2 * versions, #ARGV, 3 do
  redis.call('HINCRBY', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
if keep > 0 then
  redis.call('HINCRBY', KEYS[8], 'reconciles', 1)
  redis.call('HINCRBY', KEYS[8], outcome, 1)
  -- Trimmed back to `keep` once it holds twice as many: readers take the newest `keep`.
  if redis.call('LPUSH', KEYS[9], duration) > 2 * keep then
    redis.call('LTRIM', KEYS[9], 0, keep - 1)
  end
end
local due = nil
local again = false
if outcome == 'error' then
  if keep > 0 then redis.call('HINCRBY', KEYS[10], 'retries', 1) end
  local n = redis.call('HINCRBY', KEYS[5], k, 1)
  local d = max
  if n < 64 then d = math.min(base * math.pow(2, n - 1), max) end
  due = now() + d
else
  redis.call('HDEL', KEYS[5], k)
  if outcome == 'after' then
    if delay > 0 then due = now() + delay else again = true end
  end
end
if outcome == 'gone' then
  redis.call('SREM', KEYS[7], k)
  redis.call('ZREM', KEYS[6], k)
  redis.call('HDEL', KEYS[15], k)
end
-- The earliest due time wins (LT: Redis 6.2).
if due then redis.call('ZADD', KEYS[6], 'LT', due, k) end
local send = 0
if redis.call('SREM', KEYS[4], k) == 1 then
  -- (A key has a dirty_own entry only while it is dirty: add.lua sets both.)
  local own = redis.call('HGET', KEYS[12], k)
  if own then redis.call('HDEL', KEYS[12], k) end
  local wrote = own and tonumber(redis.call('GET', KEYS[13]) or '')
  if wrote and outcome ~= 'gone' and tonumber(own) <= wrote then
    redis.call('HINCRBY', KEYS[8], 'own_skipped', 1)
  else
    if outcome == 'gone' then redis.call('SADD', KEYS[7], k) end
    again = true
  end
end
if again and redis.call('ZADD', KEYS[1], 'NX', now(), k) == 1 then
  send = 1
  fair_push(k, 'e')
  if ARGV[10] ~= '' then
    redis.call('LPUSH', KEYS[19], ARGV[10])
    send = 2
  elseif ARGV[9] ~= '' then
    redis.call('HSET', KEYS[11], k, ARGV[9])
  end
end
return {1, send}
