"""The generic sync runner: claim a key, run its handler under a lease, record the outcome.

This is the body of every `<kind>.sync` task. It never raises: a bad key, a lost race or a
failing handler all end in a logged line and the right queue transition, so one bad message
cannot stop a worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

import redis

from rollout_workers.handlers import Handler, LeaseLost, Result, SyncRequest
from rollout_workers.keys import InvalidKey, ObjectKey, parse_key
from rollout_workers.workqueue import Claim, Outcome, WorkQueue

log = logging.getLogger(__name__)


def new_token() -> str:
    """An owner token: readable (host:pid) and unique per claim."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class Heartbeat:
    """Extends the lease every ttl/3 while a reconcile runs; notices when it is lost."""

    def __init__(self, queue: WorkQueue, key: ObjectKey, token: str, ttl: float) -> None:
        self._queue, self._key, self._token = queue, key, token
        self._interval = ttl / 3
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {key}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self) -> None:
        if self._lost.is_set():
            raise LeaseLost(f"lease on {self._key} was lost to another worker")

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._queue.heartbeat(self._key, self._token):
                    log.warning("lease on %s lost; abandoning the reconcile", self._key)
                    self._lost.set()
                    return
            except redis.RedisError as err:
                # The lease may still be ours; keep trying until it would have expired.
                log.warning("heartbeat for %s failed: %s", self._key, err)


@dataclass(frozen=True)
class SyncReport:
    status: str  # claimed outcome, or invalid / stale / busy / lease-lost / redis-error
    key: str
    duration: float = 0.0


def run_sync(
    *, queue: WorkQueue, handler: Handler, raw_key: object, lease_ttl: float
) -> SyncReport:
    try:
        key = parse_key(raw_key)
    except InvalidKey as err:
        log.error("dropping %s message: %s", queue.kind, err)
        return SyncReport("invalid", repr(raw_key))
    token = new_token()
    try:
        claim = queue.claim(key, token)
    except redis.RedisError as err:
        # The key stays queued; the tick resends its message once Redis is back.
        log.error("cannot claim %s/%s: %s", queue.kind, key, err)
        return SyncReport("redis-error", key)
    if claim is not Claim.CLAIMED:
        return SyncReport(claim.name.lower(), key)

    started = time.monotonic()
    result: Result | None
    with Heartbeat(queue, key, token, lease_ttl) as lease:
        try:
            result = handler(SyncRequest(kind=queue.kind, key=key, lease=lease)) or Result.done()
        except LeaseLost:
            result = None
        except Exception:
            log.exception("reconcile of %s %s failed", queue.kind, key)
            result = Result(Outcome.ERROR)
    duration = time.monotonic() - started
    if result is None or lease.lost():
        log.warning("reconcile of %s %s abandoned: lease lost", queue.kind, key)
        return SyncReport("lease-lost", key, duration)
    try:
        owned = queue.done(key, token, result.outcome, delay=result.delay, duration=duration)
    except redis.RedisError as err:
        # The lease expires and the tick requeues the key: one extra reconcile, nothing lost.
        log.error("cannot finish %s %s: %s", queue.kind, key, err)
        return SyncReport("redis-error", key, duration)
    if not owned:
        log.warning("reconcile of %s %s finished after its lease was lost", queue.kind, key)
        return SyncReport("lease-lost", key, duration)
    return SyncReport(result.outcome.value, key, duration)
