"""Worker hosts' heartbeats, so the tick can tell which hosts died with messages in hand."""

from __future__ import annotations

from typing import Any

import redis

from rollout_workers.redisclient import Script
from rollout_workers.workqueue.queue import hosts_key, script_source


class Hosts:
    """The heartbeat zset shared by every kind's queue (`<prefix>:wq:hosts`)."""

    def __init__(self, client: redis.Redis, *, prefix: str) -> None:
        self.key = hosts_key(prefix)
        self._redis = client
        self._alive = Script(client, script_source("alive"))

    def alive(self, host: str) -> None:
        """Stamp `host` alive now (Redis time): one script call, every `host_heartbeat`."""
        self._alive(keys=[self.key], args=[host])

    def last_seen(self) -> dict[str, float]:
        """Each listed host's last heartbeat, in Redis-clock seconds."""
        rows: Any = self._redis.zrange(self.key, 0, -1, withscores=True)
        return {
            (h.decode() if isinstance(h, bytes) else str(h)): float(score) / 1000
            for h, score in rows
        }
