"""The whole system on one machine: `rollouts up` (and the demo) start and supervise it.

Redis is the embedded one unless ROLLOUTS_REDIS_URL is set; the cluster is the embedded API
unless a kubeconfig is given. The demo's made-up Prometheus (`rollouts demo-prometheus`) is
started too and becomes analysis' default Prometheus address unless
ROLLOUTS_ANALYSIS_PROMETHEUS_ADDRESS is set. Both are stand-ins (standins/, not in the
controller's image), imported here only inside the methods that use them. Every other process
is a real `rollouts <command>` child with its log in `<state dir>/logs/`, exactly as it would run
on separate hosts. A child that dies is restarted with backoff; Ctrl-C stops everything.

What would fail only in a child's log is checked before anything starts: the stand-ins are
installed, and the ports the stack's servers listen on are free (a watcher that cannot bind its
/metrics port runs on without one, and says so only in watcher.log).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rollout_workers import staterecords
from rollout_workers.kube.config import DEVCLUSTER_RECORD, embedded_kubeconfig
from rollout_workers.local import redis_server
from rollout_workers.local.standins import require
from rollout_workers.settings import Settings, mask_url

log = logging.getLogger(__name__)


class StartupFailed(RuntimeError):
    pass


@dataclass
class Child:
    name: str
    args: list[str]
    log_file: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    health_port: int = 0

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def local_url(address: str, port: int, path: str = "") -> str:
    """The URL of a server on this machine listening on `address` (any address: loopback)."""
    host = "127.0.0.1" if address in ("", "0.0.0.0", "::") else address
    return f"http://{host}:{port}{path}"


def port_taken(address: str, port: int) -> bool:
    """Whether binding `address:port` fails now, as it would for an HTTP server (which sets
    SO_REUSEADDR, so only a listener holds the port, not a connection closing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return True
    return False


def with_health(child: Child) -> Child:
    """Give a child its own health port on this machine (they cannot all have 8080)."""
    child.health_port = redis_server.free_port()
    child.args += ["--health-port", str(child.health_port)]
    return child


@dataclass
class Stack:
    """Starts the local system and keeps it running."""

    settings: Settings
    workers: int = 2
    flower: bool = False
    flower_port: int = 5555
    ready_delay: float = 2.0
    demo_prometheus_port: int = 0
    #: The command that runs the stack, for the one-line errors (`rollouts up`, `rollouts demo`).
    command: str = "up"
    env: dict[str, str] = field(default_factory=dict)
    children: list[Child] = field(default_factory=list)
    redis: redis_server.EmbeddedRedis | None = None
    redis_url: str = ""
    kubeconfig: Path | None = None
    api_url: str = ""
    demo_prometheus_url: str = ""

    @property
    def state_dir(self) -> Path:
        return self.settings.state_dir

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def metrics_url(self) -> str:
        """The leading watcher's Prometheus /metrics (the pool's counters), "" when turned off."""
        m = self.settings.metrics
        return local_url(m.address, m.port, "/metrics") if m.port else ""

    def start(self) -> None:
        self.check()
        self.logs.mkdir(parents=True, exist_ok=True)
        self._start_redis()
        self.env.update(
            {
                "ROLLOUTS_REDIS_URL": self.redis_url,
                "ROLLOUTS_STATE_DIR": str(self.state_dir.resolve()),
            }
        )
        self._start_cluster()
        self.env["ROLLOUTS_KUBECONFIG"] = str(self.kubeconfig)
        self._start_demo_prometheus()
        if not self.settings.analysis.prometheus_address:
            self.env["ROLLOUTS_ANALYSIS_PROMETHEUS_ADDRESS"] = self.demo_prometheus_url
        self._spawn(with_health(Child("watcher", ["watcher"], self.logs / "watcher.log")))
        for i in range(self.workers):
            name = f"worker-{i + 1}"
            args = ["worker", "-n", f"{name}@%h"]
            self._spawn(with_health(Child(name, args, self.logs / f"{name}.log")))
        self._spawn(with_health(Child("beat", ["beat"], self.logs / "beat.log")))
        if self.flower:
            self._spawn(
                Child(
                    "flower", ["flower", "--port", str(self.flower_port)], self.logs / "flower.log"
                )
            )

    def check(self) -> None:
        """Raise `StandinsMissing` or `StartupFailed` for what would stop the stack later."""
        needs_api = self.settings.kubeconfig is None and embedded_kubeconfig(self.state_dir) is None
        require(self.command, "demoprometheus", *(["devcluster"] if needs_api else []))
        for port, host, what, change in self._ports():
            if port_taken(host, port):
                raise StartupFailed(
                    f"port {port} ({what}) is taken on {host}: {change}, or stop what holds it"
                )

    def _ports(self) -> list[tuple[int, str, str, str]]:
        """The fixed ports the stack's servers will listen on: (port, address, what, how to
        choose another). The others (Redis, the API, health) are free ones picked at start."""
        ports = []
        m = self.settings.metrics
        if m.port:
            change = "choose another with ROLLOUTS_METRICS_PORT (0 turns it off)"
            ports.append((m.port, m.address, "the watcher's /metrics", change))
        if self.demo_prometheus_port:
            from demoprometheus import server as prometheus

            if not prometheus.recorded_url(self.state_dir):  # a running one is reused
                change = "choose another with --demo-prometheus-port (0 picks a free one)"
                port = self.demo_prometheus_port
                ports.append((port, "127.0.0.1", "the demo Prometheus", change))
        if self.flower:
            change = "choose another with --flower-port"
            ports.append((self.flower_port, self.settings.flower.address, "Flower", change))
        return ports

    def _start_redis(self) -> None:
        if self.settings.redis.url:
            self.redis_url = self.settings.redis.url
            return
        running = redis_server.recorded_url(self.state_dir)
        if running:
            self.redis_url = running
            return
        self.redis = redis_server.EmbeddedRedis(self.state_dir / "redis").start()
        self.redis.record(self.state_dir)
        self.redis_url = self.redis.url

    def _start_cluster(self, timeout: float = 30) -> None:
        if self.settings.kubeconfig is not None:
            self.kubeconfig = self.settings.kubeconfig
            return
        existing = embedded_kubeconfig(self.state_dir)
        if existing is not None:
            self.kubeconfig = existing
            self.api_url = staterecords.live_url(self.state_dir, DEVCLUSTER_RECORD) or ""
            return
        (self.state_dir / DEVCLUSTER_RECORD).unlink(missing_ok=True)
        child = Child(
            "devcluster",
            ["devcluster", "--ready-delay", str(self.ready_delay)],
            self.logs / "devcluster.log",
        )
        self._spawn(child)
        deadline = time.monotonic() + timeout
        while (found := embedded_kubeconfig(self.state_dir)) is None:
            if not child.alive or time.monotonic() > deadline:
                raise StartupFailed(f"the embedded API did not start; see {child.log_file}")
            time.sleep(0.05)
        self.kubeconfig = found
        self.api_url = staterecords.live_url(self.state_dir, DEVCLUSTER_RECORD) or ""

    def _start_demo_prometheus(self, timeout: float = 30) -> None:
        from demoprometheus import server as prometheus

        running = prometheus.recorded_url(self.state_dir)
        if running:
            self.demo_prometheus_url = running
            return
        # A fixed port, so a restarted server is found where the workers were told it is.
        port = self.demo_prometheus_port or redis_server.free_port()
        child = Child(
            "demo-prometheus",
            ["demo-prometheus", "--port", str(port)],
            self.logs / "demo-prometheus.log",
        )
        self._spawn(child)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while not prometheus.healthy(url, timeout=0.5):
            if not child.alive or time.monotonic() > deadline:
                raise StartupFailed(f"the demo Prometheus did not start; see {child.log_file}")
            time.sleep(0.05)
        self.demo_prometheus_url = url

    def _spawn(self, child: Child) -> None:
        env = {**os.environ, **self.env}
        with child.log_file.open("ab") as out:
            child.process = subprocess.Popen(
                [sys.executable, "-m", "rollout_workers", *child.args],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if child not in self.children:
            self.children.append(child)

    def supervise_once(self) -> list[str]:
        """Restart children that died (with backoff); returns what happened."""
        notes = []
        now = time.monotonic()
        for child in self.children:
            if child.alive or child.process is None:
                continue
            if child.next_start == 0.0:
                code = child.process.returncode
                delay = min(30.0, 2.0**child.restarts)
                child.next_start = now + delay
                notes.append(f"{child.name} exited ({code}); restarting in {delay:.0f}s")
            elif now >= child.next_start:
                child.restarts += 1
                child.next_start = 0.0
                self._spawn(child)
                notes.append(f"{child.name} restarted")
        return notes

    def describe(self) -> list[str]:
        """Every endpoint the stack serves, then each process with its log and health URL."""
        endpoints = [
            ("redis", mask_url(self.redis_url) + (" (embedded)" if self.redis else "")),
            ("api", f"{self.api_url} (embedded)" if self.api_url else "(from the kubeconfig)"),
            ("kubeconfig", str(self.kubeconfig)),
            (
                "metrics",
                f"{self.metrics_url} (the pool's, from the leading watcher)"
                if self.metrics_url
                else "off (ROLLOUTS_METRICS_PORT=0)",
            ),
        ]
        if self.demo_prometheus_url:
            default = (
                self.env.get("ROLLOUTS_ANALYSIS_PROMETHEUS_ADDRESS") == self.demo_prometheus_url
            )
            note = " (analysis' default Prometheus)" if default else ""
            endpoints.append(("demo-prometheus", f"{self.demo_prometheus_url}{note}"))
        if self.flower:
            endpoints.append(("flower", local_url(self.settings.flower.address, self.flower_port)))
        lines = [f"{name:<16} {value}" for name, value in endpoints]
        health_address = self.settings.health.address
        for child in self.children:
            pid = child.process.pid if child.process else "-"
            health = (
                f", health {local_url(health_address, child.health_port, '/healthz')}"
                if child.health_port
                else ""
            )
            lines.append(f"{child.name:<16} pid {pid}, log {child.log_file}{health}")
        return lines

    def stop(self, timeout: float = 15) -> None:
        for child in reversed(self.children):
            if child.alive and child.process is not None:
                # The main process only, as the kubelet does: a worker host then finishes its
                # reconciles in hand and hands its keys back before it stops its children.
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for child in self.children:
            if child.process is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.process.wait(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGKILL)
        if self.redis is not None:
            self.redis.stop()
            self.redis.unrecord(self.state_dir)

    def record(self) -> Path:
        path = self.state_dir / "up.json"
        path.write_text(
            json.dumps(
                {
                    "redis": self.redis_url,
                    "kubeconfig": str(self.kubeconfig),
                    "api": self.api_url,
                    "metrics": self.metrics_url,
                    "demo_prometheus": self.demo_prometheus_url,
                    "pids": {c.name: c.process.pid for c in self.children if c.process},
                }
            )
        )
        return path
