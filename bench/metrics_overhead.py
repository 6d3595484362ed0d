"""Redis cost of the controller metrics per reconcile: round trips and server-side commands.

One process, a private embedded Redis, N reconciles of distinct keys through the real
workqueue scripts and sync runner (add, claim, run_sync -> done) with a handler that records
`--requests` API requests per reconcile (as a real reconcile's Kube client would). Redis' own
INFO commandstats gives the commands: top-level calls are round trips (every step is one
EVALSHA), the rest are the commands the scripts ran inside Redis.

Run it on this tree, and on a tree without metrics for the "before" figures:

    .venv/bin/python bench/metrics_overhead.py [--reconciles N] [--requests N]
    PYTHONPATH=../main .venv/bin/python bench/metrics_overhead.py   # the tree before metrics

It prints a table and writes bench/results/metrics_overhead.json (or prints only, with --no-record).
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from rollout_workers.keys import ObjectKey
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.reconcile import runner
from rollout_workers.reconcile.handlers import Result, SyncRequest
from rollout_workers.settings import QueueSettings
from rollout_workers.workqueue import WorkQueue

TOP_LEVEL = {"evalsha", "eval", "info", "ping", "script|load", "script", "hello", "client"}


def commandstats(client: redis.Redis) -> dict[str, int]:
    info = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


def measure(client: redis.Redis, reconciles: int, requests: int) -> dict[str, Any]:
    has_metrics = "counts" in inspect.signature(runner.run_sync).parameters
    queue = WorkQueue(client, kind="rollouts", prefix="bench", settings=QueueSettings(),
                      send=lambda keys: None)  # fmt: skip
    extra: dict[str, Any] = {}
    counts = None
    if has_metrics:
        from rollout_workers.counters import Keys, PendingCounts

        counts = PendingCounts(Keys("bench"))
        extra["counts"] = counts

    def handler(request: SyncRequest) -> Result:
        name = request.key.split("/")[1]
        for i in range(requests):
            if counts is not None:
                verb = ("GET", "PATCH", "POST")[i % 3]
                counts.request(
                    verb, f"/apis/argoproj.io/v1alpha1/namespaces/b/rollouts/{name}", 200
                )
        return Result.done()

    keeper = runner.LeaseKeeper(interval=60)
    keys = [ObjectKey(f"b/k-{i}") for i in range(reconciles)]
    client.config_resetstat()
    started = time.perf_counter()
    for key in keys:
        queue.add([key])
        runner.run_sync(queue=queue, handler=handler, raw_key=key, keeper=keeper, **extra)
    seconds = time.perf_counter() - started
    stats = commandstats(client)
    stats.pop("config|resetstat", None)
    stats.pop("config", None)
    top = sum(v for k, v in stats.items() if k in TOP_LEVEL)
    inner = sum(v for k, v in stats.items() if k not in TOP_LEVEL)
    return {
        "metrics": has_metrics,
        "reconciles": reconciles,
        "requests_per_reconcile": requests,
        "round_trips_per_reconcile": round(top / reconciles, 2),
        "commands_in_scripts_per_reconcile": round(inner / reconciles, 2),
        "us_per_reconcile": round(seconds / reconciles * 1e6, 1),
        "commandstats": stats,
    }


def scrape_time(client: redis.Redis, objects: int) -> dict[str, Any]:
    """Seconds of one pool-wide scrape with `objects` rollouts in the cache (each with a
    reconcile histogram and a couple of request series), and the exposition's size."""
    from rollout_workers.counters import Keys
    from rollout_workers.metrics.endpoint import pool_exposition

    keys = Keys("scrape")
    pipe = client.pipeline(transaction=False)
    for i in range(objects):
        name = f"r-{i}"
        obj = {
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(i)},
            "spec": {"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 20}]}},
                     "template": {"spec": {"containers": [{"name": "app", "image": "x:1"}]}}},
            "status": {"replicas": 3, "availableReplicas": 3, "updatedReplicas": 3,
                       "conditions": [{"type": "Progressing", "status": "True",
                                       "reason": "NewReplicaSetAvailable"}]},
        }  # fmt: skip
        pipe.hset("scrape:cache:rollouts:obj", f"ns/{name}", json.dumps(obj))
        pipe.hset(keys.reconcile("rollouts"), mapping={f"ns/{name}|b0": 5, f"ns/{name}|sum": 9})
        pipe.hset(keys.k8s_requests, f"rollouts|ns|{name}|Patch|200", 3)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    started = time.perf_counter()
    text = pool_exposition(client, prefix="scrape")
    return {
        "objects": objects,
        "scrape_seconds": round(time.perf_counter() - started, 3),
        "exposition_bytes": len(text),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reconciles", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--scrape-objects", type=int, default=10_000,
                        help="Rollouts in the cache for the scrape timing (0: skip).")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            client = redis.Redis.from_url(server.url)
            result = measure(client, args.reconciles, args.requests)
            if result["metrics"] and args.scrape_objects:
                result["scrape"] = scrape_time(client, args.scrape_objects)
            client.close()
        finally:
            server.stop()
    print(f"{'metrics':<10}{'round trips':>12}{'cmds in scripts':>17}{'us/reconcile':>14}")
    print(f"{'on' if result['metrics'] else 'off':<10}{result['round_trips_per_reconcile']:>12}"
          f"{result['commands_in_scripts_per_reconcile']:>17}"
          f"{result['us_per_reconcile']:>14}")  # fmt: skip
    if "scrape" in result:
        sc = result["scrape"]
        print(f"scrape with {sc['objects']} rollouts: {sc['scrape_seconds']} s, "
              f"{sc['exposition_bytes'] // 1024} KiB")  # fmt: skip
    if not args.no_record:
        out = Path(__file__).parent / "results" / "metrics_overhead.json"
        runs = json.loads(out.read_text()) if out.exists() else {}
        runs["on" if result["metrics"] else "off"] = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            **result,
        }
        out.write_text(json.dumps(runs, indent=2) + "\n")


if __name__ == "__main__":
    main()
