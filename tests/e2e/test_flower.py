"""Flower shows the work: after the running system has reconciled a few rollouts for ~20 s,
Flower's recent tasks are reconciles, each with its key as argument and its outcome as a
readable result (both columns of its task list), and no timer ticks (beat runs those
itself)."""

from __future__ import annotations

import ast
import json
import re
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.local.redis_server import free_port
from tests.e2e.conftest import start_system
from tests.support.procs import Processes, wait_for

NAMESPACE = "flower"
RUNNING_FOR = 20.0
# With fairness a message may claim another key: "(<that key>, whose turn it was)" follows,
# which Flower may cut short with "...".
READABLE = re.compile(
    r"^'(done|requeue after [\d.]+s|backoff|stale: .*|busy: .*|lost claim|gone: .*)"
    r"( \(.*)?'$"
)


def rollout(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            "strategy": {"canary": {"steps": [{"setWeight": 50}, {"pause": {"duration": "3s"}}]}},
        },
    }


def get(port: int, path: str) -> Any:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return json.loads(response.read())
    except OSError:
        return None


@pytest.mark.slow
def test_flower_lists_reconciles_with_keys_and_outcomes_and_no_ticks(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path
) -> None:
    kube, _, _ = start_system(procs, cluster, tmp_path, workers=1)
    port = free_port()
    procs.spawn("flower", "flower", "--port", str(port))
    wait_for(lambda: get(port, "/api/workers"), 45, "Flower lists the worker", interval=0.5)
    started = time.monotonic()
    manifests.ensure_namespace(kube, NAMESPACE)
    names = [f"ro-{i}" for i in range(3)]
    for name in names:
        manifests.apply(kube, rollout(name, "demo:1"), NAMESPACE)

    def healthy(revision: str) -> bool:
        for name in names:
            obj = kube.get(r.ROLLOUTS, NAMESPACE, name)
            annotations = obj["metadata"].get("annotations") or {}
            status = obj.get("status") or {}
            if status.get("phase") != "Healthy" or annotations.get(
                "rollout.argoproj.io/revision"
            ) != (revision):
                return False
        return True

    wait_for(lambda: healthy("1"), 60, "the rollouts are Healthy", interval=0.5)
    for name in names:  # an update: weights, a timed pause (a timer), promotion
        kube.patch(r.ROLLOUTS, NAMESPACE, name, {"spec": {"template": {"spec": {
            "containers": [{"name": "app", "image": "demo:2"}]}}}})  # fmt: skip
    wait_for(lambda: healthy("2"), 60, "the updated rollouts are Healthy", interval=0.5)

    def recent_after_running() -> dict[str, Any] | None:
        if time.monotonic() - started < RUNNING_FOR:
            return None  # the system runs for a while: a tick task per second would pile up
        tasks: dict[str, Any] | None = get(port, "/api/tasks?limit=2000")
        return tasks or None

    tasks = wait_for(recent_after_running, RUNNING_FOR + 30, "Flower's task list", interval=0.5)
    entries = list(tasks.values())  # type: ignore[attr-defined]
    by_name = Counter(str(t.get("name")) for t in entries)
    assert "timers.tick" not in by_name, by_name
    syncs = [t for t in entries if t.get("name") == "rollouts.sync"]
    keys = {ast.literal_eval(t["args"])[0] for t in syncs}
    assert {f"{NAMESPACE}/{n}" for n in names} <= keys, keys
    finished = [t for t in syncs if t.get("state") == "SUCCESS"]
    assert finished
    unreadable = [t["result"] for t in finished if not READABLE.match(str(t["result"]))]
    assert not unreadable, unreadable
    outcomes = Counter(str(t["result"]).split(" after ")[0] for t in finished)
    assert outcomes["'done'"] > 0
    assert any(str(t["result"]).startswith("'requeue after") for t in finished), outcomes
    # The task list page shows the key and the outcome as columns.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/tasks", timeout=5) as response:
        page = response.read().decode()
    assert 'data-column="args"' in page and 'data-column="result"' in page
    print(f"Flower after {time.monotonic() - started:.0f}s: tasks {dict(by_name)}; "
          f"reconcile results {dict(outcomes)}")  # fmt: skip
