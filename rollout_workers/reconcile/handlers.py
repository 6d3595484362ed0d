"""The contract between the sync runner and reconcile code.

A handler takes a SyncRequest and returns a Result (or None for "done"); raising means "failed,
retry with backoff". Handlers are named per task kind in settings (`module:factory`); the
factory receives the process Runtime and returns the handler, so handlers get their
dependencies passed in rather than importing them. Names rather than imports because the
settings are a leaf that the reconcilers import, and a deployment (or a benchmark) can name
another handler; tests/unit/reconcile/test_handlers.py resolves every default name.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.keys import ObjectKey
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.workqueue import ClaimRead, Outcome


class LeaseLost(RuntimeError):
    """Another worker now owns the key; the reconcile must stop without writing."""


class Lease(Protocol):
    def lost(self) -> bool: ...

    def check(self) -> None:
        """Raise LeaseLost if the key has been taken over."""


@dataclass(frozen=True)
class SyncRequest:
    kind: str
    key: ObjectKey
    lease: Lease
    #: The key whose existence the claim reported (the queue's `claim_guard`) and whether it
    #: existed; None when the claim read none.
    guard: tuple[str, bool] | None = None
    #: What the handler's claim read (`ReadingHandler`) returned for the key with its claim;
    #: None when it has none.
    prefetched: Any = None


@dataclass(frozen=True)
class Result:
    outcome: Outcome = Outcome.OK
    delay: float = 0.0

    @classmethod
    def done(cls) -> Result:
        return cls(Outcome.OK)

    @classmethod
    def requeue_after(cls, seconds: float) -> Result:
        return cls(Outcome.AFTER, max(0.0, seconds))

    @classmethod
    def retry(cls) -> Result:
        """An expected failure (a lost write race, say): retry with the key's backoff, quietly."""
        return cls(Outcome.ERROR)

    @classmethod
    def gone(cls) -> Result:
        """The object no longer exists: stop tracking its key."""
        return cls(Outcome.GONE)


Handler = Callable[[SyncRequest], Result | None]
HandlerFactory = Callable[[Runtime], Handler]


@dataclass(frozen=True)
class ReadingHandler:
    """A handler whose first read the claim makes in its own script call (a workqueue
    ClaimRead), handed over as the request's `prefetched`: one round trip a reconcile less."""

    handler: Handler
    read: ClaimRead

    def __call__(self, request: SyncRequest) -> Result | None:
        return self.handler(request)


def claim_read(handler: Handler) -> ClaimRead | None:
    """The read `handler` wants made with each claim, if any."""
    return handler.read if isinstance(handler, ReadingHandler) else None


class HandlerNotFound(ImportError):
    pass


def load_factory(spec: str) -> HandlerFactory:
    """Import the factory that `module:factory` names."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise HandlerNotFound(f"handler {spec!r} is not of the form 'module:factory'")
    try:
        factory: HandlerFactory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise HandlerNotFound(f"cannot load handler {spec!r}: {err}") from err
    return factory


def load_handler(spec: str, runtime: Runtime) -> Handler:
    """Import `module:factory` and build the handler with the runtime."""
    return load_factory(spec)(runtime)


#: How soon a key that found the cache incomplete is tried again.
CACHE_WAIT = 1.0


def when_cache_synced(runtime: Runtime, handler: Handler, read: ClaimRead | None = None) -> Handler:
    """Run `handler` only over a complete cache (see cache/epoch.py): while the watcher has not
    relisted every type since Redis lost its data, the key is requeued after CACHE_WAIT. The
    epoch is read with the claim when the queue's claim guard is the epoch key (the workers'
    queues: celeryapp/tasks.py), else here. `read`: the handler's claim read (ReadingHandler)."""
    epoch = CacheEpoch(runtime.redis, prefix=runtime.settings.redis.key_prefix)

    def handle(request: SyncRequest) -> Result | None:
        guard = request.guard
        synced = guard[1] if guard is not None and guard[0] == epoch.key else epoch.synced()
        if not synced:
            return Result.requeue_after(CACHE_WAIT)
        return handler(request)

    return handle if read is None else ReadingHandler(handle, read)


#: The handler of a kind that settings name no handler for.
NOOP = f"{__name__}:noop"


def noop(runtime: Runtime) -> Handler:
    """The handler of a kind whose reconciler is not installed: every sync succeeds at once."""

    def handle(request: SyncRequest) -> Result:
        return Result.done()

    return handle


def timed(runtime: Runtime) -> Handler:
    """A stand-in reconciler for benchmarks: every sync takes the seconds in Redis at
    `<prefix>:bench:sync_seconds` (read once, when the handler is built) and succeeds, and
    records when it started in the hash `<prefix>:bench:started` (key -> Unix time)."""
    prefix = runtime.settings.redis.key_prefix
    seconds = float(runtime.redis.get(f"{prefix}:bench:sync_seconds") or 0)

    def handle(request: SyncRequest) -> Result:
        runtime.redis.hset(f"{prefix}:bench:started", request.key, time.time())
        time.sleep(seconds)
        return Result.done()

    return handle
