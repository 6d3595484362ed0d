"""How late AnalysisRun measurements are taken when every wait is a Redis timer.

Run: `.venv/bin/python bench/analysis_timers.py [--runs 200] [--interval 5] [--minutes 5]
[--workers 2] [--concurrency 4]` (a little over `--minutes` at the defaults; `--runs 20
--minutes 0.5` is a quick smoke test). It starts its own redis-server (EmbeddedRedis, in a temp
dir), the embedded API in its own process (`python -m devcluster`), a real
`python -m rollout_workers watcher`, `beat` and N `worker` hosts, and stops all of them at the
end, also on Ctrl-C or an error.

A metrics server in this process (ThreadingHTTPServer on 127.0.0.1) answers `/m/<run>` with
`{"value": 1}` and records, for every request, the run and the wall time it was received and
answered. R AnalysisRuns (creations spread over one interval) each have one web metric
`interval: <I>s`, `count: minutes*60/I + 1`, `successCondition: "true"`, pointing at it. The
measurement times are the server's receive times, so lateness is measured to the millisecond,
not to the second the status records:

* lateness of measurement k+1 = t(k+1) - (finish(k) + I), finish(k) = when the server
  answered measurement k (the worker stamps finishedAt right after reading the answer);
* first measurement: creation (the POST returned) -> first request;
* lateness per minute of the run, to see whether it grows;
* where it goes, per measurement: the timer's due time as Redis holds it (the `timers` zset,
  sampled every 0.25 s) minus finish(k) + I (the controller schedules from finishedAt truncated
  to the second, and the workqueue applies the delay when the reconcile ends), then the wait for
  the next timer tick (`rw:system:ticks` stamps, sampled), then tick -> request (Celery
  message, claim, reconcile up to the HTTP call);
* the backlog over time (overdue timers, queued keys, Celery queue lengths), the CPU seconds of
  every process during the measurement window, the worker CPU and wall time per reconcile, the
  Redis commands per measurement and the Redis round-trip time.

Figures are printed and written to bench/results/analysis_timers.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import os
import platform
import socket
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis
from celery import Celery
from harness import (
    CLK_TCK,
    Http,
    Proc,
    child_env,
    cpu_seconds,
    exit_on_sigterm,
    percentile,
    run_in_tempdir,
    spawn,
    start_api,
    wait_for,
    write_json,
)

from rollout_workers.celeryapp.app import create_app
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import Settings
from rollout_workers.workqueue.queue import DURATIONS_KEPT

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "analysis_timers.json"

PREFIX = "rw"
KIND = "analysisruns"
NAMESPACE = "bench-analysis"
METRIC = "m"
POLL = 0.05
SAMPLE_EVERY = 0.25
GOAL_P99 = 2.0
ARGO_ISSUE = "https://github.com/argoproj/argo-rollouts/issues/3283"
ARGO_NOTE = (
    "argo-rollouts #3283 (v1.6.3, in-memory workqueue AddAfter): a 1m-interval web metric was "
    "measured later and later over days, up to ~10 min apart (drift of minutes); not run here"
)

Obj = dict[str, Any]
Stats = dict[str, float | int]


# -- helpers ---------------------------------------------------------------------------------


def summary(values: Sequence[float], digits: int = 3) -> Stats:
    """n, min, p50, p90, p99, max and mean of a sample (NaN when empty)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "min": round(min(values), digits),
        "p50": round(percentile(values, 0.50), digits),
        "p90": round(percentile(values, 0.90), digits),
        "p99": round(percentile(values, 0.99), digits),
        "max": round(max(values), digits),
        "mean": round(sum(values) / len(values), digits),
    }


def group_cpu(pgid: int) -> float:
    """CPU seconds of every live process in a process group (a worker host and its pool).

    Children that exited are counted in their parent's cutime/cstime only once reaped; pool
    processes live for the whole run, so the live sum is what the group used."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


def redis_now(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return int(seconds) + int(micros) / 1e6


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


# -- processes -------------------------------------------------------------------------------


def start_worker(
    app: Celery,
    index: int,
    *,
    env: dict[str, str],
    workdir: Path,
    stack: contextlib.ExitStack,
    concurrency: int | None = None,
    pool: str | None = None,
) -> Proc:
    """A worker host: `rollouts worker` at its defaults unless `concurrency` or `pool` say."""
    node = f"host-{index}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = ["-m", "rollout_workers", "worker", "-n", node]
    if concurrency:
        argv += ["-c", str(concurrency)]
    if pool:
        argv += ["-P", pool]
    proc = spawn(f"worker-{index}", argv, env, workdir, stack)
    proc.node = node

    def answered() -> bool:
        replies = app.control.ping(destination=[node], timeout=0.5)
        return any(node in reply for reply in replies)

    wait_for(answered, 90, f"worker {node} to answer ping", interval=POLL, alive=proc.check_alive)
    return proc


# -- the metrics server ----------------------------------------------------------------------


@dataclass
class Hit:
    run: str
    received: float
    answered: float


class MetricsServer:
    """Answers `/m/<run>` with {"value": 1}; records every request's run and wall times."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.unexpected = 0
        hits = self.hits
        body = json.dumps({"value": 1}).encode()
        server_ref = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: workers reuse their pooled connection

            def do_GET(self) -> None:
                received = time.time()
                if not self.path.startswith("/m/"):
                    server_ref.unexpected += 1
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                hits.append(Hit(self.path[3:], received, time.time()))

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- sampling Redis --------------------------------------------------------------------------


@dataclass
class Sample:
    at: float
    timers: int
    overdue: int
    oldest_overdue_s: float
    queued: int
    oldest_queued_s: float
    active: int
    analysis_messages: int
    system_messages: int
    ping_ms: float


@dataclass
class Sampler:
    """Every SAMPLE_EVERY s: the analysisruns timers (member -> due), tick stamps, backlog."""

    client: redis.Redis
    samples: list[Sample] = field(default_factory=list)
    timers: dict[str, set[float]] = field(default_factory=lambda: defaultdict(set))
    ticks: set[float] = field(default_factory=set)
    stop_event: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        base = f"{PREFIX}:wq:{KIND}"
        self.k_timers, self.k_queued, self.k_active = (
            f"{base}:timers",
            f"{base}:queued",
            f"{base}:active",
        )
        self.k_ticks = f"{PREFIX}:system:ticks"
        self.thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(10)

    def _run(self) -> None:
        try:
            while not self.stop_event.wait(SAMPLE_EVERY):
                self.sample()
        except BaseException as err:  # reported by the main thread
            self.error = err

    def sample(self) -> None:
        t0 = time.perf_counter()
        self.client.ping()
        ping_ms = (time.perf_counter() - t0) * 1000
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        pipe.zrange(self.k_timers, 0, -1, withscores=True)
        pipe.zcard(self.k_queued)
        pipe.zrange(self.k_queued, 0, 0, withscores=True)
        pipe.hlen(self.k_active)
        pipe.llen("analysis")
        pipe.llen("system")
        pipe.hget(self.k_ticks, "last")
        (secs, micros), timers, queued, oldest, active, analysis, system, last = pipe.execute()
        now = int(secs) + int(micros) / 1e6
        overdue = [score / 1000 for _, score in timers if score / 1000 <= now]
        for member, score in timers:
            self.timers[text(member)].add(score / 1000)
        if last:
            self.ticks.add(float(text(last)))
        self.samples.append(
            Sample(
                at=now,
                timers=len(timers),
                overdue=len(overdue),
                oldest_overdue_s=round(now - min(overdue), 3) if overdue else 0.0,
                queued=int(queued),
                oldest_queued_s=round(now - oldest[0][1] / 1000, 3) if oldest else 0.0,
                active=int(active),
                analysis_messages=int(analysis),
                system_messages=int(system),
                ping_ms=round(ping_ms, 3),
            )
        )


# -- the API ---------------------------------------------------------------------------------


RUNS_PATH = f"/apis/argoproj.io/v1alpha1/namespaces/{NAMESPACE}/analysisruns"


def analysis_run(name: str, metrics_url: str, interval: float, count: int) -> Obj:
    metric = {
        "name": METRIC,
        "interval": f"{interval:g}s",
        "count": count,
        "successCondition": "true",
        "provider": {"web": {"url": f"{metrics_url}/m/{name}", "jsonPath": "{$.value}"}},
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": name, "labels": {"bench": "analysis-timers"}},
        "spec": {"metrics": [metric]},
    }


def create_runs(
    http: Http, names: list[str], metrics_url: str, *, interval: float, count: int, stagger: float
) -> dict[str, float]:
    """POST the runs, spread evenly over `stagger` seconds; returns name -> wall time created."""
    created: dict[str, float] = {}
    start = time.monotonic()
    for i, name in enumerate(names):
        pause = start + stagger * i / len(names) - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        http.call("POST", RUNS_PATH, analysis_run(name, metrics_url, interval, count))
        created[name] = time.time()
    return created


# -- analysis --------------------------------------------------------------------------------


def lateness(
    hits: list[Hit],
    created: dict[str, float],
    *,
    interval: float,
    count: int,
    start: float,
    sampler: Sampler,
) -> Obj:
    by_run: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_run[hit.run].append(hit)
    late: list[float] = []
    late_recv: list[float] = []  # t(k+1) - t(k) - I, from receive times only
    by_minute: dict[int, list[float]] = defaultdict(list)
    sched: list[float] = []
    fire: list[float] = []
    tick_wait: list[float] = []
    tick_to_request: list[float] = []
    unmatched_timers = 0
    ticks = sorted(sampler.ticks)
    response_ms: list[float] = []
    firsts: list[float] = []
    for name, made in created.items():
        runs = sorted(by_run.get(name, []), key=lambda h: h.received)
        if runs:
            firsts.append(runs[0].received - made)
        due_times = sorted(sampler.timers.get(f"{NAMESPACE}/{name}", ()))
        for prev, cur in itertools.pairwise(runs):
            due = prev.answered + interval
            value = cur.received - due
            late.append(value)
            late_recv.append(cur.received - prev.received - interval)
            by_minute[int((due - start) // 60)].append(value)
            # The timer that fired this measurement: the latest due time Redis held for the key
            # between the previous measurement and this one.
            window = [
                d for d in due_times if prev.received + interval / 2 < d <= cur.received + 0.002
            ]
            if not window:
                unmatched_timers += 1
                continue
            timer = max(window)
            sched.append(timer - due)
            fire.append(cur.received - timer)
            i = next_index(ticks, timer - 0.005)
            if i < len(ticks) and ticks[i] <= cur.received:
                tick_wait.append(max(0.0, ticks[i] - timer))
                tick_to_request.append(cur.received - ticks[i])
        response_ms.extend((h.answered - h.received) * 1000 for h in runs)
    counts = Counter(len(by_run.get(name, [])) for name in created)
    return {
        "measurements": {
            "expected": len(created) * count,
            "taken": sum(len(by_run.get(name, [])) for name in created),
            "runs_with_count": counts.get(count, 0),
            "runs_short": sum(v for k, v in counts.items() if k < count),
            "runs_over": sum(v for k, v in counts.items() if k > count),
            "per_run_counts": {str(k): v for k, v in sorted(counts.items())},
            "unknown_runs": sorted(set(by_run) - set(created))[:10],
        },
        "lateness_s": summary(late),
        "lateness_receive_to_receive_s": summary(late_recv),
        "over_goal": sum(1 for v in late if v > GOAL_P99),
        "by_minute": {str(m): summary(v) for m, v in sorted(by_minute.items())},
        "first_measurement_s": summary(firsts),
        "breakdown_s": {
            "schedule_offset": summary(sched),
            "fire_delay": summary(fire),
            "tick_wait": summary(tick_wait),
            "tick_to_request": summary(tick_to_request),
            "timers_not_seen": unmatched_timers,
        },
        "metrics_server_response_ms": summary(response_ms),
    }


def next_index(ordered: list[float], value: float) -> int:
    lo, hi = 0, len(ordered)
    while lo < hi:
        mid = (lo + hi) // 2
        if ordered[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def backlog(samples: list[Sample], ticks: list[float], window: tuple[float, float]) -> Obj:
    inside = [s for s in samples if window[0] <= s.at <= window[1]]
    gaps = [b - a for a, b in itertools.pairwise(ticks) if window[0] <= a <= window[1]]

    def col(name: str) -> list[float]:
        return [float(getattr(s, name)) for s in inside]

    return {
        "samples": len(inside),
        "timers": summary(col("timers"), 1),
        "overdue_timers": summary(col("overdue"), 1),
        "oldest_overdue_timer_s": summary(col("oldest_overdue_s")),
        "queued_keys": summary(col("queued"), 1),
        "oldest_queued_key_s": summary(col("oldest_queued_s")),
        "active_keys": summary(col("active"), 1),
        "analysis_queue_messages": summary(col("analysis_messages"), 1),
        "system_queue_messages": summary(col("system_messages"), 1),
        "redis_ping_ms": summary(col("ping_ms")),
        "tick_gap_s": summary(gaps),
    }


def command_stats(client: redis.Redis) -> dict[str, tuple[int, int]]:
    stats: dict[str, dict[str, Any]] = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_").lower(): (int(v["calls"]), int(v["usec"]))
        for name, v in stats.items()
    }


# -- report ----------------------------------------------------------------------------------


def fmt(stats: Stats, keys: Sequence[str] = ("p50", "p99", "max"), unit: str = "s") -> str:
    if not stats.get("n"):
        return "(no data)"
    return "  ".join(f"{k} {stats[k]:.3f}" for k in keys) + f" {unit}  (n={stats['n']})"


def render(report: Obj) -> str:
    p, r = report["parameters"], report["results"]
    m, b, cpu = r["measurements"], report["backlog"], report["cpu"]
    late = r["lateness_s"]
    goal_met = late.get("n") and late["p99"] <= GOAL_P99
    lines = [
        f"analysis timers: {p['runs']} runs x {p['count']} measurements every {p['interval_s']:g}"
        f" s ({p['workers']} worker hosts x -c {p['concurrency']}; {report['machine']['cores']}"
        f" cores; {report['date']}; 1-min load average "
        f"{report['machine']['loadavg_1m_at_start_and_end'][0]} at start)",
        "",
        f"measurements taken            {m['taken']} of {m['expected']} expected "
        f"({m['runs_with_count']} runs complete, {m['runs_short']} short, {m['runs_over']} over);"
        f" phases {report['phases']}",
        f"lateness (t(k+1) - finish(k) - I)   {fmt(late, ('min', 'p50', 'p90', 'p99', 'max'))}",
        f"  goal p99 <= {GOAL_P99:g} s: {'met' if goal_met else 'NOT met'}; "
        f"{r['over_goal']} measurements later than {GOAL_P99:g} s",
        f"  receive -> receive - I            {fmt(r['lateness_receive_to_receive_s'])}",
        f"first measurement (POST -> request) {fmt(r['first_measurement_s'])}",
        f"  comparison: {ARGO_NOTE} ({ARGO_ISSUE})",
        "",
        "lateness by minute of the run (due time), seconds",
        f"   {'minute':>6} {'n':>6} {'p50':>8} {'p99':>8} {'max':>8}",
    ]
    for minute, s in r["by_minute"].items():
        if s.get("n"):
            lines.append(
                f"   {minute:>6} {s['n']:>6} {s['p50']:>8.3f} {s['p99']:>8.3f} {s['max']:>8.3f}"
            )
    bd = r["breakdown_s"]
    lines += [
        "",
        "where the lateness goes (per measurement, seconds)",
        f"   schedule offset (timer due - finish - I) {fmt(bd['schedule_offset'])}",
        f"   timer due -> request                     {fmt(bd['fire_delay'])}",
        f"     timer due -> next tick                 {fmt(bd['tick_wait'])}",
        f"     tick -> request                        {fmt(bd['tick_to_request'])}",
        f"   ({bd['timers_not_seen']} measurements whose timer the sampler did not see)",
        f"   tick gaps                                {fmt(b['tick_gap_s'])}",
        "",
        f"backlog ({b['samples']} samples every {SAMPLE_EVERY} s; p99 / max)",
    ]
    for key, label in (
        ("overdue_timers", "overdue timers"),
        ("oldest_overdue_timer_s", "oldest overdue timer, s"),
        ("queued_keys", "queued keys"),
        ("oldest_queued_key_s", "oldest queued key, s"),
        ("active_keys", "keys being reconciled"),
        ("analysis_queue_messages", "messages on 'analysis'"),
        ("system_queue_messages", "messages on 'system'"),
        ("redis_ping_ms", "Redis PING, ms"),
    ):
        s = b[key]
        if s.get("n"):
            lines.append(f"   {label:<28} {s['p99']:>9.3f} / {s['max']:.3f}")
    w = report["window_s"]
    lines += [
        "",
        f"CPU seconds in the measurement window ({w:.0f} s; % of one core)",
    ]
    for name, seconds in cpu["seconds"].items():
        lines.append(f"   {name:<18} {seconds:>8.1f}  {100 * seconds / w:>6.1f} %")
    rc = report["reconciles"]
    lines += [
        f"   total              {sum(cpu['seconds'].values()):>8.1f}  "
        f"{100 * sum(cpu['seconds'].values()) / w:>6.1f} % (of {report['machine']['cores']}"
        " cores: 100 % each)",
        "",
        f"reconciles {rc['reconciles']} ({rc['per_measurement']:.2f} per measurement; outcomes "
        f"{rc['outcomes']})",
        f"   worker CPU per reconcile      {rc['worker_cpu_ms_per_reconcile']:.1f} ms "
        f"({rc['worker_cpu_ms_per_measurement']:.1f} ms per measurement; pool "
        f"{rc['pool_cpu_ms_per_reconcile']:.1f} ms + consumer "
        f"{rc['consumer_cpu_ms_per_reconcile']:.1f} ms)",
        f"   reconcile wall time           {fmt(rc['duration_ms'], unit='ms')}",
        f"   Redis commands per measurement {report['redis']['commands_per_measurement']:.1f}"
        f" ({report['redis']['usec_per_measurement']:.0f} us of Redis time; "
        f"evalsha {report['redis']['evalsha_usec_per_call']:.0f} us/call)",
        f"   metrics server answer         {fmt(r['metrics_server_response_ms'], unit='ms')}",
    ]
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200, help="AnalysisRuns to create")
    parser.add_argument("--interval", type=float, default=5.0, help="metric interval, seconds")
    parser.add_argument("--minutes", type=float, default=5.0, help="measuring time per run")
    parser.add_argument("--workers", type=int, default=2, help="worker hosts")
    parser.add_argument("--concurrency", type=int, default=4, help="processes per worker host")
    parser.add_argument(
        "--stagger",
        type=float,
        default=None,
        help="spread the creations over this many seconds (default: one interval; 0: at once)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level of the system's processes (INFO logs two lines per task)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    args = parser.parse_args(argv)
    for name in ("runs", "workers", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.interval < 1 or args.minutes <= 0:
        parser.error("--interval must be at least 1 and --minutes positive")
    if args.stagger is None:
        args.stagger = args.interval
    return args


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> Obj:
    interval = args.interval
    count = round(args.minutes * 60 / interval) + 1
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
    env.update(
        ROLLOUTS_REDIS_URL=url,
        ROLLOUTS_KUBECONFIG=str(workdir / "api-state" / "devcluster.kubeconfig"),
        ROLLOUTS_STATE_DIR=str(workdir / "state"),
        ROLLOUTS_LOG_LEVEL=args.log_level,
    )
    settings = Settings(state_dir=workdir / "state", redis={"url": url})
    app = create_app(settings, url)
    metrics = MetricsServer().start()
    stack.callback(metrics.stop)
    print(f"redis {url}, API {api_url}, metrics {metrics.url}", flush=True)

    watcher = spawn("watcher", ["-m", "rollout_workers", "watcher"], env, workdir, stack)
    wait_for(
        lambda: client.exists(f"{PREFIX}:watcher:leader"),
        60,
        "the watcher's lease",
        interval=POLL,
        alive=watcher.check_alive,
    )
    workers = [
        start_worker(app, i, concurrency=args.concurrency, env=env, workdir=workdir, stack=stack)
        for i in range(args.workers)
    ]
    beat = spawn("beat", ["-m", "rollout_workers", "beat"], env, workdir, stack)
    procs = [api, watcher, beat, *workers]

    def alive() -> None:
        for proc in procs:
            proc.check_alive()

    wait_for(
        lambda: client.hget(f"{PREFIX}:system:ticks", "count"),
        60,
        "the first tick",
        interval=POLL,
        alive=alive,
    )
    http = Http(api_url)
    http.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    names = [f"run-{i:04d}" for i in range(args.runs)]

    sampler = Sampler(redis.Redis.from_url(url)).start()
    stack.callback(sampler.stop)
    client.config_resetstat()
    stats_key = f"{PREFIX}:wq:{KIND}:stats"
    counters0 = {text(k): int(v) for k, v in client.hgetall(stats_key).items()}

    def cpu_now() -> dict[str, float]:
        out = {
            "api": cpu_seconds(api.pid, gone_ok=True),
            "watcher": cpu_seconds(watcher.pid, gone_ok=True),
        }
        out["beat"] = group_cpu(beat.pid)
        for worker in workers:
            # The host's main process consumes and dispatches messages; the pool reconciles.
            host, consumer = group_cpu(worker.pid), cpu_seconds(worker.pid, gone_ok=True)
            out[f"{worker.name} consumer"] = consumer
            out[f"{worker.name} pool"] = host - consumer
        out["redis"] = cpu_seconds(redis_pid, gone_ok=True)
        out["bench"] = cpu_seconds(os.getpid(), gone_ok=True)
        return out

    cpu0 = cpu_now()
    start = time.time()
    expected_end = start + args.stagger + (count - 1) * interval
    print(
        f"creating {args.runs} AnalysisRuns over {args.stagger:g} s: {count} measurements every "
        f"{interval:g} s, until about {time.strftime('%H:%M:%S', time.localtime(expected_end))}",
        flush=True,
    )
    created = create_runs(
        http, names, metrics.url, interval=interval, count=count, stagger=args.stagger
    )

    def all_measured() -> bool:
        per_run = Counter(hit.run for hit in metrics.hits)
        return all(per_run[name] >= count for name in names)

    deadline = expected_end + max(60.0, 0.5 * (expected_end - start))
    next_report = time.monotonic() + 30
    while not all_measured():
        alive()
        if sampler.error is not None:
            raise sampler.error
        if time.time() > deadline:
            print("deadline passed: not every run took its measurements", flush=True)
            break
        if time.monotonic() >= next_report:
            next_report += 30
            last = sampler.samples[-1] if sampler.samples else None
            print(
                f"  {time.time() - start:5.0f} s: {len(metrics.hits)} measurements"
                + (
                    f", {last.overdue} overdue timers (oldest {last.oldest_overdue_s:.2f} s),"
                    f" {last.queued} queued"
                    if last
                    else ""
                ),
                flush=True,
            )
        time.sleep(0.5)
    end = time.time()
    cpu1 = cpu_now()
    counters1 = {text(k): int(v) for k, v in client.hgetall(stats_key).items()}
    commands = command_stats(client)
    newest = client.lrange(f"{PREFIX}:wq:{KIND}:durations", 0, DURATIONS_KEPT - 1)
    durations = [float(v) for v in newest]

    def phases() -> Counter[str]:
        items = http.call("GET", RUNS_PATH)["items"]
        return Counter(str((i.get("status") or {}).get("phase")) for i in items)

    with contextlib.suppress(TimeoutError):
        wait_for(lambda: set(phases()) <= {"Successful", "Failed", "Error"}, 30, "", 1.0)
    final_phases = dict(phases())
    sampler.stop()

    results = lateness(
        metrics.hits, created, interval=interval, count=count, start=start, sampler=sampler
    )
    taken = results["measurements"]["taken"]
    reconciles = counters1.get("reconciles", 0) - counters0.get("reconciles", 0)
    outcomes = {
        k: v - counters0.get(k, 0)
        for k, v in counters1.items()
        if k != "reconciles" and v - counters0.get(k, 0)
    }
    cpu = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}
    worker_cpu = sum(v for k, v in cpu.items() if k.startswith("worker-"))
    pool_cpu = sum(v for k, v in cpu.items() if k.startswith("worker-") and k.endswith(" pool"))
    total_calls = sum(c for name, (c, _) in commands.items() if name not in ("info", "config"))
    total_usec = sum(u for name, (_, u) in commands.items() if name not in ("info", "config"))
    evalsha = commands.get("evalsha", (0, 0))
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
            "runs": args.runs,
            "interval_s": interval,
            "minutes": args.minutes,
            "count": count,
            "workers": args.workers,
            "concurrency": args.concurrency,
            "stagger_s": args.stagger,
            "log_level": args.log_level,
            "tick_interval_s": settings.beat.tick_interval,
            "sample_every_s": SAMPLE_EVERY,
        },
        "goal": {"p99_lateness_s": GOAL_P99, "comparison": ARGO_NOTE, "issue": ARGO_ISSUE},
        "window_s": round(end - start, 1),
        "phases": final_phases,
        "results": results,
        "backlog": backlog(sampler.samples, sorted(sampler.ticks), (start, end)),
        "cpu": {"seconds": cpu},
        "reconciles": {
            "reconciles": reconciles,
            "per_measurement": round(reconciles / max(1, taken), 3),
            "outcomes": outcomes,
            "worker_cpu_ms_per_reconcile": round(1000 * worker_cpu / max(1, reconciles), 2),
            "worker_cpu_ms_per_measurement": round(1000 * worker_cpu / max(1, taken), 2),
            "pool_cpu_ms_per_reconcile": round(1000 * pool_cpu / max(1, reconciles), 2),
            "consumer_cpu_ms_per_reconcile": round(
                1000 * (worker_cpu - pool_cpu) / max(1, reconciles), 2
            ),
            "duration_ms": summary(durations[: max(0, reconciles)], 2),
        },
        "redis": {
            "commands_per_measurement": round(total_calls / max(1, taken), 2),
            "usec_per_measurement": round(total_usec / max(1, taken), 1),
            "evalsha_usec_per_call": round(evalsha[1] / max(1, evalsha[0]), 1),
            "top_commands": dict(
                sorted(((k, c) for k, (c, _) in commands.items()), key=lambda kv: -kv[1])[:12]
            ),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    started = time.perf_counter()
    report = run_in_tempdir(run, args, "bench-analysis-timers-")
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print()
    print(render(report))
    print(f"\ntotal {report['total_seconds']:.0f} s")
    write_json(report, args.output)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
