-- add_after(delay_ms, keys...): queue each key once its delay has passed. A key already
-- waiting keeps the earlier of its two due times.
-- KEYS: timers(zset key->due ms), known
local now = clock()
local due = now + tonumber(ARGV[1])
for i = 2, #ARGV do
  local k = ARGV[i]
  redis.call('SADD', KEYS[2], k)
  redis.call('ZADD', KEYS[1], 'LT', due, k)
end
return due
