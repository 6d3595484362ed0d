"""A Redis Sentinel group for tests: a master, two replicas and three Sentinels on 127.0.0.1.

Every process is the redis-server binary the project ships (local/redis_server.py), the
Sentinels in its `--sentinel` mode, on free ports, with a short `down-after-milliseconds` so a
killed master is replaced within a few seconds. `kill_master()` kills the master with SIGKILL,
as a crash would, and `wait_failover()` waits until the Sentinels name a new one that answers
as a master.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from rollout_workers.local.redis_server import free_port, redis_binary
from tests.support.procs import wait_for

HOST = "127.0.0.1"


@dataclass
class Node:
    name: str
    port: int
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait()

    def stop(self) -> None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class SentinelGroup:
    directory: Path
    master_name: str = "mymaster"
    #: requirepass and masterauth of the Redis servers (the master's password).
    password: str | None = None
    #: requirepass of the Sentinels.
    sentinel_password: str | None = None
    down_after_ms: int = 1000
    failover_timeout_ms: int = 3000
    replicas: int = 2
    sentinel_count: int = 3
    servers: list[Node] = field(default_factory=list)
    sentinels: list[Node] = field(default_factory=list)

    # -- addresses ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """kombu's spelling: one sentinel:// URL per Sentinel, the database on the last."""
        return ";".join(f"sentinel://{HOST}:{s.port}" for s in self.sentinels) + "/0"

    def env(self) -> dict[str, str]:
        """The settings every process needs to use this group."""
        env = {"ROLLOUTS_REDIS_URL": self.url, "ROLLOUTS_REDIS_SENTINEL_MASTER": self.master_name}
        if self.password:
            env["ROLLOUTS_REDIS_PASSWORD"] = self.password
        if self.sentinel_password:
            env["ROLLOUTS_REDIS_SENTINEL_PASSWORD"] = self.sentinel_password
        return env

    def server_client(self, port: int, timeout: float = 1.0) -> redis.Redis:
        return redis.Redis(
            host=HOST,
            port=port,
            password=self.password,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )

    def sentinel_client(self, node: Node) -> redis.Redis:
        return redis.Redis(
            host=HOST,
            port=node.port,
            password=self.sentinel_password,
            socket_timeout=1.0,
            socket_connect_timeout=1.0,
        )

    def master_port(self) -> int | None:
        """The master's port as a majority of the live Sentinels name it, else None."""
        votes: dict[int, int] = {}
        for node in self.sentinels:
            if not node.alive():
                continue
            try:
                addr = self.sentinel_client(node).sentinel_get_master_addr_by_name(self.master_name)
            except redis.RedisError:
                continue
            if addr:
                votes[int(addr[1])] = votes.get(int(addr[1]), 0) + 1
        if not votes:
            return None
        port, count = max(votes.items(), key=lambda kv: kv[1])
        return port if count * 2 > len(self.sentinels) else None

    def node(self, port: int) -> Node:
        return next(n for n in self.servers if n.port == port)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> SentinelGroup:
        self.directory.mkdir(parents=True, exist_ok=True)
        master = self._server("redis-0", [])
        self._wait_ping(master)
        for i in range(self.replicas):
            replica = self._server(f"redis-{i + 1}", ["--replicaof", HOST, str(master.port)])
            self._wait_ping(replica)
        for i in range(self.sentinel_count):
            self._sentinel(f"sentinel-{i}", master.port)
        wait_for(
            lambda: self._settled(master.port),
            timeout,
            f"Sentinels see the master, {self.replicas} synced replicas and each other "
            f"(logs in {self.directory})",
            interval=0.1,
        )
        return self

    def stop(self) -> None:
        for node in [*self.sentinels, *self.servers]:
            node.stop()

    def kill_master(self) -> Node:
        """SIGKILL the current master; returns it."""
        port = self.master_port()
        assert port is not None, "no master to kill"
        victim = self.node(port)
        victim.kill()
        return victim

    def wait_failover(self, old_port: int, timeout: float = 30.0) -> int:
        """Wait until the Sentinels name a master other than `old_port` that answers as one."""

        def promoted() -> int | None:
            port = self.master_port()
            if port is None or port == old_port:
                return None
            try:
                role = self.server_client(port).execute_command("ROLE")
            except redis.RedisError:
                return None
            return port if role and role[0] in (b"master", "master") else None

        return int(str(wait_for(promoted, timeout, "a replica promoted", interval=0.05)))

    # -- internals ---------------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str], port: int) -> Node:
        log = self.directory / f"{name}.log"
        popen = subprocess.Popen(
            [redis_binary(), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return Node(name, port, popen, log)

    def _server(self, name: str, extra: list[str]) -> Node:
        port = free_port()
        data = self.directory / name
        data.mkdir(exist_ok=True)
        args = [
            "--bind", HOST,
            "--port", str(port),
            "--dir", str(data.resolve()),
            "--logfile", str((self.directory / f"{name}.log").resolve()),
            "--save", "",
            "--appendonly", "no",
            *extra,
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password, "--masterauth", self.password]
        node = self._spawn(name, args, port)
        self.servers.append(node)
        return node

    def _sentinel(self, name: str, master_port: int) -> Node:
        port = free_port()
        conf = self.directory / f"{name}.conf"
        m = self.master_name
        lines = [
            f"port {port}",
            f"bind {HOST}",
            f"dir {self.directory.resolve()}",
            f"logfile {(self.directory / f'{name}.log').resolve()}",
            f"sentinel monitor {m} {HOST} {master_port} 2",
            f"sentinel down-after-milliseconds {m} {self.down_after_ms}",
            f"sentinel failover-timeout {m} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {m} 1",
        ]
        if self.password:
            lines.append(f"sentinel auth-pass {m} {self.password}")
        if self.sentinel_password:
            lines.append(f"requirepass {self.sentinel_password}")
        conf.write_text("\n".join(lines) + "\n")
        node = self._spawn(name, [str(conf.resolve()), "--sentinel"], port)
        self.sentinels.append(node)
        return node

    def _wait_ping(self, node: Node, timeout: float = 10.0) -> None:
        def up() -> bool:
            if not node.alive():
                raise AssertionError(f"{node.name} exited; see {node.log}")
            with contextlib.suppress(redis.RedisError):
                return bool(self.server_client(node.port, timeout=0.2).ping())
            return False

        wait_for(up, timeout, f"{node.name} answers")

    def _settled(self, master_port: int) -> bool:
        try:
            info = self.server_client(master_port).info("replication")
            synced = sum(
                1
                for k, v in info.items()
                if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
            )
            if synced < self.replicas:
                return False
            for node in self.sentinels:
                state = self.sentinel_client(node).sentinel_master(self.master_name)
                if int(state["num-slaves"]) < self.replicas:
                    return False
                if int(state["num-other-sentinels"]) < len(self.sentinels) - 1:
                    return False
        except redis.RedisError:
            return False
        return True


def timed_failover(group: SentinelGroup, timeout: float = 30.0) -> tuple[float, int]:
    """Kill the master; returns the monotonic time of the kill and the promoted port."""
    old = group.kill_master()
    killed_at = time.monotonic()
    return killed_at, group.wait_failover(old.port, timeout)
