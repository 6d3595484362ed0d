"""The watcher at scale: initial sync time, memory, sustained events/s, event->enqueue latency.

Run: `.venv/bin/python bench/watcher.py [--rollouts N] [--replicasets M] [--events E]`.
It starts its own redis-server (EmbeddedRedis, in a temp dir), its own embedded Kubernetes API
(`python -m devcluster`, a separate process so the API and the watcher do not
share a GIL) and a real `python -m rollout_workers watcher`, and stops all of them at the end,
also on Ctrl-C or an error. No workers run, so every queued key stays queued.

1. Load: N rollouts (canary strategy with a stable and a canary service) and M ReplicaSets
   (replicas 0, `rollouts-pod-template-hash`, controller ownerReference to their rollout) over
   raw HTTP from a thread pool. Then the watcher starts; timed from its lease acquisition until
   `Lister.count()` shows every object, and until every rollout key is queued and its Celery
   message sent.
2. Memory after sync: the watcher's VmRSS/VmHWM, the API's VmRSS, and Redis `used_memory`
   before the watcher started and after sync, split by key family with `MEMORY USAGE`.
3. Events/s: E merge patches of an annotation on E ReplicaSets from several threads, timed from
   the first patch until the cache holds every patched object at its last resourceVersion. Then
   the same with the watcher paused (SIGSTOP) during the patches: the rate it drains a backlog
   once resumed, free of the API's own speed.
4. Event->enqueue latency: spaced single patches, each to a ReplicaSet of a different rollout
   whose key was just removed from `rw:wq:rollouts:queued`; latency = the key's score there
   (Redis TIME, ms) - the wall clock when the patch returned.
5. Where the sync time goes: the watcher's own steps re-run in this process on the same data
   (LIST pages: HTTP vs JSON parsing; CacheWriter.replace: building arguments vs Redis round
   trips; routing; WorkQueue.add; Celery sends) against a scratch key prefix, plus the CPU
   seconds each process (watcher, API, Redis) spent during phase 1.

Figures are printed and written to bench/results/watcher.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import signal
import sys
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
from harness import (
    Http,
    Proc,
    child_env,
    cpu_seconds,
    exit_on_sigterm,
    percentile,
    redis_cpu,
    run_in_tempdir,
    spawn,
    start_api,
    wait_for,
    write_json,
)

from rollout_workers.cache import CacheWriter, Lister
from rollout_workers.cache.store import TYPE_RV, entry_version
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import Settings
from rollout_workers.watcher.eventkeys import woken_keys

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "watcher.json"

PREFIX = "rw"
SCRATCH = "benchprof"
#: A paused (SIGSTOPped) watcher must keep its lease; stats are published every ttl/3.
WATCHER_LEASE_TTL = 30

Obj = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) * 1024
    return out


def mib(n: float) -> float:
    return round(n / 2**20, 1)


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else math.inf


# -- the API over raw HTTP -------------------------------------------------------------------


def rollout_body(name: str) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "labels": {"app": name, "team": "bench"}},
        "spec": {
            "replicas": 3,
            "revisionHistoryLimit": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example.com/app:1.0.0",
                            "ports": [{"name": "http", "containerPort": 8080}],
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"memory": "256Mi"},
                            },
                        }
                    ]
                },
            },
            "strategy": {
                "canary": {
                    "stableService": f"{name}-stable",
                    "canaryService": f"{name}-canary",
                    "steps": [
                        {"setWeight": 20},
                        {"pause": {"duration": "30s"}},
                        {"setWeight": 50},
                        {"pause": {}},
                    ],
                }
            },
        },
    }


def replicaset_body(rollout: Obj, revision: int) -> Obj:
    meta = rollout["metadata"]
    name = meta["name"]
    pod_hash = f"{zlib.crc32(f'{name}/{revision}'.encode()):08x}"
    labels = {"app": name, r.POD_TEMPLATE_HASH_LABEL: pod_hash}
    template = json.loads(json.dumps(rollout["spec"]["template"]))
    template["metadata"]["labels"] = labels
    owner = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "name": name,
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-{pod_hash}",
            "labels": labels,
            "annotations": {"rollout.argoproj.io/revision": str(revision)},
            "ownerReferences": [owner],
        },
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template},
    }


def parallel(pool: ThreadPoolExecutor, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return list(pool.map(fn, items, chunksize=64))


def wait_quiet(http: Http, timeout: float = 300.0) -> int:
    """Wait until the API's resourceVersion stops moving (its controllers are idle)."""
    deadline = time.monotonic() + timeout
    last = http.resource_version()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = http.resource_version()
        if now == last:
            return now
        last = now
    raise TimeoutError("the API did not settle")


def load(
    http: Http, pool: ThreadPoolExecutor, namespaces: list[str], n: int, m: int
) -> dict[str, Any]:
    """Phase 1a: create the objects; returns {rollouts: [...], replicasets: [...], ...}."""
    for ns in namespaces:
        http.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    started = time.perf_counter()
    plan = [(namespaces[i % len(namespaces)], f"app-{i:06d}") for i in range(n)]

    def create_rollout(item: tuple[str, str]) -> Obj:
        ns, name = item
        path = f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/rollouts"
        return http.call("POST", path, rollout_body(name))

    rollouts = parallel(pool, create_rollout, plan)
    rs_plan = [(rollouts[j % n], j // n + 1) for j in range(m)]

    def create_rs(item: tuple[Obj, int]) -> Obj:
        rollout, revision = item
        path = f"/apis/apps/v1/namespaces/{rollout['metadata']['namespace']}/replicasets"
        created = http.call("POST", path, replicaset_body(rollout, revision))
        return {"metadata": {k: created["metadata"][k] for k in ("namespace", "name")}}

    replicasets = parallel(pool, create_rs, rs_plan)
    created = time.perf_counter()
    rv = wait_quiet(http)
    settled = time.perf_counter()
    return {
        "rollouts": rollouts,
        "replicasets": replicasets,
        "seconds": round(created - started, 2),
        "creates_per_s": rate(n + m, created - started),
        "settle_seconds": round(settled - created, 2),
        "resource_version": rv,
    }


# -- phases ----------------------------------------------------------------------------------


def evalsha_stats(client: redis.Redis) -> dict[str, float]:
    stats = client.info("commandstats").get("cmdstat_evalsha") or {}
    return {"calls": int(stats.get("calls", 0)), "usec": int(stats.get("usec", 0))}


def sync(
    client: redis.Redis,
    *,
    watcher: Proc,
    api: Proc,
    redis_pid: int,
    spawned: float,
    n: int,
    m: int,
    cpu_before: dict[str, float],
) -> dict[str, Any]:
    """Phase 1b: time the watcher's initial LIST + replace and the enqueue that follows."""
    rollouts = Lister(client, prefix=PREFIX, resource=r.ROLLOUTS)
    replicasets = Lister(client, prefix=PREFIX, resource=r.REPLICASETS)
    leader_key = f"{PREFIX}:watcher:leader"
    timeout = 120 + (n + m) / 100
    wait_for(lambda: client.exists(leader_key), 60, "the lease", alive=watcher.check_alive)
    leading = time.perf_counter()
    rss_at_lease = proc_status(watcher.pid)["VmRSS"]
    firsts: dict[str, float] = {}

    def full() -> bool:
        now = time.perf_counter()
        for name, lister, want in (("rollouts", rollouts, n), ("replicasets", replicasets, m)):
            count = lister.count()
            if count and name not in firsts:
                firsts[name] = now
            if count < want:
                return False
        return True

    wait_for(full, timeout, "the cache to hold every object", alive=watcher.check_alive)
    cached = time.perf_counter()
    cpu_cached = {
        "watcher": cpu_seconds(watcher.pid),
        "api": cpu_seconds(api.pid),
        "redis": cpu_seconds(redis_pid),
    }
    queued_key = f"{PREFIX}:wq:rollouts:queued"
    wait_for(
        lambda: client.zcard(queued_key) >= n,
        timeout,
        "every rollout queued",
        alive=watcher.check_alive,
    )
    queued = time.perf_counter()
    # Each newly queued key also sends one `rollouts.sync` message (kombu list `rollouts`).
    wait_for(
        lambda: client.llen("rollouts") >= n,
        timeout,
        "every message sent",
        alive=watcher.check_alive,
    )
    sent = time.perf_counter()
    cpu_after = {
        "watcher": cpu_seconds(watcher.pid),
        "api": cpu_seconds(api.pid),
        "redis": cpu_seconds(redis_pid),
    }
    return {
        "startup_seconds": round(leading - spawned, 2),
        "watcher_rss_at_lease_mib": mib(rss_at_lease),
        "list_replace_seconds": round(cached - leading, 2),
        "first_object_cached_after": {k: round(v - leading, 2) for k, v in firsts.items()},
        "objects": n + m,
        "objects_per_s": rate(n + m, cached - leading),
        "all_rollouts_queued_seconds": round(queued - leading, 2),
        "all_messages_sent_seconds": round(sent - leading, 2),
        "cpu_seconds_until_cached": {
            k: round(cpu_cached[k] - cpu_before[k], 2) for k in cpu_cached
        },
        "cpu_seconds_until_sent": {k: round(cpu_after[k] - cpu_before[k], 2) for k in cpu_after},
    }


FAMILY_NAMES = {
    "obj": "objects (hash key -> JSON)",
    "rv": "resourceVersions and index memberships (hash)",
    "idx": "memberships of the layout before (hash key -> sets)",
    "i": "index sets",
}


def key_family(key: str) -> str:
    if key.startswith(f"{PREFIX}:cache:"):
        plural, _, rest = key.removeprefix(f"{PREFIX}:cache:").partition(":")
        part = rest.split(":")[0]
        return f"cache {plural} {FAMILY_NAMES.get(part, part)}"
    if key.startswith(f"{PREFIX}:wq:"):
        return "workqueue state"
    if key == "rollouts":
        return "celery messages (list `rollouts`)"
    return "other"


def memory(
    client: redis.Redis, *, before: int, watcher: Proc, api: Proc, n: int, m: int
) -> dict[str, Any]:
    """Phase 2: RSS of the processes and Redis memory by key family."""
    time.sleep(1.0)
    used = int(client.info("memory")["used_memory"])
    families: dict[str, int] = defaultdict(int)
    keys = 0
    batch: list[str] = []

    def flush() -> None:
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, pipe.execute(), strict=True):
            families[key_family(key)] += int(size or 0)
        batch.clear()

    for raw in client.scan_iter(count=1000):
        keys += 1
        batch.append(raw.decode())
        if len(batch) >= 1000:
            flush()
    flush()
    cache_bytes = sum(v for k, v in families.items() if k.startswith("cache "))
    per_type: dict[str, int] = defaultdict(int)
    for family, size in families.items():
        if family.startswith("cache "):
            per_type[family.split()[1]] += size
    json_bytes: dict[str, float] = {}
    for plural in ("rollouts", "replicasets"):
        sample: list[bytes] = client.hrandfield(  # type: ignore[assignment]
            f"{PREFIX}:cache:{plural}:obj", 500, withvalues=True
        )
        values = sample[1::2]
        json_bytes[plural] = round(sum(len(v) for v in values) / max(1, len(values)))
    w, a = proc_status(watcher.pid), proc_status(api.pid)
    return {
        "watcher_rss_mib": mib(w["VmRSS"]),
        "watcher_hwm_mib": mib(w["VmHWM"]),
        "api_rss_mib": mib(a["VmRSS"]),
        "api_hwm_mib": mib(a["VmHWM"]),
        "redis_used_before_mib": mib(before),
        "redis_used_after_mib": mib(used),
        "redis_delta_mib": mib(used - before),
        "redis_delta_bytes_per_object": round((used - before) / (n + m)),
        "redis_keys": keys,
        "cache_mib": mib(cache_bytes),
        "cache_bytes_per_object": round(cache_bytes / (n + m)),
        "cache_bytes_per_rollout": round(per_type["rollouts"] / n),
        "cache_bytes_per_replicaset": round(per_type["replicasets"] / m),
        "json_bytes_per_object": json_bytes,
        "by_family_mib": {
            k: round(v / 2**20, 3) for k, v in sorted(families.items(), key=lambda x: -x[1])
        },
    }


def patch_rs(http: Http, ref: Obj, value: str) -> int:
    meta = ref["metadata"]
    path = f"/apis/apps/v1/namespaces/{meta['namespace']}/replicasets/{meta['name']}"
    body = {"metadata": {"annotations": {"bench/seq": value}}}
    return int(http.call("PATCH", path, body, patch=True)["metadata"]["resourceVersion"])


def spread(items: Sequence[Obj], count: int, offset: int = 0) -> list[Obj]:
    """`count` items spread over the whole list (wrapping when count > len(items))."""
    step = max(1, len(items) // max(1, count))
    return [items[(offset + i * step) % len(items)] for i in range(count)]


def drive(
    http: Http, pool: ThreadPoolExecutor, targets: list[Obj], tag: str
) -> tuple[float, float, dict[str, int]]:
    """Patch every target once (in parallel); returns start, end and the last rv per key."""
    last: dict[str, int] = {}
    lock = threading.Lock()

    def one(ix: tuple[int, Obj]) -> None:
        i, ref = ix
        rv = patch_rs(http, ref, f"{tag}-{i}")
        key = f"{ref['metadata']['namespace']}/{ref['metadata']['name']}"
        with lock:
            last[key] = max(rv, last.get(key, 0))

    started = time.perf_counter()
    parallel(pool, one, list(enumerate(targets)))
    return started, time.perf_counter(), last


def caught_up(client: redis.Redis, last: dict[str, int], watcher: Proc, timeout: float) -> float:
    """Wait until the cache holds every key at (at least) its last patched rv."""
    top = max(last.values())
    versions_key = f"{PREFIX}:cache:replicasets:rv"
    # Events arrive in resourceVersion order, so the type's rv passing `top` means all arrived.
    wait_for(
        lambda: int(client.hget(versions_key, TYPE_RV) or 0) >= top,
        timeout,
        "the cache to catch up",
        interval=0.002,
        alive=watcher.check_alive,
    )
    done = time.perf_counter()
    keys = list(last)
    versions = client.hmget(versions_key, keys)
    stale = [
        k for k, v in zip(keys, versions, strict=True) if int(entry_version(v or b"0")) < last[k]
    ]
    if stale:
        raise RuntimeError(f"cache behind for {len(stale)} keys, e.g. {stale[:3]}")
    return done


def watcher_events(client: redis.Redis, after: float) -> int:
    """`replicasets.events` from the watcher's stats once published after `after` (epoch)."""
    key = f"{PREFIX}:watcher:stats"
    wait_for(
        lambda: float(client.hget(key, "updated") or 0) > after,
        WATCHER_LEASE_TTL,
        "watcher stats",
        interval=0.2,
    )
    return int(client.hget(key, "replicasets.events") or 0)


def events(
    client: redis.Redis,
    *,
    http: Http,
    pool: ThreadPoolExecutor,
    watcher: Proc,
    api: Proc,
    redis_pid: int,
    replicasets: list[Obj],
    e: int,
) -> dict[str, Any]:
    """Phase 3: sustained events/s with the watcher running, then a paused-watcher backlog."""
    # No watch events happened before this phase (the API was idle), so whatever count was
    # published last is current.
    before_events = int(client.hget(f"{PREFIX}:watcher:stats", "replicasets.events") or 0)
    pids = {"watcher": watcher.pid, "api": api.pid, "redis": redis_pid}
    cpu0 = {k: cpu_seconds(p) for k, p in pids.items()}
    targets = spread(replicasets, e)
    started, api_done, last = drive(http, pool, targets, "live")
    done = caught_up(client, last, watcher, 120 + e / 50)
    cpu1 = {k: cpu_seconds(p) for k, p in pids.items()}
    seen = watcher_events(client, time.time()) - before_events
    live = {
        "patches": e,
        "objects": len(last),
        "api_seconds": round(api_done - started, 3),
        "api_patches_per_s": rate(e, api_done - started),
        "seconds": round(done - started, 3),
        "events_per_s": rate(e, done - started),
        "lag_after_last_patch_ms": round((done - api_done) * 1000, 1),
        "watcher_counted_events": seen,
        "cpu_seconds": {k: round(cpu1[k] - cpu0[k], 2) for k in pids},
    }
    # The same load with the watcher stopped: what it drains once it runs alone.
    targets = spread(replicasets, e, offset=1)
    watcher.signal(signal.SIGSTOP)
    try:
        paused_start, api_done, last = drive(http, pool, targets, "paused")
    finally:
        cpu0 = {k: cpu_seconds(p) for k, p in pids.items()}
        resumed = time.perf_counter()
        watcher.signal(signal.SIGCONT)
    done = caught_up(client, last, watcher, 120 + e / 50)
    cpu1 = {k: cpu_seconds(p) for k, p in pids.items()}
    backlog = {
        "patches": e,
        "api_seconds": round(api_done - paused_start, 3),
        "api_patches_per_s": rate(e, api_done - paused_start),
        "drain_seconds": round(done - resumed, 3),
        "drain_events_per_s": rate(e, done - resumed),
        "cpu_seconds": {k: round(cpu1[k] - cpu0[k], 2) for k in pids},
    }
    return {"live": live, "paused_backlog": backlog}


def latency(
    client: redis.Redis,
    *,
    http: Http,
    watcher: Proc,
    rollouts: list[Obj],
    replicasets: list[Obj],
    samples: int,
    gap: float,
) -> dict[str, Any]:
    """Phase 4: spaced patches, each waking a different rollout freshly removed from the queue."""
    owned: dict[str, Obj] = {}
    for ref in replicasets:
        meta = ref["metadata"]
        owned.setdefault(f"{meta['namespace']}/{meta['name'].rsplit('-', 1)[0]}", ref)
    picked = spread(rollouts, min(samples, len(rollouts)), offset=2)
    queued = f"{PREFIX}:wq:rollouts:queued"
    from_return: list[float] = []
    from_send: list[float] = []
    for i, rollout in enumerate(picked):
        key = f"{rollout['metadata']['namespace']}/{rollout['metadata']['name']}"
        client.zrem(queued, key)
        sent = time.time()
        patch_rs(http, owned[key], f"lat-{i}")
        returned = time.time()

        def enqueued(key: str = key) -> float | None:
            score: float | None = client.zscore(queued, key)
            return score

        score = wait_for(
            enqueued,
            10,
            f"{key} queued",
            interval=0.0005,
            alive=watcher.check_alive,
        )
        assert isinstance(score, float)
        from_return.append(score - returned * 1000)
        from_send.append(score - sent * 1000)
        time.sleep(gap)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50": round(percentile(values, 0.5), 2),
            "p99": round(percentile(values, 0.99), 2),
            "max": round(max(values), 2),
            "min": round(min(values), 2),
        }

    return {
        "samples": len(from_return),
        "gap_ms": gap * 1000,
        "from_patch_return_ms": summary(from_return),
        "from_patch_send_ms": summary(from_send),
    }


# -- phase 5: the sync's steps, re-run in this process ----------------------------------------


def profile_sync(client: redis.Redis, settings: Settings, url: str, kubeconfig: Path) -> Obj:
    """The watcher's sync steps on the same objects, timed one by one (scratch key prefix)."""
    kube_settings = settings.kube.model_copy(update={"qps": 1e6, "burst": 1_000_000})
    scratch = settings.model_copy(
        update={
            "kubeconfig": kubeconfig,
            "kube": kube_settings,
            "redis": settings.redis.model_copy(update={"key_prefix": SCRATCH}),
            "queue": settings.queue.model_copy(
                update={"rollouts": f"{SCRATCH}-rollouts", "analysis": f"{SCRATCH}-analysis"}
            ),
        }
    )
    kube = Kube(api_client(scratch), kube_settings)
    runtime = build_runtime(create_app(scratch, url), scratch, url)
    out: Obj = {}
    for res in (r.ROLLOUTS, r.REPLICASETS):
        http_s = parse_s = 0.0
        body_bytes = 0
        items: list[Obj] = []
        token: str | None = None
        while True:
            t0 = time.perf_counter()
            response = kube.request(
                "GET",
                res.path(),
                query={
                    "labelSelector": r.watch_selector(res, ""),
                    "limit": kube_settings.page_size,
                    "continue": token,
                },
            )
            data = response.data
            t1 = time.perf_counter()
            page = json.loads(data)
            t2 = time.perf_counter()
            http_s += t1 - t0
            parse_s += t2 - t1
            body_bytes += len(data)
            items.extend(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                rv = str(page["metadata"]["resourceVersion"])
                break
        writer = CacheWriter(client, prefix=SCRATCH, resource=res)
        t0 = time.perf_counter()
        for obj in items:
            writer._args("put", obj, "")
        args_s = time.perf_counter() - t0
        redis_cpu0, ev0 = redis_cpu(client), evalsha_stats(client)
        t0 = time.perf_counter()
        changes = writer.replace(items, rv)
        replace_s = time.perf_counter() - t0
        redis_cpu1, ev1 = redis_cpu(client), evalsha_stats(client)
        lister = Lister(client, prefix=SCRATCH, resource=r.ROLLOUTS)

        def lookup(_plural: str, index: str, value: str, lister: Lister = lister) -> list[str]:
            return lister.keys_by_index(index, value)

        t0 = time.perf_counter()
        wanted: dict[str, set[str]] = defaultdict(set)
        for change in changes:
            for kind, keys in woken_keys(res, change, lookup).items():
                wanted[kind].update(keys)
        route_s = time.perf_counter() - t0
        queue = runtime.queue("rollouts")
        to_add = sorted(wanted.get("rollouts", set()))
        sent: list[str] = []
        t0 = time.perf_counter()
        for i in range(0, len(to_add), 1000):
            sent.extend(queue.add(to_add[i : i + 1000]).queued)
        add_s = time.perf_counter() - t0
        out[res.plural] = {
            "objects": len(items),
            "pages": math.ceil(len(items) / kube_settings.page_size),
            "list_mib": mib(body_bytes),
            "list_http_seconds": round(http_s, 2),
            "list_json_parse_seconds": round(parse_s, 2),
            "replace_seconds": round(replace_s, 2),
            "replace_args_seconds": round(args_s, 2),
            "replace_redis_seconds": round(replace_s - args_s, 2),
            "redis_cpu_seconds_in_replace": round(redis_cpu1 - redis_cpu0, 2),
            "evalsha_usec_per_object": round(
                (ev1["usec"] - ev0["usec"]) / max(1, ev1["calls"] - ev0["calls"]), 1
            ),
            "route_seconds": round(route_s, 2),
            "enqueue_keys": len(to_add),
            "enqueue_seconds_incl_celery_send": round(add_s, 2),
            "celery_messages": len(sent),
        }
        del items, changes
    for pattern in (f"{SCRATCH}:*", f"{SCRATCH}-*"):
        for chunk in batched(client.scan_iter(match=pattern, count=1000), 1000):
            client.unlink(*chunk)
    return out


def batched(items: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# -- report ----------------------------------------------------------------------------------


def render(report: Obj) -> str:
    p, ld, s, mem = report["parameters"], report["load"], report["sync"], report["memory"]
    ev, lat = report["events"], report["latency"]
    live, bl = ev["live"], ev["paused_backlog"]
    cores = report["machine"]["cores"]
    lines = [
        f"watcher benchmark: {p['rollouts']} rollouts, {p['replicasets']} replicasets, "
        f"{p['events']} events ({cores} cores, {report['date']}, 1-min load average "
        f"{report['machine']['loadavg_1m_at_start_and_end'][0]} at start)",
        "",
        "1. load and initial sync",
        f"   load through the API          {ld['seconds']:>8.1f} s  ({ld['creates_per_s']:.0f} "
        f"creates/s; API settled {ld['settle_seconds']:.1f} s later)",
        f"   watcher startup -> lease       {s['startup_seconds']:>8.2f} s",
        f"   LIST + replace, cache full     {s['list_replace_seconds']:>8.2f} s  "
        f"({s['objects_per_s']:.0f} objects/s)",
        f"   every rollout key queued       {s['all_rollouts_queued_seconds']:>8.2f} s",
        f"   every Celery message sent      {s['all_messages_sent_seconds']:>8.2f} s",
        "   CPU s until cache full         "
        + "  ".join(f"{k} {v:.1f}" for k, v in s["cpu_seconds_until_cached"].items()),
        "   CPU s until messages sent      "
        + "  ".join(f"{k} {v:.1f}" for k, v in s["cpu_seconds_until_sent"].items()),
        "",
        "2. memory after sync",
        f"   watcher RSS / peak (HWM)       {mem['watcher_rss_mib']:>8.1f} / "
        f"{mem['watcher_hwm_mib']:.1f} MiB  (RSS when it took the lease: "
        f"{s['watcher_rss_at_lease_mib']:.1f} MiB)",
        f"   embedded API RSS (reference)   {mem['api_rss_mib']:>8.1f} MiB",
        f"   Redis used_memory              {mem['redis_used_before_mib']:>8.1f} -> "
        f"{mem['redis_used_after_mib']:.1f} MiB (+{mem['redis_delta_mib']:.1f}; "
        f"{mem['redis_delta_bytes_per_object']} B/object)",
        f"   of which the cache             {mem['cache_mib']:>8.1f} MiB  "
        f"({mem['cache_bytes_per_object']} B/object: rollout {mem['cache_bytes_per_rollout']}, "
        f"replicaset {mem['cache_bytes_per_replicaset']})",
        "   JSON per object (avg)          "
        + ", ".join(f"{k} {v} B" for k, v in mem["json_bytes_per_object"].items()),
    ]
    small = 0.0
    for family, size in mem["by_family_mib"].items():
        if size >= 0.05:
            lines.append(f"     {family:<50} {size:>8.1f} MiB")
        else:
            small += size
    lines.append(f"     {'(the rest)':<50} {small:>8.1f} MiB")
    lines += [
        "",
        "3. events/s (merge patches of an annotation on replicasets)",
        f"   API accepted                   {live['api_patches_per_s']:>8.0f} patches/s  "
        f"({live['patches']} in {live['api_seconds']:.2f} s)",
        f"   watcher applied (live)         {live['events_per_s']:>8.0f} events/s   "
        f"(first patch -> cache current {live['seconds']:.2f} s; "
        f"lag after last patch {live['lag_after_last_patch_ms']:.0f} ms)",
        f"   watcher drained (paused)       {bl['drain_events_per_s']:>8.0f} events/s   "
        f"({bl['patches']} backlogged events in {bl['drain_seconds']:.2f} s)",
        "   CPU s live                     "
        + "  ".join(f"{k} {v:.1f}" for k, v in live["cpu_seconds"].items()),
        "   CPU s draining                 "
        + "  ".join(f"{k} {v:.1f}" for k, v in bl["cpu_seconds"].items()),
        "",
        f"4. event -> enqueue latency ({lat['samples']} samples, {lat['gap_ms']:.0f} ms apart)",
        "   from patch returned            "
        + "  ".join(f"{k} {lat['from_patch_return_ms'][k]:.1f}" for k in ("p50", "p99", "max"))
        + " ms",
        "   from patch sent                "
        + "  ".join(f"{k} {lat['from_patch_send_ms'][k]:.1f}" for k in ("p50", "p99", "max"))
        + " ms",
    ]
    prof = report.get("sync_breakdown")
    if prof:
        lines += ["", "5. sync steps re-run in the bench process (seconds)"]
        cols = [
            ("list_http_seconds", "LIST http"),
            ("list_json_parse_seconds", "json.loads"),
            ("replace_args_seconds", "dumps+index"),
            ("replace_redis_seconds", "redis writes"),
            ("route_seconds", "route"),
            ("enqueue_seconds_incl_celery_send", "add+send"),
        ]
        lines.append("   " + f"{'type':<12}" + "".join(f"{label:>13}" for _, label in cols))
        for plural, row in prof.items():
            lines.append(f"   {plural:<12}" + "".join(f"{row[key]:>13.2f}" for key, _ in cols))
        for plural, row in prof.items():
            lines.append(
                f"   {plural}: {row['list_mib']} MiB listed in {row['pages']} pages; Redis CPU "
                f"{row['redis_cpu_seconds_in_replace']} s in replace, "
                f"{row['evalsha_usec_per_object']} us per apply.lua"
            )
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rollouts", type=int, default=10_000, help="rollouts to create")
    parser.add_argument("--replicasets", type=int, default=30_000, help="replicasets to create")
    parser.add_argument("--events", type=int, default=5_000, help="patches in phase 3")
    parser.add_argument("--samples", type=int, default=500, help="latency samples (phase 4)")
    parser.add_argument("--gap-ms", type=float, default=10.0, help="pause between samples")
    parser.add_argument("--namespaces", type=int, default=10, help="namespaces to spread over")
    parser.add_argument("--threads", type=int, default=8, help="client threads (load, events)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip phase 5")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    args = parser.parse_args(argv)
    for name in ("rollouts", "replicasets", "events", "samples", "namespaces", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> Obj:
    n, m = args.rollouts, args.replicasets
    # Other processes on the machine skew every figure; record how busy it was.
    load_start = round(os.getloadavg()[0], 2)
    server = EmbeddedRedis(workdir / "redis").start()
    stack.callback(server.stop)
    assert server.process is not None
    redis_pid = server.process.pid
    url = server.url
    client = redis.Redis.from_url(url)
    stack.callback(client.close)
    env = child_env()
    api, api_url = start_api(env, workdir, stack)
    kubeconfig = workdir / "api-state" / "devcluster.kubeconfig"
    http = Http(api_url, args.threads, block=True)
    pool = ThreadPoolExecutor(args.threads)
    stack.callback(pool.shutdown, wait=True, cancel_futures=True)  # on Ctrl-C: drop queued
    namespaces = [f"bench-{i}" for i in range(args.namespaces)]

    print(f"redis {url}, API {api_url}; loading {n} rollouts and {m} replicasets", flush=True)
    loaded = load(http, pool, namespaces, n, m)
    rollouts, replicasets = loaded.pop("rollouts"), loaded.pop("replicasets")
    api_rss_loaded = proc_status(api.pid)

    print("phase 1: the watcher's initial sync", flush=True)
    used_before = int(client.info("memory")["used_memory"])
    client.config_resetstat()
    watcher_env = {
        **env,
        "ROLLOUTS_REDIS_URL": url,
        "ROLLOUTS_KUBECONFIG": str(kubeconfig),
        "ROLLOUTS_STATE_DIR": str(workdir / "state"),
        "ROLLOUTS_LOG_LEVEL": "INFO",
        "ROLLOUTS_WATCHER_LEASE_TTL": str(WATCHER_LEASE_TTL),
    }
    cpu_before = {"api": cpu_seconds(api.pid), "redis": cpu_seconds(redis_pid)}
    spawned = time.perf_counter()
    watcher = spawn("watcher", ["-m", "rollout_workers", "watcher"], watcher_env, workdir)
    stack.callback(watcher.stop)
    cpu_before["watcher"] = 0.0
    synced = sync(
        client,
        watcher=watcher,
        api=api,
        redis_pid=redis_pid,
        spawned=spawned,
        n=n,
        m=m,
        cpu_before=cpu_before,
    )
    sync_commands = evalsha_stats(client)

    print("phase 2: memory", flush=True)
    mem = memory(client, before=used_before, watcher=watcher, api=api, n=n, m=m)
    mem["api_rss_after_load_mib"] = mib(api_rss_loaded["VmRSS"])

    print(f"phase 3: {args.events} events, live and with the watcher paused", flush=True)
    ev = events(
        client,
        http=http,
        pool=pool,
        watcher=watcher,
        api=api,
        redis_pid=redis_pid,
        replicasets=replicasets,
        e=args.events,
    )

    print(f"phase 4: {args.samples} latency samples", flush=True)
    lat = latency(
        client,
        http=http,
        watcher=watcher,
        rollouts=rollouts,
        replicasets=replicasets,
        samples=args.samples,
        gap=args.gap_ms / 1000,
    )

    breakdown = None
    if not args.no_breakdown:
        print("phase 5: the sync's steps re-run in this process", flush=True)
        settings = Settings(state_dir=workdir / "state", redis={"url": url})
        breakdown = profile_sync(client, settings, url, kubeconfig)
    watcher.check_alive()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "redis": client.info("server")["redis_version"],
            "loadavg_1m_at_start_and_end": [load_start, round(os.getloadavg()[0], 2)],
        },
        "parameters": {
            "rollouts": n,
            "replicasets": m,
            "events": args.events,
            "samples": args.samples,
            "gap_ms": args.gap_ms,
            "namespaces": args.namespaces,
            "threads": args.threads,
            "page_size": Settings().kube.page_size,
            "watcher_lease_ttl": WATCHER_LEASE_TTL,
        },
        "load": loaded,
        "sync": {**synced, "evalsha_during_sync": sync_commands},
        "memory": mem,
        "events": ev,
        "latency": lat,
        "sync_breakdown": breakdown,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    started = time.perf_counter()
    report = run_in_tempdir(run, args, "bench-watcher-")
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print()
    print(render(report))
    print(f"\ntotal {report['total_seconds']:.0f} s")
    write_json(report, args.output)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
