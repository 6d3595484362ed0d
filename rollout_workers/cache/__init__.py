"""The cluster cache in Redis: one copy of the watched objects, shared by every worker."""

from rollout_workers.cache.store import CacheWriter, Change, Event, Lister

__all__ = ["CacheWriter", "Change", "Event", "Lister"]
