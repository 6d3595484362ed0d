"""Where recorded core/v1 Events go: off the reconcile, through client-go's EventCorrelator.

Why: an Event is informational, yet writing it inline costs the reconcile one API round trip
per event, under the client's QPS limit, and a stuck object that records the same event on
every reconcile creates one Event each time. client-go's recorder never writes inline: its
broadcaster queues the event (1000 deep, dropping when full) and one goroutine correlates
(eventcorrelator.py) and writes it. `BackgroundEventSink` does the same per process:

- `emit` counts the event (`rollout_events_total`, before any filter), puts it on a bounded
  queue (`kube.event_queue`, default 1000) and returns: it never blocks and never raises. A
  full queue drops the event.
- Writer threads (`kube.event_writers`: 4 in a threads worker host, else 1; client-go has one
  goroutine, which a Go process can afford) each take the events of their share of the
  involved objects, in order, correlate them (one correlator per process) and write each: a
  POST, or a strategic merge patch of `count`, `lastTimestamp` and `message` when the
  correlator found the Event already written (a patch answered 404 becomes a create: the Event
  expired). Connection
  failures and 5xx are retried (12 tries, 10 s apart, the first wait random, as client-go's
  recordToSink); any other refusal gives the event up.
- Started lazily, in the process that emits: a prefork child starts its own threads, queues
  and correlator on its first event (the parent's do not survive a fork).
- `flush(timeout)` waits, at most `timeout`, for the queue to empty (a worker process calls it
  as it exits; what is left is lost with the process).

Dropped events are counted in `rollout_events_dropped_total{cause}`: `queue_full`, `spam` (the
correlator's spam filter) and `failed` (refused, or out of tries). The counts travel with the
process' next reconcile outcome, as its API request counts do (counters.py).

`WriterSink` writes each event at once through a Writer, uncorrelated: the sink of unit tests
and of a controller built without a process sink (the one-sync fixture asserts the exact events
of a reconcile from its recording writer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from rollout_workers.counters import PendingCounts
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import KubeError, NotFound, Unavailable
from rollout_workers.kube.eventcorrelator import Correlation, EventCorrelator, with_own_metadata
from rollout_workers.objects import Clock, Obj
from rollout_workers.timefmt import utcnow

log = logging.getLogger(__name__)


#: client-go's maxTriesPerEvent and defaultSleepDuration.
MAX_TRIES = 12
RETRY_SLEEP = 10.0
#: How long an exiting worker process waits for its queued events to be written.
FLUSH_TIMEOUT = 2.0
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class EventSink(Protocol):
    def emit(self, event: Obj) -> None:
        """Take an Event body to write (kube/events.py); never raises."""


class EventCreator(Protocol):
    """What `WriterSink` needs of a Writer."""

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj: ...


class EventWriter(Protocol):
    """What `BackgroundEventSink` needs of the API (`kube.Kube`)."""

    def create(self, resource: r.Resource, namespace: str | None, body: Obj) -> Obj: ...

    def patch(
        self,
        resource: r.Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        patch_type: str = "application/merge-patch+json",
    ) -> Obj: ...


def _namespace(event: Obj) -> str:
    return str((event.get("metadata") or {}).get("namespace", ""))


def count_event(counts: PendingCounts | None, event: Obj) -> None:
    """rollout_events_total: an event this controller recorded about one of its objects."""
    if counts is None:
        return
    involved = event.get("involvedObject") or {}
    counts.event(
        namespace=str(involved.get("namespace", "")),
        name=str(involved.get("name", "")),
        type=str(event.get("type", "")),
        reason=str(event.get("reason", "")),
    )


class WriterSink:
    """Each event written at once, as the reconcile's own write; a failure is logged."""

    def __init__(self, writer: EventCreator, counts: PendingCounts | None = None) -> None:
        self.writer, self.counts = writer, counts

    def emit(self, event: Obj) -> None:
        count_event(self.counts, event)
        try:
            self.writer.create(r.EVENTS, _namespace(event), event)
        except Exception as err:  # an event is informational: never fail a reconcile on it
            log.warning("could not record event %s: %s", event.get("reason"), err)


class Written:
    """The events one reconcile emitted, each done once written or given up: the reconcile's
    runner waits for them before it releases the key (see `BackgroundEventSink.tracking`)."""

    def __init__(self) -> None:
        self._flags: list[threading.Event] = []

    def add(self) -> threading.Event:
        flag = threading.Event()
        self._flags.append(flag)
        return flag

    def wait(self, timeout: float) -> bool:
        """Whether every event was done within `timeout` seconds in all."""
        deadline = time.monotonic() + timeout
        return all(flag.wait(max(0.0, deadline - time.monotonic())) for flag in self._flags)


@dataclass
class _Lane:
    """One writer thread's queue: the events of the objects hashed to it, in order, each with
    the flag of the reconcile that waits for it (None: nobody waits)."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    items: deque[tuple[Obj, threading.Event | None]] = field(default_factory=deque)
    busy: bool = False

    def idle(self) -> bool:
        """Nothing queued and nothing being written (called holding `cond`)."""
        return not self.items and not self.busy


class BackgroundEventSink:
    def __init__(
        self,
        connect: Callable[[], EventWriter],
        *,
        capacity: int,
        writers: int = 1,
        counts: PendingCounts | None = None,
        clock: Clock = utcnow,
        retry_sleep: float = RETRY_SLEEP,
        max_tries: int = MAX_TRIES,
    ) -> None:
        """`connect` makes an API client for each writer thread, on that thread. `writers`
        threads write at once, each the events of its share of the involved objects, in the
        order they were emitted; `capacity` events may wait in all."""
        self._connect = connect
        self.capacity, self.counts, self.clock = capacity, counts, clock
        self.writers = writers
        self.retry_sleep, self.max_tries = retry_sleep, max_tries
        self._lock = threading.Lock()
        self._pid = -1
        self._lanes: list[_Lane] = []
        self._correlator = EventCorrelator(clock=clock)
        self._correlating = threading.Lock()
        self._local = threading.local()

    # -- the reconcile's side -----------------------------------------------------------------

    @contextlib.contextmanager
    def tracking(self) -> Iterator[Written]:
        """Collect the events this thread emits meanwhile (one reconcile's), to wait for them.

        Why: a reconcile records an event once, with the change it writes (RolloutAborted
        with the abort); a process killed after that write and before the event's own write
        loses the event for good, because the next reconcile finds nothing new to record. The
        runner waits for the reconcile's events before it releases the key, so the window is
        the reconcile's own, as when events were written inline, while the writes themselves
        stay on the writer threads (the wait is for this reconcile's events, and for those
        queued before them in their lanes)."""
        written = Written()
        self._local.written = written
        try:
            yield written
        finally:
            self._local.written = None

    def emit(self, event: Obj) -> None:
        count_event(self.counts, event)
        lanes = self._started()
        lane = lanes[zlib.crc32(_involved_key(event).encode()) % len(lanes)]
        written: Written | None = getattr(self._local, "written", None)
        flag = written.add() if written is not None else None
        with lane.cond:
            full = len(lane.items) >= max(1, self.capacity // len(lanes))
            if not full:
                lane.items.append((event, flag))
                lane.cond.notify()
        if full:
            if flag is not None:
                flag.set()  # dropped: nothing to wait for
            self._dropped("queue_full")
            log.warning(
                "event queue full (%d): dropped event %s about %s",
                self.capacity, event.get("reason"), _describe(event),
            )  # fmt: skip

    def flush(self, timeout: float) -> bool:
        """Wait until every event emitted so far was written or given up; False on timeout."""
        if self._pid != os.getpid():
            return True  # nothing emitted in this process
        deadline = time.monotonic() + timeout
        for lane in self._lanes:
            with lane.cond:
                left = max(0.0, deadline - time.monotonic())
                if not lane.cond.wait_for(lane.idle, left):
                    return False
        return True

    def pending(self) -> int:
        """Events queued or being written."""
        total = 0
        for lane in self._lanes if self._pid == os.getpid() else []:
            with lane.cond:
                total += len(lane.items) + (1 if lane.busy else 0)
        return total

    def _started(self) -> list[_Lane]:
        """This process' lanes, their writer threads started on first use (again after a fork:
        the parent's threads do not exist in the child, and their locks may be held there)."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._lanes = [_Lane() for _ in range(self.writers)]
                self._correlator = EventCorrelator(clock=self.clock)
                self._correlating = threading.Lock()
                for i, lane in enumerate(self._lanes):
                    name = f"event sink {i}"
                    thread = threading.Thread(
                        target=self._run, args=(self._pid, lane), name=name, daemon=True
                    )
                    thread.start()
            return self._lanes

    # -- the writer threads -------------------------------------------------------------------

    def _run(self, pid: int, lane: _Lane) -> None:
        api: EventWriter | None = None
        cond = lane.cond
        while self._pid == pid:
            with cond:
                cond.wait_for(lambda: bool(lane.items))
                event, flag = lane.items.popleft()
                lane.busy = True
            try:
                if api is None:
                    api = self._connect()
                self._deliver(api, event)
            except Exception:  # the thread must outlive any one event
                log.exception("event %s could not be written", event.get("reason"))
                self._dropped("failed")
            finally:
                if flag is not None:
                    flag.set()
                with cond:
                    lane.busy = False
                    cond.notify_all()

    def _deliver(self, api: EventWriter, event: Obj) -> None:
        with self._correlating:
            correlation = self._correlator.correlate(event)
        if correlation is None:
            self._dropped("spam")
            log.info("event %s about %s dropped as spam", event.get("reason"), _describe(event))
            return
        for attempt in range(1, self.max_tries + 1):
            if self._write(api, correlation):
                return
            if attempt < self.max_tries:
                # The first wait is random, so clients cut off together do not return together.
                time.sleep(self.retry_sleep * (random.random() if attempt == 1 else 1.0))
        log.error(
            "event %s about %s not written after %d tries",
            event.get("reason"), _describe(event), self.max_tries,
        )  # fmt: skip
        self._dropped("failed")

    def _write(self, api: EventWriter, correlation: Correlation) -> bool:
        """One attempt; True when done with the event (written, or refused for good)."""
        event, namespace = correlation.event, _namespace(correlation.event)
        written: Obj | None = None
        try:
            if correlation.patch is not None:
                name = str(event["metadata"]["name"])
                try:
                    written = api.patch(
                        r.EVENTS, namespace, name, correlation.patch,
                        patch_type=STRATEGIC_MERGE_PATCH,
                    )  # fmt: skip
                except NotFound:
                    written = None  # the Event expired: create it again
            if written is None:
                body = with_own_metadata(event)
                body.get("metadata", {}).pop("resourceVersion", None)
                written = api.create(r.EVENTS, namespace, body)
        except Unavailable as err:
            log.warning("event %s not written (will retry): %s", event.get("reason"), err)
            return False
        except KubeError as err:
            log.warning("event %s refused: %s", event.get("reason"), err)
            self._dropped("failed")
            return True
        with self._correlating:
            self._correlator.update_state(correlation.key, written)
        return True

    def _dropped(self, cause: str) -> None:
        if self.counts is not None:
            self.counts.event_dropped(cause)


def _involved_key(event: Obj) -> str:
    """The involved object, which decides the lane: one object's events stay in order."""
    involved = event.get("involvedObject") or {}
    return "/".join(str(involved.get(k, "")) for k in ("namespace", "kind", "name"))


def _describe(event: Obj) -> str:
    involved = event.get("involvedObject") or {}
    return f"{involved.get('kind', '')} {involved.get('namespace', '')}/{involved.get('name', '')}"
