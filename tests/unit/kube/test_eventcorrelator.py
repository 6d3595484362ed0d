"""client-go's EventCorrelator: the cases of tools/record/events_cache_test.go, as tables.

The Go tests use a clock that moves on at every read (several reads an event); here the clock
is read once an event and the table's interval is the time between two events, so the case
"interval greater than the aggregate interval" uses 601 s where Go's uses 600.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.kube.eventcorrelator import (
    AGGREGATE_INTERVAL,
    AGGREGATE_MAX_EVENTS,
    AGGREGATE_PREFIX,
    LRU,
    SPAM_BURST,
    EventCorrelator,
    TokenBucket,
    aggregate_key,
    event_key,
    spam_key,
)
from rollout_workers.timefmt import format_time

Obj = dict[str, Any]
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


@dataclass
class StepClock:
    """A clock moved on by the test."""

    now: dt.datetime = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


def ref(kind: str, name: str, namespace: str, field_path: str = "spec.containers{c}") -> Obj:
    return {
        "kind": kind,
        "name": name,
        "namespace": namespace,
        "uid": "C934D34AFB20242",
        "apiVersion": "version",
        "fieldPath": field_path,
    }


def event(reason: str, message: str, involved: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{involved['name']}.", "namespace": involved["namespace"]},
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "type": "Normal",
        "count": 1,
        "source": {"component": "kubelet", "host": "kubelet.node1"},
    }


def repeated(n: int, template: Obj) -> list[Obj]:
    return [dict(template) for _ in range(n)]


def unique(n: int) -> list[Obj]:
    return [
        event(f"reason-{i}", f"message-{i}", ref("Pod", f"pod-{i}", f"ns-{i}")) for i in range(n)
    ]


def similar(n: int, template: Obj) -> list[Obj]:
    """`n` events that differ from `template` only by message."""
    return [{**template, "message": f"{template['message']}-{i}"} for i in range(n)]


POD = ref("Pod", "my-pod", "my-ns")
FIRST = event("first", "i am first", POD)
DUPLICATE = event("duplicate", "me again", POD)
UNIQUE = event("unique", "snowflake", POD)
SIMILAR = event("similar", "similar message", ref("Pod", "my-pod", "my-ns", "spec.containers{c1}"))
OTHER_CONTAINER = event(
    "similar", "similar message", ref("Pod", "my-pod", "my-ns", "spec.containers{c2}")
)


@dataclass(frozen=True)
class Case:
    previous: list[Obj]
    new: Obj
    interval: float
    count: int = 1
    aggregated: bool = False
    skipped: bool = False
    patched: bool = False


CASES = {
    "create-a-single-event": Case([], FIRST, 5),
    "the-same-event-should-just-count": Case(
        repeated(1, DUPLICATE), DUPLICATE, 5, count=2, patched=True
    ),
    "the-same-event-should-just-count-even-if-more-than-aggregate": Case(
        repeated(AGGREGATE_MAX_EVENTS, DUPLICATE), DUPLICATE, 30,
        count=AGGREGATE_MAX_EVENTS + 1, patched=True,
    ),
    "the-same-event-is-spam-if-happens-too-frequently": Case(
        repeated(SPAM_BURST + 1, DUPLICATE), DUPLICATE, 1, skipped=True
    ),
    "create-many-unique-events": Case(unique(30), UNIQUE, 5),
    "similar-events-should-aggregate-event": Case(
        similar(AGGREGATE_MAX_EVENTS - 1, SIMILAR), SIMILAR, 5, aggregated=True
    ),
    "similar-events-many-times-should-count-the-aggregate": Case(
        similar(AGGREGATE_MAX_EVENTS, SIMILAR), SIMILAR, 5, count=2, aggregated=True, patched=True
    ),
    "events-from-different-containers-do-not-aggregate": Case(
        repeated(1, OTHER_CONTAINER), SIMILAR, 5
    ),
    "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate": Case(
        similar(AGGREGATE_MAX_EVENTS - 1, SIMILAR), SIMILAR, AGGREGATE_INTERVAL + 1
    ),
}  # fmt: skip


@dataclass
class Server:
    """Answers writes as the API server would: names what it creates, bumps versions."""

    written: dict[str, Obj] = field(default_factory=dict)

    def answer(self, ev: Obj) -> Obj:
        out = {**ev, "metadata": dict(ev.get("metadata") or {})}
        meta = out["metadata"]
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}{len(self.written)}"
        meta["resourceVersion"] = str(len(self.written) + 1)
        self.written[meta["name"]] = out
        return out


def play(correlator: EventCorrelator, clock: StepClock, server: Server, ev: Obj) -> Any:
    """Stamp the event with the clock, correlate it, and write what is not skipped."""
    stamp = format_time(clock())
    result = correlator.correlate({**ev, "firstTimestamp": stamp, "lastTimestamp": stamp})
    if result is not None:
        correlator.update_state(result.key, server.answer(result.event))
    return result


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_event_correlator(case: Case) -> None:
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock)
    for ev in case.previous:
        play(correlator, clock, server, ev)
        clock.step(case.interval)
    new_stamp = format_time(clock())
    result = correlator.correlate(
        {**case.new, "firstTimestamp": new_stamp, "lastTimestamp": new_stamp}
    )
    if case.skipped:
        assert result is None
        return
    assert result is not None
    got = result.event
    assert got["count"] == case.count
    assert got["reason"] == case.new["reason"]
    assert got["involvedObject"] == case.new["involvedObject"]
    expected_message = (AGGREGATE_PREFIX if case.aggregated else "") + case.new["message"]
    assert got["message"] == expected_message
    # One occurrence: first and last are the same time; counted ones keep the first's.
    assert (got["firstTimestamp"] == got["lastTimestamp"]) == (case.count == 1)
    assert got["lastTimestamp"] == new_stamp
    if case.patched:
        assert result.patch == {
            "count": case.count,
            "lastTimestamp": new_stamp,
            "message": expected_message,
        }
        assert got["metadata"]["name"] in server.written  # the Event written before
    else:
        assert result.patch is None
        assert "name" not in got["metadata"]


# -- the keys (TestEventAggregatorByReasonFunc, TestEventAggregatorByReasonMessageFunc) ----------


def test_events_that_differ_only_by_message_aggregate_together() -> None:
    fun = event("end-of-world", "it was fun", ref("Pod", "pod1", "other"))
    awful = event("end-of-world", "it was awful", ref("Pod", "pod1", "other"))
    bug = event("nevermind", "it was a bug", ref("Pod", "pod1", "other"))
    assert aggregate_key(fun)[0] == aggregate_key(awful)[0]
    assert aggregate_key(fun)[1] != aggregate_key(awful)[1]
    assert aggregate_key(fun)[0] != aggregate_key(bug)[0]
    assert event_key(fun) != event_key(awful)
    assert spam_key(fun) == spam_key(bug)


def test_the_aggregate_message_names_the_latest_one() -> None:
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock)
    results = [play(correlator, clock, server, ev) for ev in similar(AGGREGATE_MAX_EVENTS, SIMILAR)]
    assert [r.event["message"].startswith(AGGREGATE_PREFIX) for r in results] == [False] * 9 + [
        True
    ]
    assert results[-1].event["message"] == f"{AGGREGATE_PREFIX}similar message-9"


# -- the spam filter (TestEventSpamFilter: burst 1, default and custom spam keys) ---------------


def _by_object_and_reason(ev: Obj) -> str:
    return f"{spam_key(ev)}|{ev.get('reason')}"


SPAM_CASES = {
    "same object, default key: spam": (event("duplicate", "me again", POD), None, True),
    "same object, different reason, key with the reason: not spam": (
        event("duplicate", "me again", POD), _by_object_and_reason, False,
    ),
    "same object and reason, different message, key with the reason: spam": (
        event("original", "me again", POD), _by_object_and_reason, True,
    ),
}  # fmt: skip


@pytest.mark.parametrize("new, key, skipped", SPAM_CASES.values(), ids=SPAM_CASES.keys())
def test_spam_filter(new: Obj, key: Any, skipped: bool) -> None:
    clock, server = StepClock(), Server()
    options: dict[str, Any] = {"spam_key": key} if key is not None else {}
    correlator = EventCorrelator(clock=clock, burst=1, **options)
    assert play(correlator, clock, server, event("original", "i am first", POD)) is not None
    clock.step(1)
    assert (play(correlator, clock, server, new) is None) == skipped


def test_the_spam_bucket_refills_one_event_every_five_minutes() -> None:
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock)
    accepted = [play(correlator, clock, server, DUPLICATE) is not None for _ in range(30)]
    assert accepted == [True] * SPAM_BURST + [False] * 5
    clock.step(299)
    assert play(correlator, clock, server, DUPLICATE) is None
    clock.step(1)
    assert play(correlator, clock, server, DUPLICATE) is not None
    assert play(correlator, clock, server, DUPLICATE) is None


def test_a_skipped_event_still_counts_in_the_next_written_one() -> None:
    # client-go observes before it filters: the count says how often it happened.
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock, burst=1)
    play(correlator, clock, server, DUPLICATE)
    assert play(correlator, clock, server, DUPLICATE) is None
    clock.step(300)
    result = play(correlator, clock, server, DUPLICATE)
    assert result.event["count"] == 3 and result.patch["count"] == 3


def test_an_event_never_written_is_created_again_with_its_count() -> None:
    clock = StepClock()
    correlator = EventCorrelator(clock=clock)
    first = correlator.correlate(dict(DUPLICATE))
    assert first is not None  # ... and its write failed: no update_state
    again = correlator.correlate(dict(DUPLICATE))
    assert again is not None and again.patch is None and again.event["count"] == 2


def test_the_aggregate_is_deduplicated_under_the_similar_events_key() -> None:
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock)
    results = [play(correlator, clock, server, ev) for ev in similar(12, SIMILAR)]
    aggregates = results[AGGREGATE_MAX_EVENTS - 1 :]
    names = {r.event["metadata"].get("name") for r in aggregates[1:]}
    assert len(names) == 1 and names <= set(server.written)
    assert [r.event["count"] for r in aggregates] == [1, 2, 3]
    assert aggregates[-1].event["message"] == f"{AGGREGATE_PREFIX}similar message-11"


# -- the parts ---------------------------------------------------------------------------------


def test_lru_forgets_the_least_recently_used() -> None:
    lru: LRU[int] = LRU(2)
    lru.add("a", 1)
    lru.add("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.add("c", 3)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (1, None, 3)
    assert len(lru) == 2


def test_token_bucket_starts_full_and_never_holds_more_than_its_burst() -> None:
    bucket = TokenBucket(qps=1.0, burst=2, now=T0)
    assert [bucket.try_accept(T0) for _ in range(3)] == [True, True, False]
    later = T0 + dt.timedelta(seconds=100)
    assert [bucket.try_accept(later) for _ in range(3)] == [True, True, False]
    assert not bucket.try_accept(T0)  # time going back refills nothing


def test_the_caches_are_bounded() -> None:
    clock, server = StepClock(), Server()
    correlator = EventCorrelator(clock=clock, cache_entries=4)
    for ev in unique(10):
        play(correlator, clock, server, ev)
    assert len(correlator._observed) == len(correlator._similar) == len(correlator._buckets) == 4
