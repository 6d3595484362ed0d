"""Per-tenant fairness across real worker processes: while one tenant floods the queue with
events and a resync is in flight, another tenant's event starts within a bound that does not
grow with the flood."""

from __future__ import annotations

import json
import time

import redis

from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.workqueue import Priority
from tests.support.procs import Processes, wait_for

#: Seconds within which the starved tenant's key must start. Plain FIFO would take the flood's
#: length: FLOOD keys of up to 20 ms on two processes, about 10 s.
BOUND = 1.0
FLOOD = 1500


def test_a_starved_tenants_key_starts_within_the_bound_while_another_floods(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    rdb.set("rw:test:sleep", 0.02)
    procs.worker("host-a", concurrency=2)
    queue = runtime.queue("rollouts")
    queue.add([f"flood/ro-{i}" for i in range(FLOOD)])  # a mass update of one tenant
    queue.add([f"team-{i % 20}/ro-{i}" for i in range(FLOOD)], priority=Priority.RESYNC)
    wait_for(lambda: rdb.llen("rw:test:trace") > 20, 30, "the flood is being reconciled")

    waits = []
    for i in range(5):
        key = f"starved/promote-{i}"
        added = time.time()
        queue.add([key])
        wait_for(lambda k=key: rdb.exists(f"rw:test:started:{k}"), 15, f"{key} started")
        started = json.loads(rdb.get(f"rw:test:started:{key}") or "{}")["start"]
        waits.append(started - added)
        assert queue.stats().queued > FLOOD // 2, "the flood is still queued"
    assert max(waits) <= BOUND, f"starved tenant waited {max(waits):.2f}s: {waits}"
