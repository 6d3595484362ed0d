"""The generic sync runner: claim a key, run its handler under a lease, record the outcome.

This is the body of every `<kind>.sync` task. It never raises: a bad key, a lost race or a
failing handler all end in a logged line and the right queue transition, so one bad message
cannot stop a worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis

from rollout_workers.cache import written as written_versions
from rollout_workers.counters import Increment, PendingCounts, reconcile_increments
from rollout_workers.counters import Keys as MetricKeys
from rollout_workers.keys import InvalidKey, ObjectKey, parse_key
from rollout_workers.kube.eventsink import BackgroundEventSink
from rollout_workers.reconcile.handlers import (
    Handler,
    LeaseLost,
    Result,
    SyncRequest,
    claim_read,
)
from rollout_workers.workqueue import Claim, Outcome, WorkQueue, token_prefix

log = logging.getLogger(__name__)

#: How long a reconcile's runner waits for its events to be written before releasing the key.
EVENT_WAIT = 2.0


_HOST = socket.gethostname()


def new_token(host: str | None) -> str:
    """An owner token, readable and unique per claim: `<host>/<pid>:<unique>`, where the host is
    this process' worker host (whose lapse lets the tick take the claim back), or the process
    itself outside one."""
    pid = os.getpid()
    return f"{token_prefix(host or f'{_HOST}:{pid}', pid)}{uuid.uuid4().hex[:12]}"


class HeldLease:
    """One claim being kept alive by the process's LeaseKeeper."""

    def __init__(self, queue: WorkQueue, key: ObjectKey, token: str) -> None:
        self.queue, self.key, self.token = queue, key, token
        self._lost = threading.Event()

    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self) -> None:
        if self._lost.is_set():
            raise LeaseLost(f"lease on {self.key} was lost to another worker")


class LeaseKeeper:
    """Extends, every ttl/3, each lease this process holds, from one background thread.

    A reconcile only registers and unregisters its lease, so a fast reconcile costs no thread
    start. The thread notices a lease taken over by another owner and marks it lost; the
    reconcile then stops without writing. After a fork the child starts its own thread.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._held: dict[int, HeldLease] = {}
        self._pid = -1
        self._wake = threading.Event()

    @contextlib.contextmanager
    def hold(self, queue: WorkQueue, key: ObjectKey, token: str) -> Iterator[HeldLease]:
        lease = HeldLease(queue, key, token)
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._held = {}
                threading.Thread(target=self._run, name="lease keeper", daemon=True).start()
            self._held[id(lease)] = lease
        try:
            yield lease
        finally:
            with self._lock:
                self._held.pop(id(lease), None)

    def _run(self) -> None:
        pid = os.getpid()
        while not self._wake.wait(self._interval) and self._pid == pid:
            with self._lock:
                held = list(self._held.values())
            for lease in held:
                self._extend(lease)

    def _extend(self, lease: HeldLease) -> None:
        try:
            if not lease.queue.heartbeat(lease.key, lease.token):
                log.warning("lease on %s lost; abandoning the reconcile", lease.key)
                lease._lost.set()
                with self._lock:
                    self._held.pop(id(lease), None)
        except redis.RedisError as err:
            # The lease may still be ours; keep trying until it would have expired.
            log.warning("heartbeat for %s failed: %s", lease.key, err)


@dataclass(frozen=True)
class SyncReport:
    status: str  # claimed outcome, or invalid / stale / busy / lease-lost / redis-error
    key: str
    duration: float = 0.0
    delay: float = 0.0  # of a requeue-after
    #: Wall-clock times inside the claim: just after it was granted, just before its release.
    #: Two such spans of one key never overlap while claims are exclusive.
    held: tuple[float, float] | None = None

    def describe(self, sent_for: object = None) -> str:
        """The outcome as one readable phrase (a sync task's result, as Flower shows it),
        naming the key reconciled when it is not `sent_for`, the message's key."""
        if self.status == Outcome.AFTER.value:
            phrase = f"requeue after {self.delay:g}s"
        else:
            phrase = _PHRASES.get(self.status, self.status)
        if sent_for is not None and sent_for != self.key:
            phrase += f" ({self.key}, whose turn it was)"
        return phrase


_PHRASES = {
    Outcome.OK.value: "done",
    Outcome.ERROR.value: "backoff",
    Outcome.GONE.value: "gone: key forgotten",
    "stale": "stale: not queued (a duplicate message)",
    "busy": "busy: another worker holds it, marked dirty",
    "lease-lost": "lost claim",
    "invalid": "invalid key",
    "redis-error": "redis error",
}


def run_sync(
    *,
    queue: WorkQueue,
    handler: Handler,
    raw_key: object,
    keeper: LeaseKeeper,
    counts: PendingCounts | None = None,
    events: BackgroundEventSink | None = None,
) -> SyncReport:
    """`events`: the process' event sink, whose writes of this reconcile's events are waited
    for (at most EVENT_WAIT) before the key is released (see BackgroundEventSink.tracking)."""
    try:
        key = parse_key(raw_key)
    except InvalidKey as err:
        log.error("dropping %s message: %s", queue.kind, err)
        return SyncReport("invalid", repr(raw_key))
    token = new_token(queue.host)
    try:
        # With fairness on, the message is a wake-up for whichever key's turn it is.
        (claim, key), guarded, prefetched = queue.claim_guarded(key, token, claim_read(handler))
    except redis.RedisError as err:
        # The key stays queued; the tick resends its message once Redis is back.
        log.error("cannot claim %s/%s: %s", queue.kind, key, err)
        return SyncReport("redis-error", key)
    if claim is not Claim.CLAIMED:
        return SyncReport(claim.name.lower(), key)

    # The reconcile's written versions go out with its `done` (cache/written.py).
    with written_versions.deferred() as versions:
        report = _reconcile(
            queue,
            handler,
            key,
            token=token,
            guarded=guarded,
            prefetched=prefetched,
            keeper=keeper,
            counts=counts,
            events=events,
            versions=versions,
        )
    try:
        versions.send()  # what no `done` applied (its lease lost, Redis failing)
    except redis.RedisError as err:
        log.error("cannot record the writes of %s %s: %s", queue.kind, key, err)
    return report


def _reconcile(
    queue: WorkQueue,
    handler: Handler,
    key: ObjectKey,
    *,
    token: str,
    guarded: bool,
    prefetched: Any,
    keeper: LeaseKeeper,
    counts: PendingCounts | None,
    events: BackgroundEventSink | None,
    versions: written_versions.Deferred,
) -> SyncReport:
    """The claimed key's reconcile and its `done`."""
    claimed_at = time.time()
    started = time.monotonic()
    result: Result | None
    with keeper.hold(queue, key, token) as lease:
        with events.tracking() if events is not None else contextlib.nullcontext() as written:
            try:
                guard = (queue.claim_guard, guarded) if queue.claim_guard is not None else None
                request = SyncRequest(
                    kind=queue.kind, key=key, lease=lease, guard=guard, prefetched=prefetched
                )
                result = handler(request) or Result.done()
            except LeaseLost:
                result = None
            except Exception:
                log.exception("reconcile of %s %s failed", queue.kind, key)
                result = Result(Outcome.ERROR)
        duration = time.monotonic() - started
        if written is not None and not written.wait(EVENT_WAIT):
            log.warning("events of %s %s not written within %gs", queue.kind, key, EVENT_WAIT)
    if result is None or lease.lost():
        log.warning("reconcile of %s %s abandoned: lease lost", queue.kind, key)
        return SyncReport("lease-lost", key, duration)
    pending = counts.drain_due() if counts is not None else []
    held = (claimed_at, time.time())
    try:
        owned = queue.done(
            key,
            token,
            result.outcome,
            delay=result.delay,
            duration=duration,
            increments=pending,
            versions=versions.records(),
            versions_ttl=written_versions.TTL_SECONDS,
            held=time.monotonic() - started,
        )
        versions.clear()  # applied, whoever held the key
    except redis.RedisError as err:
        # The lease expires and the tick requeues the key: one extra reconcile, nothing lost.
        log.error("cannot finish %s %s: %s", queue.kind, key, err)
        _restore(counts, pending)
        return SyncReport("redis-error", key, duration)
    if not owned:
        _restore(counts, pending)
        log.warning("reconcile of %s %s finished after its lease was lost", queue.kind, key)
        return SyncReport("lease-lost", key, duration)
    if counts is not None:  # counted once it did count: its `done` applied
        counts.add(metric_increments(counts.keys, queue, key, result, duration))
    return SyncReport(result.outcome.value, key, duration, result.delay, held)


def metric_increments(
    keys: MetricKeys, queue: WorkQueue, key: ObjectKey, result: Result, duration: float
) -> list[Increment]:
    """The reconcile's own metrics (Argo's `<kind>_reconcile` histogram and `_reconcile_error`,
    client-go's work duration), pending with the process' other counts (see counters)."""
    return reconcile_increments(
        keys,
        kind=queue.kind,
        key=key,
        seconds=duration,
        error=result.outcome is Outcome.ERROR,
        gone=result.outcome is Outcome.GONE,
    )


def _restore(counts: PendingCounts | None, pending: list[Increment]) -> None:
    """Counts a `done` that did not apply carried: keep them for the next write (the
    reconcile's own histogram was not among them: it did not count)."""
    if counts is not None and pending:
        counts.restore(pending)
