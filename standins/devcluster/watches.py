"""Watch fan-out: committed events, which of them a watch sees, and the lines it is sent.

Separate from the store because the watch streams (http.py) and the controllers (listeners of
``Event``) use these without the store's write semantics: the store pushes every commit through
``WatchFilter.classify`` into each ``Watch``, and the transport drains ``Watch.pending``. A line
is encoded once per event and variant (and served version), however many watches carry it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from devcluster import errors
from devcluster.errors import JSONDict
from devcluster.resources import ResourceType
from devcluster.selectors import FieldSelector, LabelSelector
from devcluster.stored import Stored, dumps


@dataclass(slots=True)
class Event:
    """One committed change: ADDED, MODIFIED or DELETED, at resourceVersion ``rv``."""

    type: str
    rv: int
    rt: ResourceType
    namespace: str
    name: str
    current: Stored
    previous: Stored | None
    _lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, variant: str, view: ResourceType | None = None) -> bytes:
        """The watch-stream line for one variant, encoded once for every watcher.

        ``variant`` is the event type, or ``DELETED_PREV``: an object that stopped matching a
        watch's selector is sent as DELETED with its previous content at this resourceVersion
        (what the real watch cache does). ``view``: the served type of the watch, when it is
        not the stored form (another CRD version, events.k8s.io/v1).
        """
        if view is not None and view.storage:
            view = None
        cache_key = variant if view is None else f"{variant} {view.api_version}"
        cached = self._lines.get(cache_key)
        if cached is None:
            if variant == "DELETED_PREV":
                assert self.previous is not None
                prev = self.previous.obj if view is None else self.previous.view(view).obj
                obj = {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(self.rv)}}
                cached = b'{"type":"DELETED","object":' + dumps(obj) + b"}\n"
            else:
                current = self.current if view is None else self.current.view(view)
                cached = b'{"type":"' + variant.encode() + b'","object":' + current.raw() + b"}\n"
            self._lines[cache_key] = cached
        return cached


@dataclass(frozen=True, slots=True)
class WatchFilter:
    namespace: str | None = None
    labels: LabelSelector = field(default_factory=LabelSelector)
    fields: FieldSelector = field(default_factory=FieldSelector)

    def matches(self, obj: JSONDict) -> bool:
        if not self.labels.empty and not self.labels.matches(obj["metadata"].get("labels")):
            return False
        return self.fields.empty or self.fields.matches(obj)

    def classify(self, event: Event) -> str | None:
        """Which variant of ``event`` this watch sees, or None."""
        if self.namespace is not None and event.namespace != self.namespace:
            return None
        if self.labels.empty and self.fields.empty:
            return event.type
        now = self.matches(event.current.obj)
        if event.type != "MODIFIED":
            return event.type if now else None
        before = event.previous is not None and self.matches(event.previous.obj)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED_PREV" if before else None


class Watch:
    """A subscription: encoded event lines waiting to be written to one HTTP watch stream.

    ``notify`` is set by the transport to wake its writer; the store calls it after pushing.
    A watch that falls more than ``max_pending`` lines behind is closed (a real server drops a
    watcher that cannot keep up; the client resumes from its last resourceVersion).
    """

    def __init__(self, *, rt: ResourceType, flt: WatchFilter, max_pending: int) -> None:
        self.rt = rt
        self.filter = flt
        self.pending: deque[bytes] = deque()
        self.closed = False
        self.max_pending = max_pending
        self.notify: Callable[[], None] | None = None

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.pending.append(line)
        if len(self.pending) > self.max_pending:
            self.closed = True
        if self.notify is not None:
            self.notify()

    def close(self, final_line: bytes | None = None) -> None:
        if final_line is not None and not self.closed:
            self.pending.append(final_line)
        self.closed = True
        if self.notify is not None:
            self.notify()


def gone_line(since: int, oldest: int) -> bytes:
    """The ERROR event a real server sends in a watch stream for a too old resourceVersion."""
    status = errors.expired(f"too old resource version: {since} ({oldest})").status()
    return b'{"type":"ERROR","object":' + dumps(status) + b"}\n"
