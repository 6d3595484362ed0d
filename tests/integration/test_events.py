"""The watcher's event path (watcher.events), real Redis: one script call applies a watch event
to the cache and queues what it wakes, with the same meaning as applying and then adding."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from rollout_workers.cache import CacheWriter, Lister
from rollout_workers.keys import ObjectKey, own_key
from rollout_workers.kube import resources as r
from rollout_workers.settings import Settings
from rollout_workers.watcher.events import EventQueuer
from rollout_workers.workqueue import Claim, Outcome, WorkQueue
from tests.integration.conftest import SentLog

RUN = ObjectKey("prod/web-1")
ROLLOUT = ObjectKey("prod/web")


def run(rv: int) -> dict[str, Any]:
    owner = {"kind": "Rollout", "name": "web", "uid": "u1", "controller": True}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": "web-1",
            "namespace": "prod",
            "resourceVersion": str(rv),
            "ownerReferences": [owner],
        },
        "spec": {},
    }


class System:
    def __init__(self, rdb: redis.Redis, settings: Settings, kinds: set[str]) -> None:
        self.sent: dict[str, SentLog] = {k: SentLog() for k in ("rollouts", "analysisruns")}
        self.queues = {
            k: WorkQueue(rdb, kind=k, prefix="t", settings=settings.queue, send=log)
            for k, log in self.sent.items()
        }
        self.writer = CacheWriter(rdb, prefix="t", resource=r.ANALYSISRUNS)
        self.lister = Lister(rdb, prefix="t", resource=r.ANALYSISRUNS)
        self.queuer = EventQueuer(
            rdb,
            kinds=kinds,
            queue=self.queues.__getitem__,
            lookup=lambda *_: [],
            add_source=self.queues["rollouts"].add_source,
        )


@pytest.fixture
def system(rdb: redis.Redis, settings: Settings) -> System:
    return System(rdb, settings, {"rollouts", "analysisruns"})


def evalsha_calls(rdb: redis.Redis) -> int:
    stats = rdb.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0)) + int(
        stats.get("cmdstat_eval", {}).get("calls", 0)
    )


def test_an_event_is_cached_and_queues_what_it_wakes_in_one_call(
    system: System, rdb: redis.Redis
) -> None:
    system.queuer.event(system.writer, "ADDED", run(10))  # registers the script
    before = evalsha_calls(rdb)
    change = system.queuer.event(system.writer, "MODIFIED", run(11))
    assert evalsha_calls(rdb) - before == 1
    assert (change.type, change.previous_rv, change.own_write) == ("MODIFIED", "10", False)
    assert system.lister.get(RUN)["metadata"]["resourceVersion"] == "11"
    # Both kinds were woken once (the second event coalesced with the queued keys).
    assert system.sent["analysisruns"].sent == [RUN]
    assert system.sent["rollouts"].sent == [ROLLOUT]


def test_the_own_controllers_write_wakes_the_owner_but_not_the_object(
    system: System, rdb: redis.Redis
) -> None:
    rdb.set(own_key("t", "analysisruns", RUN), "12")
    change = system.queuer.event(system.writer, "ADDED", run(12))
    assert change.own_write
    assert system.sent["analysisruns"].sent == []
    assert system.sent["rollouts"].sent == [ROLLOUT]


def test_an_own_event_while_the_object_is_held_marks_it_dirty_with_its_version(
    system: System, rdb: redis.Redis
) -> None:
    runs = system.queues["analysisruns"]
    runs.add([RUN])
    assert runs.claim(RUN, "w").status is Claim.CLAIMED
    # The event of the holder's write arrives before the holder recorded writing it.
    system.queuer.event(system.writer, "ADDED", run(13))
    assert rdb.hget(runs.k_dirty_own, RUN) == b"13"
    rdb.set(own_key("t", "analysisruns", RUN), "13")
    runs.done(RUN, "w", Outcome.OK)
    assert system.sent["analysisruns"].sent == [RUN]  # only the first add's message


def test_an_event_older_than_the_cache_changes_and_wakes_nothing(
    system: System, rdb: redis.Redis
) -> None:
    system.queuer.event(system.writer, "ADDED", run(20))
    for log in system.sent.values():
        log.sent.clear()
    for queue in system.queues.values():
        rdb.delete(queue.k_queued)
    change = system.queuer.event(system.writer, "MODIFIED", run(19))
    assert change.older
    assert system.lister.get(RUN)["metadata"]["resourceVersion"] == "20"
    assert all(not log.sent for log in system.sent.values())


def test_kinds_this_watcher_does_not_serve_are_not_queued(
    rdb: redis.Redis, settings: Settings
) -> None:
    only_runs = System(rdb, settings, {"analysisruns"})
    only_runs.queuer.event(only_runs.writer, "ADDED", run(30))
    assert only_runs.sent["analysisruns"].sent == [RUN]
    assert only_runs.sent["rollouts"].sent == []


def other_run(name: str, rv: int, owner: str) -> dict[str, Any]:
    obj = run(rv)
    obj["metadata"]["name"] = name
    obj["metadata"]["ownerReferences"][0]["name"] = owner
    return obj


def test_a_batch_is_cached_and_queued_in_one_call_of_fixed_commands(
    system: System, rdb: redis.Redis
) -> None:
    """A batch of events costs one script call, and its Redis commands do not grow with its
    size: every object and key command covers the whole batch (only an object entering an
    index set costs an SADD of its own, as a new object does)."""

    def commands(n: int, rv: int) -> int:
        def batch(event: str, at: int) -> list[Any]:
            return [(event, other_run(f"r{rv}-{i}", at + i, f"o{rv}-{i}"), None) for i in range(n)]

        system.queuer.events(system.writer, batch("ADDED", rv))
        for queue in system.queues.values():  # the keys are to be queued again
            rdb.delete(queue.k_queued)
        rdb.config_resetstat()
        changes = system.queuer.events(system.writer, batch("MODIFIED", rv + n))
        assert [c.previous_rv for c in changes] == [str(rv + i) for i in range(n)]
        stats = rdb.info("commandstats")
        assert stats["cmdstat_evalsha"]["calls"] == 1
        return sum(int(v["calls"]) for v in stats.values())

    assert commands(2, 100) == commands(40, 200)
    assert system.lister.count() == 2 + 40
    assert system.lister.resource_version() == str(200 + 40 + 39)
    # Every object woke itself and its owner, twice: 84 messages a kind.
    assert len(system.sent["analysisruns"].sent) == 84
    assert len(system.sent["rollouts"].sent) == 84


def test_a_batch_means_what_its_events_mean_one_by_one(system: System, rdb: redis.Redis) -> None:
    """The same object twice, an own write, an event older than the cache and a delete, in one
    batch: the cache ends as if applied one by one, and a key is woken by the events that
    would have woken it alone."""
    runs, rollouts = system.queues["analysisruns"], system.queues["rollouts"]
    system.queuer.event(system.writer, "ADDED", other_run("old", 50, "gone-owner"))
    rdb.delete(runs.k_queued)
    rdb.set(own_key("t", "analysisruns", RUN), "12")
    held = ObjectKey("prod/held")
    runs.add([held])
    assert runs.claim(held, "w") == (Claim.CLAIMED, held)
    for log in system.sent.values():
        log.sent.clear()
    for queue in system.queues.values():
        rdb.delete(queue.k_queued)
    changes = system.queuer.events(
        system.writer,
        [
            ("ADDED", run(11), None),  # someone else's change
            ("MODIFIED", run(12), None),  # then the own controller's write
            ("MODIFIED", other_run("old", 40, "gone-owner"), None),  # older than the cache
            ("ADDED", other_run("held", 60, "web"), None),  # held: marked dirty, own version
            ("ADDED", other_run("held", 61, "web"), None),
            ("DELETED", other_run("held", 62, "web"), None),
        ],
    )
    assert [(c.previous_rv, c.own_write, c.older) for c in changes] == [
        (None, False, False),
        ("11", True, False),
        ("50", False, True),
        (None, False, False),
        ("60", False, False),
        ("61", False, False),
    ]
    assert system.lister.get(RUN)["metadata"]["resourceVersion"] == "12"
    assert system.lister.get("prod/old")["metadata"]["resourceVersion"] == "50"
    assert system.lister.get("prod/held") is None
    assert system.lister.resource_version() == "62"
    # web-1 woken by someone else's change, then its own write: queued, as one by one.
    assert system.sent["analysisruns"].sent == [RUN]
    # The older event woke nothing (gone-owner); web (the owner of the rest) once.
    assert system.sent["rollouts"].sent == [ROLLOUT]
    assert not rdb.zscore(rollouts.k_queued, "prod/gone-owner")
    # held: dirty by its own events only up to 61, then its delete (not an own event).
    assert rdb.sismember(runs.k_dirty, held) and rdb.hget(runs.k_dirty_own, held) is None
