"""Per-tenant fairness: how long one tenant's promote waits behind another tenant's flood.

Run: `.venv/bin/python bench/fairness.py [--flood N] [--resync N] [--promotes N]`. It starts its
own redis-server (EmbeddedRedis, in a temp dir) and its own `python -m rollout_workers worker`
processes, whose handler (`rollout_workers.reconcile.handlers:timed`) takes a few ms per key, and
stops all of them at the end, also on Ctrl-C or an error.

Once with fairness by namespace and once with plain FIFO (`ROLLOUTS_QUEUE_FAIRNESS=off`), on a
fresh Redis each time:
1. a full resync of `--resync` keys over 50 namespaces is queued (`WorkQueue.resync`), then
   tenant A (namespace `tenant-a`) has `--flood` keys updated at once (event adds);
2. tenant B (namespace `tenant-b`) promotes one of its rollouts every second (an event add of
   a key of its own) `--promotes` times; each promote's wait is from just before its add to the
   start of its reconcile (the handler's record, same host clock).
B's p50, p99 and max wait are printed per mode and written to bench/results/fairness.json; the
last line compares the p99s.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
from harness import exit_on_sigterm, percentile, run_in_tempdir, spawn, wait_for, write_json

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import KINDS, Settings

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "fairness.json"

KIND = "rollouts"
HANDLER = "rollout_workers.reconcile.handlers:timed"
RESYNC_NAMESPACES = 50
MODES = {"fair": "namespace", "fifo": "off"}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flood", type=int, default=5000, help="tenant A's keys updated at once")
    parser.add_argument("--resync", type=int, default=10000, help="keys of the resync in flight")
    parser.add_argument("--promotes", type=int, default=20, help="tenant B's promotes, 1/s")
    parser.add_argument("--sync-ms", type=float, default=3.0, help="ms each reconcile takes")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    return parser.parse_args(argv)


def run_mode(
    args: argparse.Namespace, workdir: Path, url: str, name: str, fairness: str
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    env.update(
        ROLLOUTS_REDIS_URL=url,
        ROLLOUTS_STATE_DIR=str(workdir / "state"),
        ROLLOUTS_LOG_LEVEL="WARNING",
        ROLLOUTS_RECONCILE_HANDLERS=json.dumps({k: HANDLER for k in KINDS}),
        ROLLOUTS_QUEUE_FAIRNESS=fairness,
    )
    settings = Settings(
        state_dir=workdir / "state", redis={"url": url}, queue={"fairness": fairness}
    )
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.set("rw:bench:sync_seconds", args.sync_ms / 1000)
    queue = build_runtime(create_app(settings, url), settings, url).queue(KIND)
    started = "rw:bench:started"

    with contextlib.ExitStack() as stack:
        argv = ["-m", "rollout_workers", "worker", "-c", str(args.concurrency), "-Q", "rollouts"]
        worker = spawn(f"worker-{name}", argv, env, workdir, stack)
        # Ready once a reconcile has run (the worker consumes and claims).
        queue.add(["warmup/ro"])
        wait_for(
            lambda: client.hexists(started, "warmup/ro"), 60, "the worker", alive=worker.check_alive
        )

        resync_keys = [f"team-{i % RESYNC_NAMESPACES}/ro-{i}" for i in range(args.resync)]
        client.sadd(queue.k_known, *resync_keys)
        queue.resync()
        queue.add([f"tenant-a/ro-{i}" for i in range(args.flood)])
        backlog = queue.stats().queued
        print(f"  {name}: {backlog} keys queued; tenant B promotes every second", flush=True)

        waits = []
        for i in range(args.promotes):
            key = f"tenant-b/ro-{i}"
            added = time.time()
            queue.add([key])
            time.sleep(max(0.0, added + 1 - time.time()))
            waits.append((key, added))
        results = []
        for key, added in waits:
            value = wait_for(
                lambda k=key: client.hget(started, k),
                600,
                f"{key} to start",
                alive=worker.check_alive,
            )
            results.append(float(value) - added)  # type: ignore[arg-type]
        left = queue.stats().queued
    return {
        "fairness": fairness,
        "backlog": backlog,
        "queued_after": left,
        "waits_s": [round(w, 4) for w in results],
        "p50_s": percentile(results, 0.5),
        "p99_s": percentile(results, 0.99),
        "max_s": max(results),
    }


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    server = EmbeddedRedis(workdir / "redis").start()
    stack.callback(server.stop)
    modes = {}
    for name, fairness in MODES.items():
        print(f"mode {name} (fairness {fairness})", flush=True)
        modes[name] = run_mode(args, workdir, server.url, name, fairness)
    return {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "params": {
            "flood": args.flood,
            "resync": args.resync,
            "resync_namespaces": RESYNC_NAMESPACES,
            "promotes": args.promotes,
            "sync_ms": args.sync_ms,
            "concurrency": args.concurrency,
            "handler": HANDLER,
        },
        "modes": modes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    report = run_in_tempdir(run, args, "bench-fairness-")
    write_json(report, args.output)
    for name, m in report["modes"].items():
        print(
            f"{name:<5} tenant B wait p50 {m['p50_s']:.3f} s  p99 {m['p99_s']:.3f} s  "
            f"max {m['max_s']:.3f} s  (backlog {m['backlog']}, {m['queued_after']} left)"
        )
    fair, fifo = report["modes"]["fair"], report["modes"]["fifo"]
    print(f"fairness: tenant B p99 {fair['p99_s']:.2f} s (fifo {fifo['p99_s']:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
