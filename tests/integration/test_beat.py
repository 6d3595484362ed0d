"""Beat runs the timer tick itself: a `timers.tick` entry an older version left in redbeat's
schedule is deleted at start, and no tick task is ever sent."""

from __future__ import annotations

import signal
import time

import redis
from celery.schedules import schedule
from redbeat import RedBeatSchedulerEntry

from rollout_workers.celeryapp.app import create_app
from rollout_workers.keys import ObjectKey
from rollout_workers.settings import Settings
from rollout_workers.workqueue import WorkQueue
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


def test_sigterm_releases_the_beat_lock_and_the_standby_ticks_at_once(
    procs: Processes, rdb: redis.Redis
) -> None:
    active = procs.spawn("beat-1", "beat")
    active.wait_log(r"beat holds the lock", timeout=30)
    standby = procs.spawn("beat-2", "beat")
    standby.wait_log(r"beat: Starting", timeout=30)
    time.sleep(1.5)  # the standby is now polling for the lock (every max_interval)
    assert "beat holds the lock" not in standby.text()

    terminated = time.monotonic()
    active.popen.send_signal(signal.SIGTERM)
    standby.wait_log(r"beat holds the lock", timeout=8)
    took = time.monotonic() - terminated
    assert active.popen.wait(10) is not None
    assert "Releasing lock" in active.text()
    assert took < 3, f"the standby ticked {took:.1f}s after SIGTERM (lock timeout 10s)"
    print(f"beat handover on SIGTERM: the standby ticks after {took:.2f}s")


def test_a_timer_fires_close_to_its_due_time_between_ticks(
    procs: Processes, settings: Settings, rdb: redis.Redis
) -> None:
    """Ticks 30 s apart: the timer pass, every beat.timer_resolution, queues a timer due in
    0.5 s long before the next tick would."""
    beat = procs.spawn("beat", "beat", env={"ROLLOUTS_BEAT_TICK_INTERVAL": "30"})
    beat.wait_log(r"beat holds the lock: ticking timers every 30s", timeout=30)
    queue = WorkQueue(
        rdb, kind="rollouts", prefix=settings.redis.key_prefix, settings=settings.queue,
        send=lambda keys: None,
    )  # fmt: skip
    key = ObjectKey("default/timed")
    queue.add_after([key], 0.5)
    added = time.monotonic()
    wait_for(lambda: rdb.zscore(queue.k_queued, key) is not None, 10, "the timer to fire")
    took = time.monotonic() - added
    assert 0.45 <= took < 2.5, f"queued {took:.2f}s after a 0.5 s timer was set"
    print(f"a 0.5 s timer was queued after {took:.3f}s")
