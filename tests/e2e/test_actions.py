"""The plugin's user actions as a user runs them: `rollouts <action>` processes (`python -m
rollout_workers`) against the embedded API, with no controller running, so each test asserts the
fields the command wrote.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from devcluster.server import DevClusterThread, run_in_thread
from tests.support.procs import REPO

Obj = dict[str, Any]
GROUP, VERSION = "argoproj.io", "v1alpha1"
ENTRY = "rollout_workers"


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.1)
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def kubeconfig(cluster: DevClusterThread, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")


@pytest.fixture(scope="module")
def env(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    state = tmp_path_factory.mktemp("state")
    return {"ROLLOUTS_KUBECONFIG": str(kubeconfig), "ROLLOUTS_STATE_DIR": str(state)}


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kubeconfig))


def run(env: dict[str, str], *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", ENTRY, *args],
        check=False,
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


class Rollouts:
    """The official client, for seeding objects and reading back what a command wrote."""

    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.apps = client.AppsV1Api(api)

    def create(self, *, paused: bool = False, strategy: Obj | None = None) -> str:
        name = f"app-{uuid.uuid4().hex[:6]}"
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Rollout",
            "metadata": {"name": name},
            "spec": {
                "replicas": 2,
                "paused": paused,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "initContainers": [{"name": "init", "image": "busybox:1"}],
                        "containers": [
                            {"name": "web", "image": "web:2"},
                            {"name": "proxy", "image": "proxy:1"},
                        ],
                    },
                },
                "strategy": strategy
                or {"canary": {"steps": [{"setWeight": 50}, {"pause": {}}, {"setWeight": 100}]}},
            },
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, "default", "rollouts", body)
        return name

    def get(self, name: str) -> Obj:
        obj: Obj = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, "default", "rollouts", name
        )
        return obj

    def set_status(self, name: str, status: Obj) -> None:
        """Write a status as the controller would, including the observed generation."""
        generation = self.get(name)["metadata"]["generation"]
        body = {"status": {"observedGeneration": str(generation), **status}}
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, "default", "rollouts", name, body
        )

    def replica_set(self, rollout: str, *, revision: int, image: str) -> str:
        owner = self.get(rollout)
        pod_hash = f"h{revision}{uuid.uuid4().hex[:4]}"
        labels = {"app": rollout, "rollouts-pod-template-hash": pod_hash}
        name = f"{rollout}-{pod_hash}"
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {"rollout.argoproj.io/revision": str(revision)},
                "ownerReferences": [
                    {
                        "apiVersion": f"{GROUP}/{VERSION}",
                        "kind": "Rollout",
                        "name": rollout,
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "web", "image": image}]},
                },
            },
        }
        self.apps.create_namespaced_replica_set("default", body)
        return name


@pytest.fixture
def rollouts(api: client.ApiClient) -> Rollouts:
    return Rollouts(api)


def test_promote_clears_pause_conditions_and_unpauses(
    env: dict[str, str], rollouts: Rollouts
) -> None:
    name = rollouts.create(paused=True)
    rollouts.set_status(
        name,
        {
            "currentStepIndex": 1,
            "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2024-01-01T00:00:00Z"}],
        },
    )
    assert ok(run(env, "promote", name)) == f"rollout '{name}' promoted\n"
    ro = rollouts.get(name)
    assert ro["spec"]["paused"] is False
    assert "pauseConditions" not in ro["status"]
    assert ro["status"]["currentStepIndex"] == 1  # stepping is the controller's job


def test_promote_full(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    rollouts.set_status(name, {"currentPodHash": "new", "stableRS": "old"})
    assert ok(run(env, "promote", name, "--full")) == f"rollout '{name}' fully promoted\n"
    assert rollouts.get(name)["status"]["promoteFull"] is True


def test_abort_then_retry(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    assert ok(run(env, "abort", name)) == f"rollout '{name}' aborted\n"
    assert rollouts.get(name)["status"]["abort"] is True
    assert ok(run(env, "retry", "rollout", name)) == f"rollout '{name}' retried\n"
    assert rollouts.get(name)["status"]["abort"] is False
    ok(run(env, "abort", name, "-n", "default"))
    assert ok(run(env, "retry", name)) == f"rollout '{name}' retried\n"
    assert rollouts.get(name)["status"]["abort"] is False


def test_pause_and_restart(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    assert ok(run(env, "pause", name)) == f"rollout '{name}' paused\n"
    assert rollouts.get(name)["spec"]["paused"] is True

    before = datetime.now(UTC)
    assert ok(run(env, "restart", name, "--in", "30s")) == f"rollout '{name}' restarts in 30s\n"
    after = datetime.now(UTC)
    restart_at = datetime.fromisoformat(rollouts.get(name)["spec"]["restartAt"])
    window = (before + timedelta(seconds=29), after + timedelta(seconds=31))
    assert window[0] <= restart_at <= window[1]


def test_set_image(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    assert ok(run(env, "set", "image", name, "web=web:3")) == f'rollout "{name}" image updated\n'
    spec = rollouts.get(name)["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["containers"]] == ["web:3", "proxy:1"]

    ok(run(env, "set", "image", name, "*=all:9"))
    spec = rollouts.get(name)["spec"]["template"]["spec"]
    images = [c["image"] for c in spec["initContainers"] + spec["containers"]]
    assert images == ["all:9", "all:9", "all:9"]

    one_line_error(
        run(env, "set", "image", name, "nope=x:1"), 'unable to find container named "nope"'
    )


def test_undo_restores_the_previous_revision(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    old = rollouts.replica_set(name, revision=1, image="web:1")
    rollouts.replica_set(name, revision=2, image="web:2")

    assert ok(run(env, "undo", name)) == f"rollout '{name}' undo\n"
    template = rollouts.get(name)["spec"]["template"]
    assert template["spec"]["containers"][0]["image"] == "web:1"
    assert template["metadata"]["labels"] == {"app": name}  # without the hash label
    assert old.startswith(name)

    one_line_error(
        run(env, "undo", name, "--to-revision", "9"),
        "unable to find specified revision 9 in history",
    )


def test_get_rollout_prints_the_tree(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    rs = rollouts.replica_set(name, revision=1, image="web:2")
    rollouts.set_status(
        name,
        {
            "phase": "Healthy",
            "currentPodHash": rs.rsplit("-", 1)[1],
            "stableRS": rs.rsplit("-", 1)[1],
            "currentStepIndex": 3,
            "replicas": 1,
        },
    )
    out = ok(run(env, "get", "rollout", name))
    lines = out.splitlines()
    assert lines[0].split() == ["Name:", name]
    assert "Status:          ✔ Healthy" in lines
    assert "  Step:          3/3" in lines
    assert lines[lines.index("") + 1].split() == ["NAME", "KIND", "STATUS", "AGE", "INFO"]
    assert f"⟳ {name}" in out
    assert "└──# revision:1" in out
    assert any(rs in line and "ReplicaSet" in line and "stable" in line for line in lines)

    # Healthy: a watch with a timeout ends at once, successfully.
    watched = ok(run(env, "get", "ro", name, "--watch", "--timeout", "20s"))
    assert watched.startswith(f"Name:            {name}\n")
    assert "✔ Healthy" in watched


def test_watch_times_out_on_a_progressing_rollout(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    rollouts.set_status(name, {"phase": "Progressing", "message": "more replicas"})
    result = run(env, "get", "rollout", name, "-w", "--timeout", "1s")
    one_line_error(result, f'timed out after 1s waiting for rollout "{name}"')
    assert "◌ Progressing" in result.stdout


def test_list_rollouts(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create(strategy={"blueGreen": {"activeService": "svc"}})
    lines = ok(run(env, "list", "rollouts")).splitlines()
    assert lines[0].split() == [
        "NAME",
        "STRATEGY",
        "STATUS",
        "STEP",
        "SET-WEIGHT",
        "READY",
        "DESIRED",
        "UP-TO-DATE",
        "AVAILABLE",
    ]
    row = next(line.split() for line in lines if line.startswith(name))
    assert row[1:3] == ["BlueGreen", "Progressing"]
    assert ok(run(env, "list", "rollouts", "-A")).splitlines()[0].startswith("NAMESPACE")


@pytest.mark.parametrize(
    "args",
    [["promote", "ghost"], ["get", "rollout", "ghost"]],
    ids=["promote", "get"],
)
def test_missing_rollout_is_one_line(env: dict[str, str], args: list[str]) -> None:
    result = run(env, *args)
    one_line_error(result, 'rollouts: rollout "ghost" not found in namespace "default"')


def test_missing_kubeconfig_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    bad = {**env, "ROLLOUTS_KUBECONFIG": str(tmp_path / "nope")}
    one_line_error(run(bad, "pause", "x"), "does not exist")


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_status_exit_codes(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    rollouts.set_status(name, {"phase": "Healthy", "message": ""})
    assert ok(run(env, "status", name)) == "Healthy\n"
    assert ok(run(env, "status", name, "--watch=false")) == "Healthy\n"

    rollouts.set_status(name, {"phase": "Paused", "message": "CanaryPauseStep"})
    assert ok(run(env, "status", name, "--watch=false")) == "Paused - CanaryPauseStep\n"
    paused = run(env, "status", name, "--timeout", "1s")
    one_line_error(paused, "Rollout status watch exceeded timeout")
    assert paused.stdout == "Paused - CanaryPauseStep\n"

    rollouts.set_status(name, {"phase": "Degraded", "message": "RolloutAborted: failed"})
    degraded = run(env, "status", name, "-t", "5s")
    one_line_error(
        degraded, "The rollout is in a degraded state with message: RolloutAborted: failed"
    )
    assert degraded.stdout == "Degraded - RolloutAborted: failed\n"
    one_line_error(run(env, "status", "ghost"), 'rollout "ghost" not found')


def create_custom(api: client.ApiClient, plural: str, kind: str, spec: Obj) -> str:
    name = f"{kind.lower()}-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, "default", plural, body
    )
    return name


def get_custom(api: client.ApiClient, plural: str, name: str) -> Obj:
    obj: Obj = client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, "default", plural, name
    )
    return obj


def test_terminate(env: dict[str, str], api: client.ApiClient) -> None:
    metric = {"name": "ok", "provider": {"web": {"url": "http://127.0.0.1:1/"}}}
    run_name = create_custom(api, "analysisruns", "AnalysisRun", {"metrics": [metric]})
    exp_name = create_custom(api, "experiments", "Experiment", {"duration": "1h", "templates": []})
    assert ok(run(env, "terminate", "analysisrun", run_name)) == (
        f"analysisRun '{run_name}' terminated\n"
    )
    assert get_custom(api, "analysisruns", run_name)["spec"]["terminate"] is True
    assert ok(run(env, "terminate", "exp", exp_name)) == f"experiment '{exp_name}' terminated\n"
    assert get_custom(api, "experiments", exp_name)["spec"]["terminate"] is True
    one_line_error(
        run(env, "terminate", "ar", "ghost"),
        'analysisrun "ghost" not found in namespace "default"',
    )


def test_undo_to_revision(env: dict[str, str], rollouts: Rollouts) -> None:
    name = rollouts.create()
    for revision in (1, 2, 3):
        rollouts.replica_set(name, revision=revision, image=f"web:{revision}")

    assert ok(run(env, "undo", name, "--to-revision", "1")) == f"rollout '{name}' undo\n"
    assert rollouts.get(name)["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert ok(run(env, "undo", name, "--to-revision=1")) == (
        "skipped rollback (current template already matches revision 1)\n"
    )
    ok(run(env, "undo", name, "--to-revision", "3"))
    assert rollouts.get(name)["spec"]["template"]["spec"]["containers"][0]["image"] == "web:3"
    one_line_error(
        run(env, "undo", name, "--to-revision", "9"),
        "unable to find specified revision 9 in history",
    )


def test_get_and_list_experiments(env: dict[str, str], api: client.ApiClient) -> None:
    name = create_custom(api, "experiments", "Experiment", {"duration": "1h", "templates": []})
    lines = ok(run(env, "list", "experiments")).splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "DURATION", "REMAINING", "AGE"]
    assert any(line.split()[:2] == [name, "60m"] for line in lines[1:])
    assert ok(run(env, "list", "exp", "-A")).splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]

    screen = ok(run(env, "get", "exp", name)).splitlines()
    assert screen[0].split() == ["Name:", name]
    assert screen[screen.index("") + 1].split() == ["NAME", "KIND", "STATUS", "AGE", "INFO"]
    assert screen[screen.index("") + 2].startswith(f"Σ {name}")
    one_line_error(run(env, "get", "experiment", "ghost"), 'experiment "ghost" not found')
