"""The RBAC follows the traffic-router kinds (kube/resources.py ROUTER_OBJECTS): the watcher may
list and watch every one (its reflector starts on demand), and the worker may read one from the
API before the watcher has listed its kind and write the ones its routers change."""

from __future__ import annotations

from collections import defaultdict

import pytest

from rollout_workers.kube import resources as r
from tests.unit.deploy.render import Obj, overlays, rendered

#: What the worker's routers do to each router kind, beyond the `get` of an unlisted kind.
WORKER_WRITES = {
    "TrafficSplit": {"create", "patch"},  # the rollout's own TrafficSplit
    "VirtualService": {"patch"},  # the user's: changed in place, never created
    "DestinationRule": {"patch"},
    "HTTPRoute": {"patch"},
    "GRPCRoute": {"patch"},
    "TCPRoute": {"patch"},
    "TLSRoute": {"patch"},
    "TraefikService": {"patch"},  # the user's: its weights changed in place
    "ApisixRoute": {"create", "patch", "delete"},  # the user's, and the header routes' own
    "Mapping": {"create", "patch", "delete"},  # the canary copies only
    "VirtualService.appmesh.k8s.aws": set(),  # read for its VirtualRouter
    "VirtualRouter": {"patch"},  # its routes' weights
    "VirtualNode": {"patch"},  # its pod selector's hash
}


def granted(objs: tuple[Obj, ...]) -> dict[str, set[tuple[str, str, str]]]:
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"].endswith("Role")}
    out: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for b in (o for o in objs if o["kind"].endswith("RoleBinding")):
        for rule in roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]["rules"]:
            for subject in b["subjects"]:
                out[subject["name"]].update(
                    (g, res, verb)
                    for g in rule["apiGroups"]
                    for res in rule["resources"]
                    for verb in rule["verbs"]
                )
    return out


def test_every_router_kind_has_its_worker_writes() -> None:
    assert set(WORKER_WRITES) == set(r.ROUTER_OBJECTS)


@pytest.mark.parametrize("overlay", [o for o in overlays() if o != "crds"])
def test_router_objects_are_granted(overlay: str) -> None:
    rules = granted(rendered(overlay))
    for kind, versions in r.ROUTER_OBJECTS.items():
        # every group the kind is served in (Traefik's two)
        for group, plural in {(v.group, v.plural) for v in versions}:
            watcher = {verb for g, res, verb in rules["watcher"] if (g, res) == (group, plural)}
            assert watcher == {"list", "watch"}, (kind, group)  # never a GET or a write
            worker = {verb for g, res, verb in rules["worker"] if (g, res) == (group, plural)}
            assert worker == {"get"} | WORKER_WRITES[kind], (kind, group)


@pytest.mark.parametrize("overlay", [o for o in overlays() if o != "crds"])
def test_target_group_verification_is_granted_to_the_worker_only(overlay: str) -> None:
    """AWS target group verification reads TargetGroupBindings and Endpoints from the API (the
    worker, when a verification runs); the watcher never lists them."""
    rules = granted(rendered(overlay))
    for group, plural, verbs in (
        (r.TARGETGROUPBINDINGS.group, "targetgroupbindings", {"list"}),
        ("", "endpoints", {"get"}),
    ):
        worker = {verb for g, res, verb in rules["worker"] if (g, res) == (group, plural)}
        assert worker == verbs, plural
        assert not {verb for g, res, verb in rules["watcher"] if (g, res) == (group, plural)}
