"""Failure handling with real processes: kill -9 mid-reconcile, timers, beat failover, bad input."""

from __future__ import annotations

import json
import random
import re
import signal
import socket
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import Settings
from tests.integration.conftest import trace
from tests.support.procs import Processes, wait_for

LEASE_TTL = 3.0  # base_env's ROLLOUTS_QUEUE_LEASE_TTL


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["child", "host"])
def test_killed_worker_key_is_reconciled_within_lease_ttl(
    victim: str, procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    procs.beat()
    pool = "prefork" if victim == "child" else None
    hosts = [procs.worker(f"host-{n}", concurrency=1, pool=pool) for n in "ab"]
    key = "default/long"
    rdb.set(f"rw:test:sleep:{key}", 60)  # the first reconcile would take a minute
    runtime.queue("rollouts").add([key])
    started = wait_for(lambda: rdb.get(f"rw:test:started:{key}"), 15, "the long reconcile began")
    pid = json.loads(started)["pid"]  # type: ignore[arg-type]
    time.sleep(LEASE_TTL)  # let heartbeats extend the lease at least once

    killed_at = time.time()
    if victim == "child":
        import os

        os.kill(pid, signal.SIGKILL)
    else:
        host = next(h for h in hosts if h.ran(pid))
        host.kill_group(signal.SIGKILL)

    def rerun() -> list[dict[str, object]]:
        return [t for t in trace(rdb) if t["key"] == key]

    done = wait_for(rerun, LEASE_TTL + 10, "another worker reconciled the key")
    record = done[0]  # type: ignore[index]
    assert record["pid"] != pid
    delay = float(record["start"]) - killed_at
    # Heartbeats held the lease until the kill; after it, the lease ran out and was requeued.
    assert 0 < delay <= LEASE_TTL + 2, f"requeued {delay:.2f}s after the kill"
    assert int(rdb.hget("rw:wq:rollouts:stats", "lease_expired") or 0) >= 1


@pytest.mark.slow
def test_heartbeats_keep_a_long_reconcile_exclusive(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    procs.beat()
    procs.worker("host-a", concurrency=2)
    procs.worker("host-b", concurrency=2)
    key = "default/slow"
    rdb.set(f"rw:test:sleep:{key}", 3 * LEASE_TTL)
    runtime.queue("rollouts").add([key])
    wait_for(lambda: rdb.get(f"rw:test:started:{key}"), 15, "the long reconcile began")
    wait_for(lambda: trace(rdb), 4 * LEASE_TTL, "the long reconcile finished")
    assert [t["key"] for t in trace(rdb)] == [key]
    assert rdb.hget("rw:wq:rollouts:stats", "lease_expired") is None
    # The trace is written by the handler, `done` runs just after it.
    wait_for(lambda: runtime.queue("rollouts").stats().active == 0, 5, "the claim released")


@pytest.mark.slow
def test_timers_fire_once_on_time_and_the_earliest_wins(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    procs.worker("host-a", concurrency=2)
    beat = procs.beat()
    wait_for(lambda: rdb.hget("rw:system:ticks", "count"), 30, "beat ticks")
    queue = runtime.queue("rollouts")
    rng = random.Random(7)
    due: dict[str, float] = {}
    for i in range(200):
        key = f"timers/k-{i}"
        delay = rng.uniform(0.5, 10)
        if i % 4 == 1:  # a later timer added after an earlier one does not postpone it
            queue.add_after([key], delay)
            queue.add_after([key], delay + 5)
        elif i % 4 == 2:  # an earlier timer added after a later one brings it forward
            queue.add_after([key], delay + 5)
            queue.add_after([key], delay)
        else:
            queue.add_after([key], delay)
        due[key] = time.time() + delay

    wait_for(lambda: len(trace(rdb)) >= 200, 20, "all 200 timers fired")
    time.sleep(6)  # the postponed duplicates (+5 s) would have fired by now; none may
    records = trace(rdb)
    counts = Counter(str(t["key"]) for t in records)
    assert set(counts) == set(due) and set(counts.values()) == {1}, counts.most_common(3)
    lateness = sorted(float(t["start"]) - due[str(t["key"])] for t in records)  # type: ignore[arg-type]
    assert lateness[0] > -0.05, f"a timer fired {-lateness[0]:.3f}s early"
    assert lateness[-1] <= 1.5, f"max lateness {lateness[-1]:.3f}s"
    print(
        f"timer lateness p50={lateness[100]:.3f}s p99={lateness[197]:.3f}s max={lateness[-1]:.3f}s"
    )
    beat.stop()


@pytest.mark.slow
def test_standby_beat_takes_over_within_15s(procs: Processes, rdb: redis.Redis) -> None:
    procs.worker("host-a", concurrency=1, queues="system")
    active = procs.beat("beat-1")
    wait_for(lambda: rdb.hget("rw:system:ticks", "count"), 30, "the first beat ticks")
    standby = procs.beat("beat-2")
    standby.wait_log(r"beat: Starting", timeout=30)
    time.sleep(2)
    assert "beat holds the lock" not in standby.text(), "the standby must wait for the lock"

    active.kill_group(signal.SIGKILL)
    killed_at = time.time()

    def tick_after_kill() -> bool:
        last = rdb.hget("rw:system:ticks", "last")
        return last is not None and float(last) > killed_at + 1.5  # beyond ticks in flight

    wait_for(tick_after_kill, 15, "ticks resume from the standby beat", interval=0.1)
    takeover = time.time() - killed_at
    assert "beat holds the lock" in standby.text()
    print(f"beat failover: ticks resumed {takeover:.1f}s after kill -9")


def _worker_served(runtime: Runtime, rdb: redis.Redis, key: str, timeout: float = 20) -> None:
    runtime.queue("rollouts").add([key])
    wait_for(
        lambda: any(t["key"] == key for t in trace(rdb)), timeout, f"{key} reconciled afterwards"
    )


def test_garbage_messages_and_bad_keys_are_logged_and_skipped(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    worker = procs.worker("host-a", concurrency=1)
    rdb.lpush("rollouts", b"\x00\xffnot json at all")
    rdb.lpush("rollouts", json.dumps({"body": "??", "headers": {}, "properties": {}}))
    from rollout_workers.celeryapp.app import create_app

    assert runtime.settings.redis.url
    app = create_app(runtime.settings, runtime.settings.redis.url)
    app.send_task("rollouts.sync", args=("Not A Key",), queue="rollouts")
    app.send_task("rollouts.sync", args=(12345,), queue="rollouts")
    app.send_task("rollouts.sync", args=("default/x", "extra"), queue="rollouts")
    app.send_task("rollouts.sync", kwargs={"nonsense": True}, queue="rollouts")
    _worker_served(runtime, rdb, "default/after-garbage")
    log = worker.text()
    assert log.count("dropped a malformed message from the broker") == 2
    assert "invalid key 'Not A Key'" in log
    assert "invalid key 12345" in log
    assert worker.popen.poll() is None
    # Every sync task traces its key, at its start and with its outcome.
    assert "rollouts.sync default/after-garbage: start" in log
    assert re.search(r"rollouts\.sync default/after-garbage: done in \d+\.\d{3}s", log), log


def test_a_malformed_key_never_reaches_a_worker(runtime: Runtime, rdb: redis.Redis) -> None:
    from rollout_workers.keys import InvalidKey

    with pytest.raises(InvalidKey, match="expected 'namespace/name'"):
        runtime.queue("rollouts").add(["not-a-key"])
    assert rdb.llen("rollouts") == 0


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_worker_keeps_serving_across_a_redis_restart(
    procs: Processes, settings: Settings, tmp_path: Path
) -> None:
    from rollout_workers.celeryapp.app import create_app
    from rollout_workers.celeryapp.tasks import build_runtime

    server = EmbeddedRedis(tmp_path / "own-redis").start()
    try:
        procs.env["ROLLOUTS_REDIS_URL"] = server.url
        own = settings.model_copy(
            update={"redis": settings.redis.model_copy(update={"url": server.url})}
        )
        rt = build_runtime(create_app(own, server.url), own, server.url)
        rdb = rt.redis
        worker = procs.worker("host-a", concurrency=1)
        procs.beat()
        _worker_served(rt, rdb, "default/before")

        time.sleep(1.2)  # the append-only file is synced every second
        server.kill()
        time.sleep(1)
        server.start()
        _worker_served(rt, rdb, "default/after", timeout=60)
        assert worker.popen.poll() is None
        assert "Connection" in worker.text() or "connection" in worker.text()
    finally:
        procs.stop_all()
        server.stop()


@pytest.mark.slow
def test_kill_9_of_a_host_moves_its_reserved_and_claimed_keys_within_host_lapse(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    """At default settings (lease TTL 15 s, heartbeat 1 s, lapse 5 s, stale_after 60 s), a host
    killed with two reconciles in hand and two messages reserved behind them: every one of its
    keys is reconciled by another host within the lapse + 2 s, the claimed ones taken back from
    the lapsed host before their leases expire, and none by the stale_after net."""
    procs.env.pop("ROLLOUTS_QUEUE_LEASE_TTL")
    defaults = Settings().queue
    queue = runtime.queue("rollouts")
    procs.beat()
    host_a = procs.worker("host-a", concurrency=2)
    claimed, reserved = (
        ["default/claimed-1", "default/claimed-2"],
        ["default/res-1", "default/res-2"],
    )
    for key in claimed:
        rdb.set(f"rw:test:sleep:{key}", 120)
    queue.add(claimed)
    for key in claimed:
        wait_for(lambda k=key: rdb.get(f"rw:test:started:{k}"), 15, f"{key} began on host-a")
    queue.add(reserved)  # both of host-a's processes are busy: it prefetches both messages
    host = f"{socket.gethostname()}:{host_a.pid}"
    wait_for(lambda: queue.held() == {k: host for k in reserved}, 10, "host-a reserved both")
    assert rdb.llen("rollouts") == 0
    # Only the workqueue's record says who holds them: kombu's unacked hash is not written for
    # sync messages (pool/transport.py), so nothing but the host's lapse can bring them back.
    assert rdb.hlen("unacked") == 0 and rdb.zcard("unacked_index") == 0
    assert {k.decode() for k in rdb.hkeys(queue.k_active)} == set(claimed), "host-a holds both"
    host_b = procs.worker("host-b", concurrency=2)
    assert not trace(rdb), "nobody else could have had host-a's keys"

    killed_at = time.time()
    host_a.kill_group(signal.SIGKILL)

    keys = claimed + reserved
    wait_for(lambda: {t["key"] for t in trace(rdb)} >= set(keys), defaults.lease_ttl + 10,
             "every key of host-a reconciled elsewhere")  # fmt: skip
    records = trace(rdb)
    first = {k: next(t for t in records if t["key"] == k) for k in keys}
    moved = {k: float(t["start"]) - killed_at for k, t in first.items()}  # type: ignore[arg-type]
    children = {int(t["pid"]) for t in first.values()}  # type: ignore[arg-type]
    print("kill -9 of a host: its keys started elsewhere after "
          + ", ".join(f"{k} {s:.2f}s" for k, s in moved.items()))  # fmt: skip
    assert all(host_b.ran(pid) for pid in children), "host-b reconciled them"
    for key in reserved:
        assert moved[key] <= defaults.host_lapse + 2, f"{key} (reserved) after {moved[key]:.2f}s"
    for key in claimed:
        assert moved[key] <= defaults.host_lapse + 2, f"{key} (claimed) after {moved[key]:.2f}s"
    assert all([t["key"] for t in records].count(k) == 1 for k in keys), "each once"
    stats = {k.decode(): int(v) for k, v in rdb.hgetall("rw:wq:rollouts:stats").items()}
    assert stats.get("host_lapsed") == 2 and stats.get("host_lapsed_claims") == 2, stats
    assert "lease_expired" not in stats, stats
    assert "resent" not in stats, "the stale_after net was not needed"
    assert queue.held() == {}
