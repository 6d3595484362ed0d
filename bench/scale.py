"""The pool against its yardstick at scale: R rollouts all changing image at once.

Run: `.venv/bin/python bench/scale.py [--rollouts 500] [--namespaces 20] [--pools 2,4]
[--prefork-pools 2] [--solo-pools ""] [--peer-threads 10] [--qps Q] [--profile]` (`make bench`
runs it at these defaults, about 12 minutes on 2 cores; `--rollouts 100` is a smoke run). For
each case, a fresh embedded API (`python -m devcluster`, its own process) and, for
the pool, a fresh EmbeddedRedis:

* `pool(N)`: a real `watcher`, `beat` and N `worker` hosts at their defaults (one process each,
  10 reconcile threads);
* `prefork(N)`: the same with one `worker -P prefork -c N` host (N child processes);
* `solo(N)`: the same with N `worker -P solo` hosts (one process each, one reconcile at a time);
* `peer(T)`: bench/peer.py, Argo's architecture (one process, T threads, in-process informers
  and an in-memory client-go workqueue) running the same reconcile code.

The workload: R rollouts over the namespaces, replicas 1, most of them canaries (setWeight 50,
a 1 s pause, setWeight 100) and every `--bluegreen-every`-th a blue-green with an active
Service (autoPromotionEnabled). The bench creates them, starts the controller, waits until all
are Healthy on revision 1, then patches every image at once (8 threads) and times the wait
until all are Healthy on revision 2 (status.phase, the revision annotation, observedGeneration
equal to generation), tracked from a LIST+WATCH of its own. Over that window it counts the
reconciles (the workqueue's `reconciles` counter, or the peer's), the API requests (the
devcluster's audit log, less the bench's own), the CPU seconds and peak RSS (VmHWM) of every
process, and for the pool the Redis commands per reconcile (`INFO commandstats`).

Then the event → reconcile-start latency: `--latency-rate` annotation patches a second on
distinct rollouts for `--latency-seconds`; the latency is from the patch's response to the
key's next claim (claim.lua's stamp of the claimed key seen through Redis MONITOR, or the peer's
claims log). Last, `rollouts enqueue --all` over `--enqueue-keys` known keys in a fresh Redis (no
workers), timed as a CLI run. Results go to bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
import urllib3
from analysis_timers import group_cpu, start_worker
from harness import (
    REPO,
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
from profiling import Sampler, phases, top_functions

sys.path.insert(0, str(REPO))  # the routers' CRDs, as the tests install them
from rollout_workers.celeryapp.app import create_app
from rollout_workers.kube.client import iter_lines
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import KubeSettings, Settings
from rollout_workers.workqueue.queue import DURATIONS_KEPT
from tests.support.routercrds import ROUTER_CRDS

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "scale.json"
PREFIX = "rw"
KIND = "rollouts"
ROLLOUTS_PATH = "/apis/argoproj.io/v1alpha1/rollouts"
REVISION = "rollout.argoproj.io/revision"
#: claim.lua writes the owner record of the key it claims here (whichever key's message woke
#: it, with fairness), with HSETNX; the layout before stamped it in STARTED with HSET (a
#: `--before` tree).
ACTIVE = f"{PREFIX}:wq:{KIND}:active"
STARTED = f"{PREFIX}:wq:{KIND}:started"
THREADS = 8
#: The latency events: an annotation the reconcile copies onto the ReplicaSet (one write per
#: event, as Argo), and kubectl's last-applied one, which it does not copy (no write at all).
LATENCY_ANNOTATIONS = {
    "copied": "bench/poke",
    "not_copied": "kubectl.kubernetes.io/last-applied-configuration",
}
POLL = 0.1

Obj = dict[str, Any]


def rate(n: float, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else 0.0


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a live process, MiB (0 if it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat[stat.rindex(")") + 2 :].split()[2]) == pgid:
                    pids.append(int(entry.name))
    return sorted(pids)


# -- the workload ----------------------------------------------------------------------------


def rollout_body(name: str, *, bluegreen: bool, router: str = "") -> Obj:
    labels = {"app": name}
    strategy: Obj
    if router:
        # A canary whose traffic moves by weight through an SMI TrafficSplit: 1 replica, so
        # the canary's pod and the weight move together (stable kept at full size).
        strategy = {
            "canary": {
                "stableService": f"{name}-stable",
                "canaryService": f"{name}-canary",
                "trafficRouting": {"smi": {}},
                "steps": [{"setWeight": 50}, {"pause": {"duration": "1s"}}, {"setWeight": 100}],
            }
        }
    elif bluegreen:
        strategy = {
            "blueGreen": {
                "activeService": f"{name}-active",
                "autoPromotionEnabled": True,
                "scaleDownDelaySeconds": 5,
            }
        }
    else:
        strategy = {
            "canary": {
                "steps": [{"setWeight": 50}, {"pause": {"duration": "1s"}}, {"setWeight": 100}]
            }
        }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "labels": {"app": name, "team": "bench"}},
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container("1.0.0")]},
            },
            "strategy": strategy,
        },
    }


def container(version: str) -> Obj:
    return {
        "name": "app",
        "image": f"registry.example.com/app:{version}",
        "ports": [{"name": "http", "containerPort": 8080}],
    }


def service_body(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name.rsplit("-", 1)[0]}, "ports": [{"port": 80}]},
    }


def install_router_crd(http: Http, router: str) -> None:
    """The router's CRD (tests/support/routercrds.py), and a wait until discovery serves it."""
    if router != "smi":
        raise SystemExit(f"unknown --router {router!r} (smi)")
    crd = ROUTER_CRDS["TrafficSplit"]
    http.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    group, version = crd["spec"]["group"], crd["spec"]["versions"][0]["name"]

    def served() -> bool:
        found = http.call("GET", f"/apis/{group}/{version}")
        return any(res.get("name") == "trafficsplits" for res in found.get("resources") or [])

    wait_for(served, 30, "the TrafficSplit CRD served", interval=POLL)


def create_workload(http: Http, args: argparse.Namespace) -> list[tuple[str, str]]:
    """Namespaces, blue-green Services and rollouts; returns the rollouts' (namespace, name)."""
    namespaces = [f"scale-{i:02d}" for i in range(args.namespaces)]
    for ns in namespaces:
        http.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    plan = [
        (namespaces[i % len(namespaces)], f"app-{i:05d}", i % args.bluegreen_every == 0)
        for i in range(args.rollouts)
    ]

    if args.router:
        install_router_crd(http, args.router)

    def create(item: tuple[str, str, bool]) -> None:
        ns, name, bluegreen = item
        bluegreen = bluegreen and not args.router
        services = [f"{name}-active"] if bluegreen else []
        if args.router:
            services = [f"{name}-stable", f"{name}-canary"]
        for svc in services:
            http.call("POST", f"/api/v1/namespaces/{ns}/services", service_body(svc))
        body = rollout_body(name, bluegreen=bluegreen, router=args.router)
        http.call("POST", f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/rollouts", body)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(create, plan, chunksize=32))
    return [(ns, name) for ns, name, _ in plan]


def patch_all(http: Http, targets: Sequence[tuple[str, str]], body: Obj) -> None:
    def patch(item: tuple[str, str]) -> None:
        ns, name = item
        http.call(
            "PATCH", f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/rollouts/{name}", body, True
        )

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(patch, targets, chunksize=32))


class Tracker:
    """Every rollout's (phase, revision, status current), from the bench's own LIST+WATCH."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.state: dict[str, tuple[str, str, bool]] = {}
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._pool = urllib3.PoolManager(maxsize=2, retries=False)
        self._response: urllib3.BaseHTTPResponse | None = None

    def _record(self, obj: Obj) -> None:
        meta, status = obj["metadata"], obj.get("status") or {}
        current = str(status.get("observedGeneration", "")) == str(meta.get("generation", ""))
        revision = (meta.get("annotations") or {}).get(REVISION, "")
        self.state[f"{meta['namespace']}/{meta['name']}"] = (
            str(status.get("phase", "")),
            revision,
            current,
        )

    def start(self) -> Tracker:
        page = json.loads(self._pool.request("GET", self.url + ROLLOUTS_PATH, timeout=120).data)
        for obj in page["items"]:
            self._record(obj)
        rv = page["metadata"]["resourceVersion"]
        threading.Thread(target=self._run, args=(rv,), name="tracker", daemon=True).start()
        return self

    def _run(self, rv: str) -> None:
        try:
            while not self._stop.is_set():
                url = f"{self.url}{ROLLOUTS_PATH}?watch=true&resourceVersion={rv}"
                url += "&allowWatchBookmarks=true&timeoutSeconds=3600"
                response = self._pool.request(
                    "GET", url, preload_content=False, timeout=urllib3.Timeout(connect=10, read=60)
                )
                self._response = response
                assert isinstance(response, urllib3.HTTPResponse)
                try:
                    for line in iter_lines(response):
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            raise RuntimeError(f"tracker watch: {obj}")
                        rv = obj["metadata"].get("resourceVersion") or rv
                        if event["type"] in ("ADDED", "MODIFIED"):
                            self._record(obj)
                except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ProtocolError):
                    # A quiet minute or a broken stream (an API busy with 10,000 objects):
                    # watch again from the last version seen, as a reflector would.
                    continue
        except BaseException as err:  # reported to the polling thread
            if not self._stop.is_set():
                self.error = err

    def healthy(self, revision: str) -> int:
        if self.error is not None:
            raise self.error
        return sum(
            1
            for phase, rev, current in list(self.state.values())
            if phase == "Healthy" and rev == revision and current
        )

    def stop(self) -> None:
        self._stop.set()
        if self._response is not None:
            with contextlib.suppress(Exception):
                self._response.shutdown()


# -- the controllers -------------------------------------------------------------------------


def hash_counts(raw: dict[Any, Any]) -> dict[str, int]:
    """A Redis hash of counters (HGETALL), with text fields."""
    return {(k.decode() if isinstance(k, bytes) else str(k)): int(v) for k, v in raw.items()}


class Controller:
    """The processes of one case, and how to read their counters."""

    def __init__(self, name: str, procs: dict[str, Proc]) -> None:
        self.name, self.procs = name, procs

    def alive(self) -> None:
        for proc in self.procs.values():
            proc.check_alive()

    def cpu(self) -> dict[str, float]:
        return {name: group_cpu(proc.pid) for name, proc in self.procs.items()}

    def rss(self) -> dict[str, float]:
        """Peak RSS per process, MiB (a worker host: its consumer and each pool process)."""
        out = {}
        for name, proc in self.procs.items():
            pids = group_pids(proc.pid)
            if len(pids) == 1:
                out[name] = peak_rss_mib(pids[0])
            for i, pid in enumerate(pids if len(pids) > 1 else []):
                out[f"{name}[{'consumer' if pid == proc.pid else i}]"] = peak_rss_mib(pid)
        return out

    def reconciles(self) -> int:
        raise NotImplementedError

    def durations(self) -> list[float]:
        """The latest reconciles' durations, seconds (none recorded: empty)."""
        return []

    def outcomes(self) -> dict[str, int]:
        """The queue's counters (outcomes, own_skipped, busy, stale...); none recorded: empty."""
        return {}

    def idle(self) -> bool:
        raise NotImplementedError

    def watch_claims(self) -> Callable[[], list[tuple[float, str]]]:
        """Start recording claims; the returned function stops and returns (time, key)."""
        raise NotImplementedError


#: The pool cases and the worker pool each runs (`rollouts worker -P`).
#: Case kind -> worker pool type. `before` is `pool` run from another source tree (--before).
POOLS = {"pool": "threads", "prefork": "prefork", "solo": "solo", "before": "threads"}


class Pool(Controller):
    def __init__(self, procs: dict[str, Proc], client: redis.Redis, url: str) -> None:
        super().__init__("pool", procs)
        self.client, self.url = client, url

    def reconciles(self) -> int:
        return int(self.client.hget(f"{PREFIX}:wq:{KIND}:stats", "reconciles") or 0)

    def outcomes(self) -> dict[str, int]:
        return hash_counts(self.client.hgetall(f"{PREFIX}:wq:{KIND}:stats"))

    def durations(self) -> list[float]:
        """The workqueue's record of the latest reconciles' durations, seconds."""
        newest = self.client.lrange(f"{PREFIX}:wq:{KIND}:durations", 0, DURATIONS_KEPT - 1)
        return [float(v) / 1000 for v in newest]

    def idle(self) -> bool:
        base = f"{PREFIX}:wq:{KIND}"
        return not self.client.zcard(f"{base}:queued") and not self.client.hlen(f"{base}:active")

    def watch_claims(self) -> Callable[[], list[tuple[float, str]]]:
        claims: list[tuple[float, str]] = []
        monitor_client = redis.Redis.from_url(self.url)
        started = threading.Event()
        stop = threading.Event()

        def run() -> None:
            with (
                contextlib.suppress(redis.RedisError, OSError, ValueError),
                monitor_client.monitor() as monitor,  # type: ignore[no-untyped-call]
            ):
                started.set()
                while not stop.is_set():
                    command = monitor.next_command()
                    parts = command["command"].split(" ")
                    # MONITOR shows what a script runs, too: claim.lua's HSETNX of the claimed
                    # key's owner record (a busy claim's too: rare, as its key is held).
                    claimed = parts[:2] in (["HSETNX", ACTIVE], ["HSET", STARTED])
                    if claimed and len(parts) >= 4:
                        claims.append((float(command["time"]), parts[2]))

        thread = threading.Thread(target=run, name="monitor", daemon=True)
        thread.start()
        started.wait(10)

        def finish() -> list[tuple[float, str]]:
            stop.set()
            self.client.ping()  # one more command wakes the monitor loop
            thread.join(5)
            monitor_client.close()
            return claims

        return finish


class Peer(Controller):
    def __init__(self, procs: dict[str, Proc], stats: Path, claims: Path) -> None:
        super().__init__("peer", procs)
        self.stats_path, self.claims_path = stats, claims

    def stats(self) -> Obj:
        with contextlib.suppress(OSError, ValueError):
            data: Obj = json.loads(self.stats_path.read_text())
            return data
        return {}

    def reconciles(self) -> int:
        return int(self.stats().get("reconciles", 0))

    def outcomes(self) -> dict[str, int]:
        s = self.stats()
        return {"reconciles": int(s.get("reconciles", 0)), **s.get("outcomes", {})}

    def idle(self) -> bool:
        s = self.stats()
        return bool(s) and not s.get("queued") and not s.get("processing")

    def watch_claims(self) -> Callable[[], list[tuple[float, str]]]:
        offset = self.claims_path.stat().st_size if self.claims_path.exists() else 0

        def finish() -> list[tuple[float, str]]:
            with self.claims_path.open() as f:
                f.seek(offset)
                lines = [line.split() for line in f if line.strip()]
            return [(float(t), key) for t, key in lines]

        return finish


def start_pool(
    n: int,
    env: dict[str, str],
    workdir: Path,
    stack: contextlib.ExitStack,
    url: str,
    *,
    pool: str = "threads",
    threads: int | None = None,
) -> Pool:
    """A watcher, beat and the workers: `n` hosts of one process each (threads, or `-P solo`:
    the consumer runs each task itself), or one prefork host of `n` processes."""
    client = redis.Redis.from_url(url)
    stack.callback(client.close)
    watcher = spawn("watcher", ["-m", "rollout_workers", "watcher"], env, workdir, stack)
    wait_for(
        lambda: client.exists(f"{PREFIX}:watcher:leader"),
        60,
        "the watcher's lease",
        interval=POLL,
        alive=watcher.check_alive,
    )
    app = create_app(Settings(state_dir=workdir / "state", redis={"url": url}), url)
    if pool == "prefork":
        workers = {
            "worker": start_worker(
                app, 0, concurrency=n, env=env, workdir=workdir, stack=stack, pool=pool
            )
        }
    else:
        workers = {
            f"worker-{i}": start_worker(
                app, i, concurrency=threads, env=env, workdir=workdir, stack=stack, pool=pool
            )
            for i in range(n)
        }
    beat = spawn("beat", ["-m", "rollout_workers", "beat"], env, workdir, stack)
    return Pool({"watcher": watcher, **workers, "beat": beat}, client, url)


def start_peer(
    threads: int, env: dict[str, str], workdir: Path, stack: contextlib.ExitStack
) -> Peer:
    stats, claims = workdir / "peer-stats.json", workdir / "peer-claims.txt"
    argv = [str(BENCH_DIR / "peer.py"), "--threads", str(threads)]
    argv += ["--stats", str(stats), "--claims", str(claims)]
    proc = spawn("peer", argv, env, workdir, stack)
    return Peer({"peer": proc}, stats, claims)


# -- one case --------------------------------------------------------------------------------


def audit(http: Http) -> Counter[str]:
    """The API's requests so far, by `verb resource[/subresource]` (the devcluster's audit)."""
    calls = http.call("GET", "/_devcluster/audit")
    items = calls if isinstance(calls, list) else calls.get("calls") or calls.get("items") or []
    counts: Counter[str] = Counter()
    for c in items:
        what = c.get("resource") or c.get("path") or ""
        sub = f"/{c['subresource']}" if c.get("subresource") else ""
        counts[f"{c.get('verb')} {what}{sub}"] += int(c.get("count", 0))
    return counts


def command_stats(client: redis.Redis, field: str = "calls") -> dict[str, int]:
    """Redis' count of each command since the stats were reset: `calls`, or `usec` (the time
    spent running it; a script's includes the commands it runs, which count on their own too)."""
    stats: dict[str, dict[str, Any]] = client.info("commandstats")
    return {
        k.removeprefix("cmdstat_"): int(v[field])
        for k, v in stats.items()
        if k.removeprefix("cmdstat_") not in ("info", "config", "monitor")
    }


def slowlog_all(client: redis.Redis) -> None:
    """Have Redis log every command with its duration (SLOWLOG at a threshold of 0 us)."""
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 1_000_000)
    client.slowlog_reset()


def script_names() -> dict[str, str]:
    """SHA1 -> name of every script the controller may run (each fairness mode's)."""
    from rollout_workers.cache.fence import SET_FENCED
    from rollout_workers.cache.store import INDEXED_OBJECTS, OWNER_AND_OWNED, apply_source
    from rollout_workers.cache.written import _RECORD
    from rollout_workers.celeryapp.transport import _POP_HELD
    from rollout_workers.watcher.events import event_script
    from rollout_workers.workqueue.queue import script_source

    sources = [
        ("apply.lua", apply_source()),
        ("INDEXED_OBJECTS", INDEXED_OBJECTS),
        ("OWNER_AND_OWNED", OWNER_AND_OWNED),
        ("written _RECORD", _RECORD),
        ("SET_FENCED", SET_FENCED),
        ("transport _POP_HELD", _POP_HELD),
    ]
    for name in ("extend", "add_after", "add_rate_limited", "sent", "alive"):
        sources.append((f"{name}.lua", script_source(name)))
    for mode in ("off", "namespace", "label"):
        for name in ("add", "claim", "done", "tick", "requeue", "release"):
            sources.append((f"{name}.lua", script_source(name, mode)))
        sources.append(("watch event (apply + add)", event_script(script_source("add", mode))))
    return {hashlib.sha1(src.encode()).hexdigest(): name for name, src in sources}


def script_times(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """From the SLOWLOG (slowlog_all): name -> (calls, microseconds), a script by its name and
    any other command by its own; then the log is turned off again."""
    names = script_names()
    out: dict[str, tuple[int, int]] = {}
    for entry in client.slowlog_get(1_000_000):
        command = entry["command"]
        text = command.decode(errors="replace") if isinstance(command, bytes) else str(command)
        parts = text.split()
        head = parts[0].upper() if parts else "?"
        if head == "EVALSHA" and len(parts) > 1:
            head = names.get(parts[1], f"script {parts[1][:8]}")
        if head in ("SLOWLOG", "CONFIG", "INFO", "MONITOR"):
            continue
        calls, usec = out.get(head, (0, 0))
        out[head] = (calls + 1, usec + int(entry["duration"]))
    client.config_set("slowlog-log-slower-than", 10_000)
    client.slowlog_reset()
    return out


class CommandMonitor:
    """--redis-monitor: every command Redis runs, through MONITOR, counted under its caller: a
    script's own commands under the script's name (MONITOR shows EVALSHA, then what it runs,
    tagged lua), any other command under its own name. A child process copies the stream to
    a file untouched, so that reading it costs the measured processes nothing."""

    # Each line: +<time> [<db> <client>] "<COMMAND>" "<arg>"...
    _COPY = (
        "import socket, sys\n"
        "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
        "s.sendall(b'MONITOR\\r\\n')\n"
        "with open(sys.argv[2], 'wb') as out:\n"
        "    while chunk := s.recv(1 << 20):\n"
        "        out.write(chunk)\n"
    )

    def __init__(self, client: redis.Redis, path: Path) -> None:
        self.path = path
        port = str(client.connection_pool.connection_kwargs["port"])
        self.proc = subprocess.Popen([sys.executable, "-c", self._COPY, port, str(path)])
        deadline = time.monotonic() + 10
        while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
            client.ping()  # a line for the copy to write once MONITOR is on
            time.sleep(0.05)

    def stop(self, reconciles: int) -> Obj:
        """Per reconcile, each caller's calls and the commands they ran, most first."""
        self.proc.terminate()
        self.proc.wait(10)
        names = script_names()
        by_caller: dict[str, Counter[str]] = {}
        calls: Counter[str] = Counter()
        caller = "?"
        with self.path.open("rb") as lines:
            for raw in lines:
                line = raw.decode(errors="replace").rstrip("\r\n")
                _, _, rest = line.partition("] ")
                if not rest:
                    continue
                parts = rest.split(" ", 2)
                head = parts[0].strip('"').upper()
                if " lua]" in line:
                    by_caller.setdefault(caller, Counter())[head] += 1
                    continue
                caller = head
                if head == "EVALSHA" and len(parts) > 1:
                    sha = parts[1].strip('"')
                    caller = names.get(sha, f"script {sha[:8]}")
                calls[caller] += 1
                by_caller.setdefault(caller, Counter())[head] += 1
        per = max(1, reconciles)
        rows = sorted(by_caller.items(), key=lambda kv: -sum(kv[1].values()))
        return {
            caller: {
                "calls": round(calls[caller] / per, 2),
                "commands": round(sum(found.values()) / per, 2),
                "by_command": {k: round(v / per, 2) for k, v in found.most_common()},
            }
            for caller, found in rows
        }


def run_case(
    kind: str, size: int, args: argparse.Namespace, workdir: Path, base_env: dict[str, str]
) -> Obj:
    """One controller against a fresh API (and Redis): create, settle, change images, measure."""
    label = f"{kind}({size})"
    workdir.mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        env = dict(base_env)
        if kind == "before":
            # Not the repo (every process starts in it, which `-m` would put first on the path).
            env.update(PYTHONPATH=str(args.before), PYTHONSAFEPATH="1")
        api, api_url = start_api(
            env, workdir, stack, options=["--ready-delay", str(args.ready_delay)]
        )
        env.update(
            ROLLOUTS_KUBECONFIG=str(workdir / "api-state" / "devcluster.kubeconfig"),
            ROLLOUTS_STATE_DIR=str(workdir / "state"),
            ROLLOUTS_LOG_LEVEL=args.log_level,
        )
        http = Http(api_url, threads=THREADS)
        started = time.perf_counter()
        targets = create_workload(http, args)
        created_s = time.perf_counter() - started
        tracker = Tracker(api_url).start()
        stack.callback(tracker.stop)
        redis_pid = 0
        if kind in POOLS:
            server = EmbeddedRedis(workdir / "redis").start()
            stack.callback(server.stop)
            assert server.process is not None
            redis_pid = server.process.pid
            env["ROLLOUTS_REDIS_URL"] = server.url
            controller: Controller = start_pool(
                size, env, workdir, stack, server.url, pool=POOLS[kind], threads=args.threads
            )
        else:
            controller = start_peer(size, env, workdir, stack)
        procs = {"api": api, **controller.procs}
        n = len(targets)
        # Room for the slowest case: one process' API budget for about 25 requests a rollout.
        timeout = 120 + n / 5 + 25 * n / float(env.get("ROLLOUTS_KUBE_QPS") or KubeSettings().qps)
        print(f"  {label}: {n} rollouts created in {created_s:.1f} s", flush=True)

        def alive() -> None:
            for proc in procs.values():
                proc.check_alive()

        def wait_healthy(revision: str, what: str) -> float:
            t0 = time.perf_counter()
            wait_for(
                lambda: tracker.healthy(revision) >= n,
                timeout,
                what,
                interval=POLL,
                alive=alive,
            )
            return time.perf_counter() - t0

        initial_s = wait_healthy("1", f"{n} rollouts Healthy on revision 1")
        wait_for(controller.idle, 60, "the controller to go idle", interval=POLL)
        print(f"  {label}: all Healthy on revision 1 after {initial_s:.1f} s", flush=True)

        def cpu() -> dict[str, float]:
            out = {"api": cpu_seconds(api.pid), **controller.cpu()}
            if redis_pid:
                out["redis"] = cpu_seconds(redis_pid)
            out["bench"] = cpu_seconds(os.getpid())
            return out

        client = controller.client if isinstance(controller, Pool) else None
        if client is not None:
            client.config_resetstat()
            if args.redis_scripts:
                slowlog_all(client)
        monitor = (
            CommandMonitor(client, workdir / "monitor.log")
            if client is not None and args.redis_monitor
            else None
        )
        samplers = (
            {name: Sampler(proc.pid).start() for name, proc in controller.procs.items()}
            if args.profile
            else {}
        )
        cpu0, audit0, reconciles0 = cpu(), audit(http), controller.reconciles()
        outcomes0 = controller.outcomes()
        t0 = time.perf_counter()
        patch_all(http, targets, {"spec": {"template": {"spec": {"containers": [container("2")]}}}})
        patched_s = time.perf_counter() - t0
        rollout_s = patched_s + wait_healthy("2", f"{n} rollouts Healthy on revision 2")
        cpu1, audit1, reconciles1 = cpu(), audit(http), controller.reconciles()
        outcomes1 = controller.outcomes()
        durations = controller.durations()
        stacks = {name: sampler.stop() for name, sampler in samplers.items()}
        if args.profile_stacks:
            args.profile_stacks.mkdir(parents=True, exist_ok=True)
            for name, found in stacks.items():
                path = args.profile_stacks / f"{kind}-{size}-{name}.txt"
                path.write_text("".join(f"{stack} {count}\n" for stack, count in found))
        commands = command_stats(client) if client is not None else {}
        usec = command_stats(client, "usec") if client is not None else {}
        scripts = script_times(client) if client is not None and args.redis_scripts else {}
        by_caller = monitor.stop(reconciles1 - reconciles0) if monitor is not None else None
        # Events a worker dropped (its queue full, spam, refused), counted up to here.
        drops = client.hgetall(f"{PREFIX}:metrics:events_dropped") if client is not None else {}
        dropped = hash_counts(drops)
        print(f"  {label}: all Healthy on revision 2 after {rollout_s:.1f} s", flush=True)

        latency = {
            name: measure_latency(controller, http, targets, args, annotation=annotation)
            for name, annotation in LATENCY_ANNOTATIONS.items()
        }
        rss = {"api": peak_rss_mib(api.pid), **controller.rss()}
        if redis_pid:
            rss["redis"] = peak_rss_mib(redis_pid)
            if client is not None:
                rss["redis used_memory_peak"] = round(
                    int(client.info("memory")["used_memory_peak"]) / 2**20, 1
                )

    reconciles = reconciles1 - reconciles0
    profile = profile_table(stacks, reconciles) if stacks else None
    calls = audit1 - audit0
    calls["patch rollouts"] -= n  # the bench's own image patches
    requests = calls.total()
    cpu_used = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}
    controller_cpu = sum(v for k, v in cpu_used.items() if k not in ("api", "redis", "bench"))
    total_commands = sum(commands.values())
    return {
        "case": label,
        "rollouts": n,
        "create_s": round(created_s, 2),
        "initial_healthy_s": round(initial_s, 2),
        "patch_s": round(patched_s, 2),
        "rollout_s": round(rollout_s, 2),
        "reconciles": reconciles,
        "reconciles_per_rollout": round(reconciles / n, 2),
        # The pool's queue counters over the change (outcomes, own_skipped, busy, stale...).
        "queue_counters": {
            k: v - outcomes0.get(k, 0)
            for k, v in sorted(outcomes1.items())
            if v != outcomes0.get(k)
        },
        "reconciles_per_s": rate(reconciles, rollout_s),
        "reconcile_p50_ms": round(1000 * percentile(durations, 0.5), 2) if durations else None,
        "reconcile_p99_ms": round(1000 * percentile(durations, 0.99), 2) if durations else None,
        "rollouts_per_s": rate(n, rollout_s),
        "api_requests": requests,
        "api_requests_per_s": rate(requests, rollout_s),
        "api_requests_per_reconcile": round(requests / max(1, reconciles), 2),
        "api_calls": dict(calls.most_common()),
        "cpu_s": cpu_used,
        "cpu_cores": {k: round(v / rollout_s, 2) for k, v in cpu_used.items()},
        "controller_cpu_ms_per_reconcile": round(1000 * controller_cpu / max(1, reconciles), 2),
        "api_cpu_ms_per_request": round(1000 * cpu_used["api"] / max(1, requests), 2),
        "redis_commands_per_reconcile": (
            round(total_commands / max(1, reconciles), 1) if client is not None else None
        ),
        "redis_top_commands": dict(sorted(commands.items(), key=lambda kv: -kv[1])[:10]),
        # Microseconds per reconcile of the commands that took longest (Redis' own timing).
        "redis_top_usec_per_reconcile": {
            k: round(v / max(1, reconciles), 1)
            for k, v in sorted(usec.items(), key=lambda kv: -kv[1])[:10]
        },
        # --redis-scripts: per script (or command), calls and microseconds per reconcile.
        "redis_scripts_per_reconcile": {
            name: {
                "calls": round(n / max(1, reconciles), 2),
                "usec": round(t / max(1, reconciles), 1),
            }
            for name, (n, t) in sorted(scripts.items(), key=lambda kv: -kv[1][1])
        },
        # --redis-monitor: per script (or command), its calls and the commands it ran.
        "redis_commands_by_caller": by_caller,
        "events_dropped": dropped,
        "events_dropped_total": sum(dropped.values()),
        "peak_rss_mib": rss,
        "latency": latency,
        "profile_ms_per_reconcile": profile,
    }


def profile_table(stacks: dict[str, list[tuple[str, int]]], reconciles: int) -> Obj:
    """Sampled CPU ms per reconcile: by phase in the processes that reconcile (the worker
    host, or the peer), the watcher and beat whole; and the leaf functions that cost most."""
    table: Obj = {}
    top: list[tuple[str, int]] = []
    for name, process_stacks in stacks.items():
        if name.startswith("worker") or name == "peer":
            for phase, seconds in phases(process_stacks).items():
                table[phase] = round(table.get(phase, 0.0) + 1000 * seconds / max(1, reconciles), 3)
            top += process_stacks
        else:
            seconds = sum(phases(process_stacks).values())
            table[f"{name} (whole process)"] = round(1000 * seconds / max(1, reconciles), 3)
    table["total sampled"] = round(sum(table.values()), 3)
    table["top leaf functions (s)"] = top_functions(top)
    return table


def measure_latency(
    controller: Controller,
    http: Http,
    targets: Sequence[tuple[str, str]],
    args: argparse.Namespace,
    *,
    annotation: str,
) -> Obj:
    """Patch `annotation` on `--latency-rate` rollouts a second; time patch → next claim."""
    wait_for(controller.idle, 120, "the controller to go idle", interval=POLL)
    time.sleep(1.0)  # let timers from the rollout (blue-green scale-downs) fire first
    count = int(args.latency_rate * args.latency_seconds)
    audit0 = audit(http)
    finish = controller.watch_claims()
    sent: list[tuple[float, float, str]] = []  # (sent, answered, key)
    start = time.time()
    for i in range(count):
        ns, name = targets[i % len(targets)]
        due = start + i / args.latency_rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        before = time.time()
        body = {"metadata": {"annotations": {annotation: str(i)}}}
        http.call(
            "PATCH", f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/rollouts/{name}", body, True
        )
        sent.append((before, time.time(), f"{ns}/{name}"))
    behind = time.time() - (start + count / args.latency_rate)
    time.sleep(2.0)
    claims = sorted(finish())
    calls = audit(http) - audit0
    calls["patch rollouts"] -= count  # the bench's own
    by_key: dict[str, list[float]] = {}
    for t, key in claims:
        by_key.setdefault(key, []).append(t)
    latencies, missed = [], 0
    for before, answered, key in sent:
        claimed = next((t for t in by_key.get(key, ()) if t >= before), None)
        if claimed is None:
            missed += 1
        else:
            latencies.append(claimed - answered)
    return {
        "events": count,
        "rate_per_s": args.latency_rate,
        "sender_behind_s": round(behind, 2),
        "missed": missed,
        "p50_ms": round(1000 * percentile(latencies, 0.5), 1),
        "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
        "max_ms": round(1000 * max(latencies), 1) if latencies else None,
        "api_calls": dict(calls.most_common()),
    }


def measure_enqueue(keys: int, workdir: Path, base_env: dict[str, str]) -> Obj:
    """`rollouts enqueue --all` over `keys` known keys in a fresh Redis, no workers."""
    workdir.mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        server = EmbeddedRedis(workdir / "redis").start()
        stack.callback(server.stop)
        client = redis.Redis.from_url(server.url)
        stack.callback(client.close)
        known = f"{PREFIX}:wq:{KIND}:known"
        names = [f"scale-{i % 20:02d}/app-{i:05d}" for i in range(keys)]
        for i in range(0, keys, 1000):
            client.sadd(known, *names[i : i + 1000])
        env = dict(base_env, ROLLOUTS_REDIS_URL=server.url, ROLLOUTS_LOG_LEVEL="WARNING")
        env["ROLLOUTS_STATE_DIR"] = str(workdir / "state")
        cli = [sys.executable, "-m", "rollout_workers", "enqueue"]

        def timed(extra: list[str]) -> float:
            t0 = time.perf_counter()
            subprocess.run([*cli, *extra], env=env, cwd=REPO, check=True, capture_output=True)
            return time.perf_counter() - t0

        one = timed(["scale-00/app-00000"])
        client.delete(f"{PREFIX}:wq:{KIND}:queued")
        total = timed(["--all"])
        queued = int(client.zcard(f"{PREFIX}:wq:{KIND}:queued"))
        messages = int(client.llen("rollouts"))
    return {
        "keys": keys,
        "seconds": round(total, 2),
        "one_key_seconds": round(one, 2),
        "queued_after": queued,
        "messages_after": messages,
        "keys_per_s": rate(keys, total - one),
    }


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=500)
    p.add_argument("--namespaces", type=int, default=20)
    p.add_argument(
        "--pools", default="2,4", help="cases of N worker hosts at their defaults (threads)"
    )
    p.add_argument(
        "--threads", type=int, help="reconcile threads of each pool case's hosts (default 10)"
    )
    p.add_argument(
        "--prefork-pools", default="2", help="cases of one `-P prefork` host of N processes"
    )
    p.add_argument(
        "--solo-pools", default="", help="cases of N solo hosts (`-P solo`, one process each)"
    )
    p.add_argument(
        "--before",
        type=Path,
        help="a source tree (e.g. a git worktree of an earlier commit): each --pools case also "
        "runs from it, as before(N), in the same run",
    )
    p.add_argument("--peer-threads", type=int, default=10, help="0 skips the peer")
    p.add_argument("--bluegreen-every", type=int, default=10, help="every n-th is blue-green")
    p.add_argument(
        "--router", default="", help="smi: every rollout a canary routed by an SMI TrafficSplit"
    )
    p.add_argument("--ready-delay", type=float, default=1.0, help="the API's pod readiness delay")
    p.add_argument("--latency-rate", type=float, default=100.0, help="annotation patches/s")
    p.add_argument("--latency-seconds", type=float, default=10.0)
    p.add_argument("--enqueue-keys", type=int, default=10_000, help="0 skips")
    p.add_argument("--qps", type=float, help="the controllers' API QPS (default: the settings')")
    p.add_argument("--burst", type=int, help="the controllers' API burst (default: 2 x --qps)")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument(
        "--profile",
        action="store_true",
        help="sample the controller's processes with py-spy over the rollout: CPU by phase",
    )
    p.add_argument(
        "--profile-stacks",
        type=Path,
        help="with --profile: write each process' collapsed stacks here (flamegraph input)",
    )
    p.add_argument(
        "--redis-scripts",
        action="store_true",
        help="log every Redis command over the rollout (SLOWLOG at 0 us): time per script",
    )
    p.add_argument(
        "--redis-monitor",
        action="store_true",
        help="count every Redis command over the rollout (MONITOR) under the script or "
        "command that ran it",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run every case this many times, in rounds (each case once a round, the order "
        "rotated by one each round); the scale: lines give the median over the rounds of each "
        "round's own ratio",
    )
    p.add_argument("--output", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def run(
    args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack, *, rotate: int = 0
) -> Obj:
    """Every case once, in order; `rotate`: start that many cases further on (rounds of
    `--repeat` take turns going first, which ran slower from the second round on)."""
    load_start = round(os.getloadavg()[0], 2)
    env = child_env()
    if args.qps:
        env["ROLLOUTS_KUBE_QPS"] = str(args.qps)
        env["ROLLOUTS_KUBE_BURST"] = str(args.burst or int(2 * args.qps))
    default = KubeSettings()
    if args.qps:
        qps = {"qps": args.qps, "burst": args.burst or int(2 * args.qps)}
    else:
        qps = {"qps": default.qps, "burst": default.burst}
    cases = [
        (kind, int(n))
        for kind, sizes in (
            ("pool", args.pools),
            ("prefork", args.prefork_pools),
            ("solo", args.solo_pools),
            ("before", args.pools if args.before else ""),
        )
        for n in sizes.split(",")
        if n.strip() and int(n) > 0
    ]
    if args.peer_threads:
        cases.append(("peer", args.peer_threads))
    if cases:
        cases = cases[rotate % len(cases) :] + cases[: rotate % len(cases)]
    results = []
    for kind, size in cases:
        print(f"{kind}({size}):", flush=True)
        results.append(run_case(kind, size, args, workdir / f"{kind}-{size}", env))
    enqueue = (
        measure_enqueue(args.enqueue_keys, workdir / "enqueue", env) if args.enqueue_keys else None
    )
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "loadavg_1m_at_start_and_end": [load_start, round(os.getloadavg()[0], 2)],
        },
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "kube_client": qps,
        "cases": results,
        "enqueue_all": enqueue,
    }


def render(report: Obj) -> list[str]:
    cases = report["cases"]
    rows = [
        ("Healthy on rev 2 (s)", "rollout_s"),
        ("reconciles", "reconciles"),
        ("reconciles/rollout", "reconciles_per_rollout"),
        ("reconciles/s", "reconciles_per_s"),
        ("reconcile p50 ms", "reconcile_p50_ms"),
        ("reconcile p99 ms", "reconcile_p99_ms"),
        ("API requests/s", "api_requests_per_s"),
        ("API requests/reconcile", "api_requests_per_reconcile"),
        ("controller CPU ms/reconcile", "controller_cpu_ms_per_reconcile"),
        ("Redis commands/reconcile", "redis_commands_per_reconcile"),
        ("events dropped", "events_dropped_total"),
    ]
    width = 14
    lines = ["".ljust(30) + "".join(c["case"].rjust(width) for c in cases)]
    for title, key in rows:
        lines.append(title.ljust(30) + "".join(str(c[key]).rjust(width) for c in cases))
    for name in LATENCY_ANNOTATIONS:
        lines.append(
            f"latency {name} p50/p99 ms".ljust(30)
            + "".join(
                f"{c['latency'][name]['p50_ms']}/{c['latency'][name]['p99_ms']}".rjust(width)
                for c in cases
            )
        )
    profiled = [c for c in cases if c.get("profile_ms_per_reconcile")]
    if profiled:
        lines.append("sampled CPU ms/reconcile by phase (py-spy):")
        names: list[str] = []
        for c in profiled:
            names += [k for k in c["profile_ms_per_reconcile"] if k not in names]
        for name in names:
            if name == "top leaf functions (s)":
                continue
            cells = "".join(
                str(c["profile_ms_per_reconcile"].get(name, "")).rjust(width) for c in profiled
            )
            lines.append(f"  {name}"[:52].ljust(52) + cells)
        for c in profiled:
            lines.append(f"  {c['case']}: top leaf functions")
            lines += [f"    {f}" for f in c["profile_ms_per_reconcile"]["top leaf functions (s)"]]
    lines.append("CPU cores over the rollout (by process):")
    for c in cases:
        lines.append(f"  {c['case']}: " + ", ".join(f"{k} {v}" for k, v in c["cpu_cores"].items()))
    lines.append("peak RSS MiB:")
    for c in cases:
        lines.append(
            f"  {c['case']}: " + ", ".join(f"{k} {v}" for k, v in c["peak_rss_mib"].items())
        )
    return lines


def ratio(report: Obj, a: str, b: str) -> float:
    """Throughput of case `a` over that of case `b` (the same work: the inverse time ratio)."""
    by_case = {c["case"]: c for c in report["cases"]}
    if a not in by_case or b not in by_case:
        return float("nan")
    return float(by_case[b]["rollout_s"] / by_case[a]["rollout_s"])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    started = time.perf_counter()
    rounds = []
    for i in range(args.repeat):
        if args.repeat > 1:
            print(f"round {i + 1} of {args.repeat}:", flush=True)
        rounds.append(run_in_tempdir(functools.partial(run, rotate=i), args, "bench-scale-"))
    report = rounds[0]
    if len(rounds) > 1:
        report["rounds"] = [r["cases"] for r in rounds]
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(report, args.output)
    print()
    print("\n".join(render(report)))
    print(f"\ntotal {report['total_seconds']:.0f} s; written to {args.output}")
    peer = f"peer({args.peer_threads})"
    enqueue = report["enqueue_all"]
    bound = "cpu-bound " if (args.qps or 0) >= 1000 else ""
    if len(rounds) > 1:
        for i, r in enumerate(rounds, 1):
            cpu = {c["case"]: c["controller_cpu_ms_per_reconcile"] for c in r["cases"]}
            print(
                f"round {i}: pool(2)/peer {ratio(r, 'pool(2)', peer):.2f}, controller cpu ms "
                + ", ".join(f"{case} {ms}" for case, ms in cpu.items())
            )
        print(f"scale: medians of {len(rounds)} rounds")

    def median_of(case: str, key: str) -> float:
        values = [c[key] for r in rounds for c in r["cases"] if c["case"] == case]
        return percentile(values, 0.5) if values else float("nan")

    throughput = percentile([ratio(r, "pool(2)", peer) for r in rounds], 0.5)
    print(f"scale: {bound}pool(2)/peer throughput ratio {throughput:.2f}")
    by_case = {c["case"]: c for c in report["cases"]}
    pool2, peer_case = by_case.get("pool(2)"), by_case.get(peer)
    if pool2 and peer_case:
        print(
            "scale: controller cpu per reconcile pool "
            f"{median_of('pool(2)', 'controller_cpu_ms_per_reconcile'):.2f} ms peer "
            f"{median_of(peer, 'controller_cpu_ms_per_reconcile'):.2f} ms"
        )
        print(
            f"scale: latency copied p99 pool {pool2['latency']['copied']['p99_ms']:g} ms "
            f"peer {peer_case['latency']['copied']['p99_ms']:g} ms"
        )
    if pool2:
        commands = median_of("pool(2)", "redis_commands_per_reconcile")
        print(f"scale: redis commands per reconcile {commands:g}")
    speedup = percentile([ratio(r, "pool(4)", "pool(1)") for r in rounds], 0.5)
    print(f"scale: pool(4)/pool(1) speed-up {speedup:.2f}")
    seconds = enqueue["seconds"] if enqueue else float("nan")
    keys = enqueue["keys"] if enqueue else 0
    print(f"scale: enqueue --all {keys} keys {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
