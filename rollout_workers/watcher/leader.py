"""Leader election on a Redis lease: one watcher lists and watches, standbys wait.

The lease is a key holding the leader's identity with a TTL, renewed every ttl/3 by a
compare-and-extend script. A leader that cannot renew before its lease would run out stops
(it exits, as client-go's leaderelection does), so two leaders never write the cache at once
for longer than a renewal interval.
"""

from __future__ import annotations

import redis

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LeaderLease:
    def __init__(self, client: redis.Redis, *, key: str, identity: str, ttl: float) -> None:
        self.key, self.identity = key, identity
        self.ttl_ms = max(1, round(ttl * 1000))
        self._redis = client
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def try_acquire(self) -> bool:
        if self._redis.set(self.key, self.identity, nx=True, px=self.ttl_ms):
            return True
        return self.renew()

    def renew(self) -> bool:
        return bool(self._renew(keys=[self.key], args=[self.identity, self.ttl_ms]))

    def release(self) -> None:
        self._release(keys=[self.key], args=[self.identity])

    def holder(self) -> str | None:
        value = self._redis.get(self.key)
        return value.decode() if isinstance(value, bytes) else value
