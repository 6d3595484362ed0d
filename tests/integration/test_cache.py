"""The Redis cache: writes keep indexes true; replace makes the cache equal a LIST."""

from __future__ import annotations

from typing import Any

import redis

from rollout_workers.cache import CacheWriter, Lister
from rollout_workers.cache.store import OwnerReads
from rollout_workers.cache.written import WrittenVersions
from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Claim, Outcome, WorkQueue
from tests.integration.conftest import SentLog


def rollout(name: str, rv: int, svc: str, ns: str = "prod") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv), "uid": name},
        "spec": {"strategy": {"canary": {"stableService": svc}}, "x-unknown": {"kept": [1, 2]}},
    }


def test_apply_keeps_indexes_true(rdb: redis.Redis) -> None:
    w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    w.apply("ADDED", rollout("a", 1, "s1"))
    w.apply("ADDED", rollout("b", 2, "s1"))
    assert lister.keys_by_index("svc", "prod/s1") == ["prod/a", "prod/b"]
    change = w.apply("MODIFIED", rollout("a", 3, "s2"))
    assert change.previous_rv == "1"
    assert lister.keys_by_index("svc", "prod/s1") == ["prod/b"]
    assert lister.keys_by_index("svc", "prod/s2") == ["prod/a"]
    w.apply("DELETED", rollout("b", 4, "s1"))
    assert lister.keys_by_index("svc", "prod/s1") == []
    assert lister.get("prod/b") is None
    assert lister.get("prod/a") == rollout("a", 3, "s2")  # unknown fields kept
    assert lister.resource_version() == "4"
    assert [o["metadata"]["name"] for o in lister.list("prod")] == ["a"]


def test_an_entry_of_the_layout_before_keeps_its_indexes_true(rdb: redis.Redis) -> None:
    """An object cached before the index sets moved into the versions hash: its first change
    reads them from the memberships hash, keeps the indexes true and drops the old entry."""
    w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    w.apply("ADDED", rollout("a", 1, "s1"))
    entry = rdb.hget(w.keys.versions, "prod/a")
    rv, _, sets = entry.decode().partition(" ")
    assert rv == "1" and "prod/s1" in sets
    rdb.hset(w.keys.versions, "prod/a", rv)  # as the layout before wrote it
    rdb.hset(w.keys.memberships, "prod/a", sets)
    assert w.apply("MODIFIED", rollout("a", 2, "s2")).previous_rv == "1"
    assert lister.keys_by_index("svc", "prod/s1") == []
    assert lister.keys_by_index("svc", "prod/s2") == ["prod/a"]
    assert not rdb.exists(w.keys.memberships)
    assert [c.type for c in w.replace([rollout("a", 2, "s2")], "3")] == []


def test_replace_equals_the_list_and_reports_changes(rdb: redis.Redis) -> None:
    w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    for i in range(5):
        w.apply("ADDED", rollout(f"r{i}", i + 1, "s"))
    fresh = [rollout("r0", 1, "s"), rollout("r1", 10, "t"), rollout("new", 11, "s")]
    changes = w.replace(fresh, "12")
    assert sorted((c.type, c.key) for c in changes) == [
        ("ADDED", "prod/new"),
        ("DELETED", "prod/r2"),
        ("DELETED", "prod/r3"),
        ("DELETED", "prod/r4"),
        ("MODIFIED", "prod/r1"),
    ]
    assert sorted(lister.list(), key=lambda o: o["metadata"]["name"]) == sorted(
        fresh, key=lambda o: o["metadata"]["name"]
    )
    assert lister.keys_by_index("svc", "prod/s") == ["prod/new", "prod/r0"]
    assert lister.resource_version() == "12"
    # No orphaned index entries remain anywhere.
    members = set()
    for key in rdb.scan_iter("t:cache:rollouts:i:*"):
        members |= {m.decode() for m in rdb.smembers(key)}
    assert members == {"prod/r0", "prod/r1", "prod/new"}


def test_written_versions_tell_a_lagging_cache(rdb: redis.Redis) -> None:
    written = WrittenVersions(rdb, prefix="t")
    written.record("rollouts", "ns/a", "12")
    written.record("rollouts", "ns/a", "11")  # an older write never lowers the record
    assert written.stale("rollouts", {"ns/a": "11", "ns/b": "1"}) == ["ns/a"]
    assert written.stale("rollouts", {"ns/a": "12"}) == []
    # Created by a worker, not cached yet: unseen; cached, or never written by us: not.
    written.record("analysisruns", "ns/run", "40")
    keys = ["ns/run", "ns/other"]
    assert written.unseen("analysisruns", keys, cached=set()) == ["ns/run"]
    assert written.unseen("analysisruns", keys, cached={"ns/run"}) == []
    # Deleted by a worker since: no longer expected in the cache.
    written.forget("analysisruns", "ns/run")
    assert written.unseen("analysisruns", keys, cached=set()) == []


def test_an_event_that_is_only_the_own_controllers_write_is_marked(rdb: redis.Redis) -> None:
    cache = CacheWriter(rdb, prefix="t", resource=r.ANALYSISRUNS)
    run = rollout("run", 10, "s")  # any object will do; the cache is per type
    assert not cache.apply("ADDED", run).own_write
    # The AnalysisRun controller writes rv 11; a Rollout's write to it (rv 12) is not its own.
    runs = WrittenVersions(rdb, prefix="t", own="analysisruns")
    rollouts = WrittenVersions(rdb, prefix="t", own="rollouts")
    runs.record("analysisruns", "prod/run", "11")
    assert cache.apply("MODIFIED", rollout("run", 11, "s")).own_write
    rollouts.record("analysisruns", "prod/run", "12")
    assert not cache.apply("MODIFIED", rollout("run", 12, "s")).own_write
    # Something else after the own write: a newer version, not skipped.
    runs.record("analysisruns", "prod/run", "13")
    assert not cache.apply("MODIFIED", rollout("run", 14, "s")).own_write
    assert not cache.apply("DELETED", rollout("run", 14, "s")).own_write
    # The stale-cache guard sees every write, own or not.
    assert runs.stale("analysisruns", {"prod/run": "12"}) == ["prod/run"]


def test_an_event_older_than_the_cache_is_refused(rdb: redis.Redis) -> None:
    """A deposed leader's reflector may write what it read before another watcher took over:
    it must not put an object back in time. A relist is the truth and always applies."""
    cache = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    cache.apply("ADDED", rollout("a", 12, "new"))
    older = cache.apply("MODIFIED", rollout("a", 11, "old"))
    assert older.older
    assert lister.get("prod/a")["metadata"]["resourceVersion"] == "12"
    assert lister.keys_by_index("svc", "prod/new") == ["prod/a"]
    assert cache.apply("DELETED", rollout("a", 10, "old")).older
    assert lister.get("prod/a") is not None
    assert not cache.apply("MODIFIED", rollout("a", 13, "new")).older
    # After an etcd restore resourceVersions may go down: the relist applies them.
    cache.replace([rollout("a", 5, "restored")], "5")
    assert lister.get("prod/a")["metadata"]["resourceVersion"] == "5"
    assert not cache.apply("MODIFIED", rollout("a", 6, "restored")).older


def test_a_streamed_relist_never_hides_an_object_and_deletes_only_at_the_end(
    rdb: redis.Redis,
) -> None:
    w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    for i in range(4):
        w.apply("ADDED", rollout(f"r{i}", i + 1, "s"))
    replacement = w.replacement(batch=1)
    first = replacement.apply_page([rollout("r0", 1, "s"), rollout("r1", 9, "t")])
    assert [(c.type, c.key, c.previous_rv) for c in first] == [("MODIFIED", "prod/r1", "2")]
    # Mid-list: r2 and r3 are not listed yet, and are still there; the type is not current.
    assert lister.object_keys() == ["prod/r0", "prod/r1", "prod/r2", "prod/r3"]
    assert lister.get("prod/r1") == rollout("r1", 9, "t")
    assert lister.resource_version() == "4"
    second = replacement.apply_page([rollout("r2", 3, "s"), rollout("new", 10, "s")])
    assert [(c.type, c.key) for c in second] == [("ADDED", "prod/new")]
    assert len(lister.object_keys()) == 5, "nothing deleted before the list ended"
    deleted = [[(c.type, c.key, c.obj) for c in part] for part in replacement.delete_vanished()]
    assert deleted == [[("DELETED", "prod/r3", rollout("r3", 4, "s"))]]
    replacement.commit("11")
    assert lister.object_keys() == ["prod/new", "prod/r0", "prod/r1", "prod/r2"]
    assert lister.keys_by_index("svc", "prod/s") == ["prod/new", "prod/r0", "prod/r2"]
    assert lister.resource_version() == "11"


def test_a_relist_that_fails_part_way_deletes_nothing(rdb: redis.Redis) -> None:
    w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    lister = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    for i in range(3):
        w.apply("ADDED", rollout(f"r{i}", i + 1, "s"))
    w.replacement().apply_page([rollout("r0", 7, "s")])  # the next page never came
    assert lister.object_keys() == ["prod/r0", "prod/r1", "prod/r2"]
    assert lister.resource_version() == "3"
    changes = w.replace([rollout("r0", 7, "s"), rollout("r1", 2, "s")], "8")
    assert [(c.type, c.key) for c in changes] == [("DELETED", "prod/r2")]
    assert lister.object_keys() == ["prod/r0", "prod/r1"]


def owned_rs(name: str, owner_uid: str, rv: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "prod",
            "resourceVersion": str(rv),
            "uid": f"u-{name}",
            "ownerReferences": [{"uid": owner_uid, "controller": True, "name": "x"}],
        },
    }


class OwnerCache:
    """Rollout prod/a (uid "a") with ReplicaSets a-2 and a-1, and `other` of another owner; the
    owner reads of rollouts over ReplicaSets and AnalysisRuns."""

    def __init__(self, rdb: redis.Redis) -> None:
        self.rollouts_w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
        rs_w = CacheWriter(rdb, prefix="t", resource=r.REPLICASETS)
        self.rollouts = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
        self.rss = Lister(rdb, prefix="t", resource=r.REPLICASETS)
        self.runs = Lister(rdb, prefix="t", resource=r.ANALYSISRUNS)
        self.written = WrittenVersions(rdb, prefix="t")
        self.reads = OwnerReads(
            rdb, self.rollouts, [self.rss, self.runs], written=self.written,
            checked={"replicasets"},
        )  # fmt: skip
        self.rollouts_w.apply("ADDED", rollout("a", 1, "s"))
        for i, name in enumerate(["a-2", "a-1", "other"]):
            rs_w.apply("ADDED", owned_rs(name, "a" if name != "other" else "b", 10 + i))


def test_owner_reads_match_the_plain_reads_in_one_round_trip(
    rdb: redis.Redis,
) -> None:
    c = OwnerCache(rdb)
    rollouts_w, rollouts, rss, runs = c.rollouts_w, c.rollouts, c.rss, c.runs
    written, reads = c.written, c.reads

    def plain() -> tuple[object, list[list[dict[str, Any]]]]:
        obj = rollouts.get("prod/a")
        uid = obj["metadata"]["uid"] if obj else ""
        return obj, [rss.by_owner(uid), runs.by_owner(uid)]

    # The first read of a key takes the uid from the owner's JSON in the same script.
    rdb.config_resetstat()
    assert reads.read("prod/a") == (*plain(), [])
    stats = rdb.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] - stats["cmdstat_evalsha"].get("failed_calls", 0) == 3
    assert stats["cmdstat_hget"]["calls"] == 2  # plain()'s and the script's
    rdb.config_resetstat()
    assert reads.read("prod/a") == (*plain(), [])
    # One script call for the owner reads, two for plain()'s by_owner.
    evalsha = rdb.info("commandstats")["cmdstat_evalsha"]
    assert evalsha["calls"] - evalsha.get("failed_calls", 0) == 3, evalsha

    # A write newer than the cache, of the rollout or of one of its ReplicaSets, is reported.
    written.record("replicasets", "prod/a-1", "99")
    assert reads.read("prod/a")[2] == ["prod/a-1"]
    written.record("rollouts", "prod/a", "50")
    assert reads.read("prod/a")[2] == ["prod/a", "prod/a-1"]
    assert reads.read("prod/a")[2] == (
        written.stale("rollouts", {"prod/a": "1"})
        + written.stale_objects("replicasets", rss.by_owner("a"))
    )

    # Deleted and created again under a new uid: the remembered uid no longer matches.
    rollouts_w.apply("DELETED", rollout("a", 60, "s"))
    assert reads.read("prod/a") == (None, [[], []], [])
    again = rollout("a", 61, "s")
    again["metadata"]["uid"] = "b"
    rollouts_w.apply("ADDED", again)
    obj, (owned, _), stale = reads.read("prod/a")
    assert obj == again and [o["metadata"]["name"] for o in owned] == ["other"] and stale == []
    # Created again between two reads: the plain reads, which leave the guard to the caller.
    third = rollout("a", 62, "s")
    third["metadata"]["uid"] = "c"
    rollouts_w.apply("DELETED", again)
    rollouts_w.apply("ADDED", third)
    assert reads.read("prod/a") == (third, [[], []], None)
    assert reads.read("prod/a") == (third, [[], []], [])


def test_a_claim_makes_the_owner_read_of_the_key_it_claims(
    rdb: redis.Redis, wq: WorkQueue, settings: Settings
) -> None:
    """OwnerReads.claim_read runs inside the claim's script call: the reconcile gets what its
    own read would have got (stale-cache verdict included), and makes no round trip of its
    own; a claim that takes nothing reads nothing."""
    c = OwnerCache(rdb)
    rollouts_w, written, reads = c.rollouts_w, c.written, c.reads
    written.record("replicasets", "prod/a-1", "99")
    read = reads.claim_read()
    a = ObjectKey("prod/a")
    wq.add([a])
    wq.claim_guarded(a, "warm", read)  # loads the script
    wq.add([a])
    wq.done(a, "warm", Outcome.OK)
    rdb.config_resetstat()
    (claim, key), _, prefetched = wq.claim_guarded(a, "w1", read)
    assert (claim, key) == (Claim.CLAIMED, a)
    assert rdb.info("commandstats")["cmdstat_evalsha"]["calls"] == 1
    got = reads.read(a, prefetched)
    assert got == reads.read(a) and got[2] == ["prod/a-1"]
    assert [o["metadata"]["name"] for o in got[1][0]] == ["a-1", "a-2"]
    # Not queued: nothing claimed, nothing read.
    assert wq.claim_guarded(a, "w2", read) == ((Claim.STALE, a), True, None)
    # The claim's guard (the cache epoch) is read with the written versions, in their MGET.
    guarded = WorkQueue(
        rdb, kind="rollouts", prefix="t", settings=settings.queue, send=SentLog(),
        claim_guard="t:cache:epoch",
    )  # fmt: skip
    for epoch in (None, "e1"):
        if epoch:
            rdb.set("t:cache:epoch", epoch)
        assert wq.done(a, "w1" if epoch is None else "g1", Outcome.OK)
        guarded.add([a])
        rdb.config_resetstat()
        (claim, _), synced, prefetched = guarded.claim_guarded(a, "g1", read)
        stats = rdb.info("commandstats")
        assert claim is Claim.CLAIMED and synced is (epoch is not None)
        assert "cmdstat_exists" not in stats and stats["cmdstat_mget"]["calls"] == 1
        assert reads.read(a, prefetched)[2] == ["prod/a-1"]
    assert guarded.done(a, "g1", Outcome.OK)
    # Gone from the cache: the reconcile sees it gone.
    rollouts_w.apply("DELETED", rollout("a", 70, "s"))
    wq.add([a])
    (claim, _), _, prefetched = wq.claim_guarded(a, "w3", read)
    assert claim is Claim.CLAIMED and reads.read(a, prefetched) == (None, [[], []], [])


def test_owner_reads_take_the_uid_from_metadata_not_from_the_first_uid_in_the_json(
    rdb: redis.Redis,
) -> None:
    """The script takes the first uid in the owner's JSON, which is metadata's as the API
    server encodes objects; another first (an owner reference's) costs the plain reads and
    still finds metadata's uid."""
    rollouts_w = CacheWriter(rdb, prefix="t", resource=r.ROLLOUTS)
    rs_w = CacheWriter(rdb, prefix="t", resource=r.REPLICASETS)
    rollouts = Lister(rdb, prefix="t", resource=r.ROLLOUTS)
    rss = Lister(rdb, prefix="t", resource=r.REPLICASETS)
    odd = rollout("a", 1, "s")
    odd["metadata"] = {"ownerReferences": [{"uid": "b", "name": "x"}], **odd["metadata"]}
    rollouts_w.apply("ADDED", odd)
    rs_w.apply("ADDED", owned_rs("mine", "a", 2))
    rs_w.apply("ADDED", owned_rs("not-mine", "b", 3))
    written = WrittenVersions(rdb, prefix="t")
    for _ in range(2):  # the plain reads, then one script call for the remembered uid
        reads = OwnerReads(rdb, rollouts, [rss], written=written, checked={"replicasets"})
        obj, (owned,), _ = reads.read("prod/a")
        assert obj == odd and [o["metadata"]["name"] for o in owned] == ["mine"]
        obj, (owned,), stale = reads.read("prod/a")
        assert [o["metadata"]["name"] for o in owned] == ["mine"] and stale == []
