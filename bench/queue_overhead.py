"""What the Redis workqueue costs on top of plain Celery, measured side by side in one run.

Run: `.venv/bin/python bench/queue_overhead.py [--keys N] [--messages N] [--concurrency N]`
(or `make bench`). It starts its own redis-server (EmbeddedRedis, in a temp dir) and its own
worker processes, and stops all of them at the end, also on Ctrl-C or an error.

1. adds/s: `WorkQueue.add` from this process with a real Celery sender, one key per call and
   batches of 100, for distinct keys (each add sends a message) and repeated ones (coalesced).
2. reconciles/s end to end: `python -m rollout_workers worker -c N -Q rollouts` (noop handler);
   M distinct keys are streamed in batches of 100; timed from the first add until the queue's
   counters show M reconciles. Also the rate at which the workers drained the backlog left
   when the producer finished, and the p50/p99 of the recorded reconcile durations.
3. Redis commands per reconcile during (2), from `INFO commandstats`: the workqueue's scripts
   (EVALSHA/EVAL) vs Celery/kombu's commands, task-event PUBLISHes apart. Commands that run
   inside our Lua scripts are counted by Redis too; they are not round trips, so they are
   measured in a calibration pass (same calls from this process) and subtracted.
4. Raw Celery on the same Redis with the same config, worker count and queue: a noop task that
   INCRs a counter, M messages, tasks/s to completion and commands per task.

Figures are printed and written to bench/results/queue_overhead.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from celery import Celery
from harness import exit_on_sigterm, percentile, run_in_tempdir, wait_for, write_json

from rollout_workers import logs
from rollout_workers.celeryapp.app import celery_config, create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.keys import ObjectKey
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import KINDS, Settings
from rollout_workers.workqueue import Claim, Outcome, WorkQueue

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "queue_overhead.json"

KIND = "rollouts"
CELERY_QUEUE = "rollouts"
BATCH = 100
RAW_TASK = "bench.noop"
NOOP_HANDLER = "rollout_workers.reconcile.handlers:noop"
RAW_COUNTER = "bench:raw:done"

#: Commands the bench itself issues around a measurement; never counted as system traffic.
HOUSEKEEPING = {"config", "info", "flushdb"}
#: The workqueue's own round trips.
SCRIPT_COMMANDS = {"evalsha", "eval", "script"}


# -- helpers ---------------------------------------------------------------------------------


def batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def command_calls(client: redis.Redis) -> Counter[str]:
    """Calls per command since the last CONFIG RESETSTAT (Lua-internal calls included)."""
    stats: dict[str, dict[str, Any]] = client.info("commandstats")
    calls: Counter[str] = Counter()
    for name, values in stats.items():
        command = name.removeprefix("cmdstat_").lower()
        if command not in HOUSEKEEPING:
            calls[command] = int(values["calls"])
    return calls


def per(counts: Counter[str], n: int) -> dict[str, float]:
    return {name: round(count / n, 3) for name, count in counts.most_common() if count}


# -- worker processes ------------------------------------------------------------------------


@dataclass
class Worker:
    """One worker host started in its own session, so its whole group can be stopped."""

    name: str
    node: str
    popen: subprocess.Popen[bytes]
    log: Path

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(
                f"worker {self.name} exited with {self.popen.returncode}:\n{self.tail()}"
            )

    def tail(self, lines: int = 30) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        # Pool children may outlive a killed parent; take down the group this bench created.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5)


def spawn_worker(name: str, argv: list[str], env: dict[str, str], workdir: Path) -> Worker:
    log = workdir / f"{name}.log"
    node = f"{name}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [sys.executable, *argv, f"--hostname={node}"],
            cwd=BENCH_DIR.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Worker(name, node, popen, log)


def wait_ready(app: Celery, worker: Worker, timeout: float = 60.0) -> None:
    """A worker is ready once its node answers a control ping (works at any log level)."""

    def answered() -> bool:
        replies = app.control.ping(destination=[worker.node], timeout=0.5)
        return any(worker.node in reply for reply in replies)

    wait_for(answered, timeout, f"worker {worker.node} to answer ping", alive=worker.check_alive)


# -- the raw Celery app (also run as the raw worker: `--raw-worker`) -------------------------


@functools.cache
def _counter_client(url: str, pid: int) -> redis.Redis:
    return redis.Redis.from_url(url)


def raw_app(settings: Settings, url: str) -> Celery:
    """The project's Celery config with a single noop task instead of the workqueue."""
    app = Celery("bench_raw", set_as_current=False)
    app.conf.update(celery_config(settings, url))

    def noop() -> None:
        _counter_client(url, os.getpid()).incr(RAW_COUNTER)

    app.task(name=RAW_TASK, ignore_result=True)(noop)
    return app


def worker_argv(settings: Settings, concurrency: int) -> list[str]:
    """The same `celery worker` options as `rollouts worker` (rollout_workers/cli/main.py)."""
    return [
        "worker",
        f"--concurrency={concurrency}",
        f"--queues={CELERY_QUEUE}",
        f"--loglevel={settings.log.level}",
        "--without-mingle",
        "--without-gossip",
    ]


def run_raw_worker(concurrency: int, hostname: str) -> int:
    settings = Settings()
    url = settings.redis.url
    if not url:
        raise SystemExit("--raw-worker needs ROLLOUTS_REDIS_URL")
    logs.configure(settings.log)
    app = raw_app(settings, url)
    return (
        app.worker_main(argv=[*worker_argv(settings, concurrency), f"--hostname={hostname}"]) or 0
    )


# -- phases ----------------------------------------------------------------------------------


def bench_adds(queue: WorkQueue, n: int) -> list[dict[str, Any]]:
    """Phase 1: WorkQueue.add throughput from this process, with the real Celery sender."""
    single = [f"bench/a1-{i}" for i in range(n)]
    batched = [f"bench/ab-{i}" for i in range(n)]
    cases: list[dict[str, Any]] = []
    plan = [(single, 1, "distinct"), (batched, BATCH, "distinct")]
    plan += [(single, 1, "repeated"), (batched, BATCH, "repeated")]  # now all queued
    for keys, per_call, mode in plan:
        queued = coalesced = 0
        started = time.perf_counter()
        for chunk in batches(keys, per_call):
            result = queue.add(chunk)
            queued += len(result.queued)
            coalesced += len(result.coalesced)
        seconds = time.perf_counter() - started
        expected = (n, 0) if mode == "distinct" else (0, n)
        if (queued, coalesced) != expected:
            raise RuntimeError(f"add {mode}/{per_call}: queued {queued}, coalesced {coalesced}")
        cases.append(
            {
                "keys": mode,
                "keys_per_call": per_call,
                "adds": n,
                "messages_sent": queued,
                "seconds": round(seconds, 4),
                "adds_per_s": round(n / seconds, 1),
            }
        )
    return cases


def lua_inner_calls(client: redis.Redis, settings: Settings, m: int) -> Counter[str]:
    """Commands run inside our scripts for m keys added in batches, claimed and done (ok).

    The same calls phase 2 makes, issued here with no sender and no workers running, so
    everything commandstats shows apart from EVALSHA/EVAL/SCRIPT ran inside a script.
    """
    cal = WorkQueue(
        client, kind=KIND, prefix="benchcal", settings=settings.queue, send=lambda keys: None
    )
    keys = [f"bench/k-{i}" for i in range(m)]
    client.config_resetstat()
    for chunk in batches(keys, BATCH):
        cal.add(chunk)
    for key in keys:
        token = f"cal:{key}"
        if cal.claim(ObjectKey(key), token).status is not Claim.CLAIMED:
            raise RuntimeError(f"calibration could not claim {key}")
        cal.done(ObjectKey(key), token, Outcome.OK, duration=0.0)
    calls = command_calls(client)
    return Counter({k: v for k, v in calls.items() if k not in SCRIPT_COMMANDS})


def wait_counter(
    read: Callable[[], int], target: int, timeout: float, worker: Worker
) -> tuple[float, int]:
    """Poll `read()` until it reaches target; returns the time it did and the polls made."""
    polls = 0

    def reached() -> bool:
        nonlocal polls
        polls += 1
        return read() >= target

    wait_for(reached, timeout, f"{target} completions", alive=worker.check_alive)
    return time.perf_counter(), polls


def split_commands(calls: Counter[str]) -> dict[str, Any]:
    workqueue = Counter({k: v for k, v in calls.items() if k in SCRIPT_COMMANDS})
    events = Counter({k: v for k, v in calls.items() if k == "publish"})
    counter = Counter({k: v for k, v in calls.items() if k in ("incr", "incrby")})
    celery = calls - workqueue - events - counter
    return {"workqueue": workqueue, "events": events, "counter": counter, "celery": celery}


def bench_reconciles(
    client: redis.Redis,
    queue: WorkQueue,
    worker: Worker,
    m: int,
    inner: Counter[str],
) -> dict[str, Any]:
    """Phases 2 and 3: stream m distinct keys to real workers; time, durations, commands."""
    keys = [f"bench/k-{i}" for i in range(m)]
    timeout = max(60.0, m / 20)
    client.config_resetstat()
    started = time.perf_counter()
    for chunk in batches(keys, BATCH):
        queue.add(chunk)
    added = time.perf_counter()

    def reconciles() -> int:
        return int(client.hget(queue.k_stats, "reconciles") or 0)

    backlog = m - reconciles()
    finished, polls = wait_counter(reconciles, m, timeout, worker)
    calls = command_calls(client)
    calls["hget"] -= polls + 1  # the bench's own polling
    stats = queue.stats()
    if stats.counters.get("reconciles") != m or stats.queued or stats.active:
        raise RuntimeError(f"queue not drained after {m} reconciles: {stats}")
    client_calls = calls - inner  # what went over the network
    leftover = inner - calls
    seconds = finished - started
    durations_ms = [d * 1000 for d in queue.durations()]
    parts = split_commands(client_calls)
    return {
        "reconciles": m,
        "seconds": round(seconds, 3),
        "add_seconds": round(added - started, 3),
        "reconciles_per_s": round(m / seconds, 1),
        "backlog_when_added": backlog,
        "drain_per_s": round(backlog / (finished - added), 1),
        "duration_ms": {
            "p50": round(percentile(durations_ms, 0.50), 3),
            "p99": round(percentile(durations_ms, 0.99), 3),
            "samples": len(durations_ms),
        },
        "counters": stats.counters,
        "commands_per_reconcile": {
            "total": round(client_calls.total() / m, 3),
            "workqueue_scripts": round(parts["workqueue"].total() / m, 3),
            "celery_kombu": round(parts["celery"].total() / m, 3),
            "event_publish": round(parts["events"].total() / m, 3),
            "lua_internal_not_round_trips": round(inner.total() / m, 3),
        },
        "breakdown_per_reconcile": {
            "workqueue": per(parts["workqueue"], m),
            "celery_kombu": per(parts["celery"], m),
            "events": per(parts["events"], m),
            "lua_internal": per(inner, m),
        },
        "calibration_mismatch": dict(+leftover),
    }


def bench_raw(client: redis.Redis, app: Celery, worker: Worker, m: int) -> dict[str, Any]:
    """Phase 4: m plain Celery noop tasks, same config, workers and queue."""
    timeout = max(60.0, m / 20)
    client.config_resetstat()
    started = time.perf_counter()
    for i in range(0, m, BATCH):
        with app.producer_or_acquire() as producer:
            for _ in range(min(BATCH, m - i)):
                app.send_task(RAW_TASK, queue=CELERY_QUEUE, producer=producer)
    sent = time.perf_counter()

    def done() -> int:
        return int(client.get(RAW_COUNTER) or 0)

    backlog = m - done()
    finished, polls = wait_counter(done, m, timeout, worker)
    calls = command_calls(client)
    calls["get"] -= polls + 1
    calls = +calls
    seconds = finished - started
    parts = split_commands(calls)
    return {
        "tasks": m,
        "seconds": round(seconds, 3),
        "send_seconds": round(sent - started, 3),
        "tasks_per_s": round(m / seconds, 1),
        "backlog_when_sent": backlog,
        "drain_per_s": round(backlog / (finished - sent), 1),
        "commands_per_task": {
            "total_excl_counter": round((calls - parts["counter"]).total() / m, 3),
            "celery_kombu": round(parts["celery"].total() / m, 3),
            "event_publish": round(parts["events"].total() / m, 3),
            "counter_incr": round(parts["counter"].total() / m, 3),
            "eval": round(parts["workqueue"].total() / m, 3),
        },
        "breakdown_per_task": {
            "celery_kombu": per(parts["celery"], m),
            "events": per(parts["events"], m),
            "scripts": per(parts["workqueue"], m),
        },
    }


# -- report ----------------------------------------------------------------------------------


def render(report: dict[str, Any]) -> str:
    p = report["parameters"]
    lines = [
        f"queue_overhead  {report['date']}  {report['machine']['cores']} cores  "
        f"keys={p['keys']} messages={p['messages']} concurrency={p['concurrency']} "
        f"log_level={p['log_level']}",
        "",
        "1. WorkQueue.add from one process (real Celery sender)",
        f"   {'keys':<10}{'per call':>9}{'adds':>8}{'messages':>10}{'adds/s':>12}",
    ]
    for case in report["adds"]:
        lines.append(
            f"   {case['keys']:<10}{case['keys_per_call']:>9}{case['adds']:>8}"
            f"{case['messages_sent']:>10}{case['adds_per_s']:>12,.0f}"
        )
    wq, raw = report["workqueue"], report["raw_celery"]
    c, rc = wq["commands_per_reconcile"], raw["commands_per_task"]
    lines += [
        "",
        "2. End to end                       workqueue        raw Celery",
        f"   items                          {wq['reconciles']:>10,}        {raw['tasks']:>10,}",
        f"   seconds (first add -> done)    {wq['seconds']:>10.2f}        {raw['seconds']:>10.2f}",
        f"   producer seconds               {wq['add_seconds']:>10.2f}        "
        f"{raw['send_seconds']:>10.2f}",
        f"   per second                     {wq['reconciles_per_s']:>10,.0f}        "
        f"{raw['tasks_per_s']:>10,.0f}",
        f"   backlog when producer finished {wq['backlog_when_added']:>10,}        "
        f"{raw['backlog_when_sent']:>10,}",
        f"   drain rate of that backlog /s  {wq['drain_per_s']:>10,.0f}        "
        f"{raw['drain_per_s']:>10,.0f}",
        f"   reconcile duration p50 / p99   {wq['duration_ms']['p50']:.3f} / "
        f"{wq['duration_ms']['p99']:.3f} ms",
        "",
        "3. Redis commands per item (client round trips; Lua-internal excluded)",
        f"   scripts (EVALSHA/EVAL/SCRIPT)  {c['workqueue_scripts']:>10.2f}        "
        f"{rc['eval']:>10.2f}",
        f"   Celery/kombu (excl. events)    {c['celery_kombu']:>10.2f}        "
        f"{rc['celery_kombu']:>10.2f}",
        f"   task events (PUBLISH)          {c['event_publish']:>10.2f}        "
        f"{rc['event_publish']:>10.2f}",
        f"   total                          {c['total']:>10.2f}        "
        f"{rc['total_excl_counter']:>10.2f}",
        f"   (bench counter INCR, raw only)                       {rc['counter_incr']:>10.2f}",
        f"   (run inside our Lua scripts)   {c['lua_internal_not_round_trips']:>10.2f}",
        "   workqueue Celery/kombu: "
        + ", ".join(f"{k} {v}" for k, v in wq["breakdown_per_reconcile"]["celery_kombu"].items()),
        "   raw Celery/kombu:       "
        + ", ".join(f"{k} {v}" for k, v in raw["breakdown_per_task"]["celery_kombu"].items()),
        "   workqueue scripts:      "
        + ", ".join(f"{k} {v}" for k, v in wq["breakdown_per_reconcile"]["workqueue"].items()),
        "   raw Celery scripts:     "
        + ", ".join(f"{k} {v}" for k, v in raw["breakdown_per_task"]["scripts"].items()),
        "",
        "4. Ratios (workqueue / raw Celery)",
        f"   throughput (first add -> done) {report['ratios']['throughput']:.3f}",
        f"   drain rate of the backlog      {report['ratios']['drain']:.3f}",
        f"   commands per item              {report['ratios']['commands']:.3f}",
        f"   commands per item, no events   {report['ratios']['commands_excl_events']:.3f}",
    ]
    if wq["calibration_mismatch"]:
        lines.append(f"   note: Lua calibration did not match: {wq['calibration_mismatch']}")
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--keys", type=int, default=1000, help="keys per add case (phase 1)")
    parser.add_argument(
        "--messages", type=int, default=3000, help="reconciles and raw tasks (phases 2-4)"
    )
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="workers' log level (INFO logs two lines per task)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    parser.add_argument("--raw-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hostname", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("keys", "messages", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    server = EmbeddedRedis(workdir / "redis").start()
    stack.callback(server.stop)
    url = server.url
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    env.update(
        ROLLOUTS_REDIS_URL=url,
        ROLLOUTS_STATE_DIR=str(workdir / "state"),
        ROLLOUTS_LOG_LEVEL=args.log_level,
        # The queue's own cost: every kind reconciles with the no-op handler.
        ROLLOUTS_RECONCILE_HANDLERS=json.dumps({k: NOOP_HANDLER for k in KINDS}),
    )
    settings = Settings(
        state_dir=workdir / "state", redis={"url": url}, log={"level": args.log_level}
    )
    client = redis.Redis.from_url(url)
    stack.callback(client.close)
    app = create_app(settings, url)
    queue = build_runtime(app, settings, url).queue(KIND)
    m = args.messages

    print(f"redis {url}; phase 1: adds ({args.keys} keys per case)", flush=True)
    adds = bench_adds(queue, args.keys)
    client.flushdb()

    print(f"calibrating Lua-internal commands ({m} keys)", flush=True)
    inner = lua_inner_calls(client, settings, m)
    client.flushdb()

    print(f"phase 2+3: {m} reconciles on {args.concurrency} worker processes", flush=True)
    argv = ["-m", "rollout_workers", "worker", "-c", str(args.concurrency), "-Q", CELERY_QUEUE]
    worker = spawn_worker("workqueue", argv, env, workdir)
    stack.callback(worker.stop)
    wait_ready(app, worker)
    workqueue = bench_reconciles(client, queue, worker, m, inner)
    worker.stop()
    client.flushdb()

    print(f"phase 4: {m} raw Celery tasks on {args.concurrency} worker processes", flush=True)
    raw = raw_app(settings, url)
    argv = [str(Path(__file__).resolve()), "--raw-worker", f"--concurrency={args.concurrency}"]
    raw_worker = spawn_worker("raw", argv, env, workdir)
    stack.callback(raw_worker.stop)
    wait_ready(raw, raw_worker)
    raw_celery = bench_raw(client, raw, raw_worker, m)
    raw_worker.stop()

    wc, rc = workqueue["commands_per_reconcile"], raw_celery["commands_per_task"]
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "redis": client.info("server")["redis_version"],
        },
        "parameters": {
            "keys": args.keys,
            "messages": m,
            "concurrency": args.concurrency,
            "batch": BATCH,
            "log_level": args.log_level,
            "handler": NOOP_HANDLER,
        },
        "adds": adds,
        "workqueue": workqueue,
        "raw_celery": raw_celery,
        "ratios": {
            "throughput": round(workqueue["reconciles_per_s"] / raw_celery["tasks_per_s"], 3),
            "drain": round(workqueue["drain_per_s"] / raw_celery["drain_per_s"], 3),
            "commands": round(wc["total"] / rc["total_excl_counter"], 3),
            "commands_excl_events": round(
                (wc["total"] - wc["event_publish"])
                / (rc["total_excl_counter"] - rc["event_publish"]),
                3,
            ),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.raw_worker:
        return run_raw_worker(args.concurrency, args.hostname)
    # Settings below come from this script's arguments only, never from the caller's env.
    for name in [k for k in os.environ if k.startswith("ROLLOUTS_")]:
        del os.environ[name]
    exit_on_sigterm()
    report = run_in_tempdir(run, args, "queue-overhead-")
    print()
    print(render(report))
    write_json(report, args.output)
    print(f"\nwritten to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
