"""The worker host: the main process of `rollouts worker` (prefork), its probes and its shutdown.

Health endpoints run in a thread of the main process, started from `worker_init` (before the
pool forks), never in the children:

- Live: the consumer made progress within `health.stall_timeout`, or there is no work queued.
  Progress is a shared timestamp stamped every second by a timer on the consumer's event loop
  and by each child at the start and end of every task, so a blocked event loop stops it. With
  work queued and no progress the host is stuck and should be restarted; without work (or
  when Redis cannot be read, which readiness reports) it is merely idle.
- Ready: Redis answers a PING within a second.

Heartbeat: a thread of the main process stamps the host alive in Redis every
`queue.host_heartbeat` (Redis time). The host's id (`hostname:pid` of the main process) is what
its transport records against every message it reserves and what its processes record against
every message they publish; when the heartbeat is `queue.host_lapse` old the beat's tick sends
those keys again (workqueue: dead hosts), so a kill -9 loses no prefetched message for longer
than that.

Graceful shutdown (SIGTERM to the main process, as the kubelet sends it): Celery stops
consuming and waits for the tasks in hand; meanwhile a thread hands back, through the
workqueue, every key whose message this host reserved but did not start (`requeue`), so another
host takes it at once. The reconciles in hand finish and call `done` (a key added meanwhile is
queued again by it). If they are still running after `worker.shutdown_grace` seconds, their keys
are released through the workqueue (queued at once, old holders fenced) and the children are
stopped, so the host exits within the pod's termination grace period.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections import defaultdict
from multiprocessing.sharedctypes import RawValue
from typing import Any

import redis
from celery import Celery, bootsteps, signals
from celery.worker import state as worker_state

from rollout_workers import health as endpoints
from rollout_workers import redisclient
from rollout_workers.celeryapp import outage
from rollout_workers.celeryapp.tasks import build_runtime, sync_task_name
from rollout_workers.celeryapp.transport import HELD_OPTION, HOST_OPTION
from rollout_workers.health import Clock, Status
from rollout_workers.keys import InvalidKey, ObjectKey, parse_key
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import KINDS, Settings
from rollout_workers.workqueue import Hosts, held_key, token_prefix

log = logging.getLogger(__name__)

#: Seconds between the consumer's progress stamps.
STAMP_INTERVAL = 1.0
#: Seconds the host may take to exit after its grace period before it exits hard.
EXIT_BACKSTOP = 5.0

_SYNC_TASKS = {sync_task_name(kind): kind for kind in KINDS}


class WorkerHost:
    def __init__(
        self, app: Celery, settings: Settings, redis_url: str, clock: Clock = time.monotonic
    ) -> None:
        self.app, self.settings, self.url = app, settings, redis_url
        self._clock = clock
        self.id = host_id(os.getpid())
        # Shared with the children through fork: they stamp it at task start and finish.
        self._progress = RawValue("d", clock())
        self._worker: Any = None
        self._probe: redis.Redis | None = None
        self._runtime: Runtime | None = None
        self.stopping = threading.Event()
        self._abandon = threading.Event()
        self.server: endpoints.HealthServer | None = None

    # -- progress ----------------------------------------------------------------------------

    def stamp(self) -> None:
        self._progress.value = self._clock()

    def progress_age(self) -> float:
        last: float = self._progress.value
        return max(0.0, self._clock() - last)

    # -- heartbeat ---------------------------------------------------------------------------

    def heartbeat(self) -> None:
        """The heartbeat thread: stamp this host alive until the process exits (also while
        shutting down: the host still has messages in hand until it is gone)."""
        period = self.settings.queue.host_heartbeat
        client = redisclient.connect(self.url, self.settings.redis, timeout=period + 1)
        hosts = Hosts(client, prefix=self.settings.redis.key_prefix)
        failing = False
        while True:
            try:
                hosts.alive(self.id)
                if failing:
                    log.info("host heartbeat restored")
                failing = False
            except redis.RedisError as err:
                if not failing:
                    log.warning("host heartbeat failed: %s", err)
                failing = True
            time.sleep(period)

    # -- probes ------------------------------------------------------------------------------

    def probe_client(self) -> redis.Redis:
        if self._probe is None:
            self._probe = redisclient.connect(self.url, self.settings.redis, timeout=1.0)
        return self._probe

    def queued_messages(self) -> int:
        pipe = self.probe_client().pipeline(transaction=False)
        for queue in self.settings.worker.queues:
            pipe.llen(queue)
        return sum(int(n) for n in pipe.execute())

    def live(self) -> Status:
        age, bound = self.progress_age(), self.settings.health.stall_timeout
        if age <= bound:
            return Status.good(f"consumer progressed {age:.1f}s ago")
        try:
            waiting = self.queued_messages()
        except redis.RedisError as err:
            return Status.good(f"no progress for {age:.0f}s, Redis unreadable ({err}): see /readyz")
        if waiting:
            return Status.bad(
                f"consumer stuck: no progress for {age:.0f}s with {waiting} messages queued"
            )
        return Status.good(f"idle: no progress for {age:.0f}s, nothing queued")

    def ready(self) -> Status:
        if self.stopping.is_set():
            return Status.bad("shutting down")
        try:
            self.probe_client().ping()
        except redis.RedisError as err:
            return Status.bad(f"Redis unreachable: {err}")
        return Status.good("connected to Redis")

    # -- shutdown ----------------------------------------------------------------------------

    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = build_runtime(self.app, self.settings, self.url)
        return self._runtime

    def hand_back_reserved(self, handed: set[str]) -> int:
        """Requeue the keys of requests reserved by this host and not started; returns how many
        keys were sent again. `handed` remembers the request ids already dealt with."""
        pending: dict[str, dict[str, ObjectKey]] = defaultdict(dict)
        for request in _snapshot(worker_state.reserved_requests):
            if request in worker_state.active_requests or request.id in handed:
                continue
            kind, args = _SYNC_TASKS.get(request.name), request.args
            try:
                if kind is None or not args:
                    raise InvalidKey("not a sync task")
                pending[kind][request.id] = parse_key(args[0])
            except InvalidKey:
                handed.add(request.id)  # nothing of ours to hand back
        sent = 0
        for kind, requests in pending.items():
            requeued = self.runtime().queue(kind).requeue(requests.values())
            handed.update(requests)  # only once Redis has taken them: a failure is retried
            sent += len(requeued)
            if requeued:
                log.info("handed back %d reserved %s keys: %s", len(requeued), kind, requeued)
        return sent

    def child_pids(self) -> list[int]:
        if self._worker is None:
            return []
        with contextlib.suppress(Exception):
            return [int(pid) for pid in self._worker.pool.info.get("processes", [])]
        return []

    def release_held(self) -> int:
        """Hand back the keys this host's processes still hold, fencing them; returns how many."""
        released = 0
        for kind in KINDS:
            keys = self.runtime().queue(kind).release([token_prefix(self.id)])
            released += len(keys)
            if keys:
                log.warning(
                    "grace period over: released %d %s keys in hand: %s", len(keys), kind, keys
                )
        return released

    def shutdown(self) -> None:
        """The shutdown thread: hand back reserved keys until the grace period ends, then the
        keys in hand, then stop the children so the host exits."""
        deadline = self._clock() + self.settings.worker.shutdown_grace
        handed: set[str] = set()
        while True:
            try:
                self.hand_back_reserved(handed)
            except Exception:
                log.exception("cannot hand back reserved keys")
            if self._abandon.wait(0.1) or self._clock() >= deadline:
                break
        pids = self.child_pids()
        try:
            self.release_held()  # the children's keys, and the main process' under -P solo
        except Exception:
            log.exception("cannot release the keys in hand")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(EXIT_BACKSTOP)
        log.error("worker host did not exit %.0fs after its grace period; exiting", EXIT_BACKSTOP)
        os._exit(1)

    # -- Celery signal handlers --------------------------------------------------------------

    def on_worker_init(self, sender: Any = None, **_: Any) -> None:
        self._worker = sender
        self.stamp()
        threading.Thread(target=self.heartbeat, name="host heartbeat", daemon=True).start()
        h = self.settings.health
        self.server = endpoints.serve(
            address=h.address, port=h.port, live=self.live, ready=self.ready
        )

    def on_task_event(self, **_: Any) -> None:
        self.stamp()

    def on_shutting_down(self, how: str = "", **_: Any) -> None:
        if how == "Cold":  # the children are being terminated: hand their keys back now
            self._abandon.set()
        if self.stopping.is_set():
            return
        self.stopping.set()
        log.info("%s shutdown: handing back reserved keys; grace %.0fs for the keys in hand",
                 how or "warm", self.settings.worker.shutdown_grace)  # fmt: skip
        threading.Thread(target=self.shutdown, name="shutdown", daemon=True).start()


def _snapshot(items: Any) -> list[Any]:
    """A copy of a WeakSet the consumer may change while we read it."""
    for _ in range(10):
        with contextlib.suppress(RuntimeError):
            return list(items)
    return []


def progress_step(host: WorkerHost) -> type[bootsteps.StartStopStep]:
    """A consumer bootstep that stamps progress from the consumer's event loop."""

    class ConsumerProgress(bootsteps.StartStopStep):  # type: ignore[misc]
        name = "rollouts consumer progress"

        def __init__(self, parent: Any, **kwargs: Any) -> None:
            super().__init__(parent, **kwargs)
            self.tref: Any = None

        def start(self, parent: Any) -> None:
            host.stamp()
            self.tref = parent.timer.call_repeatedly(STAMP_INTERVAL, host.stamp)

        def stop(self, parent: Any) -> None:
            if self.tref is not None:
                self.tref.cancel()
                self.tref = None

    return ConsumerProgress


def host_id(pid: int) -> str:
    """A worker host's id: the hostname and its main process' pid."""
    return f"{socket.gethostname()}:{pid}"


def install(app: Celery, settings: Settings, redis_url: str) -> WorkerHost:
    """Wire the host's heartbeat, probes and shutdown into this worker's Celery signals, and
    name the host to its transport (which records the messages it reserves) and to its
    processes' work queues (which record the messages they publish)."""
    host = WorkerHost(app, settings, redis_url)
    options = dict(app.conf.broker_transport_options or {})
    prefix = settings.redis.key_prefix
    options[HOST_OPTION] = host.id
    options[HELD_OPTION] = {sync_task_name(kind): held_key(prefix, kind) for kind in KINDS}
    app.conf.broker_transport_options = options
    outage.install()
    app.steps["consumer"].add(progress_step(host))
    signals.worker_init.connect(host.on_worker_init, weak=False)
    signals.task_prerun.connect(host.on_task_event, weak=False)
    signals.task_postrun.connect(host.on_task_event, weak=False)
    signals.worker_shutting_down.connect(host.on_shutting_down, weak=False)
    return host
