-- add_rate_limited(key, base_ms, max_ms): count a failure and queue the key after
-- base * 2^(failures-1), capped at max. Returns the delay in ms.
-- KEYS: failures, timers, known, metrics(hash: `retries`, as client-go's AddRateLimited)
local k, base, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = clock()
local n = redis.call('HINCRBY', KEYS[1], k, 1)
local d = max
if n < 64 then d = math.min(base * math.pow(2, n - 1), max) end
redis.call('SADD', KEYS[3], k)
redis.call('HINCRBY', KEYS[4], 'retries', 1)
redis.call('ZADD', KEYS[2], 'LT', now + d, k)
return math.floor(d)
