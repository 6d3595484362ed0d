"""Index values of objects: a table of named cases."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.cache.indexers import index_values, object_key
from rollout_workers.kube import resources as r


def meta(name: str, ns: str | None = "prod", **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, **extra}
    if ns:
        m["namespace"] = ns
    return m


OWNED_RS = {
    "metadata": meta(
        "web-abc",
        ownerReferences=[
            {"kind": "Rollout", "name": "web", "uid": "u-1", "controller": True},
            {"kind": "Other", "name": "x", "uid": "u-2"},
        ],
    )
}
CANARY = {
    "metadata": meta("web"),
    "spec": {
        "strategy": {
            "canary": {
                "stableService": "web-stable",
                "canaryService": "web-canary",
                "trafficRouting": {
                    "nginx": {"stableIngress": "web-ing", "stableIngresses": ["alt"]}
                },
                "analysis": {"templates": [{"templateName": "success-rate"}]},
                "steps": [
                    {"setWeight": 20},
                    {"analysis": {"templates": [{"templateName": "g", "clusterScope": True}]}},
                    {"experiment": {"analyses": [{"name": "a", "templateName": "success-rate"}]}},
                ],
            }
        }
    },
}
BLUEGREEN = {
    "metadata": meta("bg"),
    "spec": {
        "strategy": {
            "blueGreen": {
                "activeService": "bg-active",
                "previewService": "bg-preview",
                "prePromotionAnalysis": {"templates": [{"templateName": "smoke"}]},
                "postPromotionAnalysis": {"templates": [{"templateName": "load"}]},
            }
        }
    },
}

CASES = {
    "owned replicaset": (r.REPLICASETS, OWNED_RS, [("ns", "prod"), ("owner", "u-1")]),
    "cluster-scoped template": (r.CLUSTERANALYSISTEMPLATES, {"metadata": meta("g", None)}, []),
    "canary references": (
        r.ROLLOUTS,
        CANARY,
        [
            ("ns", "prod"),
            ("svc", "prod/web-stable"),
            ("svc", "prod/web-canary"),
            ("ing", "prod/web-ing"),
            ("ing", "prod/alt"),
            ("tpl", "prod/success-rate"),
            ("ctpl", "g"),
        ],
    ),
    "blue-green references": (
        r.ROLLOUTS,
        BLUEGREEN,
        [
            ("ns", "prod"),
            ("svc", "prod/bg-active"),
            ("svc", "prod/bg-preview"),
            ("tpl", "prod/smoke"),
            ("tpl", "prod/load"),
        ],
    ),
    "experiment templates": (
        r.EXPERIMENTS,
        {"metadata": meta("e"), "spec": {"analyses": [{"templateName": "t"}]}},
        [("ns", "prod"), ("tpl", "prod/t")],
    ),
    "workload reference": (
        r.ROLLOUTS,
        {
            "metadata": meta("w"),
            "spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}},
        },
        [("ns", "prod"), ("wl", "prod/Deployment.apps/d"), ("wlkind", "Deployment.apps")],
    ),
    "pod template reference (core group)": (
        r.ROLLOUTS,
        {
            "metadata": meta("w"),
            "spec": {"workloadRef": {"apiVersion": "v1", "kind": "PodTemplate", "name": "t"}},
        },
        [("ns", "prod"), ("wl", "prod/PodTemplate/t"), ("wlkind", "PodTemplate")],
    ),
    "garbage spec is ignored": (
        r.ROLLOUTS,
        {"metadata": meta("w"), "spec": {"strategy": {"canary": {"steps": "nonsense"}}}},
        [("ns", "prod")],
    ),
}


@pytest.mark.parametrize(("resource", "obj", "expected"), CASES.values(), ids=CASES.keys())
def test_index_values(resource: r.Resource, obj: dict[str, Any], expected: list[Any]) -> None:
    assert index_values(resource, obj) == expected


def test_object_key() -> None:
    assert object_key({"metadata": meta("a")}) == "prod/a"
    assert object_key({"metadata": meta("a", None)}) == "a"


def test_watch_selectors_follow_argo() -> None:
    assert r.watch_selector(r.ROLLOUTS, "") == f"!{r.INSTANCE_ID_LABEL}"
    assert r.watch_selector(r.CLUSTERANALYSISTEMPLATES, "a") == f"{r.INSTANCE_ID_LABEL}=a"
    assert r.watch_selector(r.REPLICASETS, "a") == "rollouts-pod-template-hash"
    assert r.watch_selector(r.JOBS, "") == "analysisrun.argoproj.io/uid"
    assert r.watch_selector(r.SERVICES, "a") is None
    # a referenced ReplicaSet without the label: the complement, in a cache of its own
    assert r.watch_selector(r.UNHASHED_REPLICASETS, "a") == "!rollouts-pod-template-hash"
    assert r.UNHASHED_REPLICASETS.cache_name != r.REPLICASETS.cache_name
    assert r.watch_selector(r.DEPLOYMENTS, "a") is None


ROUTED = {
    "smi: the TrafficSplit, by default the rollout's name": (
        {"smi": {"rootService": "root"}},
        [
            ("ns", "prod"),
            ("svc", "prod/root"),
            ("router", "TrafficSplit/prod/w"),
            ("routerkind", "TrafficSplit"),
        ],
    ),
    "istio: virtual services (one in another namespace) and the destination rule": (
        {
            "istio": {
                "virtualServices": [{"name": "vs1"}, {"name": "vs2.mesh"}],
                "destinationRule": {"name": "dr", "canarySubsetName": "c"},
            }
        },
        [
            ("ns", "prod"),
            ("router", "DestinationRule/prod/dr"),
            ("router", "VirtualService/mesh/vs2"),
            ("router", "VirtualService/prod/vs1"),
            ("routerkind", "DestinationRule"),
            ("routerkind", "VirtualService"),
        ],
    ),
    "gateway api plugin: routes in the config's namespace": (
        {
            "plugins": {
                "argoproj-labs/gatewayAPI": {
                    "namespace": "gw",
                    "httpRoutes": [{"name": "h1"}, {"name": "h2"}],
                    "grpcRoute": "g",
                }
            }
        },
        [
            ("ns", "prod"),
            ("router", "GRPCRoute/gw/g"),
            ("router", "HTTPRoute/gw/h1"),
            ("router", "HTTPRoute/gw/h2"),
            ("routerkind", "GRPCRoute"),
            ("routerkind", "HTTPRoute"),
        ],
    ),
    "traefik: the weighted TraefikService": (
        {"traefik": {"weightedTraefikServiceName": "ts"}},
        [
            ("ns", "prod"),
            ("router", "TraefikService/prod/ts"),
            ("routerkind", "TraefikService"),
        ],
    ),
    "ambassador: each Mapping and its canary copy": (
        {"ambassador": {"mappings": ["m1", "m2"]}},
        [
            ("ns", "prod"),
            ("router", "Mapping/prod/m1"),
            ("router", "Mapping/prod/m1-canary"),
            ("router", "Mapping/prod/m2"),
            ("router", "Mapping/prod/m2-canary"),
            ("routerkind", "Mapping"),
        ],
    ),
    "app mesh: the VirtualService, the VirtualNodes, and the VirtualRouter kind": (
        {
            "appMesh": {
                "virtualService": {"name": "vs"},
                "virtualNodeGroup": {
                    "canaryVirtualNodeRef": {"name": "vn-canary"},
                    "stableVirtualNodeRef": {"name": "vn-stable"},
                },
            }
        },
        [
            ("ns", "prod"),
            ("router", "VirtualNode/prod/vn-canary"),
            ("router", "VirtualNode/prod/vn-stable"),
            ("router", "VirtualService.appmesh.k8s.aws/prod/vs"),
            ("routerkind", "VirtualNode"),
            ("routerkind", "VirtualService.appmesh.k8s.aws"),
            ("routerkind", "VirtualRouter"),
        ],
    ),
    "nginx: Ingresses are their own index, no router object": (
        {"nginx": {"stableIngress": "ing"}},
        [("ns", "prod"), ("ing", "prod/ing")],
    ),
    "alb: its Ingresses too (ingress, ingresses)": (
        {"alb": {"ingress": "ing", "ingresses": ["a", "b"], "servicePort": 80}},
        [("ns", "prod"), ("ing", "prod/ing"), ("ing", "prod/a"), ("ing", "prod/b")],
    ),
}


@pytest.mark.parametrize(("routing", "expected"), ROUTED.values(), ids=ROUTED.keys())
def test_rollouts_are_indexed_by_the_router_objects_they_name(
    routing: dict[str, Any], expected: list[Any]
) -> None:
    obj = {
        "metadata": meta("w"),
        "spec": {"strategy": {"canary": {"trafficRouting": routing}}},
    }
    assert index_values(r.ROLLOUTS, obj) == expected
    # only rollouts are indexed by their routers
    assert index_values(r.EXPERIMENTS, obj) == [("ns", "prod")]


def test_router_kinds_are_cached_per_version() -> None:
    """A kind is listed at one version into a cache of that version's own name, so a worker
    never reads objects of one version as another's (cache/routerobjects.py)."""
    every = [v for versions in r.ROUTER_OBJECTS.values() for v in versions]
    names = [v.cache_name for v in every]
    assert len(set(names)) == len(names)  # across kinds too: App Mesh's and Istio's
    # VirtualServices, Traefik's two groups
    first_group = {}
    for v in every:
        first_group.setdefault(v.plural, v.group)
    for kind, versions in r.ROUTER_OBJECTS.items():
        # A plural's first group by version alone; another group by both.
        assert all(
            v.cache_name
            == (
                f"{v.plural}-{v.version}"
                if v.group == first_group[v.plural]
                else f"{v.plural}.{v.group}-{v.version}"
            )
            for v in versions
        )
        assert all(r.watch_selector(v, "a") is None for v in versions)  # all, as Argo's
        assert all(r.router_kind(v) == kind for v in versions)


def test_router_kind_of_an_object() -> None:
    assert r.router_kind_of({"apiVersion": "networking.istio.io/v1", "kind": "VirtualService"}) == (
        "VirtualService"
    )
    appmesh = {"apiVersion": "appmesh.k8s.aws/v1beta2", "kind": "VirtualService"}
    assert r.router_kind_of(appmesh) == r.APPMESH_VIRTUAL_SERVICE
    preview = {"apiVersion": "x.getambassador.io/v3alpha1", "kind": "AmbassadorMapping"}
    assert r.router_kind_of(preview) == "Mapping"
    assert r.router_kind_of({"apiVersion": "v1", "kind": "Service"}) is None
