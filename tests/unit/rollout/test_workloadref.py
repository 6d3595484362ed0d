"""Reconciles of `workloadRef` rollouts: seed the rollout and its Deployment, run one sync,
assert the recorded actions and the status patch (argo-rollouts' style)."""

from __future__ import annotations

import copy
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.rollout.hashing import pod_template_hash
from tests.unit.rollout.onesync import NS, OneSync
from tests.unit.rollout.test_controller import TEMPLATE

Obj = dict[str, Any]
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def workload_rollout(replicas: int = 4, scale_down: str | None = None, **spec: Any) -> Obj:
    ref = dict(REF, **({"scaleDown": scale_down} if scale_down else {}))
    body: Obj = {
        "replicas": replicas,
        "workloadRef": ref,
        "strategy": {"canary": {"steps": [{"setWeight": 25}, {"pause": {}}]}},
        **spec,
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "uid": "ro-uid",
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": body,
    }


def deployment(replicas: int = 4, image: str = "web:1", generation: int = 1) -> Obj:
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["containers"][0]["image"] = image
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "generation": generation,
            "resourceVersion": "7",
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template,
        },
    }


def workload_sim(obj: Obj, deploy: Obj | None) -> OneSync:
    """The rollout and its Deployment (if any); the fixture resolves the workloadRef as the
    controller does from the cache. Pods come up when the rollout is let settle."""
    return OneSync(
        obj,
        [deploy] if deploy is not None else [],
        owned_only=True,
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
    )


def deployment_of(sim: OneSync) -> Obj:
    return sim.of(r.DEPLOYMENTS)["web"]


def edit_deployment(sim: OneSync, image: str) -> None:
    d = deployment_of(sim)
    d["spec"]["template"]["spec"]["containers"][0]["image"] = image
    d["metadata"]["generation"] += 1


def test_first_sync_takes_the_deployment_template_and_records_its_generation() -> None:
    sim = workload_sim(workload_rollout(), deployment())
    synced = sim.sync()
    assert synced.kinds() == ["patch rollouts", "patch-status rollouts"]
    # Argo's updateRolloutsReferenceAnnotation: only the annotation is written to the rollout
    annotation_patch = synced.actions[0].body
    assert annotation_patch == {
        "metadata": {
            "annotations": {"rollout.argoproj.io/workload-generation": "1"},
            "resourceVersion": "1",
        }
    }
    status = synced.status_patch()
    assert status["workloadObservedGeneration"] == "1"
    assert status["currentPodHash"] == pod_template_hash(deployment()["spec"]["template"], None)
    assert "template" not in sim.rollout["spec"]  # the resolved template is never written back


def test_workload_rollout_goes_healthy_with_the_deployment_template() -> None:
    sim = workload_sim(workload_rollout(), deployment())
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Healthy"
    (rs,) = sim.replicasets()
    assert rs["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert rs["spec"]["selector"]["matchLabels"]["app"] == "web"  # the Deployment's selector
    assert deployment_of(sim)["spec"]["replicas"] == 4  # scaleDown: never is the default


def test_a_deployment_template_change_is_revision_2_and_pauses_at_its_step() -> None:
    sim = workload_sim(workload_rollout(), deployment())
    sim.settle()
    stable = sim.rollout["status"]["stableRS"]
    edit_deployment(sim, "web:2")
    sim.settle()
    status = sim.rollout["status"]
    assert status["phase"] == "Paused" and status["currentStepIndex"] == 1
    assert status["workloadObservedGeneration"] == "2"
    assert sim.rollout["metadata"]["annotations"]["rollout.argoproj.io/revision"] == "2"
    assert sim.rollout["metadata"]["annotations"]["rollout.argoproj.io/workload-generation"] == "2"
    counts = {
        rs["metadata"]["labels"]["rollouts-pod-template-hash"]: rs["spec"]["replicas"]
        for rs in sim.replicasets()
    }
    assert counts == {stable: 3, status["currentPodHash"]: 1}


def test_missing_deployment_is_invalid_spec_until_it_exists() -> None:
    sim = workload_sim(workload_rollout(), None)
    synced = sim.sync()
    assert synced.kinds() == ["patch-status rollouts"]
    status = synced.status_patch()
    (condition,) = [c for c in status["conditions"] if c["type"] == "InvalidSpec"]
    assert condition["message"] == (
        'The Rollout "web" is invalid: deployments.apps "default/web" not found'
    )
    assert status["phase"] == "Degraded"
    assert sim.last is not None and sim.last.requeue_after == 20.0
    sim.seed(deployment())
    sim.settle()
    status = sim.rollout["status"]
    assert status["phase"] == "Healthy"
    assert not [c for c in status["conditions"] if c["type"] == "InvalidSpec"]


def test_template_with_workload_ref_is_invalid_spec() -> None:
    sim = workload_sim(workload_rollout(template=TEMPLATE), deployment())
    sim.sync()
    (condition,) = [c for c in sim.status_patch()["conditions"] if c["type"] == "InvalidSpec"]
    assert condition["message"] == (
        'The Rollout "web" is invalid: template must be empty for workload reference rollout'
    )


def test_unsupported_kind_is_invalid_spec() -> None:
    obj = workload_rollout()
    obj["spec"]["workloadRef"] = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}
    sim = workload_sim(obj, None)
    sim.sync()
    (condition,) = [c for c in sim.status_patch()["conditions"] if c["type"] == "InvalidSpec"]
    assert condition["message"] == (
        'The Rollout "web" is invalid: workload of type apps/StatefulSet is not supported'
    )


def test_scale_down_onsuccess_scales_the_deployment_to_zero_once_healthy() -> None:
    sim = workload_sim(workload_rollout(scale_down="onsuccess"), deployment())
    seen = []
    for _ in range(20):
        sim.kubelet()
        synced = sim.sync()
        seen.append((sim.rollout["status"]["phase"], deployment_of(sim)["spec"]["replicas"]))
        if not synced.actions:
            break
    # untouched while progressing; 0 in the reconcile that finds the rollout Healthy
    assert all(replicas == 4 for phase, replicas in seen if phase != "Healthy")
    assert deployment_of(sim)["spec"]["replicas"] == 0
    scale = next(a for a in sim.writer.actions if a.resource == "deployments")
    assert scale.verb == "patch"
    assert scale.body == {"spec": {"replicas": 0}, "metadata": {"resourceVersion": "7"}}


def test_scale_down_progressively_follows_the_rollout_ready_replicas() -> None:
    sim = workload_sim(workload_rollout(scale_down="progressively"), deployment())
    sim.sync()
    sim.sync()  # creates the ReplicaSet and scales it to 4
    assert deployment_of(sim)["spec"]["replicas"] == 4
    (rs,) = sim.replicasets()
    rs["status"] = {"replicas": 4, "readyReplicas": 1, "availableReplicas": 1}
    sim.sync()
    assert deployment_of(sim)["spec"]["replicas"] == 3  # 4 - 1 ready
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Healthy"
    assert deployment_of(sim)["spec"]["replicas"] == 0
    # migration complete: a later resize of the rollout leaves the Deployment alone
    sim.rollout["spec"]["replicas"] = 6
    sim.settle()
    assert deployment_of(sim)["spec"]["replicas"] == 0


def test_scale_down_never_leaves_the_deployment() -> None:
    sim = workload_sim(workload_rollout(scale_down="never"), deployment())
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Healthy"
    assert not [a for a in sim.writer.actions if a.resource == "deployments"]


def test_scale_down_only_for_the_first_revision() -> None:
    sim = workload_sim(workload_rollout(scale_down="onsuccess"), deployment())
    sim.settle()
    deployment_of(sim)["spec"]["replicas"] = 2  # someone scaled it back up
    edit_deployment(sim, "web:2")
    sim.settle()
    assert deployment_of(sim)["spec"]["replicas"] == 2
