"""Runs the beat process: celery beat with the redbeat scheduler.

The schedule and the beat lock live in Redis, so any number of beat processes may run; one
holds the lock and sends, the others wait on it. The lock lives `beat.lock_timeout` seconds
unrefreshed (redbeat's default is five loop intervals, 25 minutes), so a standby takes over
within that many seconds of the active beat's death.
"""

from __future__ import annotations

from beat.schedule import build_schedule
from rollout_workers.pool.app import create_app
from rollout_workers.settings import Settings


def run(settings: Settings, redis_url: str) -> None:
    app = create_app(settings, redis_url)
    app.conf.beat_schedule = build_schedule(settings)
    app.Beat(
        loglevel=settings.log.level,
        scheduler="redbeat.RedBeatScheduler",
        max_interval=settings.beat.max_loop_interval,
        no_color=True,
    ).run()
