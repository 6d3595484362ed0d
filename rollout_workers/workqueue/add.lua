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
-- Each Redis command covers every key of the call (one HMGET of the owners, one ZADD, ...).
fair_keys(KEYS[8], KEYS[9])
local holder, class, count = ARGV[1], ARGV[2], ARGV[3]
local ks, own, message, first, labels = {}, {}, {}, {}, {}
for i = 4, #ARGV, 4 do
  local k = ARGV[i]
  if ARGV[i + 2] ~= '' then labels[#labels + 1], labels[#labels + 2] = k, ARGV[i + 2] end
  if not first[k] then
    ks[#ks + 1] = k
    first[k] = #ks
    own[k], message[k] = ARGV[i + 1], ARGV[i + 3]
  end
end
if #labels > 0 then redis.call('HSET', KEYS[9], unpack(labels)) end
local code, adds = {}, 0
local held, free = {}, {}
if #ks > 0 then
  local owners = redis.call('HMGET', KEYS[2], unpack(ks))
  for i, k in ipairs(ks) do
    if owners[i] then held[#held + 1] = k else free[#free + 1] = k end
  end
end

-- Held keys: marked dirty (done() queues them again).
if #held > 0 then
  local fresh = {}
  if #held == 1 then
    fresh[held[1]] = redis.call('SADD', KEYS[3], held[1]) == 1
  else
    local marked, mark = redis.call('SMISMEMBER', KEYS[3], unpack(held)), {}
    for i, k in ipairs(held) do
      if marked[i] == 0 then
        fresh[k] = true
        mark[#mark + 1] = k
      end
    end
    if #mark > 0 then redis.call('SADD', KEYS[3], unpack(mark)) end
  end
  local set, drop, compare = {}, {}, {}
  for _, k in ipairs(held) do
    if fresh[k] then
      adds = adds + 1
      code[k] = 2
      if own[k] ~= '' then set[#set + 1], set[#set + 2] = k, own[k] end
    else
      code[k] = 4
      -- Dirty already: for another cause, which stands (no entry), or for own events.
      if own[k] == '' then drop[#drop + 1] = k else compare[#compare + 1] = k end
    end
  end
  if #compare > 0 then
    local before = redis.call('HMGET', KEYS[7], unpack(compare))
    for i, k in ipairs(compare) do
      if before[i] and tonumber(own[k]) > tonumber(before[i]) then
        set[#set + 1], set[#set + 2] = k, own[k]
      end
    end
  end
  if #set > 0 then redis.call('HSET', KEYS[7], unpack(set)) end
  if #drop > 0 then redis.call('HDEL', KEYS[7], unpack(drop)) end
end

-- Keys not held: queued unless queued already (then an event upgrades a resync's key).
if #free > 0 then
  local new, waiting = {}, {}
  if #free == 1 then
    if redis.call('ZADD', KEYS[1], 'NX', clock(), free[1]) == 1 then
      new[1] = free[1]
    else
      waiting[1] = free[1]
    end
  else
    local scores, now, scored = redis.call('ZMSCORE', KEYS[1], unpack(free)), clock(), {}
    for i, k in ipairs(free) do
      if scores[i] then
        waiting[#waiting + 1] = k
      else
        new[#new + 1] = k
        scored[#scored + 1], scored[#scored + 2] = now, k
      end
    end
    if #scored > 0 then redis.call('ZADD', KEYS[1], unpack(scored)) end
  end
  if #new > 0 then
    -- Known from here on. A key held or already queued is known already: it was queued
    -- here, or by a timer, a resync or done.lua, each of which keeps it known.
    redis.call('SADD', KEYS[4], unpack(new))
    adds = adds + #new
    fair_push_many(new, class)
    local pushed, publishing = {}, {}
    for _, k in ipairs(new) do
      if message[k] ~= '' then
        pushed[#pushed + 1] = message[k]
        code[k] = 3
      else
        code[k] = 1
        if holder ~= '' then publishing[#publishing + 1], publishing[#publishing + 2] = k, holder end
      end
    end
    if #pushed > 0 then redis.call('LPUSH', KEYS[13], unpack(pushed)) end
    if #publishing > 0 then redis.call('HSET', KEYS[6], unpack(publishing)) end
  end
  for _, k in ipairs(waiting) do code[k] = 0 end
  if class == 'e' then fair_upgrade_many(waiting) end
end

if count ~= '' and adds > 0 then redis.call('HINCRBY', KEYS[5], 'adds', adds) end
-- A key given twice is answered the second time as if added again at once.
local out, again = {}, {[1] = 0, [3] = 0, [0] = 0, [2] = 4, [4] = 4}
for i = 4, #ARGV, 4 do
  local k = ARGV[i]
  if first[k] then
    out[#out + 1] = code[k]
    first[k] = nil
  else
    out[#out + 1] = again[code[k]]
  end
end
return out
