"""Recording an event: the Event goes to the sink (never failing the reconcile), the
notifications hook on every recorded event, before the sink's filters, and a Redis failure of
the outbox fails the reconcile."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
import redis

from rollout_workers.counters import Keys, PendingCounts
from rollout_workers.kube import resources as r
from rollout_workers.kube.eventsink import BackgroundEventSink
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.notifications.recorder import EventRecorder

Obj = dict[str, Any]
NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
ROLLOUT = {"metadata": {"name": "web", "namespace": "prod", "uid": "u1"}}


class Sink:
    def __init__(self) -> None:
        self.events: list[Obj] = []

    def emit(self, event: Obj) -> None:
        self.events.append(event)


class Outbox:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.events: list[tuple[str, str]] = []

    def event(self, obj: Obj, *, reason: str, message: str, warning: bool) -> None:
        if self.error is not None:
            raise self.error
        self.events.append((obj["kind"], reason))


def recorder(outbox: Outbox | None, sink: Any) -> EventRecorder:
    return EventRecorder(RecordingWriter(), r.ROLLOUTS, outbox=outbox, sink=sink)  # type: ignore[arg-type]


def test_the_event_goes_to_the_sink_and_then_to_the_outbox() -> None:
    sink, outbox = Sink(), Outbox()
    recorder(outbox, sink).record(
        ROLLOUT, reason="RolloutPaused", message="paused", warning=False, now=NOW
    )
    (event,) = sink.events
    assert event["involvedObject"]["kind"] == "Rollout"
    assert (event["reason"], event["message"], event["type"]) == (
        "RolloutPaused",
        "paused",
        "Normal",
    )
    assert outbox.events == [("Rollout", "RolloutPaused")]


def test_without_a_sink_the_event_is_written_through_the_writer() -> None:
    writer = RecordingWriter()
    EventRecorder(writer, r.ROLLOUTS).record(
        ROLLOUT, reason="RolloutPaused", message="paused", warning=False, now=NOW
    )
    assert writer.verbs() == ["create events"]


def test_a_redis_failure_of_the_outbox_fails_the_reconcile() -> None:
    with pytest.raises(redis.ConnectionError):
        recorder(Outbox(redis.ConnectionError("down")), Sink()).record(
            ROLLOUT, reason="RolloutAborted", message="x", warning=True, now=NOW
        )


def test_any_other_outbox_failure_is_logged() -> None:
    sink = Sink()
    recorder(Outbox(ValueError("bad config")), sink).record(
        ROLLOUT, reason="RolloutAborted", message="x", warning=True, now=NOW
    )
    assert len(sink.events) == 1


def test_notifications_and_the_event_count_see_events_the_sink_drops() -> None:
    # A sink whose API hangs on the first event and whose queue holds one more: the third is
    # dropped, yet every one is counted and notified.
    counts = PendingCounts(Keys("t"))
    taken, release = threading.Event(), threading.Event()

    class Hung:
        def create(self, *args: Any, **kwargs: Any) -> Obj:
            taken.set()
            release.wait()
            return {"metadata": {"name": "web.1"}}

    sink = BackgroundEventSink(Hung, capacity=1, counts=counts)  # type: ignore[arg-type]
    outbox = Outbox()
    rec = recorder(outbox, sink)
    rec.record(ROLLOUT, reason="Reason0", message="m", warning=False, now=NOW)
    assert taken.wait(5)
    for i in (1, 2):
        rec.record(ROLLOUT, reason=f"Reason{i}", message="m", warning=False, now=NOW)
    release.set()
    assert sink.flush(5)
    fields = {i.field: i.amount for i in counts.drain()}
    assert outbox.events == [("Rollout", f"Reason{i}") for i in range(3)]
    assert fields["queue_full"] == 1
    assert sum(v for k, v in fields.items() if k.startswith("prod|web|")) == 3
