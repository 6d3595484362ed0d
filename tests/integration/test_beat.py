"""Beat runs the timer tick itself: a `timers.tick` entry an older version left in redbeat's
schedule is deleted at start, and no tick task is ever sent."""

from __future__ import annotations

import redis
from celery.schedules import schedule
from redbeat import RedBeatSchedulerEntry

from rollout_workers.pool.app import create_app
from rollout_workers.settings import Settings
from tests.support.procs import Processes, wait_for


def test_beat_ticks_in_process_and_deletes_the_retired_tick_entry(
    procs: Processes, settings: Settings, rdb: redis.Redis
) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    RedBeatSchedulerEntry("timers.tick", "timers.tick", schedule(1.0), app=app).save()
    assert rdb.exists("rw:beat:timers.tick")

    beat = procs.beat()
    wait_for(lambda: int(rdb.hget("rw:system:ticks", "count") or 0) >= 3, 30, "beat ticks")
    assert not rdb.exists("rw:beat:timers.tick")
    assert b"rw:beat:timers.tick" not in rdb.zrange("rw:beat::schedule", 0, -1)
    assert rdb.llen("system") == 0, "no tick task was sent"
    assert "removed the retired timers.tick schedule entry" in beat.text()
    assert "beat holds the lock: ticking timers every 1s" in beat.text()
