"""Notifications at scale: R rollouts changing image at once, half of them subscribed.

Run: `.venv/bin/python bench/notifications.py [--rollouts 1000] [--concurrency 2]
[--namespaces 10]` (`--rollouts 50` is a smoke run of about a minute). It starts a fresh
embedded API (`python -m devcluster`, its own process), a fresh EmbeddedRedis,
and the pool as bench/scale.py's pool case does: a real `watcher`, `beat` and one `worker -c N`
host, which serves the `rollouts` and the `notifications` queues alike. A webhook receiver in
this process (harness.Receiver, an HTTP server on 127.0.0.1) records every request with its
arrival time.

Config: the ConfigMap `argo-rollouts-notification-configmap` in the controller's namespace
(`argo-rollouts`, set with ROLLOUTS_NOTIFICATIONS_NAMESPACE) holds Argo's catalog of v1.9.1
(tests/unit/notifications/testdata, read as data) plus a webhook service `bench` pointed at the
receiver. The catalog's templates have no webhook block, so each notification is a GET whose
body is the template's message ("Rollout app-00000 step number 1/3 has been completed.").

Workload: R canaries (replicas 1, steps setWeight 50, pause 1s, setWeight 100: bench/scale.py's
`rollout_body`) over `--namespaces` namespaces. Half of each namespace's rollouts carry
`notifications.argoproj.io/subscribe.on-rollout-step-completed.bench` and
`...subscribe.on-rollout-completed.bench`; the other half carry no subscription, so both groups
run side by side in one run, on the same processes, under the same load. The bench waits
until all are Healthy on revision 1 and the first deploy's notifications (one "completed" per
subscribed rollout) have arrived and both queues are idle, clears the receiver, patches every
image at once (8 threads), and waits until all are Healthy on revision 2 and every expected
notification has arrived (or `--notify-timeout` after they are Healthy), then for both queues
to go idle, then `--settle` seconds more for late duplicates.

Expected per subscribed rollout for the update: one message per completed step (the
controller records `RolloutStepCompleted` once per step, canary.py's sync_status; the catalog
renders "step number k/3", k = 1, 2, 3) and one "has been completed" (`RolloutCompleted`, on
promotion to stable): 4. Counted per (rollout, message): *sent* = expected pairs that arrived
at least once, *duplicates* = arrivals beyond the first of a pair, *lost* = expected pairs that
never arrived; arrivals that match no expected pair are reported as *unexpected*.

Delay of a notification: from the moment the reconcile queued its job to the first arrival of
its message at the receiver. The job's moment is Redis's own clock at the job's `HSETNX` (the
outbox's create script, outbox.py), seen through Redis MONITOR on a raw socket from this
process; the job's payload carries the event's reason and message ("Rollout step k/3
completed"), which names the notification it becomes. The core/v1 Event's `firstTimestamp` is
to the second only; the bench's own watch of the rollouts sees the status patch that follows
the job, so it could give negative delays. Redis and the receiver read the same host clock.
The delay covers the `notifications` message, the claim, the render and the HTTP request; not
the reconcile before the event.

Reconcile durations, per key, exact: the same MONITOR stream carries done.lua's `HINCRBY
<prefix>:metrics:rollouts:reconcile <ns/name>|sum <microseconds>`, one per reconcile of a
rollout (the sync runner's timing of the handler). Reported per group (subscribed or not) over
the update window: count, mean, p50, p99, max, and the ratio subscribed / not subscribed. As a
cross-check free of MONITOR, the same hash's per-key histogram (Argo's buckets 0.01, 0.15, 0.25,
0.5, 1 s), diffed over the window, gives each group's exact mean and a bucket-bounded p99
(what Prometheus would show). MONITOR costs Redis and this process CPU, equally for both groups.

Figures are printed and written to bench/results/notifications.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import re
import socket
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
import yaml
from harness import (
    REPO,
    Http,
    Receiver,
    child_env,
    cpu_seconds,
    exit_on_sigterm,
    percentile,
    run_in_tempdir,
    start_api,
    wait_for,
    write_json,
)
from scale import PREFIX, Pool, Tracker, container, patch_all, rollout_body, start_pool

from rollout_workers.counters import RECONCILE_BUCKETS
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.notifications.source import CONFIGMAP_NAME

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "notifications.json"
#: Argo's catalog, as the tests hold it (read as data: bench/ imports nothing from tests/).
CATALOG = REPO / "tests/unit/notifications/testdata/notifications-install-v1.9.1.yaml"
CONTROLLER_NAMESPACE = "argo-rollouts"
SERVICE = "bench"
TRIGGERS = ("on-rollout-step-completed", "on-rollout-completed")
SUBSCRIBE = "notifications.argoproj.io/subscribe"
STEPS = len(rollout_body("x", bluegreen=False)["spec"]["strategy"]["canary"]["steps"])
RECONCILE_HASH = f"{PREFIX}:metrics:rollouts:reconcile"
JOB_PREFIX = f"{PREFIX}:notifications:job:"
THREADS = 8
POLL = 0.1

Obj = dict[str, Any]


def step_message(name: str, step: int, steps: int) -> str:
    return f"Rollout {name} step number {step}/{steps} has been completed."


def completed_message(name: str) -> str:
    return f"Rollout {name} has been completed."


def expected_update(name: str) -> list[str]:
    return [*(step_message(name, k, STEPS) for k in range(1, STEPS + 1)), completed_message(name)]


# -- the config and the workload -------------------------------------------------------------


def configmap(url: str) -> Obj:
    """Argo's catalog and a webhook service `bench` (no webhook block in the catalog's
    templates: a GET whose body is the message)."""
    (catalog,) = [d for d in yaml.safe_load_all(CATALOG.read_text()) if d]
    data = dict(catalog["data"])
    data[f"service.webhook.{SERVICE}"] = yaml.safe_dump({"url": url})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": CONTROLLER_NAMESPACE},
        "data": data,
    }


@dataclass(frozen=True)
class Target:
    namespace: str
    name: str
    subscribed: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def plan(rollouts: int, namespaces: int) -> list[Target]:
    """Even-numbered rollouts subscribed, odd ones not, placed in pairs round-robin over the
    namespaces: each namespace holds both groups equally (no namespace-level difference, such
    as fairness, between them)."""
    names = [f"notif-{i:02d}" for i in range(namespaces)]
    return [
        Target(names[(i // 2) % namespaces], f"app-{i:05d}", i % 2 == 0) for i in range(rollouts)
    ]


def create_workload(http: Http, receiver_url: str, targets: Sequence[Target]) -> None:
    for ns in [CONTROLLER_NAMESPACE, *sorted({t.namespace for t in targets})]:
        http.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    http.call(
        "POST", f"/api/v1/namespaces/{CONTROLLER_NAMESPACE}/configmaps", configmap(receiver_url)
    )

    def create(target: Target) -> None:
        body = rollout_body(target.name, bluegreen=False)
        if target.subscribed:
            body["metadata"]["annotations"] = {
                f"{SUBSCRIBE}.{trigger}.{SERVICE}": "" for trigger in TRIGGERS
            }
        http.call(
            "POST", f"/apis/argoproj.io/v1alpha1/namespaces/{target.namespace}/rollouts", body
        )

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(create, targets, chunksize=32))


# -- Redis MONITOR ---------------------------------------------------------------------------

_CLIENT = rb"^\+(\d+\.\d+) \[\d+ [^\]]*\] "
_RECONCILE = re.compile(
    _CLIENT + rb'"HINCRBY" "' + re.escape(RECONCILE_HASH.encode()) + rb'" '
    rb'"([^"|]+)\|sum" "(\d+)"'
)
_JOB = re.compile(
    _CLIENT + rb'"HSETNX" "' + re.escape(JOB_PREFIX.encode()) + rb'([^"]+)" '
    rb'"payload" '
)
#: The job's own reason and message (its JSON as MONITOR escapes it: \" for "); conditions in
#: the object's status have reasons too, but never followed by an event type.
_EVENT = re.compile(
    rb'\\"reason\\":\\"(\w+)\\",\\"type\\":\\"(?:Normal|Warning)\\",'
    rb'\\"message\\":\\"([^\\]*)'
)
_STEP = re.compile(r"Rollout step (\d+)/(\d+) completed")


@dataclass
class Monitored:
    reconciles: list[tuple[float, str, float]] = field(default_factory=list)  # (t, key, s)
    #: (key, message it renders) -> Redis time of the job's first HSETNX
    jobs: dict[tuple[str, str], float] = field(default_factory=dict)
    other_jobs: Counter[str] = field(default_factory=Counter)  # by reason
    lines: int = 0


def job_notification(key: str, line: bytes) -> tuple[str, str] | None:
    """(ns/name, message) of a job's HSETNX line, or None for a reason outside the triggers."""
    events = _EVENT.findall(line)
    if not events:
        return None
    reason, message = events[-1][0].decode(), events[-1][1].decode()
    name = key.rsplit("/", 1)[1]
    if reason == "RolloutCompleted":
        return key, completed_message(name)
    step = _STEP.match(message)
    if reason == "RolloutStepCompleted" and step:
        return key, step_message(name, int(step[1]), int(step[2]))
    return None


class Monitor:
    """Redis MONITOR on a raw socket (no client parsing per line): keeps the reconcile
    durations and the notification jobs' creation times."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._address = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.seen = Monitored()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> Monitor:
        sock = socket.create_connection(self._address, timeout=10)
        sock.sendall(b"MONITOR\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            reply += sock.recv(64)
        if not reply.startswith(b"+OK"):
            raise RuntimeError(f"MONITOR: {reply!r}")
        sock.settimeout(None)
        self._sock = sock
        self._thread.start()
        return self

    def _run(self) -> None:
        assert self._sock is not None
        seen, buffer = self.seen, b""
        try:
            while True:
                data = self._sock.recv(1 << 18)
                if not data:
                    return
                lines = (buffer + data).split(b"\r\n")
                buffer = lines.pop()
                seen.lines += len(lines)
                for line in lines:
                    if b'"HINCRBY" "' in line:
                        m = _RECONCILE.match(line)
                        if m:
                            t, key, micros = float(m[1]), m[2].decode(), int(m[3])
                            seen.reconciles.append((t, key, micros / 1e6))
                    elif b'"HSETNX" "' in line:
                        m = _JOB.match(line)
                        if m:
                            self._job(float(m[1]), m[2].decode(), line)
        except OSError:
            return  # the socket was shut down
        except BaseException as err:
            self.error = err

    def _job(self, t: float, job_key: str, line: bytes) -> None:
        key = job_key.rsplit(".", 1)[0]
        found = job_notification(key, line)
        if found is None:
            reasons = _EVENT.findall(line)
            self.seen.other_jobs[reasons[-1][0].decode() if reasons else "?"] += 1
        elif found not in self.seen.jobs:
            self.seen.jobs[found] = t

    def stop(self) -> Monitored:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._thread.join(10)
            self._sock.close()
            self._sock = None
        if self.error is not None:
            raise self.error
        return self.seen


# -- the figures -----------------------------------------------------------------------------


def reconcile_hash(client: redis.Redis) -> dict[str, dict[str, int]]:
    """The per-key reconcile histogram: key -> {"b<i>": n, "sum": micros, ...}."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for f, v in client.hgetall(RECONCILE_HASH).items():
        key, _, part = (f.decode() if isinstance(f, bytes) else str(f)).rpartition("|")
        out[key][part] = int(v)
    return out


def hash_figures(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], keys: set[str]
) -> Obj:
    """A group's reconciles over the window from the histogram: exact count and mean, and the
    p99 as the bucket bound it falls under."""
    buckets = [0] * (len(RECONCILE_BUCKETS) + 1)
    total_micros = 0
    for key in keys:
        a, b = after.get(key, {}), before.get(key, {})
        for i in range(len(buckets)):
            buckets[i] += a.get(f"b{i}", 0) - b.get(f"b{i}", 0)
        total_micros += a.get("sum", 0) - b.get("sum", 0)
    count = sum(buckets)
    p99_bound: str | None = None
    running = 0
    for i, n in enumerate(buckets):
        running += n
        if count and running >= 0.99 * count:
            p99_bound = f"<= {RECONCILE_BUCKETS[i]} s" if i < len(RECONCILE_BUCKETS) else "> 1 s"
            break
    return {
        "reconciles": count,
        "mean_ms": round(total_micros / 1000 / count, 2) if count else None,
        "buckets": dict(zip([*(str(b) for b in RECONCILE_BUCKETS), "+Inf"], buckets, strict=True)),
        "p99_bucket": p99_bound,
    }


def duration_figures(durations: Sequence[float]) -> Obj:
    ms = [1000 * d for d in durations]
    return {
        "reconciles": len(ms),
        "mean_ms": round(sum(ms) / len(ms), 2) if ms else None,
        "p50_ms": round(percentile(ms, 0.5), 2),
        "p90_ms": round(percentile(ms, 0.9), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2) if ms else None,
    }


def notification_figures(
    targets: Sequence[Target],
    arrivals: Sequence[tuple[float, str]],
    jobs: dict[tuple[str, str], float],
) -> Obj:
    expected = {
        (t.key, message): t for t in targets if t.subscribed for message in expected_update(t.name)
    }
    by_message = {message: key for key, message in expected}
    counts: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], float] = {}
    unexpected: Counter[str] = Counter()
    for at, body in sorted(arrivals):
        key = by_message.get(body)
        if key is None:
            unexpected[body] += 1
            continue
        counts[(key, body)] += 1
        first.setdefault((key, body), at)
    lost = sorted(set(expected) - set(counts))
    duplicated = {pair: n for pair, n in counts.items() if n > 1}
    delays = [first[pair] - jobs[pair] for pair in first if pair in jobs]
    return {
        "expected": len(expected),
        "sent": len(counts),
        "duplicates": sum(n - 1 for n in duplicated.values()),
        "lost": len(lost),
        "unexpected": sum(unexpected.values()),
        "arrivals": len(arrivals),
        "jobs_seen": sum(1 for pair in jobs if pair in expected),
        "sent_without_job_seen": sum(1 for pair in first if pair not in jobs),
        "delay_s": {
            "p50": round(percentile(delays, 0.5), 3),
            "p90": round(percentile(delays, 0.9), 3),
            "p99": round(percentile(delays, 0.99), 3),
            "max": round(max(delays), 3) if delays else None,
            "min": round(min(delays), 3) if delays else None,
        },
        "lost_examples": [f"{key}: {message}" for key, message in lost[:20]],
        "duplicate_examples": {f"{k}: {m}": n for (k, m), n in list(duplicated.items())[:20]},
        "unexpected_examples": dict(unexpected.most_common(20)),
    }


# -- the run ---------------------------------------------------------------------------------


def queue_idle(client: redis.Redis, kind: str) -> bool:
    base = f"{PREFIX}:wq:{kind}"
    pipe = client.pipeline(transaction=False)
    pipe.zcard(f"{base}:queued")
    pipe.hlen(f"{base}:active")
    pipe.zcard(f"{base}:timers")
    queued, active, timers = pipe.execute()
    # rollouts keep timers (progress deadlines); a notification's timer is a retry pending.
    return not queued and not active and (kind == "rollouts" or not timers)


def run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> Obj:
    load_start = round(os.getloadavg()[0], 2)
    env = child_env()
    env.pop("POD_NAMESPACE", None)
    receiver = Receiver().start(stack)
    api, api_url = start_api(env, workdir, stack, options=["--ready-delay", str(args.ready_delay)])
    env.update(
        ROLLOUTS_KUBECONFIG=str(workdir / "api-state" / "devcluster.kubeconfig"),
        ROLLOUTS_STATE_DIR=str(workdir / "state"),
        ROLLOUTS_LOG_LEVEL=args.log_level,
        ROLLOUTS_NOTIFICATIONS_NAMESPACE=CONTROLLER_NAMESPACE,
    )
    http = Http(api_url, threads=THREADS)
    targets = plan(args.rollouts, args.namespaces)
    subscribed = [t for t in targets if t.subscribed]
    n = len(targets)
    started = time.perf_counter()
    create_workload(http, receiver.url("/bench"), targets)
    print(
        f"{n} rollouts ({len(subscribed)} subscribed) created in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    tracker = Tracker(api_url).start()
    stack.callback(tracker.stop)
    server = EmbeddedRedis(workdir / "redis").start()
    stack.callback(server.stop)
    assert server.process is not None
    redis_pid = server.process.pid
    env["ROLLOUTS_REDIS_URL"] = server.url
    pool: Pool = start_pool(args.concurrency, env, workdir, stack, server.url)
    client = pool.client
    timeout = 120 + n / 5

    def alive() -> None:
        api.check_alive()
        pool.alive()

    def idle() -> bool:
        return queue_idle(client, "rollouts") and queue_idle(client, "notifications")

    def wait_healthy(revision: str) -> float:
        t0 = time.perf_counter()
        wait_for(
            lambda: tracker.healthy(revision) >= n,
            timeout,
            f"{n} rollouts Healthy on revision {revision}",
            interval=POLL,
            alive=alive,
        )
        return time.perf_counter() - t0

    # -- revision 1: the first deploy sends one "completed" per subscribed rollout.
    initial_s = wait_healthy("1")
    first_deploy = {completed_message(t.name) for t in subscribed}

    def initial_arrived() -> bool:
        got = {a.body.decode() for a in receiver.arrivals()}
        return first_deploy <= got and idle()

    wait_for(
        initial_arrived,
        timeout,
        "the first deploy's notifications and idle queues",
        interval=POLL,
        alive=alive,
    )
    initial = receiver.clear()
    print(
        f"all Healthy on revision 1 after {initial_s:.1f} s; {len(initial)} notifications "
        f"of the first deploy",
        flush=True,
    )

    # -- revision 2: every image at once.
    def cpu() -> dict[str, float]:
        return {
            "api": cpu_seconds(api.pid),
            **pool.cpu(),
            "redis": cpu_seconds(redis_pid),
            "bench": cpu_seconds(os.getpid()),
        }

    hash0, cpu0 = reconcile_hash(client), cpu()
    monitor = Monitor(server.url).start()
    stack.callback(monitor.stop)
    t0, t0_wall = time.perf_counter(), time.time()
    patch_all(
        http,
        [(t.namespace, t.name) for t in targets],
        {"spec": {"template": {"spec": {"containers": [container("2")]}}}},
    )
    patched_s = time.perf_counter() - t0
    healthy_s = patched_s + wait_healthy("2")
    print(f"all Healthy on revision 2 after {healthy_s:.1f} s", flush=True)
    want = {m for t in subscribed for m in expected_update(t.name)}
    deadline = time.monotonic() + args.notify_timeout
    while not want <= {a.body.decode() for a in receiver.arrivals()}:
        alive()
        if time.monotonic() > deadline:
            print(f"notifications still missing after {args.notify_timeout:.0f} s", flush=True)
            break
        time.sleep(POLL)
    arrived = receiver.arrivals()
    last_s = max((a.at for a in arrived), default=time.time()) - t0_wall
    wait_for(idle, 120, "both queues idle", interval=POLL, alive=alive)
    time.sleep(args.settle)  # a window for late duplicates (a retried job: seconds)
    seen = monitor.stop()
    hash1, cpu1 = reconcile_hash(client), cpu()
    window_s = time.perf_counter() - t0

    arrivals = [(a.at, a.body.decode()) for a in receiver.arrivals()]
    notes = notification_figures(targets, arrivals, seen.jobs)
    on = {t.key for t in subscribed}
    off = {t.key for t in targets} - on
    durations: dict[str, list[float]] = {"subscribed": [], "not_subscribed": []}
    for _, key, seconds in seen.reconciles:
        if key in on:
            durations["subscribed"].append(seconds)
        elif key in off:
            durations["not_subscribed"].append(seconds)
    exact = {group: duration_figures(values) for group, values in durations.items()}
    exact["subscribed"]["per_rollout"] = round(len(durations["subscribed"]) / max(1, len(on)), 2)
    exact["not_subscribed"]["per_rollout"] = round(
        len(durations["not_subscribed"]) / max(1, len(off)), 2
    )
    from_hash = {
        "subscribed": hash_figures(hash0, hash1, on),
        "not_subscribed": hash_figures(hash0, hash1, off),
    }

    def ratio(group: dict[str, Obj], what: str) -> float | None:
        a, b = group["subscribed"].get(what), group["not_subscribed"].get(what)
        return round(a / b, 2) if a and b else None

    cpu_used = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "loadavg_1m_at_start_and_end": [load_start, round(os.getloadavg()[0], 2)],
        },
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rollouts": n,
        "subscribed": len(subscribed),
        "steps": STEPS,
        "expected_per_subscribed_rollout": len(expected_update("x")),
        "initial": {
            "healthy_s": round(initial_s, 2),
            "notifications": len(initial),
            "expected": len(first_deploy),
        },
        "update": {
            "patch_s": round(patched_s, 2),
            "healthy_s": round(healthy_s, 2),
            "last_notification_s": round(last_s, 2),
            "window_s": round(window_s, 2),
        },
        "notifications": notes,
        "reconcile": {
            "exact": exact,
            "from_metrics_hash": from_hash,
            "ratio_p99": ratio(exact, "p99_ms"),
            "ratio_p50": ratio(exact, "p50_ms"),
            "ratio_mean": ratio(exact, "mean_ms"),
        },
        "other_jobs": dict(seen.other_jobs),
        "monitor_lines": seen.lines,
        "cpu_s": cpu_used,
        "cpu_cores": {k: round(v / window_s, 2) for k, v in cpu_used.items()},
    }


def render(report: Obj) -> list[str]:
    notes, rec = report["notifications"], report["reconcile"]
    exact, hashed = rec["exact"], rec["from_metrics_hash"]
    d = notes["delay_s"]
    lines = [
        f"update: Healthy on revision 2 after {report['update']['healthy_s']} s, last "
        f"notification after {report['update']['last_notification_s']} s",
        f"notifications: expected {notes['expected']}, arrivals {notes['arrivals']}, unexpected "
        f"{notes['unexpected']}; delay p50 {d['p50']} p90 {d['p90']} max {d['max']} s",
        "",
        "reconciles over the update".ljust(30)
        + "subscribed".rjust(16)
        + "not subscribed".rjust(16)
        + "ratio".rjust(8),
    ]
    rows = [
        ("count", exact, "reconciles"),
        ("per rollout", exact, "per_rollout"),
        ("mean ms", exact, "mean_ms"),
        ("p50 ms", exact, "p50_ms"),
        ("p90 ms", exact, "p90_ms"),
        ("p99 ms", exact, "p99_ms"),
        ("max ms", exact, "max_ms"),
        ("metrics hash: count", hashed, "reconciles"),
        ("metrics hash: mean ms", hashed, "mean_ms"),
        ("metrics hash: p99 bucket", hashed, "p99_bucket"),
    ]
    for title, group, key in rows:
        a, b = group["subscribed"][key], group["not_subscribed"][key]
        r = (
            f"{a / b:.2f}"
            if isinstance(a, int | float) and isinstance(b, int | float) and b
            else ""
        )
        lines.append(title.ljust(30) + str(a).rjust(16) + str(b).rjust(16) + r.rjust(8))
    lines.append(
        "CPU cores over the update: "
        + ", ".join(f"{k} {v}" for k, v in report["cpu_cores"].items())
    )
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=1000)
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--concurrency", type=int, default=2, help="the worker host's processes")
    p.add_argument("--ready-delay", type=float, default=1.0, help="the API's pod readiness delay")
    p.add_argument(
        "--notify-timeout",
        type=float,
        default=120.0,
        help="seconds after Healthy on revision 2 to wait for missing notifications",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds to keep listening once all arrived and the queues are idle",
    )
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--output", type=Path, default=RESULTS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    started = time.perf_counter()
    report = run_in_tempdir(run, args, "bench-notifications-")
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(report, args.output)
    print()
    print("\n".join(render(report)))
    print(f"\ntotal {report['total_seconds']:.0f} s; written to {args.output}")
    notes, rec = report["notifications"], report["reconcile"]["exact"]
    print(
        f"notifications: {notes['sent']} sent, {notes['duplicates']} duplicates, "
        f"{notes['lost']} lost, p99 delay {notes['delay_s']['p99']:.2f} s"
    )
    print(
        f"reconcile p99: subscribed {rec['subscribed']['p99_ms']} ms, not subscribed "
        f"{rec['not_subscribed']['p99_ms']} ms, ratio {report['reconcile']['ratio_p99']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
