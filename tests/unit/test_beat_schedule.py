"""The beat schedule sends only system tasks, to the system queue, with an expiry."""

from __future__ import annotations

from beat.schedule import build_schedule
from rollout_workers.pool.app import celery_config
from rollout_workers.settings import Settings


def test_schedule_entries() -> None:
    s = Settings(beat={"tick_interval": 1}, reconcile={"resync_period": 600})
    schedule = build_schedule(s)
    assert set(schedule) == {"timers.tick", "resync.all"}
    assert schedule["timers.tick"]["schedule"] == 1
    assert schedule["resync.all"]["schedule"] == 600
    for entry in schedule.values():
        assert entry["options"]["queue"] == "system"
        assert entry["options"]["expires"] > 0


def test_celery_config_is_json_only_and_beat_lock_is_tuned() -> None:
    conf = celery_config(Settings(), "redis://127.0.0.1:1/0")
    assert conf["accept_content"] == ["json"]
    assert conf["task_serializer"] == "json"
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["worker_send_task_events"] is True
    assert conf["redbeat_lock_timeout"] <= 15
    assert conf["task_routes"]["timers.tick"] == {"queue": "system"}
    assert conf["task_routes"]["experiments.sync"] == {"queue": "analysis"}
