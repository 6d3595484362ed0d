-- fair.lua: start-time fair queueing behind `queued`, prepended (after `local FAIR_MODE = ...`,
-- the configured fairness: 'off', 'namespace' or 'label') to every script that queues or
-- claims a key. While fairness is on, each key in `queued` is also in exactly one class queue:
-- `e` (events and user actions) or `r` (periodic resyncs). Under the prefix P:
--   P:q:e, P:q:r  zsets key -> start tag: the class's queued keys, taken lowest tag first
--   P:next        hash `<class>|<tenant>` -> the tenant's next tag in that class, and
--                 `<class>` -> the class's virtual time: the tag of the key last taken
-- and T, the hash key -> tenant that the watcher keeps from a label (the label form only; a key
-- not in it belongs to its namespace). A key pushed gets the tag max(virtual time, its tenant's
-- next tag), and its tenant's next tag becomes one more: each tenant with keys waiting has one
-- key at each tag, so the tenants take turns, oldest key first within a tenant, and a tenant
-- arriving late starts at the virtual time: its turn comes after at most one key of each
-- tenant already waiting, however deep their queues. Equal tags go by key.
-- P:next and the class queues are declared after the keys each script indexes ("fair.lua's
-- fixed keys"), though named here from P.
local fair_p, fair_t = '', ''

local function fair_keys(prefix, tenants)
  fair_p, fair_t = prefix, tenants
end

-- fair_push_many(ks, class): each of ks (distinct) has just been inserted into `queued`, in
-- this order. One HMGET, ZADD and HSET however many keys.
local function fair_push_many(ks, class)
  if FAIR_MODE == 'off' or #ks == 0 then return end
  local labelled = {}
  if FAIR_MODE == 'label' then labelled = redis.call('HMGET', fair_t, unpack(ks)) end
  local field, fields, at = {}, {class}, {}
  for i, k in ipairs(ks) do
    local f = class .. '|' .. (labelled[i] or string.match(k, '^[^/]*'))
    field[i] = f
    if not at[f] then
      fields[#fields + 1] = f
      at[f] = #fields
    end
  end
  local tags = fair_p .. ':next'
  local got = redis.call('HMGET', tags, unpack(fields))
  local now, nexts, scored = tonumber(got[1] or '0'), {}, {}
  for i, k in ipairs(ks) do
    local f = field[i]
    local tag = nexts[f] or math.max(now, tonumber(got[at[f]] or '0'))
    scored[#scored + 1], scored[#scored + 2] = tag, k
    nexts[f] = tag + 1
  end
  redis.call('ZADD', fair_p .. ':q:' .. class, unpack(scored))
  local updates = {}
  for j = 2, #fields do
    updates[#updates + 1], updates[#updates + 2] = fields[j], nexts[fields[j]]
  end
  redis.call('HSET', tags, unpack(updates))
end

-- fair_push(k, class): k has just been inserted into `queued`.
local function fair_push(k, class)
  fair_push_many({k}, class)
end

-- fair_upgrade_many(ks): an event for keys already queued moves those a resync queued to the
-- event class.
local function fair_upgrade_many(ks)
  if FAIR_MODE == 'off' or #ks == 0 then return end
  local q = fair_p .. ':q:r'
  if #ks == 1 then
    if redis.call('ZREM', q, ks[1]) == 1 then fair_push_many(ks, 'e') end
    return
  end
  local scores, moved = redis.call('ZMSCORE', q, unpack(ks)), {}
  for i, k in ipairs(ks) do
    if scores[i] then moved[#moved + 1] = k end
  end
  if #moved > 0 then
    redis.call('ZREM', q, unpack(moved))
    fair_push_many(moved, 'e')
  end
end

-- fair_next(queued): the key whose turn it is, taken off its class queue, events before
-- resyncs, and its score in `queued` (its enqueue time). A key no longer in `queued` (left by
-- a claim while fairness was off) is dropped on the way. nil when none is queued.
local function fair_next(queued)
  for _, class in ipairs({'e', 'r'}) do
    local q = fair_p .. ':q:' .. class
    while true do
      local top = redis.call('ZPOPMIN', q)
      if #top == 0 then break end
      local enqueued = redis.call('ZSCORE', queued, top[1])
      if enqueued then
        redis.call('HSET', fair_p .. ':next', class, top[2])
        return top[1], enqueued
      end
    end
  end
  return nil
end

-- fair_fill(queued, now, send, sending, missing): with fairness on, a claim takes whichever key's turn
-- it is, so every message stands for any queued key: a lost message (its key claimed by another
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

-- fair_migrate(queued): the layout before this one kept a ring (list) of tenants a class at
-- P:e and P:r, a zset a tenant and class at P:<class>:<tenant>, and P:of (key -> class ..
-- tenant). Its keys still queued move to the class queues (a pool upgraded while keys wait),
-- and its keys go. Run by the tick: one EXISTS once there is nothing left.
local function fair_migrate(queued)
  local of = fair_p .. ':of'
  if redis.call('EXISTS', of) == 0 then return end
  local old, waiting, gone = redis.call('HGETALL', of), {}, {}
  for i = 1, #old, 2 do
    local k, class = old[i], string.sub(old[i + 1], 1, 1)
    gone[fair_p .. ':' .. class .. ':' .. string.sub(old[i + 1], 2)] = true
    local enqueued = redis.call('ZSCORE', queued, k)
    if enqueued then waiting[#waiting + 1] = {tonumber(enqueued), k, class} end
  end
  -- Oldest first, so that each tenant's keys keep their order.
  table.sort(waiting, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  for _, w in ipairs(waiting) do fair_push(w[2], w[3]) end
  for q in pairs(gone) do redis.call('DEL', q) end
  redis.call('DEL', of, fair_p .. ':e', fair_p .. ':r')
end

