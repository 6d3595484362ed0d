"""The background event sink: bounded, never blocking, correlating, retrying as client-go's
recordToSink (tools/record/event_test.go: TestEventf, TestWriteEventError,
TestUpdateExpiredEvent), and started again in a forked child."""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.counters import Keys, PendingCounts
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import Invalid, KubeError, NotFound, Unavailable
from rollout_workers.kube.events import event_body
from rollout_workers.kube.eventsink import (
    MAX_TRIES,
    STRATEGIC_MERGE_PATCH,
    BackgroundEventSink,
    WriterSink,
)
from rollout_workers.kube.writer import RecordingWriter

Obj = dict[str, Any]
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


@dataclass
class FakeApi:
    """Events as the API server keeps them; `fail` scripts the error of each next call."""

    events: dict[str, Obj] = field(default_factory=dict)
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    fail: list[Exception | None] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def _next(self) -> None:
        self.gate.wait()
        if self.fail:
            error = self.fail.pop(0)
            if error is not None:
                raise error

    def create(self, resource: r.Resource, namespace: str | None, body: Obj) -> Obj:
        assert resource is r.EVENTS
        self.calls.append(("create", namespace or "", copy.deepcopy(body)))
        self._next()
        out = copy.deepcopy(body)
        meta = out.setdefault("metadata", {})
        meta.setdefault("name", f"{meta.get('generateName', '')}{len(self.events)}")
        meta["resourceVersion"] = str(len(self.calls))
        self.events[meta["name"]] = out
        return copy.deepcopy(out)

    def patch(
        self,
        resource: r.Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        patch_type: str = "application/merge-patch+json",
    ) -> Obj:
        assert resource is r.EVENTS and patch_type == STRATEGIC_MERGE_PATCH
        self.calls.append(("patch", name, copy.deepcopy(body)))
        self._next()
        if name not in self.events:
            raise NotFound(404, "NotFound", f'events "{name}" not found')
        self.events[name].update(body)
        self.events[name]["metadata"]["resourceVersion"] = str(len(self.calls))
        return copy.deepcopy(self.events[name])


def pod(name: str = "foo", uid: str = "bar") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "baz", "uid": uid},
    }


def ev(obj: Obj, reason: str, message: str = "some verbose message: 1") -> Obj:
    return event_body(
        obj, reason=reason, message=message, warning=False, now="2026-01-01T12:00:00Z"
    )


def make_sink(
    api: FakeApi, *, capacity: int = 100, counts: PendingCounts | None = None
) -> BackgroundEventSink:
    return BackgroundEventSink(
        lambda: api, capacity=capacity, counts=counts, clock=lambda: T0, retry_sleep=0.0
    )


def counted(counts: PendingCounts) -> dict[str, int]:
    return {f"{i.key.rsplit(':', 1)[1]}:{i.field}": i.amount for i in counts.drain()}


# -- TestEventf / TestMultiSinkCache: creates, then patches counting up -------------------------

SEQUENCE = [
    # (object, reason, verb, count)
    (pod(), "Started", "create", 1),
    (pod(), "Killed", "create", 1),
    (pod(), "Started", "patch", 2),
    (pod(uid="differentUid"), "Started", "create", 1),
    (pod(), "Started", "patch", 3),
    (pod(uid="differentUid"), "Stopped", "create", 1),
    (pod(uid="differentUid"), "Stopped", "patch", 2),
]


def test_the_same_event_again_patches_the_one_written() -> None:
    api = FakeApi()
    sink = make_sink(api)
    for obj, reason, _, _ in SEQUENCE:
        sink.emit(ev(obj, reason))
    assert sink.flush(5)
    assert [(verb, body["count"]) for verb, _, body in api.calls] == [
        (verb, count) for _, _, verb, count in SEQUENCE
    ]
    (name, patch) = api.calls[2][1:]
    assert name == "foo.0" and patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T12:00:00Z",
        "message": "some verbose message: 1",
    }
    assert api.events["foo.0"]["count"] == 3 and len(api.events) == 4


# -- TestWriteEventError ---------------------------------------------------------------------

WRITE_ERRORS = {
    "refused (a Status error): given up at once": ([Invalid(422, "Invalid", "bad")] * 20, 1, 1),
    "refused (any other status): given up at once": ([KubeError(400, "Bad", "x")] * 20, 1, 1),
    "connection failures: tried 12 times": (
        [Unavailable(0, "Unavailable", "refused")] * 20, MAX_TRIES, 1,
    ),
    "server errors: tried 12 times": ([Unavailable(503, "Unavailable", "")] * 20, MAX_TRIES, 1),
    "succeeds eventually": ([Unavailable(0, "Unavailable", "refused")], 2, 0),
}  # fmt: skip


@pytest.mark.parametrize("errors, attempts, failed", WRITE_ERRORS.values(), ids=WRITE_ERRORS.keys())
def test_write_errors(errors: list[Exception], attempts: int, failed: int) -> None:
    api = FakeApi(fail=list(errors))
    counts = PendingCounts(Keys("t"))
    sink = make_sink(api, counts=counts)
    sink.emit(ev(pod(), "Started"))
    assert sink.flush(5)
    assert len(api.calls) == attempts
    assert counted(counts).get("events_dropped:failed", 0) == failed


def test_an_expired_event_is_created_again_without_its_resource_version() -> None:
    api = FakeApi()
    sink = make_sink(api)
    sink.emit(ev(pod(), "Started"))
    assert sink.flush(5)
    api.events.clear()  # the API server's event TTL
    sink.emit(ev(pod(), "Started"))
    assert sink.flush(5)
    assert [verb for verb, _, _ in api.calls] == ["create", "patch", "create"]
    created = api.calls[-1][2]
    assert "resourceVersion" not in created["metadata"] and created["count"] == 2


# -- bounds and counts -------------------------------------------------------------------------


def test_a_full_queue_drops_without_blocking_and_counts() -> None:
    api = FakeApi()
    api.gate.clear()  # the API hangs
    counts = PendingCounts(Keys("t"))
    sink = make_sink(api, capacity=3, counts=counts)
    sink.emit(ev(pod("first"), "Started"))
    wait_until(lambda: len(api.calls) == 1, "the writer to take the first event")
    started = time.monotonic()
    for i in range(5):
        sink.emit(ev(pod(f"p{i}"), "Started"))
    assert time.monotonic() - started < 0.5  # never waits on the API
    assert sink.pending() == 4  # one being written, three queued
    assert not sink.flush(0.05)
    api.gate.set()
    assert sink.flush(5)
    written = sorted(body["involvedObject"]["name"] for _, _, body in api.calls)
    assert written == ["first", "p0", "p1", "p2"]
    got = counted(counts)
    assert got["events_dropped:queue_full"] == 2
    # Every recorded event is counted, the dropped ones too.
    assert sum(v for k, v in got.items() if k.startswith("events:")) == 6


def test_writers_write_other_objects_at_once_and_one_objects_events_in_order() -> None:
    """With four writers, an API call that hangs holds up only its own lane: the events of
    objects in other lanes are written meanwhile, and each object's events keep their order."""
    api = FakeApi()
    api.gate.clear()  # the API hangs
    sink = BackgroundEventSink(
        lambda: api, capacity=100, writers=4, clock=lambda: T0, retry_sleep=0.0
    )
    objects = [pod(f"p{i}", uid=f"u{i}") for i in range(12)]
    for reason in ("Started", "Killed", "Stopped"):
        for obj in objects:
            sink.emit(ev(obj, reason))
    wait_until(lambda: len(api.calls) == 4, "every writer to take an event")
    assert len({body["involvedObject"]["name"] for _, _, body in api.calls}) == 4
    api.gate.set()
    assert sink.flush(5)
    for obj in objects:
        name = obj["metadata"]["name"]
        reasons = [b["reason"] for _, _, b in api.calls if b["involvedObject"]["name"] == name]
        assert reasons == ["Started", "Killed", "Stopped"], name


def test_a_reconcile_can_wait_for_its_own_events_and_for_none_other() -> None:
    """What a thread emits under `tracking` is waited for until written (or dropped: a full
    queue does not hold the reconcile); another thread's events are not part of it."""
    api = FakeApi()
    api.gate.clear()  # the API hangs
    counts = PendingCounts(Keys("t"))
    sink = make_sink(api, capacity=1, counts=counts)
    other = threading.Thread(target=sink.emit, args=(ev(pod("elsewhere"), "Started"),))
    other.start()
    other.join()
    wait_until(lambda: len(api.calls) == 1, "the writer to take the other thread's event")
    with sink.tracking() as written:
        sink.emit(ev(pod("mine"), "Started"))
        sink.emit(ev(pod("mine"), "Killed"))  # the queue is full: dropped at once
    assert not written.wait(0.05)
    api.gate.set()
    assert written.wait(5)
    assert counted(counts)["events_dropped:queue_full"] == 1
    with sink.tracking() as none:
        pass
    assert none.wait(0)


def test_spam_is_dropped_and_counted() -> None:
    api = FakeApi()
    counts = PendingCounts(Keys("t"))
    sink = make_sink(api, counts=counts)
    for i in range(30):  # different reasons: neither deduplicated nor aggregated
        sink.emit(ev(pod(), f"Reason{i}"))
    assert sink.flush(5)
    assert len(api.calls) == 25
    got = counted(counts)
    assert got["events_dropped:spam"] == 5
    assert got["events:baz|foo|Normal|Reason29"] == 1


def test_an_api_client_that_cannot_be_made_drops_the_event_and_tries_again() -> None:
    api = FakeApi()
    attempts: list[int] = []

    def connect() -> FakeApi:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("no kubeconfig")
        return api

    counts = PendingCounts(Keys("t"))
    sink = BackgroundEventSink(connect, capacity=10, counts=counts, retry_sleep=0.0)
    sink.emit(ev(pod(), "Started"))
    assert sink.flush(5)
    sink.emit(ev(pod(), "Killed"))
    assert sink.flush(5)
    assert [body["reason"] for _, _, body in api.calls] == ["Killed"]
    assert counted(counts)["events_dropped:failed"] == 1


def test_a_forked_child_writes_its_events_from_its_own_thread() -> None:
    api = FakeApi()
    sink = make_sink(api)
    sink.emit(ev(pod("parent"), "Started"))
    assert sink.flush(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread does not exist here
        try:
            sink.emit(ev(pod("child"), "Started"))
            flushed = sink.flush(5)
            names = [body["involvedObject"]["name"] for _, _, body in api.calls]
            os.write(write, json.dumps({"flushed": flushed, "names": names}).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = json.loads(pipe.read() or "{}")
    assert child == {"flushed": True, "names": ["parent", "child"]}
    assert [body["involvedObject"]["name"] for _, _, body in api.calls] == ["parent"]


def test_flush_in_a_process_that_emitted_nothing_returns_at_once() -> None:
    sink = make_sink(FakeApi())
    assert sink.flush(0) and sink.pending() == 0


# -- the synchronous sink -----------------------------------------------------------------------


def test_the_writer_sink_writes_at_once_and_swallows_failures() -> None:
    writer = RecordingWriter()
    counts = PendingCounts(Keys("t"))
    sink = WriterSink(writer, counts)
    sink.emit(ev(pod(), "Started"))
    assert writer.verbs() == ["create events"]

    class Broken:
        def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
            raise Unavailable(0, "Unavailable", "down")

    WriterSink(Broken(), counts).emit(ev(pod(), "Killed"))  # logged, not raised
    assert counted(counts) == {
        "events:baz|foo|Normal|Started": 1,
        "events:baz|foo|Normal|Killed": 1,
    }
