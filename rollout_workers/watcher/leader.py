"""Leader election on a Redis lease: one watcher lists and watches, standbys wait.

The lease is a key holding the leader's identity with a TTL, renewed every ttl/3 by a
compare-and-extend script. A leader that cannot renew before its lease would run out stops
(it exits, as client-go's leaderelection does), so two leaders never write the cache at once
for longer than a renewal interval. Within that interval the fencing token closes the gap
(cache/fence.py): taking the lease increments the token in the same script, and every cache
write names the token its writer got, so a deposed leader's writes change nothing.
"""

from __future__ import annotations

import redis

from rollout_workers.cache.fence import NEW_TOKEN, Fence
from rollout_workers.redisclient import Script

# KEYS: lease, fence, the fence's copies set. ARGV: identity, ttl (ms). Returns the holder's
# fencing token, 0 if another identity holds the lease. A lease still held keeps its token,
# unless the token was lost from Redis (then the cache's writes are refused until this gives a
# new one).
_HOLD_BODY = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local token = redis.call('GET', KEYS[2])
if not token then return new_token() end
return tonumber(token)
"""
_HOLD = NEW_TOKEN + _HOLD_BODY

_ACQUIRE = (
    NEW_TOKEN
    + """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return new_token()
end
"""
    + _HOLD_BODY
)

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LeaderLease:
    def __init__(
        self, client: redis.Redis, *, key: str, identity: str, ttl: float, fence: Fence
    ) -> None:
        self.key, self.identity = key, identity
        self.ttl_ms = max(1, round(ttl * 1000))
        self.fence = fence
        self._redis = client
        self._acquire = Script(client, _ACQUIRE)
        self._renew = Script(client, _HOLD)
        self._release = Script(client, _RELEASE)

    def _held(self, token: object) -> bool:
        value = int(token)  # type: ignore[call-overload]
        if value:
            self.fence.token = str(value)
        return bool(value)

    def try_acquire(self) -> bool:
        keys = [self.key, self.fence.key, self.fence.copies]
        return self._held(self._acquire(keys=keys, args=[self.identity, self.ttl_ms]))

    def renew(self) -> bool:
        keys = [self.key, self.fence.key, self.fence.copies]
        return self._held(self._renew(keys=keys, args=[self.identity, self.ttl_ms]))

    def release(self) -> None:
        self._release(keys=[self.key], args=[self.identity])

    def holder(self) -> str | None:
        value = self._redis.get(self.key)
        return value.decode() if isinstance(value, bytes) else value
