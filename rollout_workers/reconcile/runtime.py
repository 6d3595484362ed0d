"""What one process needs to serve tasks: settings, a Redis client and the work queues.

Built once per process (after a prefork worker forks) by the tasks layer, which knows how to
send Celery messages, and handed to reconcile handlers so they never reach for globals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from rollout_workers.counters import Keys, PendingCounts
from rollout_workers.kube.eventsink import EventSink
from rollout_workers.settings import Settings
from rollout_workers.workqueue import WorkQueue


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    redis: redis.Redis
    queues: dict[str, WorkQueue]
    #: API requests and events this process made, not yet counted in Redis (see metrics).
    counts: PendingCounts = field(default_factory=lambda: PendingCounts(Keys("rw")))
    #: Where this process' controllers send the Events they record (None: each controller
    #: writes them inline through its writer).
    events: EventSink | None = None

    def queue(self, kind: str) -> WorkQueue:
        return self.queues[kind]
