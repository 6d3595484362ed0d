"""The routers' CRDs (tests/support/routercrds.py) install through the embedded API, and the
controller reads their objects at the newest version served."""

from __future__ import annotations

from pathlib import Path

from devcluster.server import run_in_thread
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.routerobjects import ApiRouterObjects
from rollout_workers.settings import Settings
from tests.support.routercrds import ROUTER_CRDS, install_router_crds, router_crd


def test_router_objects_are_read_at_the_newest_served_version(tmp_path: Path) -> None:
    with run_in_thread(ready_delay=0.1) as cluster:
        settings = Settings(kubeconfig=cluster.write_kubeconfig(tmp_path / "kc"))
        kube = Kube(api_client(settings), settings.kube)
        reader = ApiRouterObjects(kube)
        assert reader.served("VirtualService") is None
        install_router_crds(kube, ROUTER_CRDS["VirtualService"], router_crd(r.TRAFFICSPLITS[1:]))
        vs = reader.served("VirtualService")
        assert vs is not None and vs.version == "v1"
        split = reader.served("TrafficSplit")
        assert split is not None and split.version == "v1alpha2"
        body = {
            "apiVersion": vs.api_version,
            "kind": "VirtualService",
            "metadata": {"name": "vs"},
            "spec": {"http": [{"name": "primary", "route": []}]},
        }
        kube.create(vs, "default", body)
        got = reader.get(vs, "default", "vs")
        assert got is not None and got["spec"] == body["spec"]
        assert reader.get(vs, "default", "missing") is None


def test_app_mesh_and_istio_virtual_services_are_apart(tmp_path: Path) -> None:
    """Two routers' kinds named VirtualService, in their groups; Ambassador's Mapping written at
    v2 (Argo's default) is read at v3alpha1, the newest served."""
    with run_in_thread(ready_delay=0.1) as cluster:
        settings = Settings(kubeconfig=cluster.write_kubeconfig(tmp_path / "kc"))
        kube = Kube(api_client(settings), settings.kube)
        reader = ApiRouterObjects(kube)
        install_router_crds(kube)
        istio, mesh = reader.served("VirtualService"), reader.served(r.APPMESH_VIRTUAL_SERVICE)
        assert istio == r.VIRTUALSERVICES[0] and mesh == r.APPMESH_VIRTUALSERVICES[0]
        for resource, spec in ((istio, {"hosts": ["a"]}), (mesh, {"awsName": "b"})):
            body = {"apiVersion": resource.api_version, "kind": "VirtualService"}
            kube.create(resource, "default", {**body, "metadata": {"name": "vs"}, "spec": spec})
        got = {res.group: reader.get(res, "default", "vs") for res in (istio, mesh)}
        assert {group: obj["spec"] for group, obj in got.items() if obj} == {
            "networking.istio.io": {"hosts": ["a"]},
            "appmesh.k8s.aws": {"awsName": "b"},
        }
        mapping = reader.served("Mapping")
        assert mapping == r.MAPPINGS[0] and mapping.version == "v3alpha1"
        v2 = r.MAPPINGS[1]
        kube.create(v2, "default", {
            "apiVersion": v2.api_version, "kind": "Mapping", "metadata": {"name": "m"},
            "spec": {"prefix": "/", "service": "web-stable:80"},
        })  # fmt: skip
        read = reader.get(mapping, "default", "m")
        assert read is not None and read["apiVersion"] == "getambassador.io/v3alpha1"
        assert read["spec"] == {"prefix": "/", "service": "web-stable:80"}
        assert reader.served("VirtualRouter") == r.APPMESH_VIRTUALROUTERS[0]
        assert reader.served("VirtualNode") == r.APPMESH_VIRTUALNODES[0]
