"""The devcluster as a process: the CLI, the state file, and kubectl against it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client, config

from devcluster.server import run_in_thread
from tests.integration.devcluster.devcluster_helpers import replicaset, wait_for
from tests.support.procs import checkout_env

MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: "{level}"
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: main, image: "nginx:{level}"}}]
"""


def test_state_file_round_trip(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    first = run_in_thread(state_file=state, ready_delay=0.2)
    try:
        api = config.new_client_from_config(
            config_file=str(first.write_kubeconfig(tmp_path / "kc1"))
        )
        client.CoreV1Api(api).create_namespaced_config_map(
            "default", {"metadata": {"name": "kept"}, "data": {"a": "1"}}
        )
        apps = client.AppsV1Api(api)
        apps.create_namespaced_replica_set("default", replicaset("kept", replicas=1))
        wait_for(lambda: apps.read_namespaced_replica_set("kept", "default").status.ready_replicas)
        rv = client.CoreV1Api(api).list_namespaced_config_map("default").metadata.resource_version
    finally:
        first.stop()
    assert state.exists()
    second = run_in_thread(state_file=state, ready_delay=0.2)
    try:
        api = config.new_client_from_config(
            config_file=str(second.write_kubeconfig(tmp_path / "kc2"))
        )
        core = client.CoreV1Api(api)
        assert core.read_namespaced_config_map("kept", "default").data == {"a": "1"}
        apps = client.AppsV1Api(api)
        assert len(core.list_namespaced_pod("default", label_selector="app=kept").items) == 1
        apps.patch_namespaced_replica_set("kept", "default", {"spec": {"replicas": 2}})
        wait_for(
            lambda: apps.read_namespaced_replica_set("kept", "default").status.ready_replicas == 2,
            what="the restored ReplicaSet keeps being reconciled",
        )
        after = core.list_namespaced_config_map("default").metadata.resource_version
        assert int(after) >= int(rv)
    finally:
        second.stop()


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "devcluster", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env({**os.environ, **(env or {})}),
    )


def test_cli_serves_writes_files_and_cleans_up(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    extra = tmp_path / "extra.kubeconfig"
    proc = run_cli(
        "--port",
        "0",
        "--ready-delay",
        "0.1",
        "--kubeconfig-out",
        str(extra),
        env={"ROLLOUTS_STATE_DIR": str(state_dir)},
    )
    info_path = state_dir / "devcluster.json"
    try:
        wait_for(lambda: info_path.exists() and info_path.read_text(), what="devcluster.json")
        info = json.loads(info_path.read_text())
        assert info["pid"] == proc.pid and info["url"].startswith("http://127.0.0.1:")
        assert Path(info["kubeconfig"]) == (state_dir / "devcluster.kubeconfig").resolve()
        for kubeconfig in (Path(info["kubeconfig"]), extra):
            api = config.new_client_from_config(config_file=str(kubeconfig))
            assert client.VersionApi(api).get_code().major == "1"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "listening on http://127.0.0.1:" in out
    assert not info_path.exists()


@pytest.mark.parametrize(
    "args",
    [["--port", "notaport"], ["--ready-delay", "-1"], ["--no-such-option"]],
    ids=["bad port", "negative delay", "unknown option"],
)
def test_cli_usage_errors_are_short(args: list[str], tmp_path: Path) -> None:
    proc = run_cli(*args, "--state-dir", str(tmp_path))
    _out, err = proc.communicate(timeout=20)
    assert proc.returncode != 0
    assert "Traceback" not in err and "Error" in err


def test_cli_port_in_use_is_one_line(tmp_path: Path) -> None:
    with run_in_thread() as busy:
        proc = run_cli("--port", str(busy.port), "--state-dir", str(tmp_path))
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode != 0
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.strip()] == [err.strip()]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_apply_get_scale_delete(kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    def kubectl(*args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "-n", namespace, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "created" in kubectl("apply", "-f", "-", stdin=MANIFEST.format(level=1))
    assert "configured" in kubectl("apply", "-f", "-", stdin=MANIFEST.format(level=2))
    assert kubectl("get", "ro", "web", "-o", "jsonpath={.metadata.generation}") == "2"
    assert kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.level}") == "2"
    assert kubectl("get", "rollouts", "-o", "name").split() == ["rollout.argoproj.io/web"]
    assert kubectl("api-resources", "--api-group=argoproj.io", "-o", "name").split() == [
        "analysisruns.argoproj.io",
        "analysistemplates.argoproj.io",
        "clusteranalysistemplates.argoproj.io",
        "experiments.argoproj.io",
        "rollouts.argoproj.io",
    ]
    kubectl("scale", "rollout", "web", "--replicas=3")
    assert kubectl("get", "ro", "web", "-o", "jsonpath={.spec.replicas}") == "3"
    kubectl("delete", "-f", "-", stdin=MANIFEST.format(level=2))
    assert kubectl("get", "ro,cm", "-o", "name").split() == []
