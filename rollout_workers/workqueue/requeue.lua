-- requeue(holder, keys...): a shutting-down host hands back keys whose message it had reserved
-- but not started. A key still queued (nobody claimed it) gets a fresh enqueue time and is returned so
-- the caller sends a new message at once; a key claimed meanwhile is left alone. The reserved
-- message itself becomes a duplicate that claim() drops as stale.
-- KEYS: queued, stats, held(hash key->who has its message in hand: the caller, as publisher,
--       until its new message is sent)
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local send = {}
for i = 2, #ARGV do
  local k = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], k) then
    redis.call('ZADD', KEYS[1], 'XX', now, k)
    if ARGV[1] ~= '' then redis.call('HSET', KEYS[3], k, ARGV[1]) end
    send[#send + 1] = k
  end
end
if #send > 0 then redis.call('HINCRBY', KEYS[2], 'handed_back', #send) end
return send
