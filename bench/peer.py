"""Argo Rollouts' architecture in one Python process: the yardstick the pool is measured against.

Run: `.venv/bin/python bench/peer.py [--threads 10] [--stats PATH] [--claims PATH]`, with the
same environment as the pool's processes (`ROLLOUTS_KUBECONFIG`, `ROLLOUTS_KUBE__QPS`, ...).

What Argo's controller is, rebuilt around our reconcile code (`RolloutController.sync`,
unchanged):

* one process, `--threads` workers (Argo's `--rollout-threads`, default 10) taking keys from
* an in-memory workqueue with client-go's semantics (`WorkQueue` below), fed by
* in-process informers: one list+watch per type (`Kube.list`/`Kube.watch`, raw JSON read with
  `_preload_content=False`, as the watcher's Reflector), each into a dict with the indexes
  the controller and the event handlers use (`cache.indexers`), answering the controller's
  `ObjectReader` calls, and a dict in place of the Redis `WrittenVersions`;
* the same event → key mapping as the watcher (`watcher.eventkeys.woken_keys`), the store written
  before the key is added (so a reconcile reads state at least as new as its event);
* the same API client (`kube.Kube` over `api_client`) with the same QPS limit and burst, one
  for the whole process as in Argo (the pool has one per worker process).

Objects are kept as JSON text and parsed on each read, as the Redis Lister does: reconcile code
may modify what it reads, and Argo's informers hand out shared pointers only because its code
deep-copies before it modifies.

With `--stats PATH` it writes its counters as JSON every 0.2 s (and at exit); with `--claims
PATH` it appends `<unix time> <key>` for every key a worker takes, for the bench's event →
reconcile-start latency.
"""

from __future__ import annotations

import argparse
import collections
import heapq
import json
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from rollout_workers.cache import Change
from rollout_workers.cache.indexers import OWNER, index_values, object_key
from rollout_workers.cache.written import TTL_SECONDS
from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import Gone, KubeError
from rollout_workers.kube.routerobjects import ApiRouterObjects
from rollout_workers.kube.writer import KubeWriter
from rollout_workers.reconcile.handlers import Result, SyncRequest
from rollout_workers.rollout.controller import RolloutController, step_plugin_registry
from rollout_workers.settings import KubeSettings, Settings
from rollout_workers.watcher.eventkeys import woken_keys
from rollout_workers.workqueue import Outcome

log = logging.getLogger("peer")

Obj = dict[str, Any]

#: The types RolloutController reads (workloadRef types are not watched: such rollouts wait).
READ = (
    r.ROLLOUTS,
    r.REPLICASETS,
    r.SERVICES,
    r.ANALYSISTEMPLATES,
    r.CLUSTERANALYSISTEMPLATES,
    r.ANALYSISRUNS,
    r.EXPERIMENTS,
)
STATS_EVERY = 0.2


# -- the workqueue ---------------------------------------------------------------------------


class WorkQueue:
    """client-go's `RateLimitingInterface` (util/workqueue), in memory:

    * a key added many times while waiting is processed once (`dirty` holds waiting keys);
    * a key is never handed to two workers at once (`processing`);
    * a key added while processed is processed again after `done` (it stays dirty);
    * FIFO order among waiting keys;
    * `add_after` keeps the earliest due time per key (the delaying queue's waiting heap);
    * `add_rate_limited` waits base * 2^failures (at most `backoff_max`) per key, until
      `forget` (ItemExponentialFailureRateLimiter).
    """

    def __init__(
        self,
        *,
        backoff_base: float,
        backoff_max: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base, self._max, self._clock = backoff_base, backoff_max, clock
        self._cond = threading.Condition()
        self._queue: collections.deque[str] = collections.deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._due: dict[str, float] = {}  # key -> earliest due time of its add_after
        self._heap: list[tuple[float, str]] = []
        self._timer_cond = threading.Condition()
        self._shutting_down = False
        threading.Thread(target=self._wait_loop, name="delaying queue", daemon=True).start()

    def add(self, key: str) -> None:
        with self._cond:
            if self._shutting_down or key in self._dirty:
                return
            self._dirty.add(key)
            if key in self._processing:
                return
            self._queue.append(key)
            self._cond.notify()

    def get(self) -> str | None:
        """The next key (now held by the caller until `done`), or None once shut down."""
        with self._cond:
            while not self._queue and not self._shutting_down:
                self._cond.wait()
            if not self._queue:
                return None
            key = self._queue.popleft()
            self._processing.add(key)
            self._dirty.discard(key)
            return key

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def add_after(self, key: str, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return
        due = self._clock() + seconds
        with self._timer_cond:
            if self._shutting_down or self._due.get(key, due + 1) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._heap, (due, key))
            if self._heap[0] == (due, key):
                self._timer_cond.notify()

    def add_rate_limited(self, key: str) -> float:
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = min(self._max, self._base * 2.0**failures)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def shut_down(self) -> None:
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()
        with self._timer_cond:
            self._timer_cond.notify_all()

    def counts(self) -> dict[str, int]:
        with self._cond:
            queued, processing = len(self._queue), len(self._processing)
        with self._timer_cond:
            waiting = len(self._due)
        return {"queued": queued, "processing": processing, "waiting": waiting}

    def _wait_loop(self) -> None:
        while True:
            with self._timer_cond:
                if self._shutting_down:
                    return
                now = self._clock()
                ready = []
                while self._heap and self._heap[0][0] <= now:
                    due, key = heapq.heappop(self._heap)
                    if self._due.get(key) == due:  # else superseded by an earlier add_after
                        del self._due[key]
                        ready.append(key)
                if not ready:
                    self._timer_cond.wait(self._heap[0][0] - now if self._heap else None)
            for key in ready:
                self.add(key)


# -- the informers ---------------------------------------------------------------------------

OnChange = Callable[[r.Resource, Change], None]


class Informer:
    """One type's list+watch into memory (client-go's SharedIndexInformer with its indexers).

    Objects are stored as JSON text and parsed on every read (see the module docstring). An
    event older than the stored object is refused; a relist is the truth (vanished objects are
    deleted). Each change is stored before `on_change` sees it.
    """

    def __init__(
        self,
        *,
        kube: Kube,
        resource: r.Resource,
        settings: KubeSettings,
        label_selector: str | None,
        on_change: OnChange,
        stop: threading.Event,
    ) -> None:
        self.resource = resource
        self.synced = threading.Event()
        self.events = 0
        self._kube, self._settings, self._selector = kube, settings, label_selector
        self._on_change, self._stop = on_change, stop
        self._lock = threading.Lock()
        self._objects: dict[str, str] = {}
        self._versions: dict[str, str] = {}
        self._memberships: dict[str, list[tuple[str, str]]] = {}
        self._index: dict[tuple[str, str], set[str]] = collections.defaultdict(set)

    # -- the controller's reads (ObjectReader) ---------------------------------------------

    def get(self, key: str) -> Obj | None:
        raw = self._objects.get(key)
        return json.loads(raw) if raw is not None else None

    def get_many(self, keys: Iterable[str]) -> list[Obj]:
        found = [self._objects.get(k) for k in sorted(keys)]
        return [json.loads(raw) for raw in found if raw is not None]

    def keys_by_index(self, index: str, value: str) -> list[str]:
        with self._lock:
            return sorted(self._index.get((index, value), ()))

    def by_owner(self, uid: str) -> list[Obj]:
        return self.get_many(self.keys_by_index(OWNER, uid))

    def __len__(self) -> int:
        return len(self._objects)

    # -- the store's writes ----------------------------------------------------------------

    def _put(self, key: str, obj: Obj) -> None:
        values = index_values(self.resource, obj)
        with self._lock:
            self._unindex(key)
            self._objects[key] = json.dumps(obj, separators=(",", ":"))
            self._versions[key] = str(obj["metadata"].get("resourceVersion", ""))
            self._memberships[key] = values
            for value in values:
                self._index[value].add(key)

    def _delete(self, key: str) -> None:
        with self._lock:
            self._unindex(key)
            self._objects.pop(key, None)
            self._versions.pop(key, None)

    def _unindex(self, key: str) -> None:
        for value in self._memberships.pop(key, ()):
            members = self._index.get(value)
            if members is not None:
                members.discard(key)
                if not members:
                    del self._index[value]

    # -- list and watch --------------------------------------------------------------------

    def run(self) -> None:
        rv: str | None = None
        delay = 0.0
        rng = random.Random()
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._relist()
                rv = self._watch(rv, rng)
                delay = 0.0
            except Gone:
                rv = None
            except (KubeError, ValueError) as err:
                delay = min(30.0, max(0.5, delay * 2))
                log.warning("%s: %s; retrying in %.1fs", self.resource.plural, err, delay)
                self._stop.wait(delay)

    def _relist(self) -> str:
        items, rv = self._kube.list(self.resource, label_selector=self._selector)
        listed = {}
        for obj in items:
            listed[object_key(obj)] = obj
        changes = []
        for key, obj in listed.items():
            previous = self._versions.get(key)
            if previous != str(obj["metadata"].get("resourceVersion", "")):
                self._put(key, obj)
                changes.append(Change("MODIFIED" if previous else "ADDED", key, obj, previous))
        for key in [k for k in self._versions if k not in listed]:
            obj = self.get(key) or {"metadata": {"name": key.rpartition("/")[2]}}
            previous = self._versions.get(key)
            self._delete(key)
            changes.append(Change("DELETED", key, obj, previous))
        self.synced.set()
        for change in changes:
            self._on_change(self.resource, change)
        return rv

    def _watch(self, rv: str, rng: random.Random) -> str:
        s = self._settings
        timeout = rng.randint(s.watch_timeout_min, max(s.watch_timeout_min, s.watch_timeout_max))
        for event in self._kube.watch(
            self.resource,
            resource_version=rv,
            label_selector=self._selector,
            timeout_seconds=timeout,
        ):
            if self._stop.is_set():
                break
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(410, "Expired", str(obj.get("message", "")))
                raise KubeError(int(obj.get("code") or 0), "WatchError", str(obj.get("message")))
            new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._apply(str(kind), obj)
            rv = new_rv or rv
        return rv

    def _apply(self, kind: str, obj: Obj) -> None:
        self.events += 1
        key = object_key(obj)
        rv = str(obj["metadata"].get("resourceVersion", ""))
        previous = self._versions.get(key)
        if previous and previous.isdigit() and rv.isdigit() and int(rv) < int(previous):
            change = Change(kind, key, obj, previous, older=True)
        elif kind == "DELETED":
            self._delete(key)
            change = Change(kind, key, obj, previous)
        else:
            self._put(key, obj)
            change = Change(kind, key, obj, previous)
        self._on_change(self.resource, change)


class WrittenMemory:
    """`cache.WrittenVersions` in memory: the resourceVersions this process wrote, newest kept
    for TTL_SECONDS, so a reconcile can tell its informer has not caught up yet."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._written: dict[tuple[str, str], tuple[int, float]] = {}

    def record(self, plural: str, key: str, resource_version: str) -> None:
        if not resource_version.isdigit():
            return
        rv, now = int(resource_version), self._clock()
        with self._lock:
            current = self._written.get((plural, key))
            if current is None or current[1] < now or rv > current[0]:
                self._written[(plural, key)] = (rv, now + TTL_SECONDS)

    def _get(self, plural: str, key: str) -> int | None:
        entry = self._written.get((plural, key))
        return entry[0] if entry is not None and entry[1] >= self._clock() else None

    def record_own(self, plural: str, key: str, resource_version: str) -> None:
        """Argo queues an object again for every event, its own writes' too: nothing to keep."""

    def stale(self, plural: str, items: dict[str, str]) -> list[str]:
        behind = []
        for key, cached in items.items():
            written = self._get(plural, key)
            if written is not None and cached.isdigit() and written > int(cached):
                behind.append(key)
        return behind

    def stale_objects(self, plural: str, objs: list[Obj]) -> list[str]:
        return self.stale(
            plural,
            {
                f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": str(
                    o["metadata"].get("resourceVersion", "")
                )
                for o in objs
            },
        )

    def unseen(self, plural: str, keys: list[str], cached: set[str]) -> list[str]:
        return [k for k in keys if k not in cached and self._get(plural, k) is not None]


# -- the controller --------------------------------------------------------------------------


class NoLease:
    """An in-process queue's hold on a key cannot be lost."""

    def lost(self) -> bool:
        return False

    def check(self) -> None:
        return None


class Peer:
    def __init__(self, settings: Settings, *, threads: int, claims: TextIO | None) -> None:
        self.settings, self.threads, self._claims = settings, threads, claims
        self.stop = threading.Event()
        self.kube = Kube(api_client(settings), settings.kube)
        self.queue = WorkQueue(
            backoff_base=settings.queue.backoff_base, backoff_max=settings.queue.backoff_max
        )
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.reconcile_seconds = 0.0
        self._claims_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self.informers = {
            res.plural: Informer(
                kube=self.kube,
                resource=res,
                settings=settings.kube,
                label_selector=r.watch_selector(res, settings.kube.instance_id),
                on_change=self._on_change,
                stop=self.stop,
            )
            for res in READ
        }
        written = WrittenMemory()
        i = self.informers
        self.controller = RolloutController(
            rollouts=i["rollouts"],
            replicasets=i["replicasets"],
            services=i["services"],
            templates=i["analysistemplates"],
            cluster_templates=i["clusteranalysistemplates"],
            analysis_runs=i["analysisruns"],
            experiments=i["experiments"],
            written=written,
            writer=KubeWriter(self.kube, on_written=written.record),
            step_plugins=step_plugin_registry(settings.plugins),
            # Argo's SMI reconciler GETs the TrafficSplit from the API on every reconcile.
            router_objects=ApiRouterObjects(self.kube),
        )

    def _lookup(self, plural: str, index: str, value: str) -> list[str]:
        informer = self.informers.get(plural)
        return informer.keys_by_index(index, value) if informer is not None else []

    def _on_change(self, resource: r.Resource, change: Change) -> None:
        for key in woken_keys(resource, change, self._lookup).get("rollouts", ()):
            self.queue.add(key)

    def run(self) -> None:
        for informer in self.informers.values():
            name = f"informer {informer.resource.plural}"
            threading.Thread(target=informer.run, name=name, daemon=True).start()
        for informer in self.informers.values():  # WaitForCacheSync
            while not informer.synced.wait(0.1):
                if self.stop.is_set():
                    return
        log.warning("caches synced; starting %d workers", self.threads)
        workers = [
            threading.Thread(target=self._work, name=f"worker {n}", daemon=True)
            for n in range(self.threads)
        ]
        for worker in workers:
            worker.start()
        self.stop.wait()
        self.queue.shut_down()
        for worker in workers:
            worker.join(5)

    def _work(self) -> None:
        while (key := self.queue.get()) is not None:
            if self._claims is not None:
                line = f"{time.time():.6f} {key}\n"
                with self._claims_lock:
                    self._claims.write(line)
            started = time.perf_counter()
            try:
                request = SyncRequest(kind="rollouts", key=ObjectKey(key), lease=NoLease())
                result = self.controller.sync(request) or Result.done()
            except Exception:
                log.exception("reconcile of %s failed", key)
                result = Result(Outcome.ERROR)
            if result.outcome is Outcome.ERROR:
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if result.outcome is Outcome.AFTER:
                    self.queue.add_after(key, result.delay)
            self.queue.done(key)
            with self._stats_lock:
                self.reconcile_seconds += time.perf_counter() - started
                self.outcomes[result.outcome.value] += 1

    def stats(self) -> Obj:
        with self._stats_lock:
            outcomes, seconds = dict(self.outcomes), self.reconcile_seconds
        return {
            "synced": all(i.synced.is_set() for i in self.informers.values()),
            "reconciles": sum(outcomes.values()),
            "outcomes": outcomes,
            "reconcile_seconds": round(seconds, 3),
            "api_requests": self.kube.requests,
            "events": sum(i.events for i in self.informers.values()),
            "objects": {p: len(i) for p, i in self.informers.items()},
            **self.queue.counts(),
        }


def write_stats(peer: Peer, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(peer.stats()))
    os.replace(tmp, path)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=10, help="reconcile threads (Argo's 10)")
    p.add_argument("--stats", type=Path, help="write counters here as JSON, every 0.2 s")
    p.add_argument("--claims", type=Path, help="append '<unix time> <key>' per key taken")
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(message)s")
    claims = args.claims.open("a", buffering=1) if args.claims else None
    peer = Peer(Settings(), threads=args.threads, claims=claims)
    signal.signal(signal.SIGTERM, lambda *_: peer.stop.set())
    signal.signal(signal.SIGINT, lambda *_: peer.stop.set())
    if args.stats:
        stats_path: Path = args.stats

        def report() -> None:
            while not peer.stop.wait(STATS_EVERY):
                write_stats(peer, stats_path)

        threading.Thread(target=report, name="stats", daemon=True).start()
    peer.run()
    if args.stats:
        write_stats(peer, args.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
