-- add(holder, class, key, own, tenant, message, ...): mark each key as needing a reconcile.
-- KEYS: queued(zset key->enqueued ms), active(hash key->owner), dirty(set), known(set),
--       metrics(hash: `adds` counts what client-go's Add counts, i.e. keys not already waiting),
--       held(hash key->who has its message in hand), dirty_own(hash key->resourceVersion),
--       fair prefix, tenants(hash key->tenant; see fair.lua), fair.lua's fixed keys, then the
--       broker list the messages go on
-- ARGV: holder ('' for none: the caller is not a worker host), class ('e' for events and user
-- actions, 'r' for a periodic resync; see fair.lua), count ('1': `adds` is counted here; '':
-- the caller counts it from the codes, counters.PendingCounts), then (key, own, tenant, message)
-- quadruples. `message` is the key's message as the broker holds it, pushed here when the key
-- is newly queued ('' for none: the caller sends it). A worker host records itself as the
-- publisher of each key it queues and sends itself, until the message is sent (sent.lua): if
-- it dies in between, the tick sends the message once the host has lapsed.
-- `own` is the resourceVersion (digits) of the object's own watch event that caused the add
-- ('' for any other cause). While every cause of a dirty mark is such an event, dirty_own keeps
-- the newest version, and done() need not queue the key again if its holder wrote that version.
-- `tenant` is the key's tenant read from the object by the watcher ('' when the caller does
-- not have the object): it is recorded in the tenants hash.
-- Returns one code per key: 1 queued (the caller sends a message), 3 queued and its message
-- pushed here, 0 coalesced with a queued key (an event upgrades a key queued by a resync), 2
-- marked dirty because a worker holds it (done() queues it again), 4 held and already dirty.
-- Codes 1, 2 and 3 are what client-go's Add counts as an add.
-- Redis' clock (clock.lua) is read only when a key is queued: a dirty mark needs no time.
fair_keys(KEYS[8], KEYS[9])
local holder, class, count = ARGV[1], ARGV[2], ARGV[3]
local out = {}
local adds = 0
for i = 4, #ARGV, 4 do
  local k, own, tenant, message = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if tenant ~= '' then redis.call('HSET', KEYS[9], k, tenant) end
  if redis.call('HEXISTS', KEYS[2], k) == 1 then
    local first = redis.call('SADD', KEYS[3], k)
    adds = adds + first
    if own == '' then
      -- Not only own events any more (a key newly dirty has no entry to drop).
      if first == 0 then redis.call('HDEL', KEYS[7], k) end
    elseif first == 1 then
      redis.call('HSET', KEYS[7], k, own)
    else
      -- No entry: dirty already for another cause, which stands.
      local before = redis.call('HGET', KEYS[7], k)
      if before and tonumber(own) > tonumber(before) then redis.call('HSET', KEYS[7], k, own) end
    end
    out[#out + 1] = 4 - 2 * first
  elseif redis.call('ZADD', KEYS[1], 'NX', clock(), k) == 1 then
    -- Known from here on. A key held or already queued is known already: it was queued
    -- here, or by a timer, a resync or done.lua, each of which keeps it known.
    redis.call('SADD', KEYS[4], k)
    adds = adds + 1
    fair_push(k, class)
    if message ~= '' then
      redis.call('LPUSH', KEYS[13], message)
      out[#out + 1] = 3
    else
      out[#out + 1] = 1
      if holder ~= '' then redis.call('HSET', KEYS[6], k, holder) end
    end
  else
    if class == 'e' then fair_upgrade(k) end
    out[#out + 1] = 0
  end
end
if count ~= '' and adds > 0 then redis.call('HINCRBY', KEYS[5], 'adds', adds) end
return out
