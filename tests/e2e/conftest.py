"""End-to-end fixtures: the embedded API in-process, and the real processes around it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.api.crdgen import calculate_crds
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.settings import Settings
from tests.support.procs import Proc, Processes
from tests.support.routercrds import install_router_crds


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.5)
    yield handle
    handle.stop()


CRDS = r.Resource(
    "customresourcedefinitions", "apiextensions.k8s.io", "v1", "CustomResourceDefinition", False
)

#: The two CRD shapes a cluster may hold: Argo Rollouts' own (and ours since they match it),
#: with a status subresource on Rollout only, and one with a status subresource on every type
#: (our CRDs of earlier releases). The controller learns from discovery which one it faces.
CRD_SHAPES = ("argo", "status-everywhere")


def crds_of_shape(shape: str) -> list[dict[str, Any]]:
    crds = calculate_crds()
    if shape == "status-everywhere":
        for crd in crds:
            for version in crd["spec"]["versions"]:
                version.setdefault("subresources", {})["status"] = {}
    return crds


def install_crds(kube: Kube, shape: str, timeout: float = 10.0) -> None:
    """Create the argoproj.io CRDs through the API, as `kubectl apply` would, and wait until
    discovery serves them."""
    crds = crds_of_shape(shape)
    for crd in crds:
        kube.create(CRDS, None, crd)
    plurals = {crd["spec"]["names"]["plural"] for crd in crds}
    deadline = time.monotonic() + timeout
    while True:
        served = {
            res["name"] for res in kube.json("GET", "/apis/argoproj.io/v1alpha1")["resources"]
        }
        if plurals <= served:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"CRDs not served: {sorted(plurals - served)}")
        time.sleep(0.05)


@pytest.fixture(params=CRD_SHAPES)
def shaped_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DevClusterThread]:
    """An embedded API that starts without CRDs; the test's CRD shape is then installed
    through the API."""
    handle = run_in_thread(ready_delay=0.5, install_crds=False)
    settings = Settings(kubeconfig=handle.write_kubeconfig(tmp_path / "admin.kubeconfig"))
    kube = Kube(api_client(settings), settings.kube)
    install_crds(kube, request.param)
    install_router_crds(kube)
    yield handle
    handle.stop()


def start_system(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path, workers: int
) -> tuple[Kube, Path, list[Proc]]:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    procs.env["ROLLOUTS_KUBECONFIG"] = str(kubeconfig)
    procs.env.pop("ROLLOUTS_RECONCILE_HANDLERS", None)  # the real rollout controller
    procs.spawn("watcher", "watcher").wait_log(r"leads; starting", timeout=30)
    procs.beat()
    hosts = [procs.worker(f"host-{i}", concurrency=2) for i in range(workers)]
    settings = Settings(kubeconfig=kubeconfig)
    return Kube(api_client(settings), settings.kube), kubeconfig, hosts
