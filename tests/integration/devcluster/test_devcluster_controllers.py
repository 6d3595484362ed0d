"""The in-server controllers (ReplicaSet, Deployment, Job, GC, namespace) seen through the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from devcluster.server import DevCluster, DevClusterThread
from tests.integration.devcluster.devcluster_helpers import replicaset, wait_for


def pods_of(core: client.CoreV1Api, namespace: str, app: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=f"app={app}").items)


def ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_replicaset_creates_ready_pods(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    rs = apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=3))

    def all_ready() -> Any:
        status = apps.read_namespaced_replica_set("web", namespace).status
        return status if status.ready_replicas == 3 else None

    status = wait_for(all_ready, what="3 ready replicas")
    assert status.replicas == 3 and status.available_replicas == 3
    assert status.fully_labeled_replicas == 3 and status.observed_generation == 1
    pods = pods_of(core, namespace, "web")
    assert len(pods) == 3
    for pod in pods:
        assert pod.metadata.name.startswith("web-") and len(pod.metadata.name) == 9
        (ref,) = pod.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller) == (
            "ReplicaSet",
            "web",
            rs.metadata.uid,
            True,
        )
        assert pod.status.phase == "Running" and ready(pod)
        assert pod.status.container_statuses[0].ready is True


def test_scale_up_then_down_keeps_the_older_pods(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=2))
    wait_for(lambda: apps.read_namespaced_replica_set("web", namespace).status.ready_replicas == 2)
    original = {p.metadata.name for p in pods_of(core, namespace, "web")}
    apps.patch_namespaced_replica_set("web", namespace, {"spec": {"replicas": 3}})
    wait_for(lambda: len(pods_of(core, namespace, "web")) == 3, what="a third pod")
    # The new pod is the newest and (usually) not ready yet: either rule deletes it.
    apps.patch_namespaced_replica_set("web", namespace, {"spec": {"replicas": 2}})
    wait_for(lambda: {p.metadata.name for p in pods_of(core, namespace, "web")} == original)
    wait_for(lambda: all(ready(p) for p in pods_of(core, namespace, "web")))
    apps.patch_namespaced_replica_set("web", namespace, {"spec": {"replicas": 0}})
    wait_for(lambda: not pods_of(core, namespace, "web"), what="pods deleted")
    status = wait_for(
        lambda: (
            (s := apps.read_namespaced_replica_set("web", namespace).status).replicas == 0
            and s.observed_generation == 4
            and s
        )
    )
    assert status.ready_replicas is None and status.available_replicas is None


def test_bad_image_never_becomes_ready(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    apps.create_namespaced_replica_set(
        namespace, replicaset("bad", replicas=1, image="nginx:bad-tag")
    )

    def waiting() -> Any:
        pods = pods_of(core, namespace, "bad")
        statuses = pods[0].status.container_statuses if pods else None
        return statuses and statuses[0].state.waiting

    state = wait_for(waiting, what="ImagePullBackOff")
    assert state.reason == "ImagePullBackOff"
    status = apps.read_namespaced_replica_set("bad", namespace).status
    assert status.replicas == 1 and not status.ready_replicas


def test_min_ready_seconds_delays_availability(apps: client.AppsV1Api, namespace: str) -> None:
    body = replicaset("slow", replicas=1)
    body["spec"]["minReadySeconds"] = 3  # wide enough for a loaded machine to see the gap
    apps.create_namespaced_replica_set(namespace, body)
    status = wait_for(
        lambda: (
            (s := apps.read_namespaced_replica_set("slow", namespace).status).ready_replicas == 1
            and s
        )
    )
    assert not status.available_replicas
    wait_for(
        lambda: apps.read_namespaced_replica_set("slow", namespace).status.available_replicas == 1,
        what="available after minReadySeconds",
    )


def test_background_gc_deletes_dependents(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=2))
    wait_for(lambda: len(pods_of(core, namespace, "web")) == 2)
    result = apps.delete_namespaced_replica_set("web", namespace)
    assert result.status == "Success"
    wait_for(lambda: not pods_of(core, namespace, "web"), what="pods collected")


def test_orphan_keeps_dependents(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=1))
    wait_for(lambda: len(pods_of(core, namespace, "web")) == 1)
    apps.delete_namespaced_replica_set("web", namespace, propagation_policy="Orphan")
    (pod,) = pods_of(core, namespace, "web")
    assert pod.metadata.owner_references is None


def test_gc_of_custom_resource_dependents(
    custom: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str
) -> None:
    owner = custom.create_namespaced_custom_object(
        "argoproj.io",
        "v1alpha1",
        namespace,
        "analysisruns",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "run"},
            "spec": {"metrics": []},
        },
    )
    ref = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "name": "run",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    )
    custom.delete_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "analysisruns", "run"
    )
    wait_for(
        lambda: (
            not core.list_namespaced_config_map(namespace, field_selector="metadata.name=dep").items
        ),
        what="dependent collected",
    )


def test_namespace_deletion_deletes_its_objects(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    name = "t-doomed"
    core.create_namespace({"metadata": {"name": name}})
    apps.create_namespaced_replica_set(name, replicaset("web", replicas=1))
    core.create_namespaced_config_map(name, {"metadata": {"name": "cm"}})
    response = core.delete_namespace(name, _preload_content=False)
    deleted = json.loads(response.data)  # a real server returns the Namespace, not a Status
    assert deleted["kind"] == "Namespace" and deleted["status"]["phase"] == "Terminating"

    def gone() -> bool:
        try:
            core.read_namespace(name)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, what="namespace removed")
    assert not core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={name}").items


def test_deployment_status_follows_replicas(apps: client.AppsV1Api, namespace: str) -> None:
    body = replicaset("dep", replicas=2)
    body.update(kind="Deployment")
    apps.create_namespaced_deployment(namespace, body)
    status = wait_for(
        lambda: (
            (s := apps.read_namespaced_deployment("dep", namespace).status).ready_replicas == 2
            and s
        )
    )
    assert status.replicas == 2 and status.available_replicas == 2
    apps.patch_namespaced_deployment_scale("dep", namespace, {"spec": {"replicas": 0}})
    status = wait_for(
        lambda: (
            (s := apps.read_namespaced_deployment("dep", namespace).status).observed_generation == 2
            and s
        )
    )
    assert not status.replicas and not status.ready_replicas
    template = apps.read_namespaced_deployment("dep", namespace).spec.template
    assert template.spec.containers[0].image == "nginx:1"


def job(name: str, **container: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", **container}],
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("container", "succeeds"),
    [
        ({"command": ["sh", "-c", "echo ok"]}, True),
        ({"command": ["sh", "-c", "exit 1"]}, False),
        ({"command": ["sh", "-c"], "args": ["exit 0"]}, True),
        ({"env": [{"name": "DEVCLUSTER_EXIT_CODE", "value": "3"}]}, False),
    ],
    ids=["plain", "exit 1", "exit 0 in args", "env exit code"],
)
def test_jobs_complete_or_fail(
    batch: client.BatchV1Api,
    core: client.CoreV1Api,
    namespace: str,
    container: dict[str, Any],
    succeeds: bool,
) -> None:
    created = batch.create_namespaced_job(namespace, job("j", **container))
    labels = created.spec.template.metadata.labels
    assert labels["job-name"] == "j" and labels["controller-uid"] == created.metadata.uid

    def finished() -> Any:
        status = batch.read_namespaced_job("j", namespace).status
        return status if (status.succeeded or status.failed) else None

    status = wait_for(finished, what="job finished")
    (condition,) = status.conditions
    if succeeds:
        assert status.succeeded == 1 and condition.type == "Complete"
        assert status.completion_time is not None
    else:
        assert status.failed == 1 and condition.type == "Failed"
    assert condition.status == "True"
    (pod,) = core.list_namespaced_pod(namespace, label_selector="job-name=j").items
    assert pod.status.phase == ("Succeeded" if succeeds else "Failed")


def test_standalone_pod_becomes_ready(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "solo", "labels": {"app": "solo"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
        },
    )
    pod = wait_for(
        lambda: (p := core.read_namespaced_pod("solo", namespace)).status.phase == "Running" and p
    )
    assert ready(pod) and pod.status.pod_ip and pod.status.start_time


def test_controllers_go_quiet(
    apps: client.AppsV1Api, namespace: str, devcluster: DevClusterThread
) -> None:
    """Event-driven: once everything is ready there is no work and no timer left."""
    apps.create_namespaced_replica_set(namespace, replicaset("quiet", replicas=2))
    wait_for(
        lambda: apps.read_namespaced_replica_set("quiet", namespace).status.ready_replicas == 2
    )

    def quiet(c: DevCluster) -> bool:
        assert c.controllers is not None
        return c.controllers.idle and c.controllers.pending_timers == 0

    wait_for(lambda: devcluster.call(quiet), what="no pending controller work")
