"""The fenced cache (cache/fence.py), real Redis: a leader cut off mid-relist, whose lease ran
out and was taken by another watcher, writes nothing when it reaches Redis again: not the rest
of its relist's pages, not its deletions, not its resourceVersion, not a watch event, and the
keys its events would wake are not queued."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from rollout_workers.cache import CacheWriter, Lister
from rollout_workers.cache.fence import COPY_FIELD, Fence, Fenced, fence_key
from rollout_workers.kube import resources as r
from rollout_workers.settings import Settings
from rollout_workers.watcher.events import EventQueuer
from rollout_workers.watcher.leader import LeaderLease
from rollout_workers.workqueue import WorkQueue
from tests.integration.conftest import SentLog

PREFIX = "fenced"
TTL = 0.3


def rollout(name: str, rv: int, image: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "namespace": "prod", "resourceVersion": str(rv), "uid": name},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}},
    }


class Watcher:
    """One watcher's lease, fence and cache writer over the same Redis."""

    def __init__(self, rdb: redis.Redis, name: str) -> None:
        self.fence = Fence(fence_key(PREFIX))
        self.lease = LeaderLease(
            rdb, key=f"{PREFIX}:watcher:leader", identity=name, ttl=TTL, fence=self.fence
        )
        self.writer = CacheWriter(rdb, prefix=PREFIX, resource=r.ROLLOUTS, fence=self.fence)


@pytest.fixture
def clean(rdb: redis.Redis) -> None:
    for key in rdb.scan_iter(f"{PREFIX}:*"):
        rdb.delete(key)


@pytest.mark.usefixtures("clean")
def test_a_deposed_leader_mid_relist_writes_nothing(rdb: redis.Redis, settings: Settings) -> None:
    lister = Lister(rdb, prefix=PREFIX, resource=r.ROLLOUTS)
    a, b = Watcher(rdb, "a"), Watcher(rdb, "b")
    assert a.lease.try_acquire() and a.fence.token == "1"
    a.writer.replace([rollout(f"r{i}", 10 + i) for i in range(4)], "20")

    # A relists again, from a LIST read before what follows: its first page lands...
    # (r1 is missing from it: its deletion would be written last.)
    stale = [rollout("r0", 10), rollout("r2", 14, "old"), rollout("r3", 15)]
    relist = a.writer.replacement(batch=2)
    relist.apply_page(stale[:1])
    # ...then A is cut off. Its lease runs out, B leads and relists the truth: r0 and r2
    # changed, r3 deleted, r9 created.
    time.sleep(TTL + 0.1)
    assert not b.lease.renew() and b.lease.try_acquire() and b.fence.token == "2"
    truth = [rollout("r0", 30, "v2"), rollout("r1", 11), rollout("r2", 16), rollout("r9", 31)]
    b.writer.replace(truth, "32")

    # A reaches Redis again and goes on where it was, before it learns that it lost.
    with pytest.raises(Fenced):
        relist.apply_page(stale[1:])
    with pytest.raises(Fenced):
        for _ in relist.delete_vanished():
            pass
    with pytest.raises(Fenced):
        relist.commit("21")
    with pytest.raises(Fenced):
        a.writer.apply("MODIFIED", rollout("r0", 29))
    with pytest.raises(Fenced):
        a.writer.apply("ADDED", rollout("r3", 13))  # a deletion undone
    with pytest.raises(Fenced):
        a.writer.set_resource_version("22")
    # Its event path (cache write and queueing in one script) neither writes nor queues.
    sent = SentLog()
    queue = WorkQueue(rdb, kind="rollouts", prefix=PREFIX, settings=settings.queue, send=sent)
    queuer = EventQueuer(
        rdb,
        kinds={"rollouts"},
        queue=lambda kind: queue,
        lookup=lambda *_: [],
        add_source=queue.add_source,
    )
    with pytest.raises(Fenced):
        queuer.event(a.writer, "MODIFIED", rollout("r1", 40, "stale"))
    assert sent.sent == []

    assert sorted(lister.list(), key=lambda o: o["metadata"]["name"]) == truth
    assert lister.resource_version() == "32"
    # A learns it lost at its next renewal; B's writes go on.
    assert not a.lease.renew()
    b.writer.apply("MODIFIED", rollout("r9", 33))
    assert lister.get("prod/r9") == rollout("r9", 33)


@pytest.mark.usefixtures("clean")
def test_the_token_survives_renewals_and_comes_back_after_redis_lost_it(
    rdb: redis.Redis,
) -> None:
    a = Watcher(rdb, "a")
    assert a.lease.try_acquire() and a.fence.token == "1"
    assert a.lease.renew() and a.lease.try_acquire() and a.fence.token == "1"  # still its own
    a.writer.apply("ADDED", rollout("r0", 1))
    assert rdb.hget(a.writer.keys.versions, COPY_FIELD) == b"1", "the token's copy"
    # Redis lost it (a restart without persistence, say: its copies went with it).
    rdb.delete(fence_key(PREFIX), a.writer.keys.versions)
    with pytest.raises(Fenced):
        a.writer.apply("MODIFIED", rollout("r0", 2))
    assert a.lease.renew() and a.fence.token == "1"  # INCR of a missing key: a new token
    a.writer.apply("MODIFIED", rollout("r0", 2))
    # A writer outside a watcher (tools, tests) has no token and is not fenced.
    CacheWriter(rdb, prefix=PREFIX, resource=r.ROLLOUTS).apply("MODIFIED", rollout("r0", 3))


@pytest.mark.usefixtures("clean")
def test_a_new_token_deletes_every_copy_of_the_old_one(rdb: redis.Redis) -> None:
    """A deposed leader whose writes found its token's copy in the versions hashes: once
    another leader takes the lease, no copy is left for it to pass."""
    a, b = Watcher(rdb, "a"), Watcher(rdb, "b")
    runs = CacheWriter(rdb, prefix=PREFIX, resource=r.ANALYSISRUNS, fence=a.fence)
    assert a.lease.try_acquire()
    a.writer.apply("ADDED", rollout("r0", 1))
    run = {"metadata": {"name": "run", "namespace": "prod", "resourceVersion": "2"}}
    runs.apply("ADDED", run)
    assert rdb.smembers(a.fence.copies) == {
        a.writer.keys.versions.encode(),
        runs.keys.versions.encode(),
    }
    rdb.delete(f"{PREFIX}:watcher:leader")  # a's lease ran out while it was cut off
    assert b.lease.try_acquire() and b.fence.token == "2"
    assert rdb.hget(a.writer.keys.versions, COPY_FIELD) is None
    assert rdb.hget(runs.keys.versions, COPY_FIELD) is None
    with pytest.raises(Fenced):
        a.writer.apply("MODIFIED", rollout("r0", 3))
    with pytest.raises(Fenced):
        runs.apply("MODIFIED", {**run, "metadata": {**run["metadata"], "resourceVersion": "4"}})
    b.writer.apply("MODIFIED", rollout("r0", 3))
    assert rdb.hget(b.writer.keys.versions, COPY_FIELD) == b"2"
