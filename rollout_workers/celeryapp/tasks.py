"""The Celery tasks. Thin by design: they deserialize a key and hand it to the sync runner or
the workqueue; everything else lives below them.

Task names are explicit and stable (`rollouts.sync`, `analysisruns.sync`, `experiments.sync`,
`timers.tick`, `resync.all`) because Flower, the CLI and beat refer to them by name.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

import redis
from celery import Celery, signals

from rollout_workers import redisclient
from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.celeryapp.sender import Envelopes, SyncSender
from rollout_workers.celeryapp.transport import worker_host
from rollout_workers.counters import Keys as MetricKeys
from rollout_workers.counters import PendingCounts, flush_forever
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.eventsink import FLUSH_TIMEOUT, BackgroundEventSink
from rollout_workers.reconcile.handlers import NOOP, Handler, load_handler
from rollout_workers.reconcile.runner import LeaseKeeper, SyncReport, run_sync
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import KINDS, Settings
from rollout_workers.workqueue import WorkQueue

log = logging.getLogger(__name__)


def sync_task_name(kind: str) -> str:
    return f"{kind}.sync"


def make_sender(app: Celery, kind: str, queue: str) -> SyncSender:
    """Send one `<kind>.sync` message per key, in pipelined batches (celeryapp/sender.py). The key
    also rides in a header, so a consumer's transport can record who reserved it without
    decoding the body."""
    return SyncSender(app, name=sync_task_name(kind), queue=queue)


def build_runtime(
    app: Celery, settings: Settings, redis_url: str, *, batch_counts: bool = True
) -> Runtime:
    """The process' runtime. `batch_counts`: its queues' counters (adds, reconciles by outcome,
    queue and work durations) wait in the process' PendingCounts, written at most a second
    later with its other counters, instead of costing commands in every claim, done and add;
    off for a short-lived process (the CLI) that would exit before they are written."""
    client = redisclient.process_client(redis_url, settings)
    host = worker_host(app)
    counts = PendingCounts(MetricKeys(settings.redis.key_prefix))
    queues = {}
    for kind in KINDS:
        sender = make_sender(app, kind, settings.queue.for_kind(kind))
        queues[kind] = WorkQueue(
            client,
            kind=kind,
            prefix=settings.redis.key_prefix,
            settings=settings.queue,
            send=sender,
            host=host,
            replicas=settings.redis.replicas_to_wait(),
            replicas_timeout=settings.redis.claim_replicas_timeout,
            # A dirty key's message goes out with `done` itself, not through kombu afterwards.
            envelope=Envelopes(sender, lineage=host is not None),
            # The cache epoch read with each claim (reconcile.handlers.when_cache_synced).
            claim_guard=CacheEpoch(client, prefix=settings.redis.key_prefix).key,
            counts=counts if batch_counts else None,
        )
    events = BackgroundEventSink(
        # Made on each writer thread, at the first event it writes.
        lambda: Kube(api_client(settings), settings.kube, counts=counts),
        capacity=settings.kube.event_queue,
        writers=settings.event_writers,
        counts=counts,
    )
    threading.Thread(
        target=flush_forever, args=(counts, client), name="counts flusher", daemon=True
    ).start()
    return Runtime(settings=settings, redis=client, queues=queues, counts=counts, events=events)


class ProcessState:
    """The runtime and handlers of this process, built on first use after a fork."""

    def __init__(self, app: Celery, settings: Settings, redis_url: str) -> None:
        self._app, self._settings, self._url = app, settings, redis_url
        self._lock = threading.Lock()
        self._pid = -1
        self._runtime: Runtime | None = None
        self._handlers: dict[str, Handler] = {}
        # Often enough that a live holder's lease is never `host_lapse` old (see tick.lua).
        q = settings.queue
        self.keeper = LeaseKeeper(interval=min(q.lease_ttl / 3, q.host_lapse / 2))
        # A weak reference (a bound method): the receiver goes with this state and its app.
        signals.worker_process_shutdown.connect(self.flush_at_exit)
        signals.worker_shutdown.connect(self.flush_at_exit)

    @property
    def runtime(self) -> Runtime:
        with self._lock:
            if self._runtime is None or self._pid != os.getpid():
                self._runtime = build_runtime(self._app, self._settings, self._url)
                self._handlers = {}
                self._pid = os.getpid()
            return self._runtime

    def flush_at_exit(self, **_: object) -> None:
        """A process about to exit (a prefork child, or a host): give its queued Events a short
        while to be written, then write its counters."""
        with self._lock:
            runtime = self._runtime if self._pid == os.getpid() else None
        if runtime is None:
            return
        events = runtime.events
        if isinstance(events, BackgroundEventSink) and not events.flush(FLUSH_TIMEOUT):
            log.warning("%d events not written at exit", events.pending())
        try:
            runtime.counts.flush(runtime.redis)
        except redis.RedisError as err:
            log.warning("counters not written at exit: %s", err)

    def handler(self, kind: str) -> Handler:
        runtime = self.runtime
        with self._lock:
            if kind not in self._handlers:
                spec = self._settings.reconcile.handlers.get(kind, NOOP)
                self._handlers[kind] = load_handler(spec, runtime)
                # What exists now lives as long as the process (modules, the runtime, Celery's
                # own): out of the collector's sight, a full collection walks only what the
                # reconciles allocate (about 80 ms each in a threads host before).
                gc.freeze()
            return self._handlers[kind]


def ticks_key(settings: Settings) -> str:
    return f"{settings.redis.key_prefix}:system:ticks"


def record_tick(runtime: Runtime) -> None:
    """Count ticks and stamp the last one (Redis time), so operators can see beat is alive."""
    now_s, now_us = runtime.redis.time()
    key = ticks_key(runtime.settings)
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.hincrby(key, "count", 1)
    pipe.hset(key, "last", f"{int(now_s)}.{int(now_us):06d}")
    pipe.execute()


def run_tick(runtime: Runtime) -> dict[str, Any]:
    """Due timers, expired leases and stale messages of every kind back onto the queues."""
    report: dict[str, Any] = {}
    record_tick(runtime)
    every = runtime.settings.beat.tick_interval
    for kind, queue in runtime.queues.items():
        result = queue.tick(every)
        if result.sent or result.expired or result.resent:
            report[kind] = vars(result)
        if result.expired:
            log.warning("%d expired %s leases requeued", result.expired, kind)
        if result.taken:
            log.warning("%d %s keys held by lapsed hosts requeued", result.taken, kind)
        if result.lost:
            log.warning("%d %s messages lost on the way to a host sent again", result.lost, kind)
    return report


def run_timers(runtime: Runtime, kinds: Iterable[str]) -> dict[str, float | None]:
    """These kinds' due timers back onto the queues (the beat's passes between ticks); returns
    the seconds until each kind's earliest timer left (None: none)."""
    every = runtime.settings.beat.tick_interval
    return {k: runtime.queue(k).tick(every, timers_only=True).next_due for k in kinds}


def register_tasks(app: Celery, state: ProcessState) -> None:
    for kind in KINDS:
        _register_sync(app, state, kind)

    def tick() -> dict[str, Any]:
        """One timer tick. Beat runs it in-process (see beat/process.py); the task stays for
        manual use and for beats of an older version during a rolling upgrade."""
        return run_tick(state.runtime)

    def resync_all(kind: str | None = None, namespace: str | None = None) -> dict[str, int]:
        """Add every known key of a kind (all kinds when None)."""
        kinds = [kind] if kind else list(KINDS)
        log.info("resync.all kind=%s namespace=%s: start", kind or "*", namespace or "*")
        report: dict[str, int] = {}
        for name in kinds:
            if name not in KINDS:
                log.error("resync.all: unknown kind %r", name)
                continue
            result = state.runtime.queue(name).resync(namespace)
            report[name] = len(result.queued)
        log.info(
            "resync.all kind=%s namespace=%s: queued %s", kind or "*", namespace or "*", report
        )
        return report

    app.task(name="timers.tick", ignore_result=True)(tick)
    app.task(name="resync.all", ignore_result=True)(resync_all)


def _register_sync(app: Celery, state: ProcessState, kind: str) -> None:
    def sync(key: object = None, *args: object, **kwargs: object) -> str:
        if args or kwargs:
            log.error("dropping %s message with unexpected arguments", kind)
            return "invalid: unexpected arguments"
        try:
            handler = state.handler(kind)
        except Exception:
            log.exception("cannot build the %s handler", kind)
            return "no handler"
        # The trace of every key: its start and its outcome, whatever the kind, so the logs
        # say which key a worker held when it stopped (and a failed e2e scenario prints them).
        log.info("%s.sync %s: start", kind, key)
        events = state.runtime.events
        report: SyncReport = run_sync(
            queue=state.runtime.queue(kind),
            handler=handler,
            raw_key=key,
            keeper=state.keeper,
            counts=state.runtime.counts,
            events=events if isinstance(events, BackgroundEventSink) else None,
        )
        # The key is the task's argument and this phrase its result: both are what Flower shows.
        outcome = report.describe(sent_for=key)
        if report.held is not None:
            log.info(
                "%s.sync %s: %s in %.3fs, held %.3f-%.3f",
                kind, key, outcome, report.duration, *report.held,
            )  # fmt: skip
        else:
            log.info("%s.sync %s: %s in %.3fs", kind, key, outcome, report.duration)
        return outcome

    sync.__doc__ = f"Reconcile one {kind} key under the workqueue's lease."
    app.task(name=sync_task_name(kind), ignore_result=True)(sync)
