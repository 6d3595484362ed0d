"""Exclusivity and coalescing across real worker processes.

Worker hosts are real `rollouts worker` processes (threads, the default pool). The handler
records one trace line per reconcile: (key, pid, thread, start, end, seq). The adders increment
a per-key counter before every add, so "processed after its last add" means some reconcile saw
the final count.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random
import time
from collections import defaultdict

import pytest
import redis

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import Settings
from tests.integration.conftest import trace
from tests.support.procs import Processes, wait_for

KEYS = [f"ns{i % 5}/ro-{i}" for i in range(50)]


def _adder(settings_json: str, seed: int, count: int) -> None:
    settings = Settings.model_validate_json(settings_json)
    assert settings.redis.url
    runtime = build_runtime(create_app(settings, settings.redis.url), settings, settings.redis.url)
    rng = random.Random(seed)
    queue = runtime.queue("rollouts")
    for _ in range(count):
        key = rng.choice(KEYS)
        runtime.redis.incr(f"rw:test:seq:{key}")
        queue.add([key])
        if rng.random() < 0.2:
            # A duplicated message (as a broker redelivery makes): must not break exclusivity.
            runtime.queue("rollouts")._send([key])  # type: ignore[list-item]
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0, 0.003))


def idle(runtime: Runtime) -> bool:
    s = runtime.queue("rollouts").stats()
    return s.queued == 0 and s.active == 0 and s.dirty == 0


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_no_key_is_reconciled_twice_at_once_and_none_is_lost(
    procs: Processes, runtime: Runtime, rdb: redis.Redis, settings: Settings
) -> None:
    rdb.set("rw:test:sleep", 0.01)
    procs.worker("host-a", concurrency=2)
    procs.worker("host-b", concurrency=2)

    ctx = multiprocessing.get_context("spawn")
    adders = [
        ctx.Process(target=_adder, args=(settings.model_dump_json(), seed, 1250))
        for seed in range(4)
    ]
    for p in adders:
        p.start()
    for p in adders:
        p.join(120)
        assert p.exitcode == 0
    final_seq = {k: int(rdb.get(f"rw:test:seq:{k}") or 0) for k in KEYS}
    assert sum(final_seq.values()) == 5000

    def all_caught_up() -> bool:
        seen: dict[str, int] = defaultdict(int)
        for t in trace(rdb):
            seen[str(t["key"])] = max(seen[str(t["key"])], int(t["seq"]))  # type: ignore[call-overload]
        return all(seen[k] == final_seq[k] for k in KEYS if final_seq[k]) and idle(runtime)

    wait_for(all_caught_up, 120, "every key reconciled after its last add")

    records = trace(rdb)
    by_key: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for t in records:
        by_key[str(t["key"])].append((float(t["start"]), float(t["end"]), int(t["pid"])))  # type: ignore[arg-type]
    overlaps = []
    for key, spans in by_key.items():
        spans.sort()
        for (s1, e1, p1), (s2, e2, p2) in itertools.pairwise(spans):
            if s2 < e1:
                overlaps.append((key, (s1, e1, p1), (s2, e2, p2)))
    assert overlaps == []
    workers = {(t["pid"], t["thread"]) for t in records}
    assert len(workers) == 4, f"expected all 4 worker threads to take part, saw {workers}"
    # Coalescing did its job: far fewer reconciles than adds.
    assert len(records) < 5000


def test_adds_while_busy_cost_at_most_two_more_reconciles(
    procs: Processes, runtime: Runtime, rdb: redis.Redis
) -> None:
    procs.worker("host-a", concurrency=2)
    key = "default/busy"
    rdb.set(f"rw:test:sleep:{key}", 3)
    queue = runtime.queue("rollouts")
    queue.add([key])
    wait_for(lambda: rdb.exists(f"rw:test:started:{key}"), 10, "the slow reconcile started")
    for _ in range(1000):
        queue.add([key])
    wait_for(lambda: idle(runtime) and len(trace(rdb)) >= 2, 20, "the key settles")
    time.sleep(0.5)  # would any further reconcile show up? (none should)
    reconciles = [t for t in trace(rdb) if t["key"] == key]
    assert 2 <= len(reconciles) <= 3
