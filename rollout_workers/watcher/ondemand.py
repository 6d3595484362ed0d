"""Reflectors started on demand: the workload types a Rollout's `workloadRef` may name.

Argo's `informerBasedTemplateResolver.getInformer` starts an informer for a referenced type the
first time a Rollout needs it, so a cluster without workloadRef rollouts never lists its
Deployments. Here the watcher does the same: when a Rollout that references a kind is applied
to the cache (or, on each lease renewal, when the cache's `wlkind` index names a kind), the
type's Reflector starts, and stays until the watcher stops.

A referenced ReplicaSet may lack the pod-template-hash label that the always-on ReplicaSet
reflector selects; its on-demand reflector lists the complement (`!rollouts-pod-template-hash`)
into a cache of its own, so no ReplicaSet is cached twice.

Workers must not read a type's cache before its first LIST has landed (an absent object would
read as "not found"): see cache/synced.py.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import redis

from rollout_workers.cache import Change, Lister
from rollout_workers.cache.indexers import WORKLOAD_KIND, group_kind, workload_reference
from rollout_workers.cache.synced import synced_key
from rollout_workers.kube.resources import WATCHED, WORKLOADS, Resource
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


class OnDemandReflectors:
    def __init__(
        self,
        *,
        make: Callable[[Resource], Reflector],
        rollouts: Lister,
        client: redis.Redis,
        prefix: str,
        stop: threading.Event,
    ) -> None:
        self._make, self._rollouts = make, rollouts
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

    def ensure_indexed(self) -> None:
        """Start the reflector of every kind some cached rollout references."""
        self.ensure(k for k in ON_DEMAND if self._rollouts.keys_by_index(WORKLOAD_KIND, k))

    def _start(self, resource: Resource) -> None:
        with self._lock:
            if resource.cache_name in self.reflectors:
                return
            reflector = self._make(resource)
            self.reflectors[resource.cache_name] = reflector
        log.info("a rollout references %s: starting its reflector", resource.kind)
        for target, name in (
            (reflector.run, f"reflector {resource.cache_name}"),
            (lambda: self._mark_synced(reflector), f"synced {resource.cache_name}"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _mark_synced(self, reflector: Reflector) -> None:
        while not self._stop.is_set():
            if reflector.stats.synced.wait(0.5):
                try:
                    self._redis.sadd(self._key, reflector.resource.cache_name)
                    return
                except redis.RedisError as err:
                    log.warning("cannot record %s as listed: %s", reflector.resource.kind, err)
                    self._stop.wait(1.0)
