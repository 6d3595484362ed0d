"""The health endpoints: answers, a failing check, a busy port, and how the port is set."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner

from rollout_workers.cli.main import cli
from rollout_workers.health import HealthServer, Status, serve
from rollout_workers.settings import Settings


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_probes_answer_200_or_503_with_one_line() -> None:
    state = {"ready": False}

    def ready() -> Status:
        return Status.good("ok") if state["ready"] else Status.bad("not yet:\nRedis down")

    def live() -> Status:
        raise RuntimeError("boom")

    server = HealthServer(address="127.0.0.1", port=0, live=live, ready=ready).start()
    try:
        assert get(server.port, "/readyz") == (503, "not yet: Redis down\n")
        state["ready"] = True
        assert get(server.port, "/readyz?verbose") == (200, "ok\n")
        assert get(server.port, "/healthz") == (503, "check failed: RuntimeError: boom\n")
        assert get(server.port, "/other")[0] == 404
    finally:
        server.stop()


def test_port_zero_is_off_and_a_busy_port_is_logged_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert serve(address="127.0.0.1", port=0, live=lambda: Status.good(""),
                 ready=lambda: Status.good("")) is None  # fmt: skip
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = serve(address="127.0.0.1", port=port, live=lambda: Status.good(""),
                       ready=lambda: Status.good(""))  # fmt: skip
        assert server is not None and server.port == 0
    assert "health endpoints off: cannot listen on 127.0.0.1" in caplog.text


def test_the_port_comes_from_settings_and_each_process_takes_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().health.port == 8080
    monkeypatch.setenv("ROLLOUTS_HEALTH_PORT", "9090")
    monkeypatch.setenv("ROLLOUTS_WORKER_SHUTDOWN_GRACE", "12")
    settings = Settings()
    assert settings.health.port == 9090 and settings.worker.shutdown_grace == 12
    for command in ("watcher", "worker", "beat"):
        result = CliRunner().invoke(cli, [command, "--help"])
        assert "--health-port" in result.output, command
