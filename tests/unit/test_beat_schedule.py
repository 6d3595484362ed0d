"""The beat schedule sends only the resync, to the system queue, with an expiry; the timer tick
runs inside beat while it holds the lock, and feeds beat's liveness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import redis

from beat.process import TIMER_BATCH, Ticker, TimerPasses
from beat.schedule import RETIRED, build_schedule
from rollout_workers.celeryapp.app import celery_config
from rollout_workers.settings import RedisSettings, Settings


def test_schedule_entries() -> None:
    s = Settings(beat={"tick_interval": 1}, reconcile={"resync_period": 600})
    schedule = build_schedule(s)
    assert set(schedule) == {"resync.all"}
    assert "timers.tick" in RETIRED  # deleted from Redis when beat starts
    assert schedule["resync.all"]["schedule"] == 600
    for entry in schedule.values():
        assert entry["options"]["queue"] == "system"
        assert entry["options"]["expires"] > 0


def test_celery_config_is_json_only_and_beat_lock_is_tuned() -> None:
    conf = celery_config(Settings(), "redis://127.0.0.1:1/0")
    assert conf["accept_content"] == ["json"]
    assert conf["task_serializer"] == "json"
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["worker_send_task_events"] is False  # Flower enables them when it runs
    assert conf["redbeat_lock_timeout"] <= 15
    assert conf["task_routes"]["timers.tick"] == {"queue": "system"}
    assert conf["task_routes"]["experiments.sync"] == {"queue": "analysis"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ticker(clock: FakeClock, ticks: list[float], fail: list[bool] | None = None) -> Ticker:
    def tick() -> dict[str, Any]:
        if fail and fail[0]:
            raise redis.ConnectionError("down")
        ticks.append(clock.now)
        return {}

    return Ticker(
        tick,
        interval=1.0,
        redis_url="redis://127.0.0.1:1/0",
        redis_settings=RedisSettings(),
        clock=clock,
    )


def test_ticks_keep_their_cadence_and_restart_after_a_stall() -> None:
    clock, ticks = FakeClock(), []
    t = ticker(clock, ticks)
    assert t.maybe_tick() == 1.0 and ticks == [100.0]
    clock.now = 100.4
    assert round(t.maybe_tick(), 3) == 0.6 and ticks == [100.0]  # not due: sleep until it is
    clock.now = 101.05  # a little late: the next one is still due at 102
    assert round(t.maybe_tick(), 3) == 0.95 and ticks == [100.0, 101.05]
    clock.now = 110.0  # after a stall: one tick now, then every second from now, no burst
    assert t.maybe_tick() == 1.0 and ticks[-1] == 110.0 and len(ticks) == 3


def test_liveness_fails_without_ticks_while_leading_and_a_standby_is_live() -> None:
    clock, ticks, fail = FakeClock(), [], [False]
    t = ticker(clock, ticks, fail)
    status = t.live()
    assert status.ok and "standby" in status.reason  # never entered the lock holder's loop
    t.maybe_tick()
    assert t.live().ok
    fail[0] = True  # Redis stalls: passes of the loop go on, ticks do not succeed
    for step in range(1, 5):
        clock.now = 100.0 + step
        t.maybe_tick()
    status = t.live()
    assert not status.ok and "no timer tick for 4.0s" in status.reason, status
    fail[0] = False
    clock.now = 105.0
    t.maybe_tick()
    assert t.live().ok


def test_timer_passes_run_while_leading_per_kind_when_its_next_timer_is_due(
    caplog: Any,
) -> None:
    clock = FakeClock()
    leading = [False]
    calls: list[list[str]] = []
    left: dict[str, float | None] = {"rollouts": None, "analysisruns": None}
    failure: list[Exception | None] = [None]

    def timers(kinds: Sequence[str]) -> dict[str, float | None]:
        if failure[0] is not None:
            raise failure[0]
        calls.append(list(kinds))
        return {k: left[k] for k in kinds}

    p = TimerPasses(
        timers, ["rollouts", "analysisruns"], leading=lambda: leading[0], resolution=0.1,
        clock=clock,
    )  # fmt: skip
    assert p.run_once() == 0.1 and calls == []  # a standby: the leader's passes queue them
    leading[0] = True
    left["rollouts"] = 0.03
    assert p.run_once() == pytest.approx(0.03) and calls == [["rollouts", "analysisruns"]]
    clock.now += 0.03  # only the kind whose earliest timer is due now
    left["rollouts"] = 7.0  # ...or sooner, for timers set meanwhile
    assert p.run_once() == pytest.approx(0.07) and calls[-1] == ["rollouts"]
    clock.now += 0.07
    left["rollouts"] = 0.0  # due already (a batch left some): after a batch's wait, no loop
    assert p.run_once() == pytest.approx(0.03) and calls[-1] == ["analysisruns"]
    clock.now += 0.03
    assert p.run_once() == pytest.approx(TIMER_BATCH) and calls[-1] == ["rollouts"]
    clock.now += 1
    failure[0] = redis.ConnectionError("down")  # the tick's outage log reports Redis
    assert p.run_once() == 0.1 and "timer pass failed" not in caplog.text
    failure[0] = ValueError("bug")
    assert p.run_once() == 0.1 and p.run_once() == 0.1
    assert caplog.text.count("timer pass failed") == 1  # once, not ten times a second
    failure[0], left["rollouts"] = None, None
    assert p.run_once() == pytest.approx(0.1) and calls[-1] == ["rollouts", "analysisruns"]
