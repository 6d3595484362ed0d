-- alive(host): a worker host's heartbeat, stamped with Redis' clock.
-- KEYS: hosts(zset host -> last heartbeat ms)
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
return 0
