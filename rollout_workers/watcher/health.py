"""The watcher's liveness and readiness, from the state its process loop and reflectors keep.

- Live: the process loop (standby attempts every second, or the leader's lease renewal every
  ttl/3) made progress within its period plus `health.stall_timeout`.
- Ready as leader: the lease was renewed within two renewal periods, every reflector thread
  runs, has listed once, and none has been failing to list or watch for `health.watch_failing`.
- Ready as standby: its last attempt on the lease reached Redis within three attempt periods,
  so it can take over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from rollout_workers.health import Clock, Heartbeat, Status
from rollout_workers.settings import Settings
from rollout_workers.watcher.reflector import Reflector

STANDBY_PERIOD = 1.0


class WatcherHealth:
    def __init__(self, settings: Settings, clock: Clock = time.monotonic) -> None:
        self._settings, self._clock = settings, clock
        self.loop = Heartbeat(clock)
        self._lock = threading.Lock()
        self._role = "starting"
        self._period = STANDBY_PERIOD
        self._reached = clock()
        self._error = ""
        self._leader: str | None = None
        self._reflectors: Sequence[Reflector] = ()
        self._threads: Sequence[threading.Thread] = ()

    # -- stamped by the process loop ---------------------------------------------------------

    def standby(self, leader: str | None) -> None:
        with self._lock:
            self._role, self._leader, self._period = "standby", leader, STANDBY_PERIOD
            self._reached, self._error = self._clock(), ""
        self.loop.beat()

    def leading(self, reflectors: Sequence[Reflector], threads: Sequence[threading.Thread]) -> None:
        with self._lock:
            self._role, self._period = "leader", self._settings.watcher.lease_ttl / 3
            self._reflectors, self._threads = reflectors, threads
            self._reached, self._error = self._clock(), ""
        self.loop.beat()

    def renewed(self) -> None:
        with self._lock:
            self._reached, self._error = self._clock(), ""
        self.loop.beat()

    def failed(self, err: Exception) -> None:
        with self._lock:
            self._error = f"{type(err).__name__}: {err}"
        self.loop.beat()

    def stopping(self) -> None:
        with self._lock:
            self._role = "stopping"

    # -- read by the probe thread ------------------------------------------------------------

    def live(self) -> Status:
        bound = self._period + self._settings.health.stall_timeout
        age = self.loop.age()
        if age > bound:
            return Status.bad(f"{self._role} loop made no progress for {age:.1f}s (> {bound:g}s)")
        return Status.good(f"{self._role} loop ran {age:.1f}s ago")

    def ready(self) -> Status:
        with self._lock:
            role, period, error = self._role, self._period, self._error
            since = self._clock() - self._reached
        if role == "standby":
            if since > 3 * period:
                return Status.bad(f"standby has not reached Redis for {since:.1f}s: {error}")
            return Status.good(f"standby; the leader is {self._leader}")
        if role != "leader":
            return Status.bad(f"watcher is {role}")
        if since > 2 * period:
            return Status.bad(f"leader lease not renewed for {since:.1f}s: {error}")
        return self._watches()

    def _watches(self) -> Status:
        now = self._clock()
        bound = self._settings.health.watch_failing
        for reflector, thread in zip(self._reflectors, self._threads, strict=True):
            stats, plural = reflector.stats, reflector.resource.plural
            if not thread.is_alive():
                return Status.bad(f"the {plural} reflector stopped")
            if not stats.synced.is_set():
                return Status.bad(f"{plural} not listed yet: {stats.last_error or 'listing'}")
            failing = stats.failing_for(now)
            if failing > bound:
                return Status.bad(f"{plural} watch failing for {failing:.0f}s: {stats.last_error}")
        return Status.good(f"leader; {len(self._reflectors)} watches synced")
