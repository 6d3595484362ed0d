"""The Redis side of the pool's counters: key names, histogram buckets, pending increments.

Every counter is a field of a Redis hash incremented with HINCRBY, so increments from any
number of processes add up and survive the process that made them. Histograms store one
field per bucket (non-cumulative: an observation increments exactly one field) plus the sum in
integer microseconds (exact, no float drift); the collector makes them cumulative.

A leaf module, not part of `metrics/`: the API client, the workqueue, the sync runner and the
notification sender all count here, and `metrics/` reads these hashes through the cache and
the workqueue, so it sits above them all.

Hashes (prefix `rw`):
  rw:metrics:<kind>:reconcile   `ns/name|b<i>`, `ns/name|sum`, `ns/name|err`  (per object)
  rw:metrics:<kind>:workqueue   `adds`, `retries`, `queue|b<i>`, `queue|sum`, `work|b<i>`, ...
  rw:metrics:k8s_requests       `kind|namespace|name|verb|status_code`
  rw:metrics:events             `namespace|name|type|reason`
  rw:metrics:events_dropped     `cause` (queue_full, spam, failed: kube/eventsink.py)
  rw:metrics:notifications      `ok|namespace|name|type|reason`, `err|...`,
                                `send|ns/name|b<i>`, `send|ns/name|sum`

A process does not write a counter per API request or per reconcile: `PendingCounts` buffers
them in memory, summed (its workqueues' own too: adds, reconciles by outcome, queue durations
and the recent reconcile durations; see WorkQueue `counts`), and they travel at most once a
second (`FLUSH_INTERVAL`) with a write the process makes anyway (a worker's `done`), or on
their own once a second when there is none (each process' flusher thread), and when a worker
stops. A reconcile's requests, events and histograms therefore reach Redis up to a second
after it, and a process killed with SIGKILL loses the last second of increments. Counts
already in Redis are never lost.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from rollout_workers.settings import OBJECT_KINDS

log = logging.getLogger(__name__)

#: The longest a process keeps its counter increments before they go to Redis.
FLUSH_INTERVAL = 1.0

#: Argo's reconcile histograms (rollout_reconcile, analysis_run_reconcile, experiment_reconcile).
RECONCILE_BUCKETS: tuple[float, ...] = (0.01, 0.15, 0.25, 0.5, 1.0)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets, multiplied step by step as Go does, so the bounds (and
    their `le` labels, e.g. 9.999999999999999e-06) are bit-identical to client-go's."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return tuple(out)


#: Argo's notification_send histogram.
NOTIFICATION_BUCKETS: tuple[float, ...] = (0.01, 0.15, 0.25, 0.5, 1.0)

#: client-go's workqueue histograms: ExponentialBuckets(10e-9, 10, 10).
WORKQUEUE_BUCKETS: tuple[float, ...] = exponential_buckets(10e-9, 10, 10)

SEP = "|"


def bucket_index(bounds: Sequence[float], value: float) -> int:
    """The first bucket whose upper bound (le) is >= value; len(bounds) is +Inf."""
    return bisect.bisect_left(bounds, value)


def micros(seconds: float) -> int:
    return max(0, round(seconds * 1_000_000))


@dataclass(frozen=True)
class Keys:
    """Redis key names of the pool's counters."""

    prefix: str

    def reconcile(self, kind: str) -> str:
        return f"{self.prefix}:metrics:{kind}:reconcile"

    def workqueue(self, kind: str) -> str:
        return f"{self.prefix}:metrics:{kind}:workqueue"

    @property
    def k8s_requests(self) -> str:
        return f"{self.prefix}:metrics:k8s_requests"

    @property
    def events(self) -> str:
        return f"{self.prefix}:metrics:events"

    @property
    def events_dropped(self) -> str:
        return f"{self.prefix}:metrics:events_dropped"

    @property
    def notifications(self) -> str:
        return f"{self.prefix}:metrics:notifications"


@dataclass(frozen=True)
class Increment:
    """HINCRBY `key` `field` `amount`."""

    key: str
    field: str
    amount: int


def observe(key: str, series: str, bounds: Sequence[float], seconds: float) -> list[Increment]:
    """The increments of one histogram observation: its bucket and the sum."""
    return [
        Increment(key, f"{series}{SEP}b{bucket_index(bounds, seconds)}", 1),
        Increment(key, f"{series}{SEP}sum", micros(seconds)),
    ]


def reconcile_increments(
    keys: Keys, *, kind: str, key: str, seconds: float, error: bool, gone: bool = False
) -> list[Increment]:
    """`<kind>_reconcile{namespace,name}` and `_reconcile_error`, and client-go's work
    duration for the queue of `kind`. A reconcile that found its object gone is work done,
    but, as in Argo, no observation of the object. A kind whose keys are not objects has no
    per-object series."""
    out = observe(keys.workqueue(kind), "work", WORKQUEUE_BUCKETS, seconds)
    if not gone and kind in OBJECT_KINDS:
        out += observe(keys.reconcile(kind), key, RECONCILE_BUCKETS, seconds)
        if error:
            out.append(Increment(keys.reconcile(kind), f"{key}{SEP}err", 1))
    return out


#: Kinds whose requests Argo counts without the object name (cardinality), as its client.go.
_NAMELESS_KINDS = frozenset({"events", "replicasets", "analysisruns", "jobs", "experiments"})
_VERBS = {"POST": "Create", "PUT": "Update", "PATCH": "Patch", "DELETE": "Delete"}


def request_labels(method: str, path: str, *, watch: bool = False) -> tuple[str, str, str, str]:
    """(kind, namespace, name, verb) of an API request path, with Argo's cardinality rules:
    no name for lists, watches and high-churn kinds; Unknown for what is not a resource."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        rest = []
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return "Unknown", "Unknown", "Unknown", "Unknown"
    kind, name = rest[0], rest[1] if len(rest) > 1 else ""
    method = method.upper()
    if method == "GET":
        verb = "Get" if name else ("Watch" if watch else "List")
    else:
        verb = _VERBS.get(method, "Unknown")
    if verb == "Unknown":
        return "Unknown", "Unknown", "Unknown", "Unknown"
    if verb in ("List", "Watch") or kind in _NAMELESS_KINDS:
        name = "N/A"
    return kind, namespace, name, verb


class PendingCounts:
    """Counter increments a process has observed and not yet written to Redis.

    Thread-safe. `drain` hands them over to be written with the next write (`drain_due`: only
    once `interval` has passed since the last hand-over, so a process' many writes carry them
    once a second, summed); `restore` puts them back when that write failed.

    It also keeps values to push onto capped Redis lists (`push`: a workqueue's recent reconcile
    durations), which only `flush` writes: one LPUSH of all of them and an LTRIM a list, at
    most `interval` after the first.
    """

    def __init__(self, keys: Keys, interval: float = FLUSH_INTERVAL) -> None:
        self.keys = keys
        self.interval = interval
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._drained = float("-inf")
        self._pushes: dict[str, tuple[int, list[str]]] = {}  # list key -> (cap, values)
        self._pushed = float("-inf")

    def request(self, method: str, path: str, status: int, *, watch: bool = False) -> None:
        kind, namespace, name, verb = request_labels(method, path, watch=watch)
        field = SEP.join((kind, namespace, name, verb, str(status)))
        self._add(self.keys.k8s_requests, field)

    def event(self, *, namespace: str, name: str, type: str, reason: str) -> None:
        self._add(self.keys.events, SEP.join((namespace, name, type, reason)))

    def event_dropped(self, cause: str) -> None:
        """An event recorded and never written (`rollout_events_dropped_total{cause}`)."""
        self._add(self.keys.events_dropped, cause)

    def notification(self, *, namespace: str, name: str, type: str, reason: str, ok: bool) -> None:
        """`notification_send_success` or `notification_send_error`, as Argo labels them."""
        outcome = "ok" if ok else "err"
        self._add(self.keys.notifications, SEP.join((outcome, namespace, name, type, reason)))

    def notification_duration(self, *, namespace: str, name: str, seconds: float) -> None:
        """One `notification_send` observation (the sends of one event's job)."""
        series = f"send{SEP}{namespace}/{name}"
        for inc in observe(self.keys.notifications, series, NOTIFICATION_BUCKETS, seconds):
            self._add(inc.key, inc.field, inc.amount)

    def _add(self, key: str, field: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[(key, field)] += amount

    def add(self, increments: Sequence[Increment]) -> None:
        with self._lock:
            for inc in increments:
                self._counts[(inc.key, inc.field)] += inc.amount

    def push(self, key: str, value: str, cap: int) -> None:
        """Push `value` onto the list `key`, which keeps its newest `cap` values."""
        with self._lock:
            self._pushes.setdefault(key, (cap, []))[1].append(value)

    def due(self) -> bool:
        """Whether `interval` has passed since the last hand-over and something is pending."""
        now = time.monotonic()
        with self._lock:
            return (bool(self._counts) and now - self._drained >= self.interval) or (
                bool(self._pushes) and now - self._pushed >= self.interval
            )

    def drain(self) -> list[Increment]:
        with self._lock:
            counts, self._counts = self._counts, Counter()
            self._drained = time.monotonic()
        return [Increment(k, f, n) for (k, f), n in sorted(counts.items())]

    def drain_due(self) -> list[Increment]:
        """`drain` once `interval` has passed since the last hand-over; else nothing."""
        return self.drain() if self.due() else []

    def restore(self, increments: Sequence[Increment]) -> None:
        self.add(increments)

    def flush(self, client: redis.Redis) -> int:
        """Write the pending increments and pushes in one pipeline; returns how many fields and
        lists."""
        increments = self.drain()
        with self._lock:
            pushes, self._pushes = self._pushes, {}
            self._pushed = time.monotonic()
        if not increments and not pushes:
            return 0
        pipe = client.pipeline(transaction=False)
        for inc in increments:
            pipe.hincrby(inc.key, inc.field, inc.amount)
        for key, (cap, values) in pushes.items():
            pipe.lpush(key, *values)
            pipe.ltrim(key, 0, cap - 1)
        try:
            pipe.execute()
        except redis.RedisError:
            self.restore(increments)
            with self._lock:
                for key, (cap, values) in pushes.items():
                    self._pushes.setdefault(key, (cap, []))[1][:0] = values
            raise
        return len(increments) + len(pushes)


def flush_forever(counts: PendingCounts, client: redis.Redis) -> None:
    """A process' counter increments when no write carries them (an idle worker), and its
    pushes: at most `counts.interval` late. Runs in a daemon thread of its own."""
    while True:
        time.sleep(counts.interval)
        if counts.due():
            try:
                counts.flush(client)
            except redis.RedisError as err:  # kept (flush restores them) for the next try
                log.debug("cannot write counters: %s", err)
