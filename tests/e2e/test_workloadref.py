"""`spec.workloadRef` end to end: real watcher (its Deployment reflector started on demand),
beat and worker processes on the embedded API, whose Deployment controller runs the referenced
Deployments. The scenarios run concurrently, one namespace each."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devcluster.server import DevClusterThread
from rollout_workers.kube import resources as r
from tests.e2e.conftest import start_system
from tests.e2e.test_rollouts import World, phase, promoted, promoted_past, run_all, status
from tests.support.procs import Processes

Obj = dict[str, Any]
TIMEOUT = 30.0
GENERATION = "rollout.argoproj.io/workload-generation"


def deployment(name: str, replicas: int, image: str = "demo:1") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def referencing(name: str, replicas: int, scale_down: str | None = None) -> Obj:
    ref: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    if scale_down:
        ref["scaleDown"] = scale_down
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "workloadRef": ref,
            "strategy": {"canary": {"steps": [{"setWeight": 50}, {"pause": {}}]}},
        },
    }


def deployed(w: World, name: str) -> Obj:
    return w.kube.get(r.DEPLOYMENTS, w.namespace, name)


def wait_deployment(w: World, name: str, replicas: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while deployed(w, name)["spec"].get("replicas") != replicas:
        if time.monotonic() > deadline:
            raise AssertionError(f"deployment {name}: {deployed(w, name)['spec']} != {replicas}")
        time.sleep(0.25)


def healthy_then_deployment_update(w: World) -> None:
    """Healthy from the Deployment's template; a template change of the Deployment is revision
    2, pauses at its step, and is promoted to Healthy. scaleDown: never (the default)."""
    w.apply(deployment("web", 2), referencing("web", 2))
    first = w.wait("web", promoted, "first deploy", TIMEOUT)
    assert first["metadata"]["annotations"][GENERATION] == "1"
    assert status(first)["workloadObservedGeneration"] == "1"
    assert "template" not in first["spec"]  # the resolved template is never written back
    w.kube.patch(r.DEPLOYMENTS, w.namespace, "web", {"spec": {"template": {"spec": {
        "containers": [{"name": "app", "image": "demo:2"}]}}}})  # fmt: skip
    paused = w.wait("web", lambda o: phase(o) == "Paused", "paused at 50%", TIMEOUT)
    assert paused["metadata"]["annotations"]["rollout.argoproj.io/revision"] == "2"
    assert status(paused)["workloadObservedGeneration"] == "2"
    w.cli("promote", "web")
    w.wait("web", promoted_past(first["status"]["stableRS"]), "promoted to revision 2", TIMEOUT)
    assert deployed(w, "web")["spec"]["replicas"] == 2  # never: the Deployment is left alone


def scale_down_on_success(w: World) -> None:
    w.apply(deployment("web", 3), referencing("web", 3, "onsuccess"))
    w.wait("web", promoted, "healthy", TIMEOUT)
    wait_deployment(w, "web", 0)


def scale_down_progressively(w: World) -> None:
    w.apply(deployment("web", 3), referencing("web", 3, "progressively"))
    w.wait("web", promoted, "healthy", TIMEOUT)
    wait_deployment(w, "web", 0)


def missing_deployment_then_created(w: World) -> None:
    w.apply(referencing("web", 2))
    message = 'The Rollout "web" is invalid: deployments.apps "{}/web" not found'
    w.wait("web", lambda o: any(c.get("type") == "InvalidSpec"
                                and c.get("message") == message.format(w.namespace)
                                for c in status(o).get("conditions") or []),
           "InvalidSpec: deployment not found", TIMEOUT)  # fmt: skip
    w.apply(deployment("web", 2))
    w.wait("web", promoted, "healthy once the deployment exists", TIMEOUT)


def pod_template_reference(w: World) -> None:
    """A v1 PodTemplate as the template source (the rollout names its own selector)."""
    body = deployment("tpl", 1)["spec"]["template"]
    w.apply({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "tpl"},
             "template": body})  # fmt: skip
    ro = referencing("tpl", 1)
    ro["spec"]["workloadRef"] = {"apiVersion": "v1", "kind": "PodTemplate", "name": "tpl"}
    ro["spec"]["selector"] = {"matchLabels": {"app": "tpl"}}
    w.apply(ro)
    w.wait("tpl", promoted, "healthy from the pod template", TIMEOUT)


SCENARIOS: list[Callable[[World], None]] = [
    healthy_then_deployment_update,
    pod_template_reference,
    scale_down_on_success,
    scale_down_progressively,
    missing_deployment_then_created,
]


def test_workload_ref_scenarios(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path
) -> None:
    kube, kubeconfig, _ = start_system(procs, cluster, tmp_path, workers=1)
    run_all(kube, kubeconfig, SCENARIOS, prefix="w")
