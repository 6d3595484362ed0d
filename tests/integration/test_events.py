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
