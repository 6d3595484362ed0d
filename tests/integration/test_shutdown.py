"""Graceful shutdown of a worker host (SIGTERM to its main process, as the kubelet sends it):
the reconcile in hand completes, the keys the host reserved or held go to another host within
moments (not after a lease TTL or a message's visibility timeout), and the host exits in time."""

from __future__ import annotations

import json
import signal
import time

import pytest
import redis

from rollout_workers.reconcile.runtime import Runtime
from tests.integration.conftest import trace
from tests.support.procs import Processes, wait_for

HAND_OVER = 2.0  # seconds within which another host must start a handed-back key


def records(rdb: redis.Redis, key: str) -> list[dict[str, object]]:
    return [t for t in trace(rdb) if t["key"] == key]


@pytest.mark.slow
def test_sigterm_finishes_the_reconcile_in_hand_and_hands_back_reserved_and_dirty_keys(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    queue = runtime.queue("rollouts")
    host_a = procs.worker("host-a", concurrency=1)
    slow, reserved = "default/in-hand", "default/reserved"
    rdb.set(f"rw:test:sleep:{slow}", 15)
    queue.add([slow])
    started = wait_for(lambda: rdb.get(f"rw:test:started:{slow}"), 15, "the slow reconcile began")
    child = json.loads(started)["pid"]  # type: ignore[arg-type]
    queue.add([reserved])  # host-a's only process is busy: it prefetches and holds the message
    wait_for(lambda: rdb.llen("rollouts") == 0, 10, "host-a reserved the second key's message")
    host_b = procs.worker("host-b", concurrency=1)
    assert not records(rdb, reserved), "nobody else could have had the reserved message"
    queue.add([slow])  # added while in hand: dirty, to run again after the reconcile in hand

    terminated = time.time()
    host_a.popen.send_signal(signal.SIGTERM)

    done = wait_for(lambda: records(rdb, reserved), HAND_OVER + 3, "the reserved key moved")
    moved = float(done[0]["start"]) - terminated  # type: ignore[index]
    assert done[0]["pid"] != child  # type: ignore[index]
    assert moved < HAND_OVER, f"the reserved key started {moved:.2f}s after SIGTERM"

    wait_for(lambda: len(records(rdb, slow)) >= 2, 20, "the in-hand key ran again")
    first, second = records(rdb, slow)[:2]
    assert first["pid"] == child, "the reconcile in hand completed on host-a"
    assert float(first["end"]) > terminated
    assert host_b.ran(int(second["pid"]))  # type: ignore[arg-type]
    rerun = float(second["start"]) - float(first["end"])  # type: ignore[arg-type]
    assert rerun < HAND_OVER, f"the dirty key started {rerun:.2f}s after the reconcile in hand"
    assert host_a.popen.wait(10) == 0
    exited = time.time() - terminated
    stats = {k.decode(): int(v) for k, v in rdb.hgetall("rw:wq:rollouts:stats").items()}
    assert "lease_expired" not in stats and stats.get("handed_back", 0) >= 1, stats
    print(f"SIGTERM: reserved key reconciled elsewhere {moved:.2f}s after, in-hand reconcile "
          f"completed, its dirty re-run elsewhere {rerun:.2f}s after it; host exited after "
          f"{exited:.1f}s")  # fmt: skip


@pytest.mark.slow
def test_a_reconcile_longer_than_the_grace_period_is_abandoned_and_its_key_released(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    grace = 2.0
    procs.env["ROLLOUTS_WORKER_SHUTDOWN_GRACE"] = str(grace)
    hosts = [procs.worker("host-a", concurrency=1), procs.worker("host-b", concurrency=1)]
    key = "default/too-long"
    rdb.set(f"rw:test:sleep:{key}", 60)
    runtime.queue("rollouts").add([key])
    started = wait_for(lambda: rdb.get(f"rw:test:started:{key}"), 15, "the long reconcile began")
    child = json.loads(started)["pid"]  # type: ignore[arg-type]
    victim = next(h for h in hosts if h.ran(child))

    terminated = time.time()
    victim.popen.send_signal(signal.SIGTERM)
    done = wait_for(lambda: records(rdb, key), grace + 10, "another host reconciled the key")
    moved = float(done[0]["start"]) - (terminated + grace)  # type: ignore[index]
    assert done[0]["pid"] != child  # type: ignore[index]
    assert moved < HAND_OVER, f"the key started {moved:.2f}s after the grace period"
    victim.popen.wait(10)
    exited = time.time() - terminated
    assert exited < grace + 6, f"the host took {exited:.1f}s to exit"
    stats = {k.decode(): int(v) for k, v in rdb.hgetall("rw:wq:rollouts:stats").items()}
    assert stats.get("released") == 1 and "lease_expired" not in stats, stats
    assert "released 1 rollouts keys in hand" in victim.text()
    print(f"grace over: the abandoned key restarted elsewhere {moved:.2f}s after the grace "
          f"period ({grace:g}s); host exited after {exited:.1f}s")  # fmt: skip
