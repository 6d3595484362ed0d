"""The Redis-backed counters and histograms, through the real workqueue scripts and runner."""

from __future__ import annotations

import pytest
import redis

from rollout_workers.cache.written import TTL_SECONDS, WrittenVersions
from rollout_workers.counters import Keys, PendingCounts
from rollout_workers.keys import ObjectKey, own_key
from rollout_workers.metrics.collector import read_snapshot
from rollout_workers.reconcile.handlers import Result, SyncRequest
from rollout_workers.reconcile.runner import LeaseKeeper, run_sync
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Claim, Outcome, WorkQueue
from tests.integration.conftest import SentLog

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


def test_a_queue_with_pending_counts_writes_what_its_scripts_would(
    rdb: redis.Redis, settings: Settings, sent: SentLog
) -> None:
    """Adds, queue durations, reconciles by outcome, retries and the durations list: counted in
    the scripts, or by the process and written with its next flush, they come out the same."""

    def run(prefix: str, counts: PendingCounts | None) -> WorkQueue:
        q = WorkQueue(
            rdb, kind="rollouts", prefix=prefix, settings=settings.queue, send=sent, counts=counts
        )
        q.add([A, B])
        q.add([A])  # coalesced: not an add
        assert q.claim(A, "w1") == (Claim.CLAIMED, A)
        assert q.add([A]).dirty == [A]  # dirty while active: an add
        assert q.add([A]).dirty == [A]  # already dirty: not an add
        q.done(A, "w1", Outcome.OK, duration=0.25)
        # B and the dirty A, queued again: in either order (fairness takes the turn's key).
        first = q.claim(B, "w2")
        q.done(first.key, "w2", Outcome.ERROR, duration=0.5)
        second = q.claim(A, "w3")
        assert {first.key, second.key} == {A, B}
        q.done(second.key, "w3", Outcome.AFTER, delay=5, duration=0.125)
        assert q.claim(A, "w4") == (Claim.STALE, A)  # a late message: counted by the script
        return q

    def counters(q: WorkQueue, prefix: str) -> tuple[object, ...]:
        wq = read_snapshot(rdb, prefix=prefix).workqueue["rollouts"]
        # How long each key waited is the clock's: the observations are what must agree.
        observed = sum(v for k, v in wq.items() if k.startswith("queue|b"))
        other = {k: v for k, v in wq.items() if not k.startswith("queue|")}
        return other, observed, "queue|sum" in wq, q.stats().counters, q.durations()

    scripted = run("s", None)
    counts = PendingCounts(Keys("b"))
    batched = run("b", counts)
    assert rdb.hget(batched.k_stats, "reconciles") is None  # nothing counted yet...
    counts.flush(rdb)  # ...until the process writes its counters
    want = counters(scripted, "s")
    assert want[0] == {"adds": 3, "retries": 1} and want[1:3] == (3, True)
    assert want[3]["reconciles"] == 3 and want[4] == [0.125, 0.5, 0.25]
    assert counters(batched, "b") == want
    assert counts.flush(rdb) == 0


def test_pushes_kept_when_a_flush_fails_go_out_in_order(rdb: redis.Redis) -> None:
    counts = PendingCounts(Keys(PREFIX))
    counts.push("t:list", "1", 3)
    broken = redis.Redis(port=1, socket_connect_timeout=0.2)
    with pytest.raises(redis.RedisError):
        counts.flush(broken)
    for v in ("2", "3", "4"):
        counts.push("t:list", v, 3)
    assert counts.flush(rdb) == 1
    assert rdb.lrange("t:list", 0, -1) == [b"4", b"3", b"2"]  # the newest 3, newest first


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


def test_a_reconciles_written_versions_ride_on_its_done(wq: WorkQueue, rdb: redis.Redis) -> None:
    """No round trip of their own: `done` keeps them (only if newer) before it looks at the
    key's own events, so the event of the reconcile's own settling write, arriving while the
    key is held, does not queue it again."""
    written = WrittenVersions(rdb, prefix=PREFIX, own="rollouts")
    rdb.set(f"{written.key_prefix('replicasets')}default/a-1", "50")

    def handler(request: SyncRequest) -> Result:
        written.record("replicasets", "default/a-1", "40")  # older than what is kept
        written.record("replicasets", "default/a-2", "41")
        written.record("rollouts", "default/a", "42")
        written.record_own("rollouts", "default/a", "42")
        assert wq.add([A], own={A: "42"}).dirty == [A]  # its watch event, while held
        return Result.done()

    warm = ObjectKey("default/warm")  # the scripts loaded, so that none costs a retry below
    wq.add([warm])
    assert wq.done(warm, "w", Outcome.OK) is False and wq.claim(warm, "w").key == warm
    wq.add([A])
    rdb.config_resetstat()
    report = run_sync(queue=wq, handler=handler, raw_key=A, keeper=LeaseKeeper(10))
    assert report.status == "ok"
    assert rdb.info("commandstats")["cmdstat_evalsha"]["calls"] == 3  # claim, add, done
    prefix = written.key_prefix
    assert rdb.mget(
        f"{prefix('replicasets')}default/a-1",
        f"{prefix('replicasets')}default/a-2",
        f"{prefix('rollouts')}default/a",
        own_key(PREFIX, "rollouts", "default/a"),
    ) == [b"50", b"41", b"42", b"42"]
    assert 0 < rdb.ttl(f"{prefix('replicasets')}default/a-2") <= TTL_SECONDS
    assert rdb.zscore(wq.k_queued, A) is None  # its own event: not queued again
    assert wq.stats().counters["own_skipped"] == 1
    # Outside a reconcile, a record goes out at once.
    written.record("replicasets", "default/a-3", "43")
    assert rdb.get(f"{prefix('replicasets')}default/a-3") == b"43"


def test_a_reconcile_without_its_done_still_sends_its_written_versions(
    wq: WorkQueue, rdb: redis.Redis
) -> None:
    written = WrittenVersions(rdb, prefix=PREFIX)

    def handler(request: SyncRequest) -> Result:
        written.record("replicasets", "default/a-1", "7")
        written.record("replicasets", "default/gone", "8")
        written.forget("replicasets", "default/gone")  # deleted after: no record
        rdb.hset(wq.k_active, A, "someone-else")  # the lease is taken over mid-reconcile
        return Result.done()

    wq.add([A])
    report = run_sync(queue=wq, handler=handler, raw_key=A, keeper=LeaseKeeper(10))
    assert report.status == "lease-lost"
    assert rdb.get(f"{written.key_prefix('replicasets')}default/a-1") == b"7"
    assert rdb.get(f"{written.key_prefix('replicasets')}default/gone") is None
