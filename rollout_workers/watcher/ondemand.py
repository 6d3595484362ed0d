"""Reflectors started on demand: the workload types a Rollout's `workloadRef` may name.

Argo's `informerBasedTemplateResolver.getInformer` starts an informer for a referenced type the
first time a Rollout needs it, so a cluster without workloadRef rollouts never lists its
Deployments. Here the watcher does the same: when a Rollout that references a kind is applied
to the cache (or, on each lease renewal, when the cache's `wlkind` index names a kind), the
type's Reflector starts, and stays until the watcher stops.

A referenced ReplicaSet may lack the pod-template-hash label that the always-on ReplicaSet
reflector selects; its on-demand reflector lists the complement (`!rollouts-pod-template-hash`)
into a cache of its own, so no ReplicaSet is cached twice.

Traffic-router objects (TrafficSplit, VirtualService, DestinationRule, HTTPRoute, ...) are
followed the same way, as Argo's Istio/SMI informers but started on demand: when a Rollout names
a router kind and discovery serves it, the kind's reflector starts at the newest version served,
listing every object of the kind (no selector), into a cache named for that version
(`virtualservices-v1`), so a worker reads it only at the version it was listed at
(cache/routerobjects.py); which kinds a rollout names is routerrefs.py. A kind that is named but
not served yet is asked again on each lease renewal (`ensure_indexed`), so installing its CRD
later needs no restart; a rollout event asks discovery only about a kind it has never asked
about. A kind whose CRD is removed (its LIST or watch answers 404 and discovery no longer serves
it) has its reflector stopped and its cache and listed mark dropped, and is asked about again
like a kind never served. A kind keeps the version its reflector started at until the watcher
stops or the kind is removed (a newer version served later is taken by the next leader).

Workers must not read a type's cache before its first LIST has landed (an absent object would
read as "not found"): see cache/synced.py.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import redis

from rollout_workers.cache import Change, Lister
from rollout_workers.cache.indexers import (
    ROUTER_KIND,
    WORKLOAD_KIND,
    group_kind,
    workload_reference,
)
from rollout_workers.cache.synced import synced_key
from rollout_workers.kube.resources import ROUTER_OBJECTS, WATCHED, WORKLOADS, Resource
from rollout_workers.routerrefs import router_kinds
from rollout_workers.watcher.reflector import Reflector

log = logging.getLogger(__name__)

#: `Kind.group` -> the types to reflect for it (those not always watched).
ON_DEMAND: dict[str, tuple[Resource, ...]] = {
    group_kind(f"{group}/v1" if group else "v1", kind): tuple(
        res for res in resources if res not in WATCHED.values()
    )
    for (group, kind), resources in WORKLOADS.items()
}


def referenced_kinds(changes: Iterable[Change]) -> set[str]:
    """The `Kind.group` of every workloadRef in these rollout changes."""
    kinds = set()
    for change in changes:
        if change.type == "DELETED":
            continue
        ref = workload_reference(change.obj)
        if ref is not None:
            kinds.add(ref[0])
    return kinds


def referenced_router_kinds(changes: Iterable[Change]) -> set[str]:
    """The router kinds (`VirtualService`) these rollout changes name, or reach through the
    objects they name (App Mesh's VirtualRouter)."""
    return {
        kind for change in changes if change.type != "DELETED" for kind in router_kinds(change.obj)
    }


#: The newest version of a router kind the API server serves (None: its CRD is not installed).
Served = Callable[[str], Resource | None]


class OnDemandReflectors:
    def __init__(
        self,
        *,
        make: Callable[[Resource], Reflector],
        rollouts: Lister,
        client: redis.Redis,
        prefix: str,
        stop: threading.Event,
        served: Served | None = None,
        forget: Callable[[Resource], None] = lambda resource: None,
    ) -> None:
        self._make, self._rollouts = make, rollouts
        self._served, self._forget = served, forget
        #: Router kinds asked about and not served (yet), asked again by `ensure_indexed`.
        self.unserved: set[str] = set()
        #: Router kind -> the version its reflector runs at.
        self.routers: dict[str, Resource] = {}
        self._redis, self._key = client, synced_key(prefix)
        self._stop = stop
        self._lock = threading.Lock()
        self.reflectors: dict[str, Reflector] = {}
        self.threads: list[threading.Thread] = []
        client.delete(self._key)

    def ensure(self, kinds: Iterable[str]) -> None:
        """Start the reflectors of these referenced kinds that are not running yet."""
        for kind in kinds:
            for resource in ON_DEMAND.get(kind, ()):
                self._start(resource)

    def ensure_routers(self, kinds: Iterable[str], *, recheck: bool = False) -> None:
        """Start the reflectors of these router kinds that are served and not running yet.
        A kind found unserved is asked about again only when `recheck` (the periodic path):
        rollout events must not each cost a discovery request."""
        if self._served is None:
            return
        for kind in sorted(set(kinds) & ROUTER_OBJECTS.keys()):
            with self._lock:
                if kind in self.routers or (kind in self.unserved and not recheck):
                    continue
            try:
                resource = self._served(kind)
            except Exception as err:  # the API unavailable: the periodic path asks again
                log.warning("cannot tell whether the API serves %s: %s", kind, err)
                resource = None
            if resource is None:
                with self._lock:
                    if kind not in self.unserved:
                        log.info("a rollout references %s, which the API does not serve", kind)
                    self.unserved.add(kind)
                continue
            with self._lock:
                if kind in self.routers:
                    continue
                self.unserved.discard(kind)
                self.routers[kind] = resource
            self._start(resource, router=kind)

    def ensure_indexed(self) -> None:
        """Start the reflector of every kind some cached rollout references (router kinds not
        served earlier are asked about again)."""
        self.ensure(k for k in ON_DEMAND if self._rollouts.keys_by_index(WORKLOAD_KIND, k))
        self.ensure_routers(
            (k for k in ROUTER_OBJECTS if self._rollouts.keys_by_index(ROUTER_KIND, k)),
            recheck=True,
        )

    def _start(self, resource: Resource, router: str = "") -> None:
        with self._lock:
            if resource.cache_name in self.reflectors:
                return
            reflector = self._make(resource)
            if router:
                reflector.on_not_found = lambda: self._removed(router, resource)
            self.reflectors[resource.cache_name] = reflector
        log.info("a rollout references %s: starting its reflector", resource.kind)
        for target, name in (
            (reflector.run, f"reflector {resource.cache_name}"),
            (lambda: self._mark_synced(reflector), f"synced {resource.cache_name}"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _removed(self, kind: str, resource: Resource) -> None:
        """A router kind's LIST or watch answered 404: if discovery no longer serves the kind
        (its CRD was removed), stop its reflector, drop its listed mark and its cache (the
        deletions wake the rollouts that route through its objects: their validation finds
        the kind not served), and ask about it again on each lease renewal, so installing the
        CRD again brings it back. Runs in the reflector's own thread."""
        self._forget(resource)
        try:
            if self._served is None or self._served(kind) is not None:
                return  # still served: a transient 404, the reflector retries
        except Exception as err:
            log.warning("cannot tell whether the API still serves %s: %s", kind, err)
            return
        with self._lock:
            reflector = self.reflectors.pop(resource.cache_name, None)
            self.routers.pop(kind, None)
            self.unserved.add(kind)
        if reflector is None:
            return
        reflector.cancel()
        log.warning("%s is no longer served (its CRD was removed): reflector stopped", kind)
        try:
            self._redis.srem(self._key, resource.cache_name)
            reflector.drop_cache()
        except Exception as err:  # the next relist after Redis comes back clears it
            log.warning("cannot drop the cache of %s: %s", resource.cache_name, err)

    def running(self) -> list[Reflector]:
        with self._lock:
            return list(self.reflectors.values())

    def mark_listed(self) -> None:
        """Record again every running reflector that has listed its type (after Redis lost
        the record: see recovery.py); raises redis.RedisError."""
        with self._lock:
            names = [n for n, ref in self.reflectors.items() if ref.stats.synced.is_set()]
        if names:
            self._redis.sadd(self._key, *names)

    def _mark_synced(self, reflector: Reflector) -> None:
        while not self._stop.is_set() and not reflector.cancelled:
            if reflector.stats.synced.wait(0.5):
                try:
                    self._redis.sadd(self._key, reflector.resource.cache_name)
                    return
                except redis.RedisError as err:
                    log.warning("cannot record %s as listed: %s", reflector.resource.kind, err)
                    self._stop.wait(1.0)
