"""Starting and stopping the project's real processes (workers, beat) for tests."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def checkout_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child process that runs this checkout's controller and stand-ins (standins/),
    whatever the virtualenv has installed."""
    full = dict(env)
    full["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), str(REPO / "standins"), full.get("PYTHONPATH", "")) if p
    )
    return full


def wait_for(
    predicate: Callable[[], object], timeout: float, message: str, interval: float = 0.05
) -> object:
    """Poll until `predicate()` is truthy; fail with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s: {message}")
        time.sleep(interval)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def ran(self, pid: int) -> bool:
        """Whether `pid` is this process or one of its children (a prefork host's)."""
        if pid == self.pid:
            return True
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            return int(stat.rsplit(")", 1)[1].split()[1]) == self.pid
        return False

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_log(self, pattern: str, timeout: float = 30) -> None:
        regex = re.compile(pattern)
        wait_for(
            lambda: regex.search(self.text()) or self.popen.poll() is not None,
            timeout,
            f"{self.name}: /{pattern}/ in {self.log}",
        )
        if not regex.search(self.text()):
            raise AssertionError(f"{self.name} exited ({self.popen.returncode}):\n{self.text()}")

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the process and every child (a whole worker host)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10) -> None:
        if self.popen.poll() is None:
            self.kill_group(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        # Children of a killed host may outlive it; take the whole group down.
        self.kill_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5)


@dataclass
class Processes:
    """Spawns `rollouts ...` subprocesses with a shared environment; stops them all at the end."""

    env: dict[str, str]
    logs: Path
    procs: list[Proc] = field(default_factory=list)

    def spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> Proc:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        # Off unless a test asks: many processes (and other people's tests) share this machine.
        full_env = checkout_env(
            {"ROLLOUTS_HEALTH_PORT": "0", **os.environ, **self.env, **(env or {})}
        )
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", "rollout_workers", *args],
                cwd=REPO,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def worker(
        self, name: str, concurrency: int = 2, queues: str | None = None, pool: str | None = None
    ) -> Proc:
        """A worker host of `concurrency` threads (the default pool), or processes under
        `pool="prefork"`; ROLLOUTS_TEST_WORKER_POOL chooses the pool where a test does not."""
        args = ["worker", "-c", str(concurrency), "-n", f"{name}@%h"]
        if queues:
            args += ["-Q", queues]
        pool = pool or os.environ.get("ROLLOUTS_TEST_WORKER_POOL")
        if pool:
            args += ["-P", pool]
        proc = self.spawn(name, *args)
        proc.wait_log(r"ready\.", timeout=60)
        return proc

    def beat(self, name: str = "beat") -> Proc:
        return self.spawn(name, "beat")

    def stop_all(self) -> None:
        for proc in self.procs:
            proc.stop()
