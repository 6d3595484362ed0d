"""What a reconcile reads: the interfaces the Redis cache's `Lister` and `WrittenVersions`
satisfy, so the reconcile code can run over another cache (bench/peer.py's in-process
informers) unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from rollout_workers.kube.resources import Resource
from rollout_workers.objects import Obj


class ObjectReader(Protocol):
    """One type's cached objects, each returned as a fresh copy the caller may modify."""

    def get(self, key: str) -> Obj | None: ...

    def get_many(self, keys: Iterable[str]) -> list[Obj]: ...

    def by_owner(self, uid: str) -> list[Obj]: ...


class OwnerReader(Protocol):
    """An object and what it owns of some types (a list per type, in the order the reader
    was built with), read together with the stale-cache guard's verdict on them, or None when
    the caller is to ask the guard (cache.store.OwnerReads). `prefetched`: the same read, made
    with the key's claim (OwnerReads.claim_read)."""

    def read(
        self, key: str, prefetched: Any = None
    ) -> tuple[Obj | None, list[list[Obj]], list[str] | None]: ...


class WrittenGuard(Protocol):
    """The stale-cache guard's read side, and the record of writes that settled an object
    (see cache.written)."""

    def stale(self, plural: str, items: dict[str, str]) -> list[str]: ...

    def stale_objects(self, plural: str, objs: list[Obj]) -> list[str]: ...

    def unseen(self, plural: str, keys: list[str], cached: set[str]) -> list[str]: ...

    def record_own(self, plural: str, key: str, resource_version: str) -> None: ...


class RouterObjectReader(Protocol):
    """Where the controller reads traffic-router objects (cache.routerobjects.CachedRouterObjects:
    the cache once the watcher has listed the kind, else kube.routerobjects.ApiRouterObjects):
    the version of a router kind to speak, and one object at that version."""

    def served(self, kind: str) -> Resource | None: ...

    def get(self, resource: Resource, namespace: str, name: str) -> Obj | None: ...
