"""`rollouts up`'s stack before it starts anything: the endpoints it prints, and a fixed port
that is taken, reported in one line (with what changes it) instead of a server that quietly
never listens."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rollout_workers import logs
from rollout_workers.cli.main import cli
from rollout_workers.local.stack import Child, Stack
from rollout_workers.settings import MetricsSettings, Settings


def test_describe_lists_every_endpoint_then_each_process(tmp_path: Path) -> None:
    stack = Stack(
        settings=Settings(state_dir=tmp_path, metrics=MetricsSettings(port=8090)),
        flower=True,
        flower_port=5556,
    )
    stack.redis_url = "redis://:secret@127.0.0.1:6400/0"
    stack.api_url = "http://127.0.0.1:6401"
    stack.kubeconfig = tmp_path / "devcluster.kubeconfig"
    stack.demo_prometheus_url = "http://127.0.0.1:6402"
    stack.env["ROLLOUTS_ANALYSIS_PROMETHEUS_ADDRESS"] = stack.demo_prometheus_url
    stack.children = [
        Child("devcluster", [], tmp_path / "devcluster.log"),
        Child("watcher", [], tmp_path / "watcher.log", health_port=6403),
        Child("worker-1", [], tmp_path / "worker-1.log", health_port=6404),
        Child("flower", [], tmp_path / "flower.log"),
    ]
    assert stack.describe() == [
        "redis            redis://:****@127.0.0.1:6400/0",
        "api              http://127.0.0.1:6401 (embedded)",
        f"kubeconfig       {tmp_path}/devcluster.kubeconfig",
        "metrics          http://127.0.0.1:8090/metrics (the pool's, from the leading watcher)",
        "demo-prometheus  http://127.0.0.1:6402 (analysis' default Prometheus)",
        "flower           http://127.0.0.1:5556",
        f"devcluster       pid -, log {tmp_path}/devcluster.log",
        f"watcher          pid -, log {tmp_path}/watcher.log, health http://127.0.0.1:6403/healthz",
        f"worker-1         pid -, log {tmp_path}/worker-1.log, health http://127.0.0.1:6404/healthz",
        f"flower           pid -, log {tmp_path}/flower.log",
    ]


def test_describe_says_what_is_off_or_not_ours(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    stack = Stack(
        settings=Settings(
            state_dir=tmp_path, kubeconfig=kubeconfig, metrics=MetricsSettings(port=0)
        )
    )
    stack.redis_url, stack.kubeconfig = "redis://10.0.0.1:6379/0", kubeconfig
    stack.demo_prometheus_url = "http://127.0.0.1:6402"  # analysis has an address of its own
    assert stack.describe() == [
        "redis            redis://10.0.0.1:6379/0",
        "api              (from the kubeconfig)",
        f"kubeconfig       {kubeconfig}",
        "metrics          off (ROLLOUTS_METRICS_PORT=0)",
        "demo-prometheus  http://127.0.0.1:6402",
    ]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port some other process listens on (on loopback only, as anyone's local server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "env", "what", "address", "change"),
    [
        # The watcher binds 0.0.0.0 by default, which a loopback listener already blocks.
        (["up"], {"ROLLOUTS_METRICS_PORT": "{port}"}, "the watcher's /metrics", "0.0.0.0",
         "choose another with ROLLOUTS_METRICS_PORT (0 turns it off)"),
        (["demo"], {"ROLLOUTS_METRICS_PORT": "{port}"}, "the watcher's /metrics", "0.0.0.0",
         "choose another with ROLLOUTS_METRICS_PORT (0 turns it off)"),
        (["up", "--demo-prometheus-port", "{port}"], {}, "the demo Prometheus", "127.0.0.1",
         "choose another with --demo-prometheus-port (0 picks a free one)"),
        (["up", "--flower", "--flower-port", "{port}"], {}, "Flower", "127.0.0.1",
         "choose another with --flower-port"),
    ],
)  # fmt: skip
def test_a_taken_port_stops_up_in_one_line_before_anything_starts(
    *,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    what: str,
    address: str,
    change: str,
) -> None:
    monkeypatch.setattr(logs, "configure", lambda settings: None)  # pytest keeps its handlers
    full_env = {"ROLLOUTS_STATE_DIR": str(tmp_path / "state"), "ROLLOUTS_METRICS_PORT": "0"}
    full_env.update({k: v.format(port=busy_port) for k, v in env.items()})
    result = CliRunner().invoke(cli, [a.format(port=busy_port) for a in args], env=full_env)
    assert result.exit_code == 1, result.output
    assert result.output == (
        f"rollouts: port {busy_port} ({what}) is taken on {address}: {change}, "
        "or stop what holds it\n"
    )
    # Not a process, not a Redis, not a log: `up` stopped before starting any.
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("logs"))
