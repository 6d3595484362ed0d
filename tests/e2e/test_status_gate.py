"""`rollouts status` as a CI gate against the real controller (watcher, beat, one worker host on
the embedded API): it waits for Healthy (exit 0), fails on its timeout while the rollout waits
at a pause step (exit 1), and passes again once `rollouts promote` lets the update finish."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import DevClusterThread
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from tests.e2e.conftest import start_system
from tests.support.procs import REPO, Processes

NAME = "gate"


def rollouts(kubeconfig: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
    env["ROLLOUTS_KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        [sys.executable, "-m", "rollout_workers", *args],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip


def rollout(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": NAME, "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": NAME}},
            "template": {
                "metadata": {"labels": {"app": NAME}},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
            "strategy": {"canary": {"steps": [{"setWeight": 50}, {"pause": {}}]}},
        },
    }


def wait_paused(kube: Kube, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (kube.get(r.ROLLOUTS, "default", NAME).get("status") or {}).get("pauseConditions"):
        assert time.monotonic() < deadline, "the rollout never paused at its pause step"
        time.sleep(0.2)


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_status_gates_on_the_controller(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path
) -> None:
    kube, kubeconfig, _ = start_system(procs, cluster, tmp_path, workers=1)
    kube.create(r.ROLLOUTS, "default", rollout("web:1"))

    healthy = rollouts(kubeconfig, "status", NAME, "--timeout", "60s")
    assert healthy.returncode == 0, (healthy.stdout, healthy.stderr)
    assert healthy.stdout.splitlines()[-1] == "Healthy"

    update = {"spec": {"template": rollout("web:2")["spec"]["template"]}}
    kube.patch(r.ROLLOUTS, "default", NAME, update)
    wait_paused(kube)
    paused = rollouts(kubeconfig, "status", NAME, "--timeout", "2s")
    assert paused.returncode == 1
    assert paused.stderr == "rollouts: Rollout status watch exceeded timeout\n"
    assert paused.stdout == "Paused - CanaryPauseStep\n"

    promoted = rollouts(kubeconfig, "promote", NAME)
    assert promoted.stdout == f"rollout '{NAME}' promoted\n", promoted.stderr
    done = rollouts(kubeconfig, "status", NAME, "-t", "60s")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1] == "Healthy"
    assert rollouts(kubeconfig, "status", NAME, "--watch=false").stdout == "Healthy\n"
