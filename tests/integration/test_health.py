"""/healthz and /readyz of real watcher, worker and beat processes: each turns unhealthy on its
failure and healthy again after it, and the transition times are printed."""

from __future__ import annotations

import re
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.local.redis_server import EmbeddedRedis, free_port
from tests.support.procs import Processes, wait_for


def probe(port: int, path: str) -> tuple[int, str]:
    """(status, reason) of one probe; (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode().strip()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode().strip()
    except OSError as err:
        return 0, str(err)


def wait_probe(
    port: int, path: str, code: int, timeout: float, what: str, *, reason: str = ""
) -> tuple[float, str]:
    """Poll until the probe answers `code` (with a reason that starts with `reason`); returns
    (seconds it took, reason)."""
    start = time.monotonic()

    def answered() -> tuple[int, str] | None:
        got = probe(port, path)
        return got if got[0] == code and got[1].startswith(reason) else None

    found = wait_for(answered, timeout, f"{what}: {path} -> {code} {reason}")
    return time.monotonic() - start, found[1]  # type: ignore[index]


def spawn(procs: Processes, name: str, *args: str, env: dict[str, str] | None = None) -> int:
    port = free_port()
    procs.spawn(name, *args, "--health-port", str(port), env=env)
    return port


def pause_redis(rdb: redis.Redis, seconds: float) -> float:
    """Stall every client of this Redis (as a frozen or overloaded server would)."""
    rdb.execute_command("CLIENT", "PAUSE", int(seconds * 1000), "ALL")
    return time.monotonic() + seconds


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_worker_is_unready_while_redis_is_gone(procs: Processes, tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "own-redis").start()
    try:
        procs.env["ROLLOUTS_REDIS_URL"] = server.url
        procs.env["ROLLOUTS_HEALTH_STALL_TIMEOUT"] = "2"
        port = spawn(procs, "host-a", "worker", "-c", "1", "-n", "host-a@%h")
        wait_probe(port, "/readyz", 200, 60, "the worker is ready")
        time.sleep(3)  # idle past the stall timeout: only the event loop's timer stamps now
        status, reason = probe(port, "/healthz")
        assert status == 200 and re.match(r"consumer progressed [01]\.\d+s ago", reason), reason

        server.kill()
        down, reason = wait_probe(port, "/readyz", 503, 10, "Redis is gone")
        assert "Redis unreachable" in reason
        status, reason = probe(port, "/healthz")
        assert status == 200, reason  # a Redis outage is not a reason to restart workers

        server.start()
        up, _ = wait_probe(port, "/readyz", 200, 30, "Redis is back")
        print(f"worker readiness: 503 {down:.2f}s after Redis died, 200 {up:.2f}s after restart")
    finally:
        procs.stop_all()
        server.stop()


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_beat_liveness_fails_while_ticks_stop_and_a_standby_stays_live(
    procs: Processes, rdb: redis.Redis
) -> None:
    active = spawn(procs, "beat-1", "beat")
    wait_for(lambda: rdb.hget("rw:system:ticks", "count"), 30, "the first beat ticks")
    standby = spawn(procs, "beat-2", "beat")
    for port in (active, standby):
        wait_probe(port, "/healthz", 200, 30, "beat is live")
        wait_probe(port, "/readyz", 200, 30, "beat is ready")
    assert "holding the lock" in probe(active, "/healthz")[1]
    assert "standby" in probe(standby, "/healthz")[1]

    resumes = pause_redis(rdb, 5)  # the lock holder's ticks cannot reach Redis
    down, reason = wait_probe(active, "/healthz", 503, 6, "ticks stopped")
    assert "no timer tick" in reason
    assert probe(standby, "/healthz")[0] == 200
    wait_probe(active, "/healthz", 200, 10, "ticks resumed")
    print(
        f"beat liveness: 503 {down:.2f}s after ticks stopped (bound 3s), "
        f"200 {time.monotonic() - resumes:+.2f}s from the end of the stall"
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.2, state_file=tmp_path / "api-state.json")
    yield handle
    handle.stop()


@pytest.mark.slow
def test_watcher_probes_follow_its_loop_its_watches_and_its_lease(
    procs: Processes, rdb: redis.Redis, cluster: DevClusterThread, tmp_path: Path
) -> None:
    procs.env["ROLLOUTS_KUBECONFIG"] = str(cluster.write_kubeconfig(tmp_path / "kubeconfig"))
    procs.env["ROLLOUTS_HEALTH_STALL_TIMEOUT"] = "2"
    procs.env["ROLLOUTS_HEALTH_WATCH_FAILING"] = "2"
    leader_port = spawn(procs, "watcher-1", "watcher")
    wait_probe(leader_port, "/readyz", 200, 30, "the leader's watches are synced")
    standby_port = spawn(procs, "watcher-2", "watcher")
    _, reason = wait_probe(standby_port, "/readyz", 200, 30, "the standby is ready")
    assert reason.startswith("standby; the leader is")
    leader = procs.procs[0]

    # A stuck loop: the standby's attempts on the lease hang on a stalled Redis.
    resumes = pause_redis(rdb, 5)
    stuck, reason = wait_probe(standby_port, "/healthz", 503, 6, "the standby's loop is stuck")
    assert "made no progress" in reason
    wait_probe(standby_port, "/healthz", 200, 10, "the standby's loop runs again")
    print(f"watcher liveness: 503 {stuck:.2f}s into a stall (bound 3s), "
          f"200 {time.monotonic() - resumes:+.2f}s from its end")  # fmt: skip

    # Failing watches: the API goes away, and comes back.
    wait_probe(leader_port, "/readyz", 200, 15, "the leader is ready again")
    port = cluster.port
    cluster.stop()
    down, reason = wait_probe(leader_port, "/readyz", 503, 15, "the watches fail")
    assert "watch failing" in reason or "not listed" in reason, reason
    assert probe(leader_port, "/healthz")[0] == 200
    restarted = run_in_thread(port=port, ready_delay=0.2, state_file=tmp_path / "api-state.json")
    try:
        up, _ = wait_probe(leader_port, "/readyz", 200, 30, "the watches recover")
        print(f"watcher readiness: 503 {down:.2f}s after the API went (bound 2s), "
              f"200 {up:.2f}s after it came back")  # fmt: skip

        # SIGTERM releases the lease: the standby leads at once, not after the lease TTL.
        terminated = time.monotonic()
        leader.popen.send_signal(signal.SIGTERM)
        assert leader.popen.wait(10) == 0
        # (The standby was ready already, as a standby: wait for it to answer as the leader.)
        wait_probe(
            standby_port, "/readyz", 200, 10, "the standby leads and syncs", reason="leader;"
        )
        took = time.monotonic() - terminated
        assert took < 5, f"takeover took {took:.1f}s (lease TTL 10s)"
        assert "released the leader lease" in leader.text()
        print(f"watcher handover on SIGTERM: the standby leads and is ready after {took:.2f}s")
    finally:
        restarted.stop()
