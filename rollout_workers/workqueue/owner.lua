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
