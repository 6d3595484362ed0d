"""Create, update, patch and delete semantics and Status errors, through the official client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from tests.integration.devcluster.devcluster_helpers import replicaset, rollout_body

ARGO = ("argoproj.io", "v1alpha1")


def status_of(exc: client.ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == exc.status
    return body


def test_create_returns_201_and_metadata(core: client.CoreV1Api, namespace: str) -> None:
    data, code, _ = core.create_namespaced_config_map_with_http_info(
        namespace, {"metadata": {"generateName": "cm-"}, "data": {"a": "1"}}
    )
    assert code == 201
    assert data.metadata.name.startswith("cm-") and len(data.metadata.name) == 8
    assert data.metadata.uid and data.metadata.creation_timestamp
    assert int(data.metadata.resource_version) > 0


def test_already_exists_and_not_found(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "data": {}})
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}})
    body = status_of(info.value)
    assert (info.value.status, body["reason"]) == (409, "AlreadyExists")
    assert body["details"] == {"name": "s", "kind": "secrets"}
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_secret("nope", namespace)
    body = status_of(info.value)
    assert (info.value.status, body["reason"]) == (404, "NotFound")
    assert body["message"] == 'secrets "nope" not found'


def test_namespace_must_exist(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_config_map("no-such-ns", {"metadata": {"name": "a"}})
    body = status_of(info.value)
    assert info.value.status == 404 and body["details"]["kind"] == "namespaces"


def test_group_qualified_error_details(custom: client.CustomObjectsApi, namespace: str) -> None:
    with pytest.raises(client.ApiException) as info:
        custom.get_namespaced_custom_object(*ARGO, namespace, "rollouts", "missing")
    body = status_of(info.value)
    assert body["message"] == 'rollouts.argoproj.io "missing" not found'
    assert body["details"] == {"name": "missing", "group": "argoproj.io", "kind": "rollouts"}


def test_put_with_stale_resource_version_conflicts(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    created.data = {"k": "1"}
    updated = core.replace_namespaced_config_map("c", namespace, created)
    assert updated.metadata.resource_version != created.metadata.resource_version
    created.data = {"k": "2"}
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_config_map("c", namespace, created)
    body = status_of(info.value)
    assert (info.value.status, body["reason"]) == (409, "Conflict")
    # Without a resourceVersion a built-in PUT is unconditional.
    created.metadata.resource_version = None
    assert core.replace_namespaced_config_map("c", namespace, created).data == {"k": "2"}


def test_patch_types(apps: client.AppsV1Api, namespace: str) -> None:

    rs = replicaset("web", replicas=0)
    rs["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    apps.create_namespaced_replica_set(namespace, rs)
    # A dict body goes out as a strategic merge patch: containers merge by name.
    patched = apps.patch_namespaced_replica_set(
        "web",
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}},
    )
    container = patched.spec.template.spec.containers[0]
    assert container.image == "nginx:2" and container.ports[0].container_port == 80
    assert patched.metadata.generation == 2
    merged = apps.patch_namespaced_replica_set(
        "web",
        namespace,
        {"metadata": {"labels": {"extra": "x"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.labels == {"app": "web", "extra": "x"}
    removed = apps.patch_namespaced_replica_set(
        "web",
        namespace,
        {"metadata": {"labels": {"extra": None}}},
        _content_type="application/merge-patch+json",
    )
    assert removed.metadata.labels == {"app": "web"}
    jsonp = apps.patch_namespaced_replica_set(
        "web",
        namespace,
        [
            {"op": "test", "path": "/spec/replicas", "value": 0},
            {"op": "add", "path": "/spec/minReadySeconds", "value": 0},
        ],
    )
    assert jsonp.spec.min_ready_seconds == 0
    with pytest.raises(client.ApiException) as info:
        apps.patch_namespaced_replica_set(
            "web", namespace, [{"op": "test", "path": "/spec/replicas", "value": 5}]
        )
    assert info.value.status == 422 and status_of(info.value)["reason"] == "Invalid"


def test_patch_resource_version_is_a_precondition(
    custom: client.CustomObjectsApi, namespace: str
) -> None:
    created = custom.create_namespaced_custom_object(
        *ARGO, namespace, "rollouts", rollout_body("r")
    )
    rv = created["metadata"]["resourceVersion"]
    fenced = custom.patch_namespaced_custom_object(
        *ARGO,
        namespace,
        "rollouts",
        "r",
        {"metadata": {"resourceVersion": rv}, "spec": {"paused": True}},
    )
    assert fenced["spec"]["paused"] is True
    with pytest.raises(client.ApiException) as info:
        custom.patch_namespaced_custom_object(
            *ARGO,
            namespace,
            "rollouts",
            "r",
            {"metadata": {"resourceVersion": rv}, "spec": {"paused": False}},
        )
    assert info.value.status == 409 and status_of(info.value)["reason"] == "Conflict"
    # A custom resource PUT needs a resourceVersion, like a real CRD.
    body = {**fenced, "metadata": {"name": "r"}}
    with pytest.raises(client.ApiException) as info:
        custom.replace_namespaced_custom_object(*ARGO, namespace, "rollouts", "r", body)
    assert info.value.status == 422
    assert status_of(info.value)["message"] == (
        'rollouts.argoproj.io "r" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )


def test_status_subresource_and_generation(custom: client.CustomObjectsApi, namespace: str) -> None:
    body = rollout_body("r")
    body["status"] = {"phase": "Ignored"}
    created = custom.create_namespaced_custom_object(*ARGO, namespace, "rollouts", body)
    assert "status" not in created and created["metadata"]["generation"] == 1
    with_status = custom.patch_namespaced_custom_object_status(
        *ARGO,
        namespace,
        "rollouts",
        "r",
        {"spec": {"replicas": 9}, "status": {"phase": "Progressing", "observedGeneration": "1"}},
    )
    assert with_status["status"]["phase"] == "Progressing"
    assert with_status["spec"]["replicas"] == 1 and with_status["metadata"]["generation"] == 1
    main = custom.patch_namespaced_custom_object(
        *ARGO,
        namespace,
        "rollouts",
        "r",
        {"spec": {"replicas": 3}, "status": {"phase": "Ignored"}},
    )
    assert main["status"]["phase"] == "Progressing" and main["metadata"]["generation"] == 2
    labelled = custom.patch_namespaced_custom_object(
        *ARGO, namespace, "rollouts", "r", {"metadata": {"labels": {"a": "b"}}}
    )
    assert labelled["metadata"]["generation"] == 2
    # A write that changes nothing does not bump the resourceVersion.
    again = custom.patch_namespaced_custom_object(
        *ARGO, namespace, "rollouts", "r", {"metadata": {"labels": {"a": "b"}}}
    )
    assert again["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]


def test_scale_subresource(
    apps: client.AppsV1Api, custom: client.CustomObjectsApi, namespace: str
) -> None:

    apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=0))
    scale = apps.read_namespaced_replica_set_scale("web", namespace)
    assert scale.spec.replicas == 0 and scale.status.selector == "app=web"
    apps.patch_namespaced_replica_set_scale("web", namespace, {"spec": {"replicas": 2}})
    assert apps.read_namespaced_replica_set("web", namespace).spec.replicas == 2
    apps.patch_namespaced_replica_set_scale("web", namespace, {"spec": {"replicas": 0}})

    custom.create_namespaced_custom_object(*ARGO, namespace, "rollouts", rollout_body("r"))
    custom.patch_namespaced_custom_object_status(
        *ARGO, namespace, "rollouts", "r", {"status": {"HPAReplicas": 1, "selector": "app=r"}}
    )
    ro_scale = custom.get_namespaced_custom_object_scale(*ARGO, namespace, "rollouts", "r")
    assert ro_scale["spec"]["replicas"] == 1 and ro_scale["status"]["selector"] == "app=r"
    custom.patch_namespaced_custom_object_scale(
        *ARGO, namespace, "rollouts", "r", {"spec": {"replicas": 4}}
    )
    rollout = custom.get_namespaced_custom_object(*ARGO, namespace, "rollouts", "r")
    assert rollout["spec"]["replicas"] == 4 and rollout["metadata"]["generation"] == 2


def test_other_builtin_types(
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    networking: client.NetworkingV1Api,
    namespace: str,
) -> None:
    svc = core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "svc"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    assert svc.spec.cluster_ip and svc.spec.ports[0].target_port == 80
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "ev1"},
            "involvedObject": {"kind": "Rollout", "name": "r"},
            "reason": "RolloutUpdated",
            "message": "m",
            "type": "Normal",
        },
    )
    events = core.list_namespaced_event(namespace, field_selector="involvedObject.name=r")
    assert [e.reason for e in events.items] == ["RolloutUpdated"]
    ing = networking.create_namespaced_ingress(
        namespace,
        {"metadata": {"name": "ing"}, "spec": {"rules": [{"host": "a.example.com"}]}},
    )
    assert ing.metadata.generation == 1
    assert [i.metadata.name for i in networking.list_namespaced_ingress(namespace).items] == ["ing"]
    core.delete_namespaced_service("svc", namespace)
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_service("svc", namespace)
    assert info.value.status == 404


def test_cluster_scoped_custom_resource(custom: client.CustomObjectsApi) -> None:
    name = "cat-test"
    custom.create_cluster_custom_object(
        *ARGO,
        "clusteranalysistemplates",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "ClusterAnalysisTemplate",
            "metadata": {"name": name},
            "spec": {"metrics": []},
        },
    )
    got = custom.get_cluster_custom_object(*ARGO, "clusteranalysistemplates", name)
    assert "namespace" not in got["metadata"]
    deleted = custom.delete_cluster_custom_object(*ARGO, "clusteranalysistemplates", name)
    assert deleted["metadata"]["name"] == name


def test_method_not_allowed(api_client: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as info:
        api_client.call_api(
            f"/api/v1/namespaces/{namespace}/configmaps",
            "PUT",
            body={},
            _preload_content=False,
        )
    assert info.value.status == 405 and status_of(info.value)["reason"] == "MethodNotAllowed"


def test_cluster_wide_path_of_namespaced_type_is_read_only(api_client: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as info:
        api_client.call_api(
            "/apis/apps/v1/replicasets", "POST", body=replicaset("x"), _preload_content=False
        )
    assert info.value.status == 405


def test_delete_collection_and_dry_run(core: client.CoreV1Api, namespace: str) -> None:
    for name, app in [("a", "web"), ("b", "web"), ("c", "api")]:
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name, "labels": {"app": app}}}
        )
    dry = core.create_namespaced_config_map(namespace, {"metadata": {"name": "d"}}, dry_run="All")
    assert dry.metadata.name == "d"
    core.delete_collection_namespaced_config_map(namespace, label_selector="app=web")
    names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
    assert names == ["c"]
