"""The Reflector: client-go's ListAndWatch for one resource type, into the Redis cache.

LIST (paginated, each page applied as it arrives) -> replace the type's cache (vanished objects
are deleted once every page was seen) -> WATCH from the list's resourceVersion with a random
5-10 minute server timeout and bookmarks. A 410 Gone relists at once; connection and server
errors back off exponentially; a watch that closes in under a second having delivered nothing
counts as an error (a server that keeps hanging up must not be hammered).

A relist can be asked for from another thread (`request_relist`, after the watcher noticed that
Redis lost or may have lost writes): the open watch is shut down and the loop lists again, in
the reflector's own thread, so a relist never races the watch's writes to the cache.
`relisted` tells the caller when a relist asked for has been applied.

Ordering: every change is written to the cache *before* its keys are handed to `on_changes`,
so a reconcile that claims a key after the add reads state at least as new as the event.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
import urllib3

from rollout_workers.cache import CacheWriter, Change, Event
from rollout_workers.cache.fence import Fenced
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import Gone, KubeError, NotFound
from rollout_workers.kube.resources import Resource
from rollout_workers.settings import KubeSettings

log = logging.getLogger(__name__)

OnChanges = Callable[[Resource, list[Change]], None]
#: Applies watch events of one type through the writer, in order, and queues what they wake
#: (see watcher.events).
OnEvents = Callable[[CacheWriter, list[Event]], list[Change]]


@dataclass
class ReflectorStats:
    events: int = 0
    relists: int = 0
    watch_restarts: int = 0
    errors: int = 0
    malformed: int = 0
    synced: threading.Event = field(default_factory=threading.Event)
    #: Monotonic time of the first of the current run of failed lists/watches (None: healthy).
    failing_since: float | None = None
    last_error: str = ""

    def failing_for(self, now: float) -> float:
        """How long lists and watches have been failing (0 once one succeeds or opens)."""
        return 0.0 if self.failing_since is None else now - self.failing_since

    def failed(self, err: Exception) -> None:
        self.errors += 1
        self.last_error = str(err)
        if self.failing_since is None:
            self.failing_since = time.monotonic()

    def succeeded(self) -> None:
        self.failing_since = None

    def counters(self) -> dict[str, int]:
        return {
            "events": self.events,
            "relists": self.relists,
            "watch_restarts": self.watch_restarts,
            "errors": self.errors,
            "malformed": self.malformed,
        }


class Reflector:
    def __init__(
        self,
        *,
        kube: Kube,
        writer: CacheWriter,
        resource: Resource,
        settings: KubeSettings,
        on_changes: OnChanges,
        on_events: OnEvents | None = None,
        label_selector: str | None,
        namespace: str | None,
        stop: threading.Event,
        field_selector: str | None = None,
        backoff_max: float = 30.0,
        batch_seconds: float = 0.0,
        batch_max: int = 100,
        rng: random.Random | None = None,
    ) -> None:
        """`batch_seconds`: how long a watch event may wait for more of the stream to be
        applied with it (one Redis call a batch, of at most `batch_max` events); 0 applies
        what has arrived."""
        self.resource = resource
        self.stats = ReflectorStats()
        self._kube, self._writer, self._settings = kube, writer, settings
        self._on_changes = on_changes
        self._on_events = on_events
        self._batch_seconds, self._batch_max = batch_seconds, batch_max
        self._selector, self._namespace = label_selector, namespace
        self._fields = field_selector
        self._stop = stop
        self._backoff_max = backoff_max
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._wanted = 1  # relists asked for (a generation number); the first list is 1
        self._applied = 0  # the generation the last completed relist answered
        self._response: urllib3.HTTPResponse | None = None
        #: Called (in this reflector's thread) when listing or watching answers 404: the type
        #: may no longer be served (a CRD removed). It may `cancel` the reflector.
        self.on_not_found: Callable[[], None] | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop this reflector alone (its type is no longer served), from any thread."""
        self._cancelled.set()
        with self._lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def drop_cache(self) -> None:
        """Delete every cached object of the type, handing the deletions on (so what they
        routed to is woken), and clear its resourceVersion."""
        replacement = self._writer.replacement()
        for deleted in replacement.delete_vanished():
            self._hand_on(deleted)
        replacement.commit("")

    def request_relist(self) -> int:
        """Ask for a relist from any thread; returns its generation (see `relisted`)."""
        with self._lock:
            self._wanted += 1
            wanted, response = self._wanted, self._response
        if response is not None:
            # Wakes the reflector thread out of its blocking read of the watch stream.
            with contextlib.suppress(Exception):
                response.shutdown()
        return wanted

    def relisted(self, generation: int) -> bool:
        """Whether a relist asked for as `generation` (or a later one) has been applied."""
        with self._lock:
            return self._applied >= generation

    def _relist_wanted(self) -> bool:
        with self._lock:
            return self._wanted > self._applied

    def _opened(self, response: urllib3.HTTPResponse) -> None:
        with self._lock:
            self._response = response
            wanted = self._wanted > self._applied
        if wanted:  # asked for between the check and the open
            with contextlib.suppress(Exception):
                response.shutdown()

    def run(self) -> None:
        rv: str | None = None
        delay = 0.0
        while not self._stop.is_set() and not self._cancelled.is_set():
            try:
                if rv is None or self._relist_wanted():
                    rv = self._relist()
                rv = self._watch(rv)
                delay = 0.0
            except Gone:
                log.info("%s: resourceVersion %s is too old; relisting", self.resource.plural, rv)
                rv = None
            except Fenced as err:  # a write refused: relist, if this watcher still leads
                self.stats.failed(err)
                rv = None
                delay = min(self._backoff_max, max(0.5, delay * 2))
                log.warning("%s; relisting in %.1fs", err, delay)
                self._sleep(delay)
            except (KubeError, redis.RedisError, ValueError) as err:
                if isinstance(err, NotFound) and self.on_not_found is not None:
                    self.on_not_found()
                    if self._cancelled.is_set():
                        return
                if self._relist_wanted() and not isinstance(err, redis.RedisError):
                    continue  # the watch was shut down on purpose: relist at once
                self.stats.failed(err)
                delay = min(self._backoff_max, max(0.5, delay * 2))
                log.warning(
                    "%s: %s; retrying in %.1fs", self.resource.plural, err, delay, exc_info=False
                )
                self._sleep(delay * self._rng.uniform(0.8, 1.2))

    def _sleep(self, seconds: float) -> None:
        """Back off, cut short by stop or by a relist asked for meanwhile (the watcher asks
        once Redis is back, when the backoff may have grown long on its failed writes)."""
        with self._lock:
            asked = self._wanted
        deadline = time.monotonic() + seconds
        while not self._stop.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or self._cancelled.is_set():
                return
            with self._lock:
                if self._wanted > asked:
                    return

    def _relist(self) -> str:
        """LIST page by page into the cache (each page written, its keys handed on, then
        dropped), then delete what the list no longer holds."""
        with self._lock:
            generation = self._wanted
        replacement = self._writer.replacement()
        rv, listed, changed = "", 0, 0
        for page in self._kube.list_pages(
            self.resource,
            namespace=self._namespace,
            label_selector=self._selector,
            field_selector=self._fields,
        ):
            items = page.get("items") or []
            rv = str((page.get("metadata") or {}).get("resourceVersion", ""))
            listed += len(items)
            changed += self._hand_on(replacement.apply_page(items))
        for deleted in replacement.delete_vanished():
            changed += self._hand_on(deleted)
        replacement.commit(rv)
        self.stats.relists += 1
        self.stats.succeeded()
        self.stats.synced.set()
        log.info(
            "%s: listed %d objects at %s (%d changed)", self.resource.plural, listed, rv, changed
        )
        with self._lock:
            self._applied = max(self._applied, generation)
        return rv

    def _hand_on(self, changes: list[Change]) -> int:
        if changes:
            self._on_changes(self.resource, changes)
        return len(changes)

    def _watch(self, rv: str) -> str:
        s = self._settings
        timeout = self._rng.randint(
            s.watch_timeout_min, max(s.watch_timeout_min, s.watch_timeout_max)
        )
        started = time.monotonic()
        delivered = 0
        self.stats.watch_restarts += 1
        batches = Batches(self._batch_seconds, self._batch_max)

        def opened(response: urllib3.HTTPResponse) -> None:
            self._opened(response)
            batches.opened(response)

        batches.start(
            self._kube.watch(
                self.resource,
                resource_version=rv,
                namespace=self._namespace,
                label_selector=self._selector,
                field_selector=self._fields,
                timeout_seconds=timeout,
                on_open=self.stats.succeeded,
                on_response=opened,
            ),
            self.resource.plural,
        )
        try:
            for batch in batches:
                if self._stop.is_set() or self._cancelled.is_set() or self._relist_wanted():
                    break
                delivered += len(batch)
                rv = self._handle(batch, rv)
        finally:
            with self._lock:
                self._response = None
            batches.close()
        if self._relist_wanted():
            return rv
        if not delivered and time.monotonic() - started < 1.0:
            raise KubeError(0, "WatchClosed", "watch closed in under 1s with no events")
        return rv

    def _handle(self, batch: list[object], rv: str) -> str:
        """Apply a batch of watch events in order: the object events between two others
        (bookmark, error, malformed) in one call."""
        pending: list[Event] = []
        for event in batch:
            if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                self.stats.malformed += 1
                log.error("%s: skipping malformed watch event %.200r", self.resource.plural, event)
                continue
            kind, obj = event.get("type"), event["object"]
            new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if kind in ("ADDED", "MODIFIED", "DELETED") and (obj.get("metadata") or {}).get("name"):
                pending.append((kind, obj, getattr(event, "object_text", None)))
                rv = new_rv or rv
                continue
            self._apply(pending)
            if kind == "ERROR":
                code = obj.get("code")
                if code == 410:
                    raise Gone(410, str(obj.get("reason", "Expired")), str(obj.get("message", "")))
                raise KubeError(int(code or 0), str(obj.get("reason", "")), str(obj.get("message")))
            if kind == "BOOKMARK":
                if new_rv:
                    self._writer.set_resource_version(new_rv)
                rv = new_rv or rv
                continue
            self.stats.malformed += 1
            log.error("%s: skipping malformed %s event", self.resource.plural, kind)
        self._apply(pending)
        return rv

    def _apply(self, pending: list[Event]) -> None:
        if not pending:
            return
        if self._on_events is not None:
            self._on_events(self._writer, pending)
        else:
            self._on_changes(self.resource, self._writer.apply_events(pending))
        self.stats.events += len(pending)
        pending.clear()


_END = object()


class Batches:
    """A watch stream read in a thread of its own and handed on in batches, so that a busy
    stream costs one Redis call per batch, not per event: a batch takes the events that keep
    coming, each within a sixth of `seconds` of the one before, for up to `seconds` after its
    first (at most `size`). A lone event thus waits a sixth of `seconds`. The reader holds at
    most a few batches ahead (backpressure); an error opening or reading the stream is raised
    to the consumer after the events before it.
    """

    def __init__(self, seconds: float, size: int) -> None:
        self._seconds, self._size = seconds, max(1, size)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=4 * self._size)
        self._lock = threading.Lock()
        self._closed = False
        self._response: urllib3.HTTPResponse | None = None
        self._thread: threading.Thread | None = None

    def start(self, stream: Iterator[Any], name: str) -> None:
        """Read `stream` (which calls `opened` once its response is open)."""
        self._thread = threading.Thread(
            target=self._read, args=(stream,), name=f"watch-{name}", daemon=True
        )
        self._thread.start()

    def opened(self, response: urllib3.HTTPResponse) -> None:
        with self._lock:
            self._response, closed = response, self._closed
        if closed:  # closed while the watch was being opened
            with contextlib.suppress(Exception):
                response.shutdown()

    def _read(self, stream: Iterator[Any]) -> None:
        try:
            for event in stream:
                if not self._put(event):
                    return
        except BaseException as err:  # handed to the consumer, which raises it
            self._put(_Failed(err))
        else:
            self._put(_END)

    def _put(self, item: Any) -> bool:
        while True:
            with self._lock:
                if self._closed:
                    return False
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[list[Any]]:
        while True:
            item = self._queue.get()
            batch: list[Any] = []
            deadline, gap = time.monotonic() + self._seconds, self._seconds / 6
            while item is not _END and not isinstance(item, _Failed):
                batch.append(item)
                item = None
                if len(batch) >= self._size:
                    break
                wait = min(gap, deadline - time.monotonic())
                try:
                    item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                yield batch
            if isinstance(item, _Failed):
                raise item.error
            if item is _END:
                return

    def close(self) -> None:
        """Stop reading: the open stream is shut down and the reader ends."""
        with self._lock:
            self._closed, response = True, self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)


@dataclass
class _Failed:
    error: BaseException
