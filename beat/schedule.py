"""The beat schedule: only small system tasks, each sent to the system queue.

The timer tick is not on it: beat runs the tick itself, in its own loop, while it holds the
redbeat lock (beat/process.py), so 86,400 tick tasks a day do not crowd the reconciles out of
Flower. The resync stays a task: it runs every 15 minutes, its work (an add of every known key)
scales with the cluster and belongs on a worker, and a Flower entry per resync is useful.

Messages carry an expiry so a resync that waited behind a stopped worker pool is dropped rather
than run late; the next one does the same work.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.settings import Settings

#: Entries older versions put on the schedule; redbeat keeps entries in Redis, so they are
#: deleted explicitly when beat starts.
RETIRED = ("timers.tick",)


def build_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    system = settings.queue.system
    resync = settings.reconcile.resync_period
    return {
        "resync.all": {
            "task": "resync.all",
            "schedule": resync,
            "options": {"queue": system, "expires": resync},
        },
    }
