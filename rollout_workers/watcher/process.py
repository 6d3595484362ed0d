"""The watcher process: wins the leader lease, then runs one Reflector thread per type.

Only the leader lists, watches and writes the cache; standbys poll the lease every second and
take over within the lease TTL of the leader's death, starting with a full relist so nothing
that happened in between is missed.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import threading
import time

import redis

from rollout_workers import health as endpoints
from rollout_workers.cache import CacheWriter, Change, Event, Lister
from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.cache.fence import Fence, fence_key
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.resources import WATCHED, Resource, watch_selector
from rollout_workers.kube.routerobjects import ApiRouterObjects
from rollout_workers.logs import OutageLog
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import Settings
from rollout_workers.watcher.controllers import (
    notification_watches,
    queued_kinds,
    served_version,
    watched,
)
from rollout_workers.watcher.events import ADD_BATCH, EventQueuer, valid_keys
from rollout_workers.watcher.health import WatcherHealth
from rollout_workers.watcher.leader import LeaderLease
from rollout_workers.watcher.ondemand import (
    OnDemandReflectors,
    referenced_kinds,
    referenced_router_kinds,
)
from rollout_workers.watcher.recovery import RedisCheck
from rollout_workers.watcher.reflector import Reflector
from rollout_workers.workqueue import Priority
from rollout_workers.workqueue.queue import script_source

log = logging.getLogger(__name__)


class Watcher:
    def __init__(
        self,
        *,
        settings: Settings,
        kube: Kube,
        runtime: Runtime,
        stop: threading.Event,
        fence: Fence | None = None,
    ) -> None:
        self.settings, self.runtime = settings, runtime
        self.fence = fence or Fence(fence_key(settings.redis.key_prefix))
        self.stop = stop
        prefix = settings.redis.key_prefix
        client = runtime.redis
        self.listers = {
            plural: Lister(client, prefix=prefix, resource=res) for plural, res in WATCHED.items()
        }
        self._kube = kube
        self.reflectors = [
            self._reflector(served_version(res, kube.discovery.serves))
            for res in watched(settings.watcher.controllers, namespace=settings.kube.namespace)
        ]
        # Not part of the cache epoch: reconciles do not read them, and an install that
        # grants no access to them must still run (notifications are then off).
        self.notification_reflectors = [
            self._reflector(res, namespace=ns, field_selector=fields)
            for res, ns, fields in notification_watches(settings)
        ]
        self.kinds = queued_kinds(settings.watcher.controllers)
        self.queuer = EventQueuer(
            client,
            kinds=self.kinds,
            queue=runtime.queue,
            lookup=self.lookup,
            add_source=script_source("add", settings.queue.fair_mode),
            tenant_label=settings.queue.tenant_label,
        )
        self.threads: list[threading.Thread] = []
        self.on_demand: OnDemandReflectors | None = None
        if "rollouts" in self.kinds:
            self.on_demand = OnDemandReflectors(
                make=self._reflector,
                rollouts=self.listers[r.ROLLOUTS.plural],
                client=client,
                prefix=prefix,
                stop=stop,
                served=ApiRouterObjects(kube).served,
                forget=kube.discovery.forget,
            )

    def _reflector(
        self, res: Resource, *, namespace: str | None = None, field_selector: str | None = None
    ) -> Reflector:
        settings = self.settings
        namespace = namespace or settings.kube.namespace or None
        return Reflector(
            kube=self._kube,
            writer=CacheWriter(
                self.runtime.redis,
                prefix=settings.redis.key_prefix,
                resource=res,
                fence=self.fence,
            ),
            resource=res,
            settings=settings.kube,
            on_changes=self.on_changes,
            on_events=self.on_events,
            label_selector=watch_selector(res, settings.kube.instance_id),
            namespace=namespace if res.namespaced else None,
            field_selector=field_selector,
            stop=self.stop,
            backoff_max=settings.watcher.backoff_max,
            batch_seconds=settings.watcher.event_batch_seconds,
            batch_max=settings.watcher.event_batch_max,
        )

    def lookup(self, plural: str, index: str, value: str) -> list[str]:
        return self.listers[plural].keys_by_index(index, value)

    def on_changes(self, resource: Resource, changes: list[Change]) -> None:
        self._ensure_workloads(resource, changes)
        self.queuer.changes(resource, changes)

    def on_events(self, writer: CacheWriter, batch: list[Event]) -> list[Change]:
        self._ensure_workloads(writer.resource, [Change(t, "", obj, None) for t, obj, _ in batch])
        return self.queuer.events(writer, batch)

    def _ensure_workloads(self, resource: Resource, changes: list[Change]) -> None:
        if resource is r.ROLLOUTS and self.on_demand is not None:
            # Before the rollouts are queued: their workload's reflector is starting, and its
            # first LIST wakes them again (eventkeys: workload -> referencing rollouts). The
            # same for the router objects they name, once discovery serves the kind.
            self.on_demand.ensure(referenced_kinds(changes))
            self.on_demand.ensure_routers(referenced_router_kinds(changes))

    def requeue_all(self) -> dict[str, int]:
        """Add every cached object of every task kind to its queue (as a resync does)."""
        counts: dict[str, int] = {}
        for kind in sorted(self.kinds):
            keys = valid_keys(kind, self.listers[kind].object_keys())
            queue = self.runtime.queue(kind)
            for i in range(0, len(keys), ADD_BATCH):
                queue.add(keys[i : i + ADD_BATCH], priority=Priority.RESYNC)
            counts[kind] = len(keys)
        return counts

    def start(self) -> None:
        for reflector in self.reflectors:
            self.threads.append(_start(reflector))
        # Apart from the threads the readiness probe follows: an install without access to
        # them runs with notifications off.
        for reflector in self.notification_reflectors:
            _start(reflector)
        if self.on_demand is not None:
            try:  # rollouts cached by an earlier leader may reference workloads already
                self.on_demand.ensure_indexed()
            except Exception as err:
                log.warning("cannot read the kinds rollouts reference: %s", err)

    def redis_check(self) -> RedisCheck:
        """The leader's check of Redis (recovery.py), over every reflector running, those
        started on demand included."""
        on_demand = self.on_demand
        return RedisCheck(
            self.runtime.redis,
            epoch=CacheEpoch(self.runtime.redis, prefix=self.settings.redis.key_prefix),
            reflectors=lambda: [
                *self.reflectors,
                *(on_demand.running() if on_demand is not None else []),
            ],
            requeue=self.requeue_all,
            on_recovered=self._recovered,
        )

    def _recovered(self) -> None:
        if self.on_demand is not None:
            self.on_demand.mark_listed()
        for reflector in self.notification_reflectors:  # relisted, but not waited for
            reflector.request_relist()

    def synced(self) -> bool:
        return all(ref.stats.synced.is_set() for ref in self.reflectors)

    def publish_stats(self) -> None:
        """Counters per type in Redis, for `rollouts queue stats` and metrics."""
        key = f"{self.settings.redis.key_prefix}:watcher:stats"
        pipe = self.runtime.redis.pipeline(transaction=False)
        extra = list(self.on_demand.reflectors.values()) if self.on_demand else []
        extra += self.notification_reflectors
        for ref in [*self.reflectors, *extra]:
            for name, value in ref.stats.counters().items():
                pipe.hset(key, f"{ref.resource.cache_name}.{name}", value)
        pipe.hset(key, "updated", time.time())
        pipe.execute()


def _start(reflector: Reflector) -> threading.Thread:
    thread = threading.Thread(
        target=reflector.run, name=f"reflector {reflector.resource.plural}", daemon=True
    )
    thread.start()
    return thread


def serve_metrics(settings: Settings, runtime: Runtime, leading: threading.Event) -> None:
    """Start /metrics on `metrics.port` (0: off). The pool-wide series only while this watcher
    leads (a standby serves its process metrics), so scraping every replica counts once."""
    if not settings.metrics.port:
        return
    from rollout_workers.metrics.endpoint import (
        MetricsEndpoint,
        pool_exposition,
        process_exposition,
    )

    def render() -> bytes:
        if not leading.is_set():
            return process_exposition()
        runtime.counts.flush(runtime.redis)  # this watcher's own API requests, up to now
        return process_exposition() + pool_exposition(
            runtime.redis, prefix=settings.redis.key_prefix, prune=True
        )

    try:
        endpoint = MetricsEndpoint(settings.metrics.address, settings.metrics.port, render)
    except OSError as err:
        log.warning("metrics: cannot listen on port %d: %s", settings.metrics.port, err)
        return
    endpoint.start()
    log.info("metrics on http://%s:%d/metrics", settings.metrics.address, endpoint.port)


def serve_health(settings: Settings) -> WatcherHealth:
    health = WatcherHealth(settings)
    h = settings.health
    endpoints.serve(address=h.address, port=h.port, live=health.live, ready=health.ready)
    return health


def run(settings: Settings, redis_url: str) -> int:
    """Run until SIGTERM/SIGINT (exit 0, the lease released so a standby takes over at once)
    or until leadership is lost (exit 1)."""
    health = serve_health(settings)
    runtime = build_runtime(create_app(settings, redis_url), settings, redis_url)
    kube = Kube(api_client(settings), settings.kube, counts=runtime.counts)
    leading = threading.Event()
    serve_metrics(settings, runtime, leading)
    identity = f"{socket.gethostname()}:{os.getpid()}"
    fence = Fence(fence_key(settings.redis.key_prefix))
    lease = LeaderLease(
        runtime.redis,
        key=f"{settings.redis.key_prefix}:watcher:leader",
        identity=identity,
        ttl=settings.watcher.lease_ttl,
        fence=fence,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    outage = OutageLog("redis", log)
    while not stop.is_set():
        try:
            if lease.try_acquire():
                outage.ok()
                break
            outage.ok()
            holder = lease.holder()
            health.standby(holder)
            log.info("standby: the leader is %s", holder)
        except Exception as err:  # Redis down: keep waiting
            health.failed(err)
            outage.failed(err)
        stop.wait(1.0)
    if stop.is_set():
        return 0
    leading.set()
    watcher = Watcher(settings=settings, kube=kube, runtime=runtime, stop=stop, fence=fence)
    log.info("%s leads; starting %d reflectors", identity, len(watcher.reflectors))
    check = watcher.redis_check()
    gc.freeze()  # what exists now lasts as long as the process: out of the collector's sight
    watcher.start()
    health.leading(watcher.reflectors, watcher.threads)

    # Redis is checked every second (cheap: one pipelined GET + INFO), the lease renewed every
    # ttl/3. While Redis is unreachable nobody can take the lease, so the leader keeps leading
    # and renews at once when Redis answers again; a lease Redis lost (a restart without
    # persistence) is taken again, one another watcher took meanwhile ends this one (exit 1).
    interval = settings.watcher.lease_ttl / 3
    renew_at = time.monotonic() + interval
    while not stop.wait(min(1.0, interval)):
        was_down = check.outage.down
        if not check.poll():
            health.failed(ConnectionError(f"redis unavailable since {check.outage.since}"))
            continue
        if not was_down and time.monotonic() < renew_at:
            continue
        renew_at = time.monotonic() + interval
        try:
            if not lease.renew():
                if not lease.try_acquire():
                    leading.clear()
                    log.error("leadership lost to %s; stopping", lease.holder())
                    return 1
                log.warning("the leader lease was gone from Redis; took it again")
            health.renewed()
        except redis.RedisError as err:
            health.failed(err)
            check.outage.failed(err)
            continue
        try:
            if watcher.on_demand is not None:
                watcher.on_demand.ensure_indexed()
            watcher.publish_stats()
        except Exception as err:
            log.warning("cannot publish watcher stats: %s", err)
    health.stopping()
    try:
        lease.release()
        log.info("released the leader lease")
    except Exception:
        log.warning("could not release the leader lease", exc_info=True)
    return 0
