"""The Redis-backed counters and histograms, through the real workqueue scripts and runner."""

from __future__ import annotations

import redis

from rollout_workers.counters import Keys, PendingCounts
from rollout_workers.keys import ObjectKey
from rollout_workers.metrics.collector import read_snapshot
from rollout_workers.reconcile.handlers import Result, SyncRequest
from rollout_workers.reconcile.runner import LeaseKeeper, run_sync
from rollout_workers.workqueue import Claim, Outcome, WorkQueue

A = ObjectKey("default/a")
B = ObjectKey("default/b")
PREFIX = "t"  # the `wq` fixture's prefix


def snap(rdb: redis.Redis) -> dict[str, dict[str, int]]:
    s = read_snapshot(rdb, prefix=PREFIX)
    return {"reconcile": s.reconcile["rollouts"], "wq": s.workqueue["rollouts"]}


def test_adds_count_what_client_go_counts(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add([A, B])
    wq.add([A])  # coalesced: not an add
    assert wq.claim(A, "w1") == (Claim.CLAIMED, A)
    wq.add([A])  # dirty while active: an add
    wq.add([A])  # already dirty: not an add
    assert snap(rdb)["wq"]["adds"] == 3


def test_claim_observes_queue_duration_and_done_clears_unfinished_work(
    wq: WorkQueue, rdb: redis.Redis
) -> None:
    wq.add([A, B])
    wq.claim(A, "w1")
    wq.claim(B, "w2")
    s = read_snapshot(rdb, prefix=PREFIX)
    queue = {k: v for k, v in s.workqueue["rollouts"].items() if k.startswith("queue|b")}
    assert sum(queue.values()) == 2
    assert len(s.started["rollouts"]) == 2  # two reconciles in progress
    wq.done(A, "w1", Outcome.OK)
    wq.done(B, "w2", Outcome.ERROR)
    s = read_snapshot(rdb, prefix=PREFIX)
    assert s.started["rollouts"] == []
    assert s.workqueue["rollouts"]["retries"] == 1


def test_reconcile_histogram_equals_the_queue_stats(wq: WorkQueue, rdb: redis.Redis) -> None:
    counts = PendingCounts(Keys(PREFIX))
    outcomes = iter([Result.done(), Result.retry(), Result.requeue_after(5), Result.done()])

    def handler(request: SyncRequest) -> Result:
        counts.request(
            "PATCH",
            f"/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/{request.key.split('/')[1]}",
            200,
        )
        return next(outcomes)

    keeper = LeaseKeeper(interval=10)
    for key in (A, B, A, B):
        wq.add([key])
        report = run_sync(queue=wq, handler=handler, raw_key=key, keeper=keeper, counts=counts)
        assert report.status in ("ok", "error", "after")
    # The first `done` carried what was pending; the rest wait for the next one or the flush.
    assert counts.drain_due() == []
    counts.flush(rdb)
    stats = wq.stats().counters
    s = snap(rdb)
    reconciles = sum(v for k, v in s["reconcile"].items() if "|b" in k)
    work = sum(v for k, v in s["wq"].items() if k.startswith("work|b"))
    errors = sum(v for k, v in s["reconcile"].items() if k.endswith("|err"))
    assert reconciles == work == stats["reconciles"] == 4
    assert errors == stats["error"] == 1
    assert s["reconcile"]["default/b|err"] == 1
    requests = read_snapshot(rdb, prefix=PREFIX).k8s_requests
    assert requests == {"rollouts|default|a|Patch|200": 2, "rollouts|default|b|Patch|200": 2}
    assert counts.drain() == []


def test_a_lost_lease_counts_no_reconcile_but_keeps_the_requests(
    wq: WorkQueue, rdb: redis.Redis
) -> None:
    counts = PendingCounts(Keys(PREFIX))

    def handler(request: SyncRequest) -> Result:
        counts.request("GET", "/api/v1/namespaces/default/services/a", 200)
        rdb.hset(wq.k_active, A, "someone-else")  # the lease is taken over mid-reconcile
        return Result.done()

    wq.add([A])
    report = run_sync(queue=wq, handler=handler, raw_key=A, keeper=LeaseKeeper(10), counts=counts)
    assert report.status == "lease-lost"
    assert snap(rdb)["reconcile"] == {}
    assert len(counts.drain()) == 1  # kept for the next write


def test_counts_from_many_processes_add_up(rdb: redis.Redis) -> None:
    keys = Keys(PREFIX)
    for _ in range(3):  # three processes, each with its own buffer
        counts = PendingCounts(keys)
        counts.event(namespace="ns", name="web", type="Normal", reason="RolloutUpdated")
        counts.request("GET", "/api/v1/namespaces/ns/services/web", 200)
        assert counts.flush(rdb) == 2
        assert counts.flush(rdb) == 0
    s = read_snapshot(rdb, prefix=PREFIX)
    assert s.events == {"ns|web|Normal|RolloutUpdated": 3}
    assert s.k8s_requests == {"services|ns|web|Get|200": 3}


def test_prune_deletes_the_series_of_objects_gone_from_the_cache(rdb: redis.Redis) -> None:
    from rollout_workers.metrics.collector import PoolCollector

    keys = Keys(PREFIX)
    rdb.hset(keys.reconcile("analysisruns"), mapping={"ns/old|b0": 1, "ns/old|sum": 5})
    rdb.hset("t:cache:analysisruns:obj", "ns/live", '{"metadata":{"namespace":"ns","name":"live"}}')
    rdb.hset(keys.reconcile("analysisruns"), mapping={"ns/live|b0": 2})
    list(PoolCollector(rdb, prefix=PREFIX).collect())  # a read-only scrape keeps them
    assert rdb.hlen(keys.reconcile("analysisruns")) == 3
    list(PoolCollector(rdb, prefix=PREFIX, prune=True).collect())
    assert rdb.hkeys(keys.reconcile("analysisruns")) == [b"ns/live|b0"]
