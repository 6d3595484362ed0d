"""The stale-cache guard: the resourceVersions workers wrote, so a reconcile can tell that the
shared cache has not caught up with its own last write yet.

After a write, the worker records the object's new resourceVersion (kept only if newer, for a
few minutes). A reconcile that then finds an older version in the cache would act on stale
state — Argo's commonest cause of stuck rollouts — so it requeues itself shortly instead.
resourceVersions are compared as integers (etcd revisions); a non-numeric one never blocks.

The same record tells the watcher that an event is only a controller's own write to the object
it reconciles (an AnalysisRun's measurement): such a write is recorded a second time under the
writer's own kind (`own_key`), and an event whose resourceVersion is exactly that one does not
queue the object again — the reconcile that wrote it has already acted on everything before
it, and anything after it is another event with a newer version. Only the writer's own kind is
skipped: a Rollout's write to an AnalysisRun still wakes the AnalysisRun controller, and an
AnalysisRun's write still wakes its Rollout. The AnalysisRun controller records every write of
its own (`own=`): it schedules its next measurement itself and never relies on the event of its
write. The Rollout reconcile takes some steps on the reconcile its status write brings, so it
records only writes that settled the rollout (`record_own`). An own event that arrives while
the writer still holds the key marks it dirty with its version, and the workqueue's `done`
does not queue it again once that version is no newer than the recorded one.

Inside a reconcile on a worker (`deferred`, which the sync runner opens around the handler),
records are not sent one round trip each: they ride on the workqueue's `done`, which keeps each
one as `record` would before it looks at the key's own events. The next reconcile of the key
starts after that `done`, so its guard sees every write of this one; an own event that comes
before it finds the key held, marks it dirty, and `done` then finds its version recorded. A
reconcile that ends without its `done` (its lease lost, Redis failing) sends them itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

from rollout_workers.keys import own_key
from rollout_workers.redisclient import Script

#: Keeps the newer of two versions: the new one is written at once (SET's GET: Redis 6.2) and
#: the one it replaced put back in the rare case that was newer.
_RECORD = """
for _, key in ipairs(KEYS) do
  local was = redis.call('SET', key, ARGV[1], 'EX', ARGV[2], 'GET')
  if was and (tonumber(was) or 0) > tonumber(ARGV[1]) then
    redis.call('SET', key, was, 'EX', ARGV[2])
  end
end
return 1
"""

TTL_SECONDS = 300


class Deferred:
    """The records of one reconcile on one thread, to be sent with its `done`: the newest
    version of each Redis key."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, Script]] = {}

    def add(self, keys: list[str], resource_version: str, script: Script) -> None:
        for key in keys:
            kept = self._pending.get(key)
            if kept is None or int(resource_version) > int(kept[0]):
                self._pending[key] = (resource_version, script)

    def discard(self, key: str) -> None:
        self._pending.pop(key, None)

    def records(self) -> list[tuple[str, str]]:
        """(Redis key, resourceVersion) of each record, kept for TTL_SECONDS if newer."""
        return [(key, rv) for key, (rv, _) in self._pending.items()]

    def clear(self) -> None:
        """The records were applied (by the reconcile's `done`)."""
        self._pending = {}

    def send(self) -> None:
        """Send the records not applied yet, one round trip each."""
        pending, self._pending = self._pending, {}
        for key, (rv, script) in pending.items():
            script(keys=[key], args=[rv, TTL_SECONDS])


_deferred = threading.local()


@contextmanager
def deferred() -> Iterator[Deferred]:
    """Collect this thread's records until the block ends, instead of sending them."""
    batch = Deferred()
    _deferred.batch = batch
    try:
        yield batch
    finally:
        _deferred.batch = None


def _batch() -> Deferred | None:
    return getattr(_deferred, "batch", None)


class WrittenVersions:
    def __init__(self, client: redis.Redis, *, prefix: str, own: str | None = None) -> None:
        """`own`: the plural of the objects this process' controller reconciles, whose own
        writes the watcher need not queue again (None: record no own writes)."""
        self._redis = client
        self._root = prefix
        self._prefix = f"{prefix}:written"
        self._own = own
        self._record = Script(client, _RECORD)

    def _key(self, plural: str, key: str) -> str:
        return f"{self.key_prefix(plural)}{key}"

    def key_prefix(self, plural: str) -> str:
        """The Redis key of a written version of a `plural` object, less the object's key."""
        return f"{self._prefix}:{plural}:"

    def record(self, plural: str, key: str, resource_version: str) -> None:
        if resource_version.isdigit():
            keys = [self._key(plural, key)]
            if plural == self._own:
                keys.append(own_key(self._root, plural, key))
            self._send(keys, resource_version)

    def record_own(self, plural: str, key: str, resource_version: str) -> None:
        """Record a write of the object's own controller that settled it (a reconcile of the
        written version would find nothing to do), so its watch event does not queue it
        again; `record` already did what the stale-cache guard needs."""
        if resource_version.isdigit():
            self._send([own_key(self._root, plural, key)], resource_version)

    def _send(self, keys: list[str], resource_version: str) -> None:
        batch = _batch()
        if batch is not None:
            batch.add(keys, resource_version, self._record)
        else:
            self._record(keys=keys, args=[resource_version, TTL_SECONDS])

    def stale(self, plural: str, items: dict[str, str]) -> list[str]:
        """The keys whose cached resourceVersion is older than the one a worker wrote."""
        if not items:
            return []
        keys = list(items)
        return behind(
            items,
            dict(zip(keys, self._redis.mget([self._key(plural, k) for k in keys]), strict=True)),
        )

    def stale_objects(self, plural: str, objs: list[dict[str, Any]]) -> list[str]:
        """`stale` for cached objects as read (namespace/name and resourceVersion from each)."""
        return self.stale(plural, versions(objs))

    def unseen(self, plural: str, keys: list[str], cached: set[str]) -> list[str]:
        """The keys a worker wrote (created) lately that the cache does not hold yet: a
        reconcile that looks them up there would wrongly find them gone."""
        absent = [k for k in keys if k not in cached]
        if not absent:
            return []
        written = self._redis.mget([self._key(plural, k) for k in absent])
        return [k for k, value in zip(absent, written, strict=True) if value is not None]

    def forget(self, plural: str, key: str) -> None:
        """A worker deleted the object: the cache is no longer expected to hold it (else a
        router object created, then deleted, such as Ambassador's canary Mapping, would read
        as created and not cached yet until the record expired)."""
        batch = _batch()
        if batch is not None:
            batch.discard(self._key(plural, key))
        self._redis.delete(self._key(plural, key))


def versions(objs: list[dict[str, Any]]) -> dict[str, str]:
    """namespace/name -> resourceVersion of cached objects as read."""
    return {
        f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": str(
            o["metadata"].get("resourceVersion", "")
        )
        for o in objs
    }


def behind(cached: dict[str, str], written: dict[str, Any]) -> list[str]:
    """The keys whose cached resourceVersion is older than the one a worker wrote (`written`:
    key -> the version recorded, or None)."""
    out = []
    for key, rv in cached.items():
        value = written.get(key)
        if value is not None and rv.isdigit() and int(value) > int(rv):
            out.append(key)
    return out
