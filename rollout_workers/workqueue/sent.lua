-- sent(holder, keys...): the caller's messages for these keys are on the broker. Drop the
-- "being published by" records it made, unless a consumer has since recorded its reservation
-- (which overwrote the record and must stay).
-- KEYS: held(hash key->who has its message in hand)
local holder = ARGV[1]
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == holder then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 0
