"""Event keys: which keys each kind of change wakes."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.cache import Change
from rollout_workers.kube import resources as r
from rollout_workers.watcher.eventkeys import own_tenant, woken_keys

REFS = {
    ("rollouts", "svc", "prod/web-stable"): ["prod/web", "prod/web2"],
    ("rollouts", "tpl", "prod/rate"): ["prod/web"],
    ("experiments", "tpl", "prod/rate"): ["prod/exp"],
    ("rollouts", "ctpl", "global"): ["a/x", "b/y"],
    ("rollouts", "ing", "prod/web-ing"): ["prod/web"],
    ("rollouts", "wl", "prod/Deployment.apps/web"): ["prod/web"],
    ("rollouts", "wl", "prod/ReplicaSet.apps/plain"): ["prod/old"],
    ("rollouts", "wl", "prod/PodTemplate/tpl"): ["prod/t"],
}


def lookup(plural: str, index: str, value: str) -> list[str]:
    return REFS.get((plural, index, value), [])


def owned(kind: str, name: str, controller: bool = True) -> list[dict[str, Any]]:
    return [{"kind": kind, "name": name, "uid": "u", "controller": controller}]


def change(name: str, ns: str | None = "prod", owners: list[Any] | None = None) -> Change:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    if owners:
        meta["ownerReferences"] = owners
    return Change("MODIFIED", f"{ns}/{name}" if ns else name, {"metadata": meta}, None)


CASES = {
    "rollout to itself": (r.ROLLOUTS, change("web"), {"rollouts": {"prod/web"}}),
    "rs to its owner": (
        r.REPLICASETS,
        change("web-1", owners=owned("Rollout", "web")),
        {"rollouts": {"prod/web"}},
    ),
    "rs without controller owner": (
        r.REPLICASETS,
        change("x", owners=owned("Rollout", "web", controller=False)),
        {},
    ),
    "rs owned by a deployment": (
        r.REPLICASETS,
        change("x", owners=owned("Deployment", "web")),
        {},
    ),
    "analysis run of a rollout": (
        r.ANALYSISRUNS,
        change("run", owners=owned("Rollout", "web")),
        {"analysisruns": {"prod/run"}, "rollouts": {"prod/web"}},
    ),
    "analysis run of an experiment": (
        r.ANALYSISRUNS,
        change("run", owners=owned("Experiment", "exp")),
        {"analysisruns": {"prod/run"}, "experiments": {"prod/exp"}},
    ),
    "experiment of a rollout": (
        r.EXPERIMENTS,
        change("exp", owners=owned("Rollout", "web")),
        {"experiments": {"prod/exp"}, "rollouts": {"prod/web"}},
    ),
    "job of a run": (
        r.JOBS,
        change("job", owners=owned("AnalysisRun", "run")),
        {"analysisruns": {"prod/run"}},
    ),
    "service to referencing rollouts": (
        r.SERVICES,
        change("web-stable"),
        {"rollouts": {"prod/web", "prod/web2"}},
    ),
    "unreferenced service": (r.SERVICES, change("other"), {}),
    "template to rollouts and experiments": (
        r.ANALYSISTEMPLATES,
        change("rate"),
        {"rollouts": {"prod/web"}, "experiments": {"prod/exp"}},
    ),
    "cluster template": (
        r.CLUSTERANALYSISTEMPLATES,
        change("global", ns=None),
        {"rollouts": {"a/x", "b/y"}},
    ),
    "ingress": (r.INGRESSES, change("web-ing"), {"rollouts": {"prod/web"}}),
    "canary ingress to the rollout that owns it": (
        r.INGRESSES,
        change(
            "web-web-ing-canary",
            owners=[{"kind": "Rollout", "name": "web", "uid": "u", "controller": True}],
        ),
        {"rollouts": {"prod/web"}},
    ),
    "referenced deployment": (r.DEPLOYMENTS, change("web"), {"rollouts": {"prod/web"}}),
    "unreferenced deployment": (r.DEPLOYMENTS, change("other"), {}),
    "referenced replicaset without the hash label": (
        r.UNHASHED_REPLICASETS,
        change("plain"),
        {"rollouts": {"prod/old"}},
    ),
    "referenced pod template": (r.PODTEMPLATES, change("tpl"), {"rollouts": {"prod/t"}}),
}


@pytest.mark.parametrize(("resource", "chg", "expected"), CASES.values(), ids=CASES.keys())
def test_woken_keys(resource: r.Resource, chg: Change, expected: dict[str, set[str]]) -> None:
    before = repr(chg.obj)
    assert woken_keys(resource, chg, lookup) == expected
    assert repr(chg.obj) == before  # handlers never modify what they are given


@pytest.mark.parametrize(
    ("resource", "owners", "expected"),
    [
        (r.ROLLOUTS, None, {}),
        (r.ANALYSISRUNS, owned("Rollout", "web"), {"rollouts": {"prod/web"}}),
        (r.EXPERIMENTS, owned("Rollout", "web"), {"rollouts": {"prod/web"}}),
        (r.REPLICASETS, owned("Rollout", "web"), {"rollouts": {"prod/web"}}),
    ],
)
def test_an_own_write_wakes_the_owner_but_not_the_object(
    resource: r.Resource, owners: list[Any] | None, expected: dict[str, set[str]]
) -> None:
    base = change("x", owners=owners)
    own = Change(base.type, base.key, base.obj, base.previous_rv, own_write=True)
    assert woken_keys(resource, own, lookup) == expected


def test_an_older_change_wakes_nothing() -> None:
    base = change("web")
    older = Change(base.type, base.key, base.obj, base.previous_rv, older=True)
    assert woken_keys(r.ROLLOUTS, older, lookup) == {}


def _labelled(resource: r.Resource, labels: dict[str, str], kind: str = "MODIFIED") -> Change:
    meta = {"name": "web", "namespace": "prod", "labels": labels}
    return Change(kind, "prod/web", {"metadata": meta}, None)


@pytest.mark.parametrize(
    ("name", "resource", "labels", "kind", "expected"),
    [
        (
            "the label names the tenant",
            r.ROLLOUTS,
            {"team": "blue"},
            "MODIFIED",
            ("rollouts", "blue"),
        ),
        ("no label: the namespace", r.ROLLOUTS, {}, "ADDED", ("rollouts", "prod")),
        (
            "an analysis run's own",
            r.ANALYSISRUNS,
            {"team": "red"},
            "MODIFIED",
            ("analysisruns", "red"),
        ),
        ("a deleted object is not recorded", r.ROLLOUTS, {"team": "blue"}, "DELETED", None),
        ("a type no kind reconciles", r.REPLICASETS, {"team": "blue"}, "MODIFIED", None),
    ],
)
def test_own_tenant(
    name: str,
    resource: r.Resource,
    labels: dict[str, str],
    kind: str,
    expected: tuple[str, str] | None,
) -> None:
    assert own_tenant(resource, _labelled(resource, labels, kind), "team") == expected, name


ROUTER_REFS = {
    ("rollouts", "router", "VirtualService/prod/vs"): ["prod/web", "prod/web2"],
    ("rollouts", "router", "VirtualService/mesh/shared"): ["prod/web"],
    ("rollouts", "router", "TrafficSplit/prod/split"): ["prod/other"],
    ("rollouts", "router", "Mapping/prod/m-canary"): ["prod/amb"],
    ("rollouts", "router", "VirtualService.appmesh.k8s.aws/prod/vs"): ["prod/mesh"],
    ("rollouts", "router", "VirtualNode/prod/vn-canary"): ["prod/mesh"],
    ("rollouts", "router", "VirtualNode/prod/vn-stable"): ["prod/mesh", "prod/mesh2"],
    ("rollouts", "router", "VirtualNode/other/vn-canary"): ["other/elsewhere"],
}


def virtual_router(*nodes: dict[str, Any]) -> Change:
    """A VirtualRouter change whose one route targets these VirtualNode references."""
    chg = change("vr")
    targets = [{"virtualNodeRef": node, "weight": 50} for node in nodes]
    chg.obj["spec"] = {
        "routes": [{"name": "primary", "httpRoute": {"action": {"weightedTargets": targets}}}]
    }
    return chg


def router_lookup(plural: str, index: str, value: str) -> list[str]:
    return ROUTER_REFS.get((plural, index, value), [])


ROUTER_CASES = {
    "a virtual service wakes the rollouts naming it": (
        r.VIRTUALSERVICES[0],
        change("vs"),
        {"rollouts": {"prod/web", "prod/web2"}},
    ),
    "at any version the kind is listed at": (
        r.VIRTUALSERVICES[2],
        change("vs"),
        {"rollouts": {"prod/web", "prod/web2"}},
    ),
    "one in another namespace": (
        r.VIRTUALSERVICES[0],
        change("shared", ns="mesh"),
        {"rollouts": {"prod/web"}},
    ),
    "a destination rule of the same name is another object": (
        r.DESTINATIONRULES[0],
        change("vs"),
        {},
    ),
    "a traffic split wakes its controlling rollout and the ones naming it": (
        r.TRAFFICSPLITS[0],
        change("split", owners=owned("Rollout", "web")),
        {"rollouts": {"prod/web", "prod/other"}},
    ),
    "an ambassador canary mapping wakes the rollout it is the canary copy for": (
        r.MAPPINGS[0],
        change("m-canary"),
        {"rollouts": {"prod/amb"}},
    ),
    "at the older x.getambassador.io kind too": (
        r.MAPPINGS[2],
        change("m-canary"),
        {"rollouts": {"prod/amb"}},
    ),
    "an app mesh virtual service is not istio's": (
        r.APPMESH_VIRTUALSERVICES[0],
        change("vs"),
        {"rollouts": {"prod/mesh"}},
    ),
    "an app mesh virtual router wakes the rollouts naming the virtual nodes it targets": (
        r.APPMESH_VIRTUALROUTERS[0],
        virtual_router({"name": "vn-canary"}, {"name": "vn-stable"}),
        {"rollouts": {"prod/mesh", "prod/mesh2"}},
    ),
    "a target's namespace is its own, by default the virtual router's": (
        r.APPMESH_VIRTUALROUTERS[0],
        virtual_router({"name": "vn-canary", "namespace": "other"}),
        {"rollouts": {"other/elsewhere"}},
    ),
    "an unnamed, unowned route wakes nothing": (r.HTTPROUTES[0], change("h"), {}),
    "a route owned by something else": (
        r.HTTPROUTES[0],
        change("h", owners=owned("Gateway", "gw")),
        {},
    ),
}


@pytest.mark.parametrize(
    ("resource", "chg", "expected"), ROUTER_CASES.values(), ids=ROUTER_CASES.keys()
)
def test_a_router_object_wakes_its_rollouts(
    resource: r.Resource, chg: Change, expected: dict[str, set[str]]
) -> None:
    assert woken_keys(resource, chg, router_lookup) == expected
