"""Redis Sentinel: every client follows a failover with no restart.

A real group (tests/support/sentinel.py: a master, two replicas, three Sentinels, all the
redis-server binary we ship) whose master is killed with SIGKILL mid-test. Afterwards the
workqueue's scripts, a real Celery worker host (its hardened transport included) and the beat
keep working against the promoted replica, and the watcher's Redis check sees the new master
(another run_id) as a possible loss of writes and starts its relist-and-requeue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from rollout_workers import redisclient
from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.keys import ObjectKey
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import Settings
from rollout_workers.watcher.recovery import RedisCheck
from rollout_workers.workqueue import Claim, Outcome, WorkQueue
from tests.conftest import TEST_HANDLERS
from tests.integration.conftest import SentLog, trace
from tests.support.procs import Processes, wait_for
from tests.support.sentinel import SentinelGroup, timed_failover

# Real failovers take seconds each; the e2e tier runs them (and test_redis_failover.py).
pytestmark = pytest.mark.slow

PASSWORD, SENTINEL_PASSWORD = "master-secret", "sentinel-secret"


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    g = SentinelGroup(
        tmp_path / "sentinel", password=PASSWORD, sentinel_password=SENTINEL_PASSWORD
    ).start()
    yield g
    g.stop()


def _settings(group: SentinelGroup, tmp_path: Path) -> Settings:
    return Settings(
        state_dir=tmp_path / "state",
        redis={
            "url": group.url,
            "sentinel_master": group.master_name,
            "password": PASSWORD,
            "sentinel_password": SENTINEL_PASSWORD,
            "socket_timeout": 2.0,
        },
        queue={"lease_ttl": 3.0},
        reconcile={"handlers": TEST_HANDLERS},
    )


def _replicated(client: redis.Redis) -> None:
    """Wait until both replicas have every write so far (a test's own data is not lost)."""
    assert int(client.execute_command("WAIT", 2, 5000)) == 2


def _report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n[sentinel] {line}")


def _retry(fn: Any, timeout: float, what: str) -> Any:
    """Call `fn` until it stops raising Redis errors (the failover window)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still failing after {timeout}s") from None
            time.sleep(0.05)


def test_a_client_and_the_watchers_redis_check_follow_a_failover(
    group: SentinelGroup,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = _settings(group, tmp_path)
    assert settings.redis.url
    client = redisclient.connect(settings.redis.url, settings.redis)
    epoch = CacheEpoch(client, prefix="rw")
    requeued: list[float] = []
    check = RedisCheck(
        client, epoch=epoch, reflectors=[], requeue=lambda: requeued.append(1) or {"rollouts": 0}
    )
    assert check.poll() and not check.recovering  # the first list (none here) is complete
    old_run_id = check.run_id
    client.set("before", "1")
    _replicated(client)

    killed_at, port = timed_failover(group)
    promoted = time.monotonic() - killed_at
    caplog.set_level(logging.WARNING, logger="rollout_workers.watcher.recovery")
    wait_for(lambda: check.poll() and check.recoveries == 1, 30, "the check recovered")
    recovered = time.monotonic() - killed_at

    # The next command reached the new master: another server, the old data replicated.
    assert client.connection_pool.get_master_address()[1] == port
    assert check.run_id != old_run_id
    assert client.get("before") == b"1"
    assert requeued == [1]  # relist (no reflectors here), new epoch, every key requeued
    assert epoch.get() == check.epoch is not None
    reasons = [r.getMessage() for r in caplog.records if "relisting" in r.getMessage()]
    assert reasons and any(
        r.startswith(("Redis restarted", "Redis was unreachable")) for r in reasons
    ), reasons
    _report(
        capsys,
        f"client: master killed -> promoted {promoted:.2f}s, watcher check recovered "
        f"{recovered:.2f}s ({reasons[0].split(':')[0]})",
    )


def test_workqueue_add_claim_done_across_a_failover(
    group: SentinelGroup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _settings(group, tmp_path)
    assert settings.redis.url
    client = redisclient.connect(settings.redis.url, settings.redis)
    sent = SentLog()
    wq = WorkQueue(client, kind="rollouts", prefix="t", settings=settings.queue, send=sent)

    def cycle(key: str) -> None:
        k = ObjectKey(key)
        wq.add([k])
        assert wq.claim(k, "w1") == (Claim.CLAIMED, k)
        assert wq.done(k, "w1", Outcome.OK) is True

    cycle("default/before")
    _replicated(client)
    killed_at, _ = timed_failover(group)
    promoted = time.monotonic() - killed_at
    _retry(lambda: cycle("default/after"), 30, "add/claim/done on the new master")
    done = time.monotonic() - killed_at
    assert sent.sent == ["default/before", "default/after"]
    _report(capsys, f"workqueue: promoted {promoted:.2f}s, add/claim/done ok {done:.2f}s")


def _served(rt: Runtime, key: str, timeout: float) -> None:
    """Add `key` until a reconcile of it is traced: under load the Sentinels may fail over
    again, and an add the new master had not yet replicated is lost with the old one."""
    deadline = time.monotonic() + timeout
    while True:
        _retry(lambda: rt.queue("rollouts").add([ObjectKey(key)]), timeout, f"add {key}")
        try:
            wait_for(
                lambda: _retry(
                    lambda: any(t["key"] == key for t in trace(rt.redis)), timeout, "trace"
                ),
                min(5.0, max(0.1, deadline - time.monotonic())),
                f"{key} reconciled",
            )
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def _settled(client: redis.Redis, timeout: float = 30.0) -> None:
    """Wait until the master has a replica with every write so far: the failover is over, and
    what the test writes next survives the Sentinels moving the master again."""
    deadline = time.monotonic() + timeout
    while _retry(lambda: int(client.execute_command("WAIT", 1, 1000)), timeout, "WAIT") < 1:
        assert time.monotonic() < deadline, "no replica caught up with the new master"


def test_a_worker_host_and_beat_keep_serving_across_a_failover(
    group: SentinelGroup,
    base_env: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = _settings(group, tmp_path)
    url = settings.redis.url
    assert url
    procs = Processes(env={**base_env, **group.env()}, logs=tmp_path / "logs")
    rt = build_runtime(create_app(settings, url), settings, url)
    try:
        worker = procs.worker("host-a", concurrency=1)
        beat = procs.beat()
        beat.wait_log("beat holds the lock", timeout=30)
        _served(rt, "default/before", timeout=20)
        _replicated(rt.redis)

        killed_at, port = timed_failover(group)
        promoted = time.monotonic() - killed_at
        _served(rt, "default/after", timeout=60)
        reconciled = time.monotonic() - killed_at

        # Still our hardened transport after the failover: garbage is dropped, not fatal.
        _settled(rt.redis)
        rt.redis.lpush("rollouts", b"\x00\xffnot json")
        _served(rt, "default/after-garbage", timeout=30)
        assert "dropped a malformed message from the broker" in worker.text()
        assert worker.popen.poll() is None and beat.popen.poll() is None
        # Beat still ticks on the new master: its timers fire.
        rt.queue("rollouts").add_after(["default/timer"], 0.5)
        wait_for(
            lambda: any(t["key"] == "default/timer" for t in trace(rt.redis)),
            20,
            "a timer fired by beat's tick on the new master",
        )
        # The master the Sentinels name now (under load they may have moved it again).
        assert rt.redis.connection_pool.get_master_address()[1] in (port, group.master_port())
        for proc in (worker, beat):
            assert "master-secret" not in proc.text() and "sentinel-secret" not in proc.text()
        _report(
            capsys,
            f"worker: master killed -> promoted {promoted:.2f}s, first reconcile on the new "
            f"master {reconciled:.2f}s",
        )
    finally:
        procs.stop_all()
        rt.redis.close()
