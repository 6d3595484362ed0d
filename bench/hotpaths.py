"""Known hot paths: a full resync's enqueue, and the watcher's and a worker's memory at scale.

Run: `.venv/bin/python bench/hotpaths.py [--keys 10000] [--rollouts 10000]
[--replicasets 30000] [--reconciles 300]`. It starts its own redis-server (EmbeddedRedis, in a
temp dir), and for phase 2 the embedded API (`python -m devcluster`), a real
`python -m rollout_workers watcher` and then a real worker, and stops all of them at the end,
also on Ctrl-C or an error.

1. Enqueue: K known keys in `rw:wq:rollouts:known`, none queued, no workers. `rollouts enqueue
   --all` (as `python -m rollout_workers enqueue --all`) timed as a whole process, beside the
   same CLI with no key known (interpreter, imports, connecting: the floor), and
   `WorkQueue.resync()` in this process (best of 3; the queue state and messages are deleted
   between runs). Every run must leave K queued keys and K `rollouts.sync` messages.
2. Memory: N rollouts and M ReplicaSets (bench/watcher.py's objects) are written into a
   devcluster `--state` snapshot, which the API loads at start: the fastest legitimate way to
   hold 40k objects (creating them over HTTP takes about 75 s). The snapshot starts as one the
   API itself wrote (its namespaces and CRDs), with the objects appended. The watcher then
   starts; once the cache holds every object and every rollout's message is sent, its VmHWM
   (the peak RSS across the initial relist) and VmRSS are read. Then one worker host
   (`worker -c 1 -Q rollouts`, the real rollout handler) reconciles R keys at that size, and
   the VmRSS/VmHWM of its main process and its pool process are read.

Figures are printed and written to bench/results/hotpaths.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
from harness import (
    REPO,
    Http,
    child_env,
    exit_on_sigterm,
    run_in_tempdir,
    spawn,
    start_api,
    wait_for,
    write_json,
)
from watcher import mib, proc_status, replicaset_body, rollout_body, wait_quiet

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import Settings

Obj = dict[str, Any]

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "hotpaths.json"
PREFIX = "rw"
QUEUED = f"{PREFIX}:wq:rollouts:queued"
KNOWN = f"{PREFIX}:wq:rollouts:known"


def base_env(url: str, workdir: Path) -> dict[str, str]:
    env = child_env()
    env.update(
        ROLLOUTS_REDIS_URL=url, ROLLOUTS_STATE_DIR=str(workdir / "state"), ROLLOUTS_LOG_LEVEL="INFO"
    )
    return env


# -- 1. enqueue ------------------------------------------------------------------------------


def cli_enqueue_all(env: dict[str, str]) -> tuple[float, str]:
    """`rollouts enqueue --all` as a process; its wall time and its last output line."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rollout_workers", "enqueue", "--all"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, done.stdout.strip().splitlines()[-1]


def reset_queue(client: redis.Redis) -> None:
    client.delete(QUEUED, "rollouts", f"{PREFIX}:wq:rollouts:held")


def enqueue(client: redis.Redis, env: dict[str, str], url: str, workdir: Path, k: int) -> Obj:
    client.flushdb()
    floor, floor_line = cli_enqueue_all(env)
    keys = [f"bench-{i % 10}/app-{i:06d}" for i in range(k)]
    client.sadd(KNOWN, *keys)
    cli_seconds, line = cli_enqueue_all(env)
    if client.zcard(QUEUED) != k or client.llen("rollouts") != k:
        raise RuntimeError(f"the CLI left {client.zcard(QUEUED)} queued: {line}")
    settings = Settings(state_dir=workdir / "state", redis={"url": url})
    queue = build_runtime(create_app(settings, url), settings, url).queue("rollouts")
    runs = []
    for _ in range(3):
        reset_queue(client)
        started = time.perf_counter()
        result = queue.resync()
        runs.append(time.perf_counter() - started)
        if len(result.queued) != k or client.llen("rollouts") != k:
            raise RuntimeError(f"resync queued {len(result.queued)} of {k}")
    return {
        "keys": k,
        "cli_seconds": round(cli_seconds, 3),
        "cli_output": line,
        "cli_with_no_keys_seconds": round(floor, 3),
        "cli_no_keys_output": floor_line,
        "resync_in_process_seconds": [round(s, 3) for s in runs],
        "resync_in_process_best_seconds": round(min(runs), 3),
        "keys_per_s_in_process": round(k / min(runs)),
    }


# -- 2. memory at scale ----------------------------------------------------------------------


def seed_state(env: dict[str, str], workdir: Path, namespaces: list[str], n: int, m: int) -> Path:
    """A devcluster snapshot with the namespaces, the CRDs and N rollouts + M ReplicaSets."""
    state = workdir / "seed.json"
    with contextlib.ExitStack() as stack:
        api, url = start_api(env, workdir, stack, name="seed-api", state_file=state)
        http = Http(url)
        for ns in namespaces:
            http.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        api.stop()
    snapshot = json.loads(state.read_text())
    rv = int(snapshot["resourceVersion"])
    created = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def stored(body: Obj, ns: str) -> Obj:
        nonlocal rv
        rv += 1
        meta = body["metadata"]
        meta.update(namespace=ns, resourceVersion=str(rv), creationTimestamp=created)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta["generation"] = 1
        return body

    rollouts = []
    for i in range(n):
        ns = namespaces[i % len(namespaces)]
        rollouts.append(stored(rollout_body(f"app-{i:06d}"), ns))
    objects = snapshot["objects"]
    objects.extend(rollouts)
    for j in range(m):
        owner = rollouts[j % n]
        objects.append(stored(replicaset_body(owner, j // n + 1), owner["metadata"]["namespace"]))
    snapshot["resourceVersion"] = rv
    state.write_text(json.dumps(snapshot))
    return state


def process_memory(pid: int) -> Obj:
    status = proc_status(pid)
    return {"rss_mib": mib(status["VmRSS"]), "hwm_mib": mib(status["VmHWM"])}


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(c) for c in text.split()]


def memory(
    client: redis.Redis, env: dict[str, str], workdir: Path, stack: contextlib.ExitStack, args: Any
) -> Obj:
    n, m = args.rollouts, args.replicasets
    client.flushdb()
    namespaces = [f"bench-{i}" for i in range(args.namespaces)]
    started = time.perf_counter()
    state = seed_state(env, workdir, namespaces, n, m)
    seeded = time.perf_counter() - started
    api, api_url = start_api(env, workdir, stack, state_file=state)
    wait_quiet(Http(api_url))
    loaded = time.perf_counter() - started
    kubeconfig = workdir / "api-state" / "devcluster.kubeconfig"
    env = {**env, "ROLLOUTS_KUBECONFIG": str(kubeconfig), "ROLLOUTS_WATCHER_LEASE_TTL": "30"}

    print(f"  the watcher's initial relist of {n} rollouts + {m} replicasets", flush=True)
    watcher = spawn("watcher", ["-m", "rollout_workers", "watcher"], env, workdir, stack)
    since = time.perf_counter()
    timeout = 120 + (n + m) / 100
    wait_for(
        lambda: client.llen("rollouts") >= n and client.zcard(QUEUED) >= n,
        timeout,
        "every rollout queued and its message sent",
        alive=watcher.check_alive,
    )
    synced = time.perf_counter() - since
    rs_key = f"{PREFIX}:cache:replicasets:obj"
    wait_for(lambda: client.hlen(rs_key) >= m, timeout, "every replicaset cached")
    watcher_memory = process_memory(watcher.pid)
    api_memory = process_memory(api.pid)

    print(f"  one worker host reconciling {args.reconciles} rollouts at that size", flush=True)
    argv = ["-m", "rollout_workers", "worker", "-c", "1", "-Q", "rollouts"]
    worker = spawn("worker", argv, {**env, "ROLLOUTS_LOG_LEVEL": "WARNING"}, workdir, stack)
    stats = f"{PREFIX}:wq:rollouts:stats"
    since = time.perf_counter()
    wait_for(
        lambda: int(client.hget(stats, "reconciles") or 0) >= args.reconciles,
        600,
        f"{args.reconciles} reconciles",
        interval=0.5,
        alive=worker.check_alive,
    )
    reconciled = time.perf_counter() - since
    worker_memory = {"host": process_memory(worker.pid)}
    for i, child in enumerate(children(worker.pid)):
        worker_memory[f"pool-{i}"] = process_memory(child)
    counters = {k.decode(): int(v) for k, v in client.hgetall(stats).items()}
    worker.stop()
    watcher.stop()
    return {
        "rollouts": n,
        "replicasets": m,
        "seed_seconds": round(seeded, 1),
        "api_loaded_seconds": round(loaded, 1),
        "watcher_sync_seconds": round(synced, 1),
        "watcher": watcher_memory,
        "api": api_memory,
        "worker_seconds": round(reconciled, 1),
        "worker_counters": counters,
        "worker": worker_memory,
    }


# -- report ----------------------------------------------------------------------------------


def render(report: Obj) -> str:
    lines = []
    if e := report.get("enqueue"):
        lines += [
            f"1. enqueue --all of {e['keys']} keys, no workers",
            f"   CLI process           {e['cli_seconds']:.2f} s ({e['cli_output']})",
            f"   CLI, no key known     {e['cli_with_no_keys_seconds']:.2f} s (startup floor)",
            f"   resync in process     {e['resync_in_process_best_seconds']:.3f} s best of 3"
            f" ({e['keys_per_s_in_process']} keys/s)",
        ]
    if mem := report.get("memory"):
        w = mem["watcher"]
        lines += [
            f"2. memory at {mem['rollouts']} rollouts + {mem['replicasets']} replicasets",
            f"   watcher after its relist  VmHWM {w['hwm_mib']} MiB, VmRSS {w['rss_mib']} MiB"
            f" (sync {mem['watcher_sync_seconds']} s)",
        ]
        for name, value in mem["worker"].items():
            lines.append(
                f"   worker {name:<8}         VmHWM {value['hwm_mib']} MiB,"
                f" VmRSS {value['rss_mib']} MiB"
            )
        lines.append(
            f"   after {mem['worker_counters'].get('reconciles', 0)} reconciles"
            f" in {mem['worker_seconds']} s"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--keys", type=int, default=10_000, help="known keys (phase 1)")
    parser.add_argument("--rollouts", type=int, default=10_000, help="rollouts (phase 2)")
    parser.add_argument("--replicasets", type=int, default=30_000, help="replicasets (phase 2)")
    parser.add_argument("--namespaces", type=int, default=10, help="namespaces to spread over")
    parser.add_argument("--reconciles", type=int, default=300, help="worker reconciles (phase 2)")
    parser.add_argument("--only", choices=["enqueue", "memory"], help="run one phase")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    args = parser.parse_args(argv)
    for name in ("keys", "rollouts", "replicasets", "namespaces", "reconciles"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> Obj:
    load_start = round(os.getloadavg()[0], 2)
    server = EmbeddedRedis(workdir / "redis").start()
    stack.callback(server.stop)
    client = redis.Redis.from_url(server.url)
    stack.callback(client.close)
    env = base_env(server.url, workdir)
    report: Obj = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "redis": client.info("server")["redis_version"],
        },
        "parameters": {k: v for k, v in vars(args).items() if k != "output"},
    }
    if args.only in (None, "enqueue"):
        print(f"phase 1: enqueue --all of {args.keys} keys", flush=True)
        report["enqueue"] = enqueue(client, env, server.url, workdir, args.keys)
    if args.only in (None, "memory"):
        print("phase 2: memory at scale", flush=True)
        report["memory"] = memory(client, env, workdir, stack, args)
    report["machine"]["loadavg_1m_at_start_and_end"] = [load_start, round(os.getloadavg()[0], 2)]
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    report = run_in_tempdir(run, args, "bench-hotpaths-")
    print()
    print(render(report))
    write_json(report, args.output)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
