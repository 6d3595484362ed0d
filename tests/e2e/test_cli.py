"""The `rollouts` command as a user runs it: real processes, the embedded Redis found through
the state dir, one-line errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout_workers.local.redis_server import free_port
from tests.support.procs import REPO, Processes, checkout_env, wait_for


def run(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "rollout_workers", *args],
        check=False,
        cwd=REPO,
        env=checkout_env(full),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


def answers(url: str) -> bool:
    """Whether `url` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status) == 200
    except OSError:
        return False


@pytest.fixture
def state_env(tmp_path: Path) -> dict[str, str]:
    return {"ROLLOUTS_STATE_DIR": str(tmp_path / "state")}


@pytest.fixture
def embedded(state_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """`rollouts redis` running in the background, found by other commands via the state dir."""
    procs = Processes(env=state_env, logs=tmp_path / "logs")
    proc = procs.spawn("redis", "redis")
    proc.wait_log(r"redis listening on redis://127\.0\.0\.1:\d+/0", timeout=20)
    yield state_env
    proc.popen.send_signal(signal.SIGTERM)
    proc.popen.wait(10)
    assert not (Path(state_env["ROLLOUTS_STATE_DIR"]) / "redis.json").exists()
    procs.stop_all()


def test_commands_without_redis_print_a_hint(state_env: dict[str, str]) -> None:
    one_line_error(run(state_env, "enqueue", "default/a"), "start one with: rollouts redis")
    one_line_error(run(state_env, "queue", "stats"), "start one with: rollouts redis")


def test_enqueue_reports_queued_and_coalesced(embedded: dict[str, str]) -> None:
    first = run(embedded, "enqueue", "default/a", "default/b")
    assert first.returncode == 0, first.stderr
    assert "queued     rollouts default/a" in first.stdout
    again = run(embedded, "enqueue", "default/a", "--kind", "rollouts")
    assert "coalesced  rollouts default/a (already queued)" in again.stdout
    assert "0 queued, 1 coalesced" in again.stdout

    stats = run(embedded, "queue", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    rollouts = next(s for s in json.loads(stats.stdout) if s["kind"] == "rollouts")
    assert rollouts["queued"] == 2 and rollouts["known"] == 2
    by_env = run({**embedded, "ROLLOUTS_ENQUEUE_KIND": "experiments"}, "enqueue", "default/e")
    assert "queued     experiments default/e" in by_env.stdout  # options settable from env

    everything = run(embedded, "enqueue", "--all", "-n", "default")
    assert "0 queued, 2 coalesced" in everything.stdout
    table = run(embedded, "queue", "stats")
    assert table.stdout.splitlines()[0].split()[:4] == ["KIND", "QUEUED", "ACTIVE", "DIRTY"]


def test_second_embedded_redis_is_refused(embedded: dict[str, str]) -> None:
    one_line_error(run(embedded, "redis"), "already runs at redis://127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["enqueue", "Bad/Key"], "invalid key 'Bad/Key'"),
        (["enqueue", "just-a-name"], "expected 'namespace/name'"),
    ],
)
def test_bad_keys_are_one_line_errors(
    embedded: dict[str, str], args: list[str], needle: str
) -> None:
    one_line_error(run(embedded, *args), needle)


def test_usage_mistakes(state_env: dict[str, str]) -> None:
    for args in (["enqueue"], ["enqueue", "--all", "default/a"], ["enqueue", "-n", "x", "a/b"]):
        result = run(state_env, *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
    assert run(state_env, "enqueue", "--kind", "nope", "a/b").returncode == 2
    assert run(state_env, "no-such-command").returncode == 2


def test_invalid_setting_is_one_line(state_env: dict[str, str]) -> None:
    env = {**state_env, "ROLLOUTS_QUEUE_LEASE_TTL": "soon"}
    one_line_error(run(env, "config"), "invalid setting ROLLOUTS_QUEUE_LEASE_TTL")


def test_config_prints_effective_settings_with_secrets_masked(state_env: dict[str, str]) -> None:
    env = {
        **state_env,
        "ROLLOUTS_REDIS_URL": "redis://:hunter2@redis.example:6379/0",
        "ROLLOUTS_FLOWER_BASIC_AUTH": "admin:hunter2",
        "ROLLOUTS_QUEUE_LEASE_TTL": "7",
    }
    result = run(env, "config", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["queue"]["lease_ttl"] == 7
    assert data["redis"]["url"] == "redis://:****@redis.example:6379/0"
    assert "hunter2" not in result.stdout


def test_flower_off_loopback_needs_auth(embedded: dict[str, str]) -> None:
    one_line_error(run(embedded, "flower", "--address", "0.0.0.0"), "needs --basic-auth")


def test_flower_serves_the_pool(embedded: dict[str, str], tmp_path: Path) -> None:
    procs = Processes(env=embedded, logs=tmp_path / "flower-logs")
    try:
        procs.worker("host-a", concurrency=1)
        port = free_port()
        procs.spawn("flower", "flower", "--port", str(port))

        def workers() -> dict[str, object] | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/workers", timeout=2) as r:
                    data: dict[str, object] = json.loads(r.read())
                    return data or None
            except OSError:
                return None

        found = wait_for(workers, 45, "Flower lists the worker", interval=0.5)
        assert any(name.startswith("host-a@") for name in found)  # type: ignore[attr-defined]
    finally:
        procs.stop_all()


@pytest.mark.slow
def test_demo_runs_to_the_end(tmp_path: Path) -> None:
    # A free port for the watcher's /metrics: 8090 may be anyone's on a shared machine.
    env = {"ROLLOUTS_STATE_DIR": str(tmp_path / "state"), "ROLLOUTS_METRICS_PORT": str(free_port())}
    result = run(env, "demo", "--exit-when-done", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("summary: rollouts 6, reconciles ")
    assert "analysis runs 2 Successful + 1 Failed" in summary
    for step in ("the canary pauses at setWeight 50", "the canary is aborted",
                 "the blue-green waits for promotion", "the canary is Healthy on revision 2",
                 "the blue-green is Healthy on revision 2",
                 "canary-pass passes its analysis and is Healthy on revision 2",
                 "canary-fail fails its analysis and is aborted",
                 "canary-datadog passes its analysis, measured by Datadog, and is Healthy on "
                 "revision 2",
                 "canary-nginx pauses with canary-weight 50 on canary-nginx-canary-nginx-canary",
                 "canary-nginx is Healthy on revision 2, all traffic back on the stable Service",
                 ):  # fmt: skip
        assert f"ok: {step}" in out
    # The nginx canary's weight moved with the steps, in its status and on the canary Ingress.
    for weight in (20, 50, 80):
        assert re.search(rf"canary-nginx .* weight {weight} \(ingress {weight}\)", out), out
    # Each analysis ran against the demo Prometheus and judged the version it measured.
    assert re.search(r"analysisrun canary-pass-\w+-2-1: Successful \(success-rate \[0\.99\] "
                     r"\[0\.99\] \[0\.99\]\)", out), out  # fmt: skip
    assert re.search(r"analysisrun canary-fail-\w+-2-1: Failed \(success-rate \[0\.6\]\)", out)
    # The Datadog canary's formula over its two queries, through the Datadog-compatible API.
    assert re.search(r"analysisrun canary-datadog-\w+-2-1: Successful \(success-rate 0\.99 "
                     r"0\.99 0\.99\)", out), out  # fmt: skip
    assert re.search(r"event canary-fail AnalysisRunFailed: Step Analysis Run 'canary-fail-\w+-2-1'"
                     r" Status New: 'Failed'", out), out  # fmt: skip
    assert re.search(r"canary-fail +Degraded .*RolloutAborted: Rollout aborted update to revision "
                     r'2: Metric "success-rate" assessed Failed', out), out  # fmt: skip
    # The canary's notifications reached the local webhook: each step of the update, the abort,
    # each step again after the retry, and the completion (the first deploy completes too).
    hooks = re.findall(r"POST /hooks/demo (\{.*\})", out)
    events = [json.loads(h) for h in hooks]
    assert [e["event"] for e in events if e["rollout"] == "canary-demo"].count("aborted") == 1
    assert {"rollout": "canary-demo", "event": "completed",
            "image": "argoproj/rollouts-demo:green"} in events, out  # fmt: skip
    assert {"rollout": "canary-demo", "event": "step-completed", "step": 1} in events, out
    # Everything it started is gone again.
    for record in ("redis.json", "devcluster.json", "demo-prometheus.json"):
        assert not (tmp_path / "state" / "demo" / record).exists(), record


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_up_starts_and_stops_the_system(tmp_path: Path) -> None:
    state, metrics_port = tmp_path / "state", free_port()
    env = {"ROLLOUTS_STATE_DIR": str(state), "ROLLOUTS_METRICS_PORT": str(metrics_port)}
    procs = Processes(env=env, logs=tmp_path / "logs")
    try:
        up = procs.spawn("up", "up", "--workers", "1")
        up.wait_log(r"press Ctrl-C to stop", timeout=60)
        for name in ("redis ", "api ", "kubeconfig ", "devcluster ", "watcher ", "worker-1 ",
                     "beat "):  # fmt: skip
            assert name in up.text()
        recorded = json.loads((state / "up.json").read_text())
        # Every endpoint is printed, and answers: the embedded API, the watcher's /metrics (the
        # pool's counters), the demo Prometheus, each process' health.
        api = re.search(r"api +(http://127\.0\.0\.1:\d+) \(embedded\)", up.text())
        assert api, up.text()
        assert recorded["api"] == api.group(1)
        assert answers(f"{api.group(1)}/healthz")
        found = re.search(r"demo-prometheus +(http://127\.0\.0\.1:\d+) \(analysis' default "
                          r"Prometheus\)", up.text())  # fmt: skip
        assert found, up.text()
        assert recorded["demo_prometheus"] == found.group(1)
        assert answers(f"{found.group(1)}/-/healthy")
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        assert re.search(rf"metrics +{re.escape(metrics)} ", up.text()), up.text()
        assert recorded["metrics"] == metrics
        wait_for(lambda: "leads; starting" in (state / "logs" / "watcher.log").read_text(), 30,
                 "the watcher leads")  # fmt: skip
        with urllib.request.urlopen(metrics, timeout=5) as response:
            assert b"# TYPE " in response.read()
        health = re.findall(r"health (http://127\.0\.0\.1:\d+/healthz)", up.text())
        assert len(health) == 3, up.text()  # watcher, worker-1, beat
        wait_for(lambda: all(answers(url) for url in health), 30, f"{health} answer")
        stats = run({"ROLLOUTS_STATE_DIR": str(state)}, "queue", "stats")
        assert stats.returncode == 0, stats.stderr
        up.popen.send_signal(signal.SIGINT)
        up.popen.wait(30)
        assert up.popen.returncode == 0
        assert not (state / "redis.json").exists()
        assert not (state / "demo-prometheus.json").exists()
    finally:
        procs.stop_all()


def test_demo_prometheus_command(state_env: dict[str, str], tmp_path: Path) -> None:
    # No cluster at all, whatever this machine has: the hand-set values still answer.
    state_env = {**state_env, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    procs = Processes(env=state_env, logs=tmp_path / "logs")
    record = Path(state_env["ROLLOUTS_STATE_DIR"]) / "demo-prometheus.json"
    try:
        server = procs.spawn("demo-prometheus", "demo-prometheus")
        server.wait_log(r"demo Prometheus listening on http://127\.0\.0\.1:\d+", timeout=30)
        url = re.findall(r"listening on (\S+)", server.text())[0]
        assert json.loads(record.read_text())["url"] == url
        put = urllib.request.Request(
            f"{url}/metrics/demo_success_rate?app=mine", data=b'{"value": 0.5}', method="PUT"
        )
        with urllib.request.urlopen(put, timeout=5) as response:
            assert response.status == 200
        query = urllib.parse.quote('demo_success_rate{app="mine"}')
        with urllib.request.urlopen(f"{url}/api/v1/query?query={query}", timeout=5) as response:
            result = json.loads(response.read())["data"]["result"]
        assert [r["value"][1] for r in result] == ["0.5"]

        one_line_error(
            run(state_env, "demo-prometheus"), f"a demo Prometheus already runs at {url}"
        )
        port = url.rsplit(":", 1)[1]
        other = {"ROLLOUTS_STATE_DIR": str(tmp_path / "other")}
        one_line_error(
            run(other, "demo-prometheus", "--port", port), f"cannot listen on 127.0.0.1:{port}"
        )
        server.popen.send_signal(signal.SIGTERM)
        assert server.popen.wait(10) == 0
        assert not record.exists()
    finally:
        procs.stop_all()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--success-rate", "flaky"], "--success-rate: expected GLOB=RATE"),
        (["--success-rate", "*=2"], "--success-rate: the rate of '*=2' is not between 0 and 1"),
        (["--kubeconfig", "/nonexistent/config"], "kubeconfig /nonexistent/config does not exist"),
    ],
)
def test_demo_prometheus_bad_input(state_env: dict[str, str], args: list[str], needle: str) -> None:
    one_line_error(run(state_env, "demo-prometheus", *args), needle)
