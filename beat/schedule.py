"""The beat schedule: only small system tasks, each sent to the system queue.

Messages carry an expiry so a tick that waited behind a stopped worker pool is dropped rather
than run late in a burst; the next tick does the same work.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.settings import Settings


def build_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    system = settings.queue.system
    tick = settings.beat.tick_interval
    resync = settings.reconcile.resync_period
    return {
        "timers.tick": {
            "task": "timers.tick",
            "schedule": tick,
            "options": {"queue": system, "expires": max(5.0, 5 * tick)},
        },
        "resync.all": {
            "task": "resync.all",
            "schedule": resync,
            "options": {"queue": system, "expires": resync},
        },
    }
