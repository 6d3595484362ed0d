"""Which on-demand caches the watcher has listed (see watcher/ondemand.py).

A type whose reflector starts on demand (a workload a Rollout's `workloadRef` names, a
traffic-router object its `trafficRouting` names) has an
empty cache until its first LIST lands; a worker reading it earlier would take "absent" for
"not found". The watcher adds the type's cache name to one Redis set once listed, and a new
leader clears the set before it starts its reflectors.
"""

from __future__ import annotations

import redis

from rollout_workers.kube.resources import WATCHED, Resource


def synced_key(prefix: str) -> str:
    return f"{prefix}:watcher:workloads:synced"


def is_synced(client: redis.Redis, prefix: str, resource: Resource) -> bool:
    """Whether the watcher has listed `resource` into the cache (always so for watched types)."""
    if resource in WATCHED.values():
        return True
    return bool(client.sismember(synced_key(prefix), resource.cache_name))


def listed_caches(client: redis.Redis, prefix: str) -> set[str]:
    """The cache names of every on-demand type the watcher has listed."""
    return {
        m.decode() if isinstance(m, bytes) else str(m) for m in client.smembers(synced_key(prefix))
    }
