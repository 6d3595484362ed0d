"""Traffic-router objects read from the cache when the watcher follows their kind, else from
the API server (satisfies reader.RouterObjectReader).

The watcher starts a router kind's reflector on demand (watcher/ondemand.py) at the newest
version served then, into a cache named for that version, and records the cache as listed once
its first LIST has landed (synced.py). A reconcile reads a kind at the version its listed cache
holds, so the version it writes the routes at is the one it read them at; before the kind is
listed (the CRD installed a moment ago, the watcher's LIST still running) it reads the API at
the newest version served, as without a cache. Which objects a rollout names is
routerrefs.py (with the map of the router-object code); the API access kube/routerobjects.py.
"""

from __future__ import annotations

import redis

from rollout_workers.cache.reader import RouterObjectReader
from rollout_workers.cache.store import Lister
from rollout_workers.cache.synced import is_synced, listed_caches
from rollout_workers.kube.resources import ROUTER_OBJECTS, Resource
from rollout_workers.objects import Obj


class CachedRouterObjects:
    def __init__(self, client: redis.Redis, *, prefix: str, api: RouterObjectReader) -> None:
        self._redis, self._prefix, self._api = client, prefix, api
        self._listers: dict[str, Lister] = {}

    def served(self, kind: str) -> Resource | None:
        """The version the cache holds the kind at when listed, else the newest one served."""
        versions = ROUTER_OBJECTS.get(kind, ())
        if versions:
            listed = listed_caches(self._redis, self._prefix)
            for resource in versions:
                if resource.cache_name in listed:
                    return resource
        return self._api.served(kind)

    def get(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        if not is_synced(self._redis, self._prefix, resource):
            return self._api.get(resource, namespace, name)
        lister = self._listers.get(resource.cache_name)
        if lister is None:
            lister = Lister(self._redis, prefix=self._prefix, resource=resource)
            self._listers[resource.cache_name] = lister
        return lister.get(f"{namespace}/{name}")
