-- alive(host): a worker host's heartbeat, stamped with Redis' clock.
-- KEYS: hosts(zset host -> last heartbeat ms)
redis.call('ZADD', KEYS[1], clock(), ARGV[1])
return 0
