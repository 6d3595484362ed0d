-- requeue(holder, keys...): a shutting-down host hands back keys whose message it had reserved
-- but not started. A key still queued (nobody claimed it) gets a fresh enqueue time and is returned so
-- the caller sends a new message at once; a key claimed meanwhile is left alone, unless
-- fairness is on: then its message stood for another queued key (fair.lua), and one is sent
-- for the oldest queued key not already sent. The reserved message itself becomes a duplicate,
-- dropped as stale or taking a queued key early.
-- KEYS: queued, stats, held(hash key->who has its message in hand: the caller, as publisher,
--       until its new message is sent), fair prefix, tenants
local now = clock()
fair_keys(KEYS[4], KEYS[5])
local send, sending = {}, {}
local missing = 0
for i = 2, #ARGV do
  local k = ARGV[i]
  if not sending[k] and redis.call('ZSCORE', KEYS[1], k) then
    redis.call('ZADD', KEYS[1], 'XX', now, k)
    send[#send + 1] = k
    sending[k] = true
  else
    missing = missing + 1
  end
end
fair_fill(KEYS[1], now, send, sending, missing)
for _, k in ipairs(send) do
  if ARGV[1] ~= '' then redis.call('HSET', KEYS[3], k, ARGV[1]) end
end
if #send > 0 then redis.call('HINCRBY', KEYS[2], 'handed_back', #send) end
return send
