-- owner.lua: the `active` hash's owner records, prepended to every workqueue script that reads
-- them. A record is '<token> <claimed ms> <lease deadline ms>' (Redis time): the owner, since
-- when it holds the key (unfinished work), and until when (the lease, extended by heartbeat).
-- A record of the layout before is the token alone, its lease deadline in the `leases` zset:
-- scripts still read and end those, and keep writing that zset for them only.
local function owner_parse(v)
  local token, since, deadline = string.match(v, '^(%S*) ?(%S*) ?(%S*)')
  return token, tonumber(since), tonumber(deadline)
end

local function owner_record(token, since, deadline)
  return token .. ' ' .. since .. ' ' .. deadline
end

-- owner_deadline(leases, k, v): the lease deadline of k's record v (0 when none is known).
local function owner_deadline(leases, k, v)
  local _, _, deadline = owner_parse(v)
  if deadline then return deadline end
  return tonumber(redis.call('ZSCORE', leases, k) or '0')
end

-- owner_end(leases, k, v): the lease of k's record v is over (its leases entry, if any, goes).
local function owner_end(leases, k, v)
  local _, _, deadline = owner_parse(v)
  if not deadline then redis.call('ZREM', leases, k) end
end

-- owner_drop(active, leases, dirty, dirty_own, k, v): k's hold (record v) ends without a done
-- (its lease ran out, its host lapsed or handed it back): the record, its lease and the key's
-- dirty marks go, the old holder fenced by its token; the caller queues the key again.
local function owner_drop(active, leases, dirty, dirty_own, k, v)
  redis.call('HDEL', active, k)
  owner_end(leases, k, v)
  redis.call('SREM', dirty, k)
  redis.call('HDEL', dirty_own, k)
end
