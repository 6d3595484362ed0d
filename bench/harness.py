"""What the benchmark scripts share: polling, percentiles, CPU readings, child processes, a
webhook receiver.

Imported as `harness` by the scripts in this directory (run as `python bench/<name>.py`, so
this directory is on sys.path).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis
import urllib3

REPO = Path(__file__).resolve().parent.parent

CLK_TCK = os.sysconf("SC_CLK_TCK")
POLL = 0.01

Obj = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------


def wait_for(
    predicate: Callable[[], object],
    timeout: float,
    what: str,
    interval: float = POLL,
    alive: Callable[[], None] | None = None,
) -> object:
    """Poll until `predicate()` is truthy; `alive()` may raise to stop early."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if alive is not None:
            alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def child_env() -> dict[str, str]:
    """The environment of the processes a benchmark starts: this one's less its ROLLOUTS_*
    settings, with this checkout's controller and stand-ins first on the path, whatever the
    virtualenv has installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), str(REPO / "standins"), env.get("PYTHONPATH")) if p
    )
    return env


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, q in [0, 1]."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def cpu_seconds(pid: int, gone_ok: bool = False) -> float:
    """User + system CPU seconds of a process (all its threads); 0 once it is gone if gone_ok."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if gone_ok:
            return 0.0
        raise
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


# -- processes -------------------------------------------------------------------------------


@dataclass
class Proc:
    """A child started in its own session, so its whole group can be stopped."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    node: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen.poll() is None:
            self.signal(signal.SIGCONT)  # in case it was paused
            self.signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        # Pool children may outlive a killed parent; take down the group this bench created.
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5)


def spawn(
    name: str,
    argv: list[str],
    env: dict[str, str],
    workdir: Path,
    stack: contextlib.ExitStack | None = None,
) -> Proc:
    """`python <argv>` from the repo, logging to workdir/<name>.log; stopped by `stack` if given."""
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [sys.executable, *argv],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proc = Proc(name, popen, log)
    if stack is not None:
        stack.callback(proc.stop)
    return proc


def start_api(
    env: dict[str, str],
    workdir: Path,
    stack: contextlib.ExitStack,
    *,
    name: str = "api",
    state_file: Path | None = None,
    options: Sequence[str] = (),
) -> tuple[Proc, str]:
    """The embedded API in its own process (files in workdir/<name>-state, objects loaded
    from and saved to `state_file` if given, more devcluster `options`); returns it and its
    URL."""
    state = workdir / f"{name}-state"
    argv = ["-m", "devcluster", "--port", "0", "--state-dir", str(state)]
    if state_file is not None:
        argv += ["--state", str(state_file)]
    proc = spawn(name, [*argv, *options], env, workdir, stack)
    record = state / "devcluster.json"
    wait_for(record.exists, 60, "the embedded API to start", interval=0.05, alive=proc.check_alive)
    return proc, str(json.loads(record.read_text())["url"])


# -- the API over raw HTTP -------------------------------------------------------------------


class Http:
    """JSON requests to the API, from many threads if `threads` says so, over one pool."""

    def __init__(self, url: str, threads: int = 4, block: bool = False) -> None:
        self.url = url
        self.pool = urllib3.PoolManager(maxsize=threads, block=block, retries=False)

    def call(self, method: str, path: str, body: Obj | None = None, patch: bool = False) -> Obj:
        headers = {"Accept": "application/json"}
        headers["Content-Type"] = "application/merge-patch+json" if patch else "application/json"
        response = self.pool.request(
            method,
            self.url + path,
            body=json.dumps(body).encode() if body is not None else None,
            headers=headers,
            timeout=60,
        )
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        data: Obj = json.loads(response.data)
        return data

    def resource_version(self) -> int:
        meta = self.call("GET", "/api/v1/namespaces?limit=1")["metadata"]
        return int(meta["resourceVersion"])


# -- a webhook endpoint ----------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """One request the receiver got: its wall-clock arrival (time.time()), method, path, body."""

    at: float
    method: str
    path: str
    body: bytes


class Receiver:
    """An HTTP server on 127.0.0.1 (HTTP/1.1, keep-alive) that answers 200 to every request and
    records each with its arrival time, taken before the body is read."""

    def __init__(self) -> None:
        self._arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                at = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with receiver._lock:
                    receiver._arrivals.append(Arrival(at, self.command, self.path, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_PUT = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="receiver",
            daemon=True,
        )

    def start(self, stack: contextlib.ExitStack | None = None) -> Receiver:
        """Serve from a thread; stopped by `stack` if given."""
        self._thread.start()
        if stack is not None:
            stack.callback(self.stop)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def arrivals(self) -> list[Arrival]:
        with self._lock:
            return list(self._arrivals)

    def clear(self) -> list[Arrival]:
        """Forget what arrived so far; returns it."""
        with self._lock:
            arrived, self._arrivals = self._arrivals, []
        return arrived


# -- main ------------------------------------------------------------------------------------


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit, so the ExitStack stops every child as on Ctrl-C."""
    signal.signal(signal.SIGTERM, _terminate)


def run_in_tempdir(
    run: Callable[[argparse.Namespace, Path, contextlib.ExitStack], Obj],
    args: argparse.Namespace,
    prefix: str,
) -> Obj:
    """`run(args, workdir, stack)` in a temp dir; prints the logs' last lines if it fails."""
    with (
        tempfile.TemporaryDirectory(prefix=prefix) as tmp,
        contextlib.ExitStack() as stack,
    ):
        try:
            return run(args, Path(tmp), stack)
        except BaseException:
            for log in sorted(Path(tmp).glob("*.log")):
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                print(f"--- {log.name} (last lines)\n{tail}", file=sys.stderr)
            raise


def write_json(report: Obj, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
