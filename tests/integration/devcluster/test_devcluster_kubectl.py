"""The real kubectl against the devcluster: create (protobuf bodies), run, expose, scale.

``kubectl create <type>`` sends built-in types as protobuf; run, expose, scale, label and delete
send JSON. Each test runs the binary, then reads the object back through the official client.
Skipped where kubectl is not installed (CI machines do not have it).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from devcluster.protobuf import CONTENT_TYPE, MAGIC
from devcluster.server import DevClusterThread
from tests.integration.devcluster.devcluster_helpers import wait_for

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def kubectl(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    yield Kubectl(kubeconfig, tmp_path_factory.mktemp("kubectl-cache"))


class Kubectl:
    """Runs the kubectl binary against the devcluster, with its own discovery cache."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    def __call__(self, *args: str) -> str:
        assert KUBECTL is not None
        command = [
            KUBECTL,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
        ]
        done = subprocess.run(
            [*command, *args], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout


@needs_kubectl
def test_create_namespace(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    name = f"t-{uuid.uuid4().hex[:10]}"
    assert kubectl("create", "namespace", name).strip() == f"namespace/{name} created"
    try:
        ns = core.read_namespace(name)
        assert ns.status.phase == "Active"
        assert ns.metadata.labels == {"kubernetes.io/metadata.name": name}
    finally:
        kubectl("delete", "namespace", name)
    wait_for(lambda: name not in {n.metadata.name for n in core.list_namespace().items})


@needs_kubectl
def test_create_deployment(kubectl: Kubectl, apps: client.AppsV1Api, namespace: str) -> None:
    kubectl(
        "create", "deployment", "web", "-n", namespace,
        "--image=nginx:1.27", "--replicas=3", "--port=8080",
    )  # fmt: skip
    dep = apps.read_namespaced_deployment("web", namespace)
    assert dep.metadata.labels == {"app": "web"}
    assert dep.spec.replicas == 3
    assert dep.spec.selector.match_labels == {"app": "web"}
    assert dep.spec.template.metadata.labels == {"app": "web"}
    [container] = dep.spec.template.spec.containers
    assert (container.name, container.image) == ("nginx", "nginx:1.27")
    assert [p.container_port for p in container.ports] == [8080]
    wait_for(
        lambda: apps.read_namespaced_deployment("web", namespace).status.ready_replicas == 3,
        what="three ready replicas",
    )


@needs_kubectl
def test_create_deployment_with_zero_replicas(
    kubectl: Kubectl, apps: client.AppsV1Api, namespace: str
) -> None:
    kubectl("create", "deployment", "idle", "-n", namespace, "--image=nginx:1", "--replicas=0")
    assert apps.read_namespaced_deployment("idle", namespace).spec.replicas == 0


@needs_kubectl
def test_create_configmap_from_literals_and_a_binary_file(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"\x00\xffbinary")
    kubectl(
        "create", "configmap", "cfg", "-n", namespace,
        "--from-literal=a=1", "--from-literal=b=two", f"--from-file=blob={blob}",
    )  # fmt: skip
    cm = core.read_namespaced_config_map("cfg", namespace)
    assert cm.data == {"a": "1", "b": "two"}
    assert base64.b64decode(cm.binary_data["blob"]) == b"\x00\xffbinary"


@needs_kubectl
def test_create_secret_generic(kubectl: Kubectl, core: client.CoreV1Api, namespace: str) -> None:
    kubectl(
        "create", "secret", "generic", "creds", "-n", namespace,
        "--from-literal=user=admin", "--from-literal=password=s3cr3t",
    )  # fmt: skip
    secret = core.read_namespaced_secret("creds", namespace)
    decoded = {k: base64.b64decode(v).decode() for k, v in secret.data.items()}
    assert decoded == {"user": "admin", "password": "s3cr3t"}


@needs_kubectl
def test_create_service_clusterip_and_nodeport(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str
) -> None:
    kubectl("create", "service", "clusterip", "svc", "-n", namespace, "--tcp=80:8080")
    kubectl(
        "create", "service", "nodeport", "np", "-n", namespace, "--tcp=81:8081",
        "--node-port=30081",
    )  # fmt: skip
    svc = core.read_namespaced_service("svc", namespace)
    assert svc.spec.type == "ClusterIP" and svc.spec.cluster_ip
    assert svc.spec.selector == {"app": "svc"}
    [port] = svc.spec.ports
    assert (port.name, port.protocol, port.port, port.target_port) == ("80-8080", "TCP", 80, 8080)
    np = core.read_namespaced_service("np", namespace)
    assert np.spec.type == "NodePort"
    assert [(p.port, p.target_port, p.node_port) for p in np.spec.ports] == [(81, 8081, 30081)]


@needs_kubectl
def test_create_job(kubectl: Kubectl, batch: client.BatchV1Api, namespace: str) -> None:
    kubectl("create", "job", "once", "-n", namespace, "--image=busybox:1", "--", "echo", "hi")
    job = batch.read_namespaced_job("once", namespace)
    [container] = job.spec.template.spec.containers
    assert (container.image, container.command) == ("busybox:1", ["echo", "hi"])
    assert job.spec.template.spec.restart_policy == "Never"
    wait_for(
        lambda: batch.read_namespaced_job("once", namespace).status.succeeded == 1,
        what="the job to succeed",
    )


@needs_kubectl
def test_run_expose_scale_label_delete(
    kubectl: Kubectl,
    core: client.CoreV1Api,
    apps: client.AppsV1Api,
    namespace: str,
) -> None:
    kubectl(
        "run", "solo", "-n", namespace, "--image=nginx:1", "--port=80", "--labels=app=solo",
        "--env=MODE=test", "--restart=Never", "--", "sleep", "3600",
    )  # fmt: skip
    pod = core.read_namespaced_pod("solo", namespace)
    assert pod.metadata.labels == {"app": "solo"}
    [container] = pod.spec.containers
    assert (container.image, container.args) == ("nginx:1", ["sleep", "3600"])
    assert [(e.name, e.value) for e in container.env] == [("MODE", "test")]
    assert pod.spec.restart_policy == "Never"

    kubectl("create", "deployment", "web", "-n", namespace, "--image=nginx:1", "--port=8080")
    kubectl(
        "expose", "deployment", "web", "-n", namespace, "--port=80", "--target-port=8080",
        "--name=web-svc",
    )  # fmt: skip
    svc = core.read_namespaced_service("web-svc", namespace)
    assert svc.spec.selector == {"app": "web"}
    assert [(p.port, p.target_port) for p in svc.spec.ports] == [(80, 8080)]
    kubectl("expose", "pod", "solo", "-n", namespace, "--port=81", "--name=solo-svc")
    assert core.read_namespaced_service("solo-svc", namespace).spec.selector == {"app": "solo"}

    kubectl("scale", "deployment", "web", "-n", namespace, "--replicas=4")
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 4
    kubectl("label", "deployment", "web", "-n", namespace, "team=a")
    kubectl("annotate", "deployment", "web", "-n", namespace, "note=b")
    dep = apps.read_namespaced_deployment("web", namespace)
    assert dep.metadata.labels == {"app": "web", "team": "a"}
    assert dep.metadata.annotations["note"] == "b"

    kubectl("delete", "service", "web-svc", "-n", namespace)
    names = {s.metadata.name for s in core.list_namespaced_service(namespace).items}
    assert names == {"solo-svc"}


def _post(devcluster: DevClusterThread, path: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(
        devcluster.url + path, data=body, method="POST", headers={"Content-Type": CONTENT_TYPE}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_malformed_protobuf_is_a_400(devcluster: DevClusterThread, namespace: str) -> None:
    code, text = _post(
        devcluster, f"/api/v1/namespaces/{namespace}/configmaps", MAGIC + b"\x0a\xff"
    )
    assert code == 400 and '"reason":"BadRequest"' in text and "not valid protobuf" in text


def test_protobuf_of_an_unknown_kind_is_a_415(devcluster: DevClusterThread, namespace: str) -> None:
    type_meta = b"\x0a\x02v1" + b"\x12\x0eServiceAccount"
    body = MAGIC + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12\x00"
    code, text = _post(devcluster, f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert code == 415 and '"reason":"UnsupportedMediaType"' in text
