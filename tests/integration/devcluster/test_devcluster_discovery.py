"""Discovery, /version, /healthz and kubeconfig loading, through the official client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from devcluster.server import DevClusterThread


def get_json(api_client: client.ApiClient, path: str) -> tuple[int, Any]:
    """A raw GET through the client (what kubectl's discovery does)."""
    response = api_client.call_api(path, "GET", _preload_content=False)
    return response.status, json.loads(response.data)


def test_core_discovery(api_client: client.ApiClient) -> None:
    status, versions = get_json(api_client, "/api")
    assert status == 200 and versions["kind"] == "APIVersions" and versions["versions"] == ["v1"]
    _, resources = get_json(api_client, "/api/v1")
    assert resources["kind"] == "APIResourceList" and resources["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert {"namespaces", "services", "pods", "events", "secrets", "configmaps"} <= set(by_name)
    assert by_name["pods"]["namespaced"] is True and by_name["pods"]["kind"] == "Pod"
    assert "watch" in by_name["pods"]["verbs"] and by_name["pods"]["shortNames"] == ["po"]
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]


def test_group_discovery(api_client: client.ApiClient) -> None:
    _, groups = get_json(api_client, "/apis")
    names = {g["name"]: g for g in groups["groups"]}
    assert {"apps", "batch", "networking.k8s.io", "argoproj.io"} <= set(names)
    assert names["argoproj.io"]["preferredVersion"]["groupVersion"] == "argoproj.io/v1alpha1"
    _, argo = get_json(api_client, "/apis/argoproj.io/v1alpha1")
    by_name = {r["name"]: r for r in argo["resources"]}
    assert by_name["rollouts"]["shortNames"] == ["ro"]
    assert by_name["rollouts/scale"]["group"] == "autoscaling"
    assert by_name["clusteranalysistemplates"]["namespaced"] is False
    assert {"analysistemplates", "analysisruns", "experiments", "rollouts/status"} <= set(by_name)
    _, apps = get_json(api_client, "/apis/apps/v1")
    rs = next(r for r in apps["resources"] if r["name"] == "replicasets")
    assert rs["shortNames"] == ["rs"] and rs["kind"] == "ReplicaSet"
    _, group = get_json(api_client, "/apis/apps")
    assert group["kind"] == "APIGroup" and group["name"] == "apps"


def test_version_and_health(api_client: client.ApiClient) -> None:
    info = client.VersionApi(api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")
    status, raw = get_json(api_client, "/version")
    assert status == 200 and raw["gitVersion"] == info.git_version
    response = api_client.call_api("/healthz", "GET", _preload_content=False)
    assert response.data == b"ok"


def test_unknown_path_is_a_not_found_status(api_client: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as info:
        api_client.call_api("/apis/example.com/v1/widgets", "GET", _preload_content=False)
    body = json.loads(info.value.body)
    assert info.value.status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"


def test_load_kube_config_reaches_the_server(
    kubeconfig: Path, devcluster: DevClusterThread
) -> None:
    loaded = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=loaded)
    assert loaded.host == devcluster.url
    with client.ApiClient(loaded) as api:
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert {"default", "kube-system"} <= set(names)
