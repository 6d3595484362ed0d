"""The leading watcher's check of Redis: notice lost writes, relist every type, requeue every key.

Redis can lose writes in two ways, and the queues, timers and cache with them:
- a restart without persistence (or a flush) loses everything: the cache epoch key
  (cache/epoch.py) is gone;
- a restart with AOF (`appendfsync everysec`) loses up to the last second of writes: a key
  queued without its message, a timer armed by a `done`, a cache write. The epoch key survives,
  so that is not seen by it; instead every reconnect after a failed round trip, and every
  change of the server's `run_id` (a restart between two checks), counts as a possible loss.

Either way the answer is the same and costs one relist: every reflector lists its type again
(in its own thread, see Reflector.request_relist), which rewrites what the cache lost, the
reflectors started on demand included (workloads, routers: their "listed" marks, which workers
wait for, went with Redis and are set again by `on_recovered`); then the epoch is written anew
and every rollout, AnalysisRun and Experiment in the cache is added to its queue (as a resync
does). Every reconcile re-arms its own timers, so timers lost with Redis
come back with that requeue. The check is one pipelined round trip a second (GET + INFO).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.logs import OutageLog
from rollout_workers.watcher.reflector import Reflector

log = logging.getLogger(__name__)

#: Requeues every key of every kind; returns the number of keys per kind.
Requeue = Callable[[], dict[str, int]]
#: The reflectors running now (those started on demand come and go with the rollouts).
Reflectors = Sequence[Reflector] | Callable[[], Sequence[Reflector]]


class RedisCheck:
    def __init__(
        self,
        client: redis.Redis,
        *,
        epoch: CacheEpoch,
        reflectors: Reflectors,
        requeue: Requeue,
        on_recovered: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis, self._epoch = client, epoch
        self._reflectors = reflectors if callable(reflectors) else lambda: reflectors
        self._requeue, self._on_recovered = requeue, on_recovered
        self._clock = clock
        self.outage = OutageLog("redis", log, clock)
        self.epoch: str | None = None
        self.run_id: str | None = None
        self.recoveries = 0
        #: The relist generation asked of each reflector, while a recovery runs.
        self._pending: list[tuple[Reflector, int]] | None = [
            (r, 1)
            for r in self._reflectors()  # the first list
        ]
        self._reason = "start"
        self._started = clock()

    @property
    def recovering(self) -> bool:
        return self._pending is not None

    def poll(self) -> bool:
        """One check (call about every second); False while Redis is unreachable. When it
        returns True after an outage, `reconnected` is set for the caller's lease renewal."""
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.get(self._epoch.key)
            pipe.info("server")
            raw, info = pipe.execute()
        except redis.RedisError as err:
            self.outage.failed(err)
            return False
        current = raw.decode() if isinstance(raw, bytes) else raw
        run_id = str(_info(info).get("run_id", ""))
        lasted = self.outage.ok()
        reason = ""
        if lasted is not None:
            reason = f"Redis was unreachable for {lasted:.1f} s"
        elif self.run_id is not None and run_id != self.run_id:
            reason = "Redis restarted"
        elif not self.recovering and current != self.epoch:
            reason = "the cache epoch is gone" if current is None else "the cache epoch changed"
        self.run_id = run_id
        if self._reason == "start" and self.recovering and self.epoch is None:
            self.epoch = current  # kept as it is when the first list completes
        if reason:
            self._begin(reason)
        self._finish()
        return True

    def _begin(self, reason: str) -> None:
        log.warning("%s: relisting every type and requeueing every key", reason)
        self._reason = reason
        self._started = self._clock()
        self.epoch = None
        self._pending = [(r, r.request_relist()) for r in self._reflectors()]

    def _finish(self) -> None:
        pending = self._pending
        if pending is None:
            return
        if not all(r.relisted(g) for r, g in pending):
            return
        try:
            requeued: dict[str, int] = {}
            if self._reason == "start":
                # A first list routes every object that differs from the cache, which is every
                # object when Redis is new or was emptied; an intact Redis keeps its queues.
                if self.epoch is None:
                    self.epoch = self._epoch.mark()
                elif self._epoch.get() != self.epoch:  # lost while the first lists ran
                    self._begin("the cache epoch is gone")
                    return
            else:
                self._on_recovered()
                self.epoch = self._epoch.mark()
                requeued = self._requeue()
        except redis.RedisError as err:
            self.outage.failed(err)
            return
        self._pending = None
        if self._reason != "start":
            self.recoveries += 1
        log.info(
            "cache complete (%s) %.1f s after %s; requeued %s",
            f"epoch {self.epoch}",
            self._clock() - self._started,
            "start" if self._reason == "start" else self._reason,
            ", ".join(f"{n} {kind}" for kind, n in requeued.items()) or "nothing",
        )


def _info(info: Any) -> dict[str, Any]:
    return info if isinstance(info, dict) else {}
