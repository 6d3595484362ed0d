"""A router CRD removed and installed again, the whole system through the CLI: the rollout
routing through it gets InvalidSpec while the kind is not served, and comes back Healthy
(and promotes through the router again) once it is, with no restart of any process.

Alone in its cluster: removing a CRD would pull the kind from under other scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import NotFound
from tests.e2e import routers
from tests.e2e import test_rollouts as e2e
from tests.e2e.conftest import start_system
from tests.support.metrics import MetricsServer
from tests.support.procs import Processes
from tests.support.routercrds import CRDS, ROUTER_CRDS, install_router_crds

NS = "crd"


def invalid_spec(obj: e2e.Obj) -> str:
    for c in e2e.status(obj).get("conditions") or []:
        if c.get("type") == "InvalidSpec" and c.get("status") == "True":
            return str(c.get("message", ""))
    return ""


@pytest.mark.slow
def test_a_removed_router_crd_makes_its_rollouts_invalid_until_installed_again(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path, rdb: redis.Redis
) -> None:
    kube, kubeconfig, _ = start_system(procs, cluster, tmp_path, workers=1)
    crd = ROUTER_CRDS["VirtualService"]
    install_router_crds(kube, crd)
    manifests.ensure_namespace(kube, NS)
    metrics = MetricsServer().start()
    try:
        w = e2e.World(kube, kubeconfig, NS, metrics)
        name = "vsr"
        steps = [{"setWeight": 30}, {"pause": {}}]
        routers.routed_canary(w, routers.ISTIO, name, steps)
        w.wait(name, lambda o: e2e.promoted(o) and routers.istio_weight(w, name) == 0, "healthy")

        kube.delete(CRDS, None, crd["metadata"]["name"])
        # Argo's message: its VirtualService lookup gets NotFound from an unserved kind too.
        gone = w.wait(name, lambda o: bool(invalid_spec(o)), "InvalidSpec once the CRD is gone")
        assert invalid_spec(gone).endswith(
            'virtualservices.networking.istio.io "vsr-vs" not found'
        ), invalid_spec(gone)
        with pytest.raises(NotFound):
            kube.get(r.VIRTUALSERVICES[0], NS, f"{name}-vs")

        install_router_crds(kube, crd)
        w.apply(*routers.istio_objects(name, NS))
        w.wait(name, lambda o: not invalid_spec(o) and e2e.phase(o) == "Healthy", "valid again")
        w.cli("set", "image", name, "app=demo:2")
        w.wait(
            name,
            lambda o: e2e.phase(o) == "Paused" and routers.istio_weight(w, name) == 30,
            "paused at weight 30 on the VirtualService",
        )
    finally:
        metrics.stop()
