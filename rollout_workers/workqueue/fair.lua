-- fair.lua: the per-tenant queues behind `queued`, prepended (after `local FAIR_MODE = ...`,
-- the configured fairness: 'off', 'namespace' or 'label') to every script that queues or
-- claims a key. While fairness is on, each key in `queued` is also in exactly one tenant queue
-- of one class: `e` (events and user actions) or `r` (periodic resyncs). Under the prefix P:
--   P:e, P:r          rings (lists) of the tenants with keys queued in that class
--   P:e:<t>, P:r:<t>  zsets key -> enqueued ms: tenant t's keys of that class
--   P:of              hash key -> class .. tenant, for each key in a tenant queue
-- and T, the hash key -> tenant that the watcher keeps from a label (the label form only; a key
-- not in it belongs to its namespace). P:of, P:e and P:r are declared too, after the keys each
-- script indexes ("fair.lua's fixed keys"), though named here from P; the tenant queues are
-- named here only, not passed as KEYS, which a single Redis server allows (a Redis Cluster
-- would not: docs/redis-cluster.md, tests/integration/test_lua_keys.py).
local fair_p, fair_t = '', ''

local function fair_keys(prefix, tenants)
  fair_p, fair_t = prefix, tenants
end

local function fair_tenant(k)
  if FAIR_MODE == 'label' then
    local t = redis.call('HGET', fair_t, k)
    if t then return t end
  end
  return string.match(k, '^[^/]*')
end

-- fair_push(k, class, now): k has just been inserted into `queued`.
local function fair_push(k, class, now)
  if FAIR_MODE == 'off' then return end
  local t = fair_tenant(k)
  local q = fair_p .. ':' .. class .. ':' .. t
  redis.call('ZADD', q, now, k)
  redis.call('HSET', fair_p .. ':of', k, class .. t)
  -- Newcomers join the ring at its head: their turn comes after every tenant already waiting.
  if redis.call('ZCARD', q) == 1 then redis.call('LPUSH', fair_p .. ':' .. class, t) end
end

-- fair_drop(k, of): k leaves `queued` (claimed) or its class. Also run with fairness off, so that
-- keys queued before a switch leave nothing behind. `of`: k's class .. tenant when the caller
-- knows it (fair_next found k there), else read here. Returns the class k was in, or nil.
local function fair_drop(k, of)
  if not of then
    of = redis.call('HGET', fair_p .. ':of', k)
    if not of then return nil end
  end
  redis.call('HDEL', fair_p .. ':of', k)
  local class, t = string.sub(of, 1, 1), string.sub(of, 2)
  local q = fair_p .. ':' .. class .. ':' .. t
  redis.call('ZREM', q, k)
  if redis.call('ZCARD', q) == 0 then redis.call('LREM', fair_p .. ':' .. class, 1, t) end
  return class
end

-- fair_upgrade(k, clock): an event for a key already queued by a resync moves it to the event
-- class of its tenant (clock(): the time now, read only then).
local function fair_upgrade(k, clock)
  local of = redis.call('HGET', fair_p .. ':of', k)
  if of and string.sub(of, 1, 1) == 'r' then
    fair_drop(k)
    fair_push(k, 'e', clock())
  end
end

-- fair_next(): the key whose turn it is: the oldest key of the next tenant in the event ring,
-- else in the resync ring (the tenant moves to the back of its ring), and its class .. tenant
-- (fair_drop's `of`). nil when none is queued.
local function fair_next()
  for _, class in ipairs({'e', 'r'}) do
    local ring = fair_p .. ':' .. class
    local t = redis.call('RPOPLPUSH', ring, ring)
    if t then
      local k = redis.call('ZRANGE', ring .. ':' .. t, 0, 0)[1]
      if k then return k, class .. t end
    end
  end
  return nil
end

-- fair_fill(queued, now, send, sending, missing): with fairness on, a claim takes whichever key's turn it
-- is, so every message stands for any queued key: a lost message (its key claimed by another
-- message meanwhile) is made up by sending one for the oldest queued key not being sent.
local function fair_fill(queued, now, send, sending, missing)
  if FAIR_MODE == 'off' or missing == 0 then return 0 end
  local added = 0
  for _, k in ipairs(redis.call('ZRANGE', queued, 0, missing + #send - 1)) do
    if added == missing then break end
    if not sending[k] then
      redis.call('ZADD', queued, 'XX', now, k)
      sending[k] = true
      send[#send + 1] = k
      added = added + 1
    end
  end
  return added
end

