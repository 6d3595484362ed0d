"""client-go's EventCorrelator (tools/record/events_cache.go), for the core/v1 Events we write.

A controller that records the same event on every reconcile of a stuck object would otherwise
create one Event a reconcile. Before an Event is written, the correlator:

- aggregates: events about one object that differ only by message (same source,
  involvedObject, type and reason) are similar; once `max_events` (10) distinct messages of
  similar events were seen with no gap longer than `max_interval` (600 s) between them, the
  event is replaced by one whose message is "(combined from similar events): <its message>",
  kept under the similar events' common key, so further ones count up on it;
- deduplicates (client-go's eventLogger): an event identical to one already written (same key,
  message included, and still in the LRU cache: there is no time window) is not created again;
  the existing Event is patched with `count` + 1, `lastTimestamp` and `message`, keeping its
  name and `firstTimestamp`;
- filters spam: a token bucket per source and object (burst 25, one token back every 300 s)
  decides last, after the above; an event it refuses is skipped (the caller drops it). As in
  client-go the event was still observed, so the count of the next write of it includes it.

Every cache is an LRU of 4096 entries. Time comes from an injectable clock.

Two departures, both because our Events are created with `generateName` (the server names
them; client-go names them itself): an observation whose Event was never written (no name
yet) is created again rather than patched, and the state learned from the server's answer is
kept under the key the event was correlated by (client-go recomputes it from the answer,
which for an aggregate is not the key it looks the aggregate up by). Of the local keys of an
aggregate, the oldest is forgotten when it is full (client-go forgets an arbitrary one).
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from rollout_workers.objects import Clock, Obj
from rollout_workers.timefmt import format_time, utcnow

#: client-go's defaults (maxLruCacheEntries, defaultAggregate*, defaultSpam*).
CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0

AGGREGATE_PREFIX = "(combined from similar events): "

V = TypeVar("V")


def with_own_metadata(event: Obj) -> Obj:
    """A copy of `event` that shares all but its metadata (the only part correlation and its
    writes change), which costs a fraction of a deep copy for every event."""
    out = dict(event)
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = dict(out["metadata"])
    return out


class LRU(Generic[V]):
    """A bounded map that forgets the least recently used entry (groupcache's lru.Cache)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: str, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _involved(event: Obj) -> Obj:
    return dict(event.get("involvedObject") or {})


def _source(event: Obj) -> Obj:
    return dict(event.get("source") or {})


def _join(*parts: Any) -> str:
    # client-go joins with no separator; a separator that cannot occur in names keeps two
    # different tuples from meeting on one key.
    return "\x00".join(str(p or "") for p in parts)


def spam_key(event: Obj) -> str:
    """Source and object (getSpamKey): the unit the spam filter's token bucket belongs to."""
    src, obj = _source(event), _involved(event)
    return _join(
        src.get("component"),
        src.get("host"),
        obj.get("kind"),
        obj.get("namespace"),
        obj.get("name"),
        obj.get("uid"),
        obj.get("apiVersion"),
    )


def event_key(event: Obj) -> str:
    """Everything that makes two events the same event, message included (getEventKey)."""
    src, obj = _source(event), _involved(event)
    return _join(
        src.get("component"),
        src.get("host"),
        obj.get("kind"),
        obj.get("namespace"),
        obj.get("name"),
        obj.get("fieldPath"),
        obj.get("uid"),
        obj.get("apiVersion"),
        event.get("type"),
        event.get("reason"),
        event.get("message"),
    )


def aggregate_key(event: Obj) -> tuple[str, str]:
    """(key of the similar events, key of this one among them): EventAggregatorByReasonFunc,
    which groups by everything but the message."""
    src, obj = _source(event), _involved(event)
    group = _join(
        src.get("component"),
        src.get("host"),
        obj.get("kind"),
        obj.get("namespace"),
        obj.get("name"),
        obj.get("uid"),
        obj.get("apiVersion"),
        event.get("type"),
        event.get("reason"),
        event.get("reportingComponent"),
        event.get("reportingInstance"),
    )
    return group, str(event.get("message", ""))


class TokenBucket:
    """`burst` tokens to start with, refilled at `qps` (x/time/rate's Limiter, TryAccept)."""

    def __init__(self, qps: float, burst: int, now: dt.datetime) -> None:
        self.qps, self.burst = qps, float(burst)
        self.tokens, self.last = float(burst), now

    def try_accept(self, now: dt.datetime) -> bool:
        elapsed = max(0.0, (now - self.last).total_seconds())
        self.tokens = min(self.burst, self.tokens + elapsed * self.qps)
        self.last = max(self.last, now)
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass
class _Similar:
    """The distinct messages of similar events seen lately (aggregateRecord), oldest first."""

    messages: dict[str, None] = field(default_factory=dict)
    last: dt.datetime | None = None


@dataclass(frozen=True)
class _Observed:
    """What is known of the Event written for a key (eventLog)."""

    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(frozen=True)
class Correlation:
    """What to write: `event` (aggregated and counted), as a `patch` of the existing Event
    named in it when there is one; `key` is what `update_state` records the answer under."""

    event: Obj
    key: str
    patch: Obj | None = None


class EventCorrelator:
    """Not thread-safe: the event sink's one writer thread owns it."""

    def __init__(
        self,
        *,
        clock: Clock = utcnow,
        cache_entries: int = CACHE_ENTRIES,
        max_events: int = AGGREGATE_MAX_EVENTS,
        max_interval: float = AGGREGATE_INTERVAL,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        spam_key: Callable[[Obj], str] = spam_key,
    ) -> None:
        self.clock = clock
        self.max_events, self.max_interval = max_events, max_interval
        self.burst, self.qps, self.spam_key = burst, qps, spam_key
        self._similar: LRU[_Similar] = LRU(cache_entries)
        self._observed: LRU[_Observed] = LRU(cache_entries)
        self._buckets: LRU[TokenBucket] = LRU(cache_entries)

    def correlate(self, event: Obj) -> Correlation | None:
        """The write `event` becomes, or None when the spam filter drops it."""
        now = self.clock()
        aggregated, key = self._aggregate(event, now)
        observed, patch = self._observe(aggregated, key)
        if not self._accept(observed, now):
            return None
        return Correlation(observed, key, patch)

    def update_state(self, key: str, written: Obj) -> None:
        """Remember the Event as the server answered the write of the correlation `key`."""
        meta = written.get("metadata") or {}
        self._observed.add(
            key,
            _Observed(
                count=int(written.get("count") or 1),
                first_timestamp=str(written.get("firstTimestamp") or ""),
                name=str(meta.get("name") or ""),
                resource_version=str(meta.get("resourceVersion") or ""),
            ),
        )

    # -- the three steps, in client-go's order ------------------------------------------------

    def _aggregate(self, event: Obj, now: dt.datetime) -> tuple[Obj, str]:
        group, local = aggregate_key(event)
        record = self._similar.get(group)
        if (
            record is None
            or record.last is None
            or (now - record.last).total_seconds() > self.max_interval
        ):
            record = _Similar()
        record.messages[local] = None
        record.last = now
        self._similar.add(group, record)
        if len(record.messages) < self.max_events:
            return event, event_key(event)
        # Full: forget one message, so the set never grows past the threshold, and write the
        # aggregate under the group's key, where the next similar event will find it.
        del record.messages[next(iter(record.messages))]
        aggregate = dict(event)  # its metadata is replaced below; nothing nested is changed
        stamp = format_time(now)
        name = str(_involved(event).get("name") or "object")
        aggregate["metadata"] = {
            "generateName": f"{name}.",
            "namespace": (event.get("metadata") or {}).get("namespace", ""),
        }
        aggregate.update(
            message=AGGREGATE_PREFIX + str(event.get("message", "")),
            count=1,
            firstTimestamp=stamp,
            lastTimestamp=stamp,
        )
        return aggregate, group

    def _observe(self, event: Obj, key: str) -> tuple[Obj, Obj | None]:
        out = with_own_metadata(event)
        last = self._observed.get(key)
        patch: Obj | None = None
        if last is not None and last.count > 0:
            out["count"] = last.count + 1
            if last.first_timestamp:
                out["firstTimestamp"] = last.first_timestamp
            if last.name:  # written before: a patch of it (else never written: create it)
                meta = out.setdefault("metadata", {})
                meta.pop("generateName", None)
                meta["name"] = last.name
                meta["resourceVersion"] = last.resource_version
                patch = {"count": out["count"], "lastTimestamp": out.get("lastTimestamp")}
                if out.get("message"):
                    patch["message"] = out["message"]
        meta = out.get("metadata") or {}
        self._observed.add(
            key,
            _Observed(
                count=int(out.get("count") or 1),
                first_timestamp=str(out.get("firstTimestamp") or ""),
                name=str(meta.get("name") or ""),
                resource_version=str(meta.get("resourceVersion") or ""),
            ),
        )
        return out, patch

    def _accept(self, event: Obj, now: dt.datetime) -> bool:
        key = self.spam_key(event)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, now)
        accepted = bucket.try_accept(now)
        self._buckets.add(key, bucket)
        return accepted
