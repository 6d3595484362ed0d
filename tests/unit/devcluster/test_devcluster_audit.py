"""The audit log: each request as RBAC sees it, and who made it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from devcluster.audit import Call, classify
from devcluster.server import run_in_thread
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.settings import Settings

NS = "/apis/argoproj.io/v1alpha1/namespaces/a"

CASES = {
    "list across namespaces": (
        "GET", "/apis/apps/v1/replicasets", {},
        Call("u", "list", "apps", "replicasets", "", False)),
    "watch by query": (
        "GET", "/apis/apps/v1/replicasets", {"watch": "true"},
        Call("u", "watch", "apps", "replicasets", "", False)),
    "watch by path in a namespace": (
        "GET", "/api/v1/watch/namespaces/a/services", {},
        Call("u", "watch", "", "services", "", True)),
    "get one": ("GET", "/api/v1/namespaces/a/secrets/s", {},
        Call("u", "get", "", "secrets", "", True, "s")),
    "list by name": (
        "GET", "/api/v1/namespaces/a/configmaps", {"fieldSelector": "metadata.name=cm"},
        Call("u", "list", "", "configmaps", "", True, "cm")),
    "watch by name": (
        "GET", "/api/v1/configmaps",
        {"watch": "true", "fieldSelector": "metadata.namespace=x,metadata.name==cm"},
        Call("u", "watch", "", "configmaps", "", False, "cm")),
    "list not by name": (
        "GET", "/api/v1/configmaps", {"fieldSelector": "metadata.name!=cm"},
        Call("u", "list", "", "configmaps", "", False)),
    "create": ("POST", NS + "/analysisruns", {},
        Call("u", "create", "argoproj.io", "analysisruns", "", True)),
    "status patch": (
        "PATCH", NS + "/rollouts/web/status", {},
        Call("u", "patch", "argoproj.io", "rollouts", "status", True, "web")),
    "delete": ("DELETE", "/api/v1/namespaces/a/pods/p", {},
        Call("u", "delete", "", "pods", "", True, "p")),
    "delete collection": (
        "DELETE", "/api/v1/namespaces/a/pods", {},
        Call("u", "deletecollection", "", "pods", "", True)),
    "cluster-scoped": (
        "GET", "/apis/argoproj.io/v1alpha1/clusteranalysistemplates", {},
        Call("u", "list", "argoproj.io", "clusteranalysistemplates", "", False)),
    "a namespace itself": ("GET", "/api/v1/namespaces/a", {},
        Call("u", "get", "", "namespaces", "", False, "a")),
    "eviction": (
        "POST", "/api/v1/namespaces/a/pods/p/eviction", {},
        Call("u", "create", "", "pods", "eviction", True, "p")),
    "discovery": ("GET", "/apis/argoproj.io/v1alpha1", {},
        Call("u", "get", path="/apis/argoproj.io/v1alpha1")),
    "version": ("GET", "/version", {}, Call("u", "get", path="/version")),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_classify(case: str) -> None:
    method, path, query, expected = CASES[case]
    assert classify(method, path, query, "Bearer u") == expected


def test_identity_is_the_bearer_token_or_anonymous() -> None:
    assert classify("GET", "/version", {}, None).user == "anonymous"
    assert classify("GET", "/version", {}, "Basic eDp5").user == "anonymous"
    assert classify("GET", "/version", {}, "Bearer worker").user == "worker"


def test_the_official_client_is_recorded_under_its_kubeconfig_token(tmp_path: Path) -> None:
    with run_in_thread(ready_delay=0.1) as cluster:
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kc", token="worker")
        settings = Settings(kubeconfig=kubeconfig)
        kube = Kube(api_client(settings), settings.kube)
        kube.list(r.ROLLOUTS, namespace="default")
        kube.create(
            r.SERVICES, "default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
        )
        calls = cluster.audit()
        assert {
            (c["user"], c["verb"], c["resource"], c["namespaced"], c["count"]) for c in calls
        } >= {("worker", "list", "rollouts", True, 1), ("worker", "create", "services", True, 1)}
        with urllib.request.urlopen(f"{cluster.url}/_devcluster/audit") as answer:
            assert json.load(answer) == calls
        assert cluster.audit(clear=True) == calls
        assert cluster.audit() == []
