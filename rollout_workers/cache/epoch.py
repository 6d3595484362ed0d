"""The cache epoch: one Redis key saying "the cache holds a complete relist of every type".

A Redis that restarts without persistence, or is flushed, loses the cache, the queues and the
timers at once. The leading watcher writes the epoch key only after every reflector has listed
into the cache, and checks it every second: a key gone (or changed under it) means Redis lost
data, and the watcher relists every type and requeues every key (watcher/recovery.py).

Workers read the key before a reconcile (the claim script reports it: WorkQueue's
`claim_guard`): without it the cache may be partial (some types relisted, others not yet), and
acting on it could, say, create a ReplicaSet that exists but is not cached yet. Such a key is
requeued shortly instead; the watcher's requeue after the relist covers it anyway.
"""

from __future__ import annotations

import uuid

import redis


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class CacheEpoch:
    def __init__(self, client: redis.Redis, *, prefix: str) -> None:
        self.key = f"{prefix}:cache:epoch"
        self._redis = client

    def get(self) -> str | None:
        return _text(self._redis.get(self.key))

    def synced(self) -> bool:
        """Whether the cache is complete (the watcher finished a relist of every type)."""
        return bool(self._redis.exists(self.key))

    def mark(self, epoch: str | None = None) -> str:
        """Record a complete relist; returns the epoch written (a new one unless given)."""
        value = epoch or uuid.uuid4().hex
        self._redis.set(self.key, value)
        return value
