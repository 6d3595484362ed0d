"""The Istio router, after argo-rollouts' rollout/trafficrouting/istio/istio_test.go: host- and
subset-level weights in one or several VirtualServices (http, tls and tcp routes), additional
destinations, the DestinationRule's hashes, header and mirror routes in managedRoutes order,
their removal, the errors, the put-back of a change made by someone else, and the reference
checks validation makes of the VirtualServices."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.api.rollout import (
    Rollout,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import validation as v
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, istio
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.rollout.validation.references import ReferencedResources
from rollout_workers.routerrefs import RouterRef
from tests.unit.rollout.onesync import NS, T0
from tests.unit.rollout.test_controller import rollout

Obj = dict[str, Any]
VS = r.VIRTUALSERVICES[0]
DR = r.DESTINATIONRULES[0]
RESOURCES = {"VirtualService": VS, "DestinationRule": DR}
HASH_LABEL = "rollouts-pod-template-hash"


def istio_rollout(
    routing: Obj | None = None,
    *,
    managed: list[str] | None = None,
    canary_service: str | None = "canary",
    stable_service: str | None = "stable",
) -> Obj:
    traffic: Obj = {"istio": routing or {"virtualService": {"name": "vsvc", "routes": ["primary"]}}}
    if managed is not None:
        traffic["managedRoutes"] = [{"name": n} for n in managed]
    canary: Obj = {"trafficRouting": traffic, "steps": [{"setWeight": 10}, {"pause": {}}]}
    if canary_service is not None:
        canary["canaryService"] = canary_service
    if stable_service is not None:
        canary["stableService"] = stable_service
    return rollout(replicas=10, strategy={"canary": canary})


def dest(host: str, weight: int, *, subset: str = "", port: int = 0) -> Obj:
    destination: Obj = {"host": host}
    if subset:
        destination["subset"] = subset
    if port:
        destination["port"] = {"number": port}
    return {"destination": destination, "weight": weight}


def http_route(name: str, *destinations: Obj) -> Obj:
    route: Obj = {"route": list(destinations)}
    if name:
        route["name"] = name
    return route


def virtual_service(name: str = "vsvc", *, namespace: str = NS, **spec: Any) -> Obj:
    return {
        "apiVersion": VS.api_version,
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"},
        "spec": {"hosts": ["istio-rollout"], "gateways": ["istio-rollout-gateway"], **spec},
    }


def base_vs(**extra: Any) -> Obj:
    """Argo's regularVsvc: a primary route (stable 100, canary 0) and a secondary one."""
    return virtual_service(
        http=[
            http_route("primary", dest("stable", 100), dest("canary", 0)),
            http_route("secondary", dest("stable", 100), dest("canary", 0)),
        ],
        **extra,
    )


def destination_rule(*subsets: Obj, host: str = "root") -> Obj:
    return {
        "apiVersion": DR.api_version,
        "kind": "DestinationRule",
        "metadata": {"name": "istio-destrule", "namespace": NS, "resourceVersion": "3"},
        "spec": {"host": host, "subsets": list(subsets)},
    }


def rs(pod_hash: str) -> Obj:
    return {"metadata": {"name": f"web-{pod_hash}", "labels": {HASH_LABEL: pod_hash}}}


def router_for(
    obj: Obj,
    *existing: Obj,
    served: tuple[str, ...] = ("VirtualService", "DestinationRule"),
    writer: RecordingWriter | None = None,
) -> tuple[istio.IstioRouter, RecordingWriter, RolloutContext]:
    writer = writer or RecordingWriter()
    objects = {}
    for item in existing:
        meta = item["metadata"]
        writer.seed(RESOURCES[item["kind"]], copy.deepcopy(item))
        objects[RouterRef(item["kind"], meta["namespace"], meta["name"])] = item
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(served={k: RESOURCES[k] for k in served}, objects=objects),
    )
    return istio.IstioRouter(ctx, ctx.canary.traffic_routing.istio), writer, ctx


def reread(obj: Obj, writer: RecordingWriter) -> tuple[istio.IstioRouter, RolloutContext]:
    """A fresh reconcile: the router objects as the API server holds them now."""
    objects = {
        RouterRef(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): copy.deepcopy(o)
        for (plural, _, _), o in writer.objects.items()
        if plural in ("virtualservices", "destinationrules")
    }
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(served=dict(RESOURCES), objects=objects),
    )
    return istio.IstioRouter(ctx, ctx.canary.traffic_routing.istio), ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def events(ctx: RolloutContext) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in ctx.events]


def stored_http(writer: RecordingWriter, name: str = "vsvc", namespace: str = NS) -> list[Obj]:
    http: list[Obj] = writer.objects[("virtualservices", namespace, name)]["spec"]["http"]
    return http


def weights(route: Obj) -> dict[str, int]:
    return {
        (d["destination"].get("subset") or d["destination"]["host"]): d["weight"]
        for d in route["route"]
    }


# -- host-level weights ----------------------------------------------------------------------


def test_set_weight_patches_the_named_route_fenced_by_its_resource_version() -> None:
    router, writer, ctx = router_for(istio_rollout(), base_vs())
    router.set_weight(10)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("patch", "virtualservices", "vsvc")
    assert action.body["metadata"] == {"resourceVersion": "7"}
    assert set(action.body["spec"]) == {"http"}  # only the changed list, sent whole
    primary, secondary = action.body["spec"]["http"]
    assert primary == http_route("primary", dest("stable", 90), dest("canary", 10))
    assert secondary == http_route("secondary", dest("stable", 100), dest("canary", 0))
    assert events(ctx) == [
        ("Updated VirtualService", "VirtualService `vsvc` set to desiredWeight '10'")
    ]
    # The written object replaces the one read.
    current = ctx.routed.get("VirtualService", NS, "vsvc")
    assert current is not None and weights(current["spec"]["http"][0]) == {
        "stable": 90,
        "canary": 10,
    }


def test_set_weight_at_the_current_weight_writes_nothing() -> None:
    vs = virtual_service(http=[http_route("primary", dest("stable", 90), dest("canary", 10))])
    router, writer, ctx = router_for(istio_rollout(), vs)
    router.set_weight(10)
    assert writes(writer) == [] and ctx.events == []


def test_several_named_routes_and_fully_qualified_hosts() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc", "routes": ["primary", "secondary"]}})
    vs = virtual_service(
        http=[
            http_route("primary", dest("stable.default.svc.cluster.local", 100), dest("canary", 0)),
            http_route("secondary", dest("stable", 100), dest("canary.default", 0)),
        ]
    )
    router, writer, _ = router_for(obj, vs)
    router.set_weight(30)
    primary, secondary = stored_http(writer)
    assert primary["route"][0] == dest("stable.default.svc.cluster.local", 70)
    assert weights(secondary) == {"stable": 70, "canary.default": 30}


def test_routes_omitted_uses_the_single_unnamed_route() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc"}})
    vs = virtual_service(http=[http_route("", dest("stable", 100), dest("canary", 0))])
    router, writer, _ = router_for(obj, vs)
    router.set_weight(40)
    assert weights(stored_http(writer)[0]) == {"stable": 60, "canary": 40}


def test_routes_omitted_with_several_routes_is_an_error() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc"}})
    router, writer, _ = router_for(obj, base_vs())
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == istio.HTTP_SINGLE_ROUTE
    assert "exactly one route when omitting" in str(err.value)
    assert writes(writer) == []


def test_multiple_virtual_services_one_in_another_namespace() -> None:
    obj = istio_rollout(
        {
            "virtualServices": [
                {"name": "vsvc", "routes": ["primary"]},
                {"name": "vsvc2.other", "routes": ["secondary"]},
            ]
        }
    )
    other = virtual_service(
        "vsvc2",
        namespace="other",
        http=[http_route("secondary", dest("stable", 100), dest("canary", 0))],
    )
    router, writer, ctx = router_for(obj, base_vs(), other)
    router.set_weight(20)
    assert [(a.namespace, a.name) for a in writes(writer)] == [(NS, "vsvc"), ("other", "vsvc2")]
    assert weights(stored_http(writer)[0]) == {"stable": 80, "canary": 20}
    assert weights(stored_http(writer, "vsvc2", "other")[0]) == {"stable": 80, "canary": 20}
    assert [m for _, m in events(ctx)] == [
        "VirtualService `vsvc` set to desiredWeight '20'",
        "VirtualService `vsvc2` set to desiredWeight '20'",
    ]


# -- tls and tcp routes ----------------------------------------------------------------------


def tls_route(port: int, sni: list[str], *destinations: Obj) -> Obj:
    return {"match": [{"port": port, "sniHosts": sni}], "route": list(destinations)}


def tcp_route(port: int, *destinations: Obj) -> Obj:
    return {"match": [{"port": port}], "route": list(destinations)}


def test_tls_routes_are_matched_by_port_and_sni_hosts() -> None:
    obj = istio_rollout(
        {"virtualService": {"name": "vsvc", "tlsRoutes": [{"port": 3000, "sniHosts": ["a", "b"]}]}}
    )
    vs = virtual_service(
        tls=[
            tls_route(3000, ["b", "a"], dest("stable", 100), dest("canary", 0)),
            tls_route(3001, ["a", "b"], dest("stable", 100), dest("canary", 0)),
            tls_route(3000, ["a"], dest("stable", 100), dest("canary", 0)),
        ]
    )
    router, writer, _ = router_for(obj, vs)
    router.set_weight(25)
    [action] = writes(writer)
    assert set(action.body["spec"]) == {"tls"}
    tls = writer.objects[("virtualservices", NS, "vsvc")]["spec"]["tls"]
    assert [weights(route)["canary"] for route in tls] == [25, 0, 0]


def test_tls_route_not_found() -> None:
    obj = istio_rollout(
        {"virtualService": {"name": "vsvc", "tlsRoutes": [{"port": 3000, "sniHosts": ["x"]}]}}
    )
    vs = virtual_service(tls=[tls_route(3000, ["a"], dest("stable", 100), dest("canary", 0))])
    router, _, _ = router_for(obj, vs)
    with pytest.raises(TrafficRoutingError, match="No matching TLS routes found"):
        router.set_weight(10)


def test_tls_routes_omitted_uses_the_single_route_beside_http() -> None:
    vs = base_vs(tls=[tls_route(3000, ["a"], dest("stable", 100), dest("canary", 0))])
    router, writer, _ = router_for(istio_rollout(), vs)
    router.set_weight(10)
    [action] = writes(writer)
    assert set(action.body["spec"]) == {"http", "tls"}
    assert weights(action.body["spec"]["tls"][0]) == {"stable": 90, "canary": 10}


def test_tcp_routes_are_matched_by_port() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc", "tcpRoutes": [{"port": 8080}]}})
    vs = virtual_service(
        tcp=[
            tcp_route(8080, dest("stable", 100), dest("canary", 0)),
            {"match": [{"port": 8080}, {"port": 9090}], "route": [dest("stable", 100)]},
            tcp_route(9090, dest("stable", 100), dest("canary", 0)),
        ]
    )
    router, writer, _ = router_for(obj, vs)
    router.set_weight(50)
    tcp = writer.objects[("virtualservices", NS, "vsvc")]["spec"]["tcp"]
    assert weights(tcp[0]) == {"stable": 50, "canary": 50}
    assert tcp[1:] == vs["spec"]["tcp"][1:]


def test_tcp_route_not_found() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc", "tcpRoutes": [{"port": 1}]}})
    vs = virtual_service(tcp=[tcp_route(8080, dest("stable", 100), dest("canary", 0))])
    router, _, _ = router_for(obj, vs)
    with pytest.raises(TrafficRoutingError, match="No matching TCP routes found"):
        router.set_weight(10)


# -- additional destinations -----------------------------------------------------------------


def test_additional_destinations_are_updated_appended_and_others_removed() -> None:
    vs = virtual_service(
        http=[
            http_route(
                "primary",
                dest("stable", 80),
                dest("canary", 10),
                dest("exp-a", 5),
                dest("stale-experiment", 5),
            )
        ]
    )
    router, writer, _ = router_for(istio_rollout(), vs)
    router.set_weight(
        10,
        [
            WeightDestination(weight=10, service_name="exp-a"),
            WeightDestination(weight=15, service_name="exp-b"),
        ],
    )
    assert stored_http(writer)[0]["route"] == [
        dest("stable", 65),
        dest("canary", 10),
        dest("exp-a", 10),
        dest("exp-b", 15),
    ]


# -- subset-level weights and the DestinationRule --------------------------------------------


def subset_rollout(**extra: Any) -> Obj:
    return istio_rollout(
        {
            "virtualService": {"name": "vsvc", "routes": ["primary"]},
            "destinationRule": {
                "name": "istio-destrule",
                "canarySubsetName": "canary",
                "stableSubsetName": "stable",
            },
        },
        canary_service=None,
        stable_service=None,
        **extra,
    )


def subset_vs(*others: Obj) -> Obj:
    return virtual_service(
        http=[
            http_route(
                "primary",
                dest("root", 100, subset="stable", port=8080),
                dest("root", 0, subset="canary", port=8080),
                *others,
            )
        ]
    )


def subset_rule() -> Obj:
    return destination_rule(
        {"name": "stable", "labels": {"app": "web"}, "trafficPolicy": {"tls": {"mode": "ISTIO"}}},
        {"name": "canary"},
        {"name": "unrelated", "labels": {"v": "1"}},
    )


def test_subset_level_points_the_rule_at_the_hashes_before_the_weights() -> None:
    vs = subset_vs(dest("elsewhere", 0))
    router, writer, ctx = router_for(subset_rollout(), vs, subset_rule())
    router.update_hash("abc123", "def456")
    router.set_weight(20)
    rule_patch, vs_patch = writes(writer)
    assert (rule_patch.resource, rule_patch.name) == ("destinationrules", "istio-destrule")
    assert rule_patch.body["metadata"] == {
        "annotations": {"argo-rollouts.argoproj.io/managed-by-rollouts": "web"},
        "resourceVersion": "3",
    }
    # Argo's UpdateHash keeps only the canary and stable subsets (and experiments').
    assert rule_patch.body["spec"] == {
        "subsets": [
            {
                "name": "stable",
                "labels": {"app": "web", HASH_LABEL: "def456"},
                "trafficPolicy": {"tls": {"mode": "ISTIO"}},
            },
            {"name": "canary", "labels": {HASH_LABEL: "abc123"}},
        ]
    }
    assert vs_patch.resource == "virtualservices"
    # Any other destination is removed, whatever its host (Argo's processRoutes).
    assert vs_patch.body["spec"]["http"][0]["route"] == [
        dest("root", 80, subset="stable", port=8080),
        dest("root", 20, subset="canary", port=8080),
    ]
    assert events(ctx) == [
        (
            "UpdatedDestinationRule",
            "DestinationRule istio-destrule subset updated (canary: abc123, stable: def456)",
        ),
        ("Updated VirtualService", "VirtualService `vsvc` set to desiredWeight '20'"),
    ]


def test_the_rule_already_at_the_hashes_is_not_written() -> None:
    rule = destination_rule(
        {"name": "stable", "labels": {HASH_LABEL: "def456"}},
        {"name": "canary", "labels": {HASH_LABEL: "abc123"}},
    )
    rule["metadata"]["annotations"] = {"argo-rollouts.argoproj.io/managed-by-rollouts": "web"}
    router, writer, _ctx = router_for(subset_rollout(), subset_vs(), rule)
    router.update_hash("abc123", "def456")
    router.set_weight(0)
    assert writes(writer) == []


def test_no_canary_replicaset_unlabels_the_canary_subset() -> None:
    rule = destination_rule(
        {"name": "stable", "labels": {HASH_LABEL: "def456"}},
        {"name": "canary", "labels": {HASH_LABEL: "old"}},
    )
    router, writer, _ctx = router_for(subset_rollout(), subset_vs(), rule)
    router.update_hash("", "def456")
    subsets = writer.objects[("destinationrules", NS, "istio-destrule")]["spec"]["subsets"]
    assert subsets == [
        {"name": "stable", "labels": {HASH_LABEL: "def456"}},
        {"name": "canary", "labels": {}},
    ]


def test_experiment_subsets_are_labelled_and_added() -> None:
    desired = istio.calculate_destination_rule(
        destination_rule({"name": "stable"}, {"name": "canary"}, {"name": "exp-a", "labels": {}}),
        rollout="web",
        canary_subset="canary",
        stable_subset="stable",
        canary_hash="c",
        stable_hash="s",
        additional=[
            WeightDestination(weight=5, service_name="exp-a", pod_template_hash="ha"),
            WeightDestination(weight=5, service_name="exp-b", pod_template_hash="hb"),
        ],
    )
    assert [(s["name"], s["labels"][HASH_LABEL]) for s in desired["spec"]["subsets"]] == [
        ("stable", "s"),
        ("canary", "c"),
        ("exp-a", "ha"),
        ("exp-b", "hb"),
    ]


def test_missing_destination_rule() -> None:
    """Argo's TestUpdateHashDestinationRuleNotFound: UpdateHash, which runs first, reads it."""
    router, writer, ctx = router_for(subset_rollout(), subset_vs())
    with pytest.raises(TrafficRoutingError) as err:
        router.update_hash("abc123", "def456")
    assert str(err.value) == 'destinationrules.networking.istio.io "istio-destrule" not found'
    assert events(ctx) == [
        ("DestinationRuleNotFound", "DestinationRule `istio-destrule` not found")
    ]
    assert writes(writer) == []


@pytest.mark.parametrize(
    ("subsets", "message"),
    [
        (["stable"], "Canary DestinationRule subset 'canary' not found in route"),
        (["canary"], "Stable DestinationRule subset 'stable' not found in route"),
    ],
)
def test_subset_missing_from_the_route(subsets: list[str], message: str) -> None:
    vs = virtual_service(
        http=[http_route("primary", *(dest("root", 50, subset=s) for s in subsets))]
    )
    router, _, _ = router_for(subset_rollout(), vs, subset_rule())
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == message


# -- additional subsets (destinationRule.additionalSubsetNames, Argo 1.9) ---------------------


SUBSETS = istio.Targets(canary_subset="canary", stable_subset="stable", subset_level=True)


def with_extra(*names: str) -> istio.Targets:
    return istio.Targets(
        canary_subset="canary",
        stable_subset="stable",
        subset_level=True,
        additional_subsets=frozenset(names),
    )


AdditionalSubsetCase = tuple[str, istio.Targets, list[Obj], int, list[WeightDestination], list[Obj]]
ADDITIONAL_SUBSET_CASES: list[AdditionalSubsetCase] = [
    # (name, targets, destinations, weight, experiments, expected destinations)
    (
        "argo TestHttpReconcileMultipleDestRule: kept at 20, taken out of the stable's",
        with_extra("stable-subset"),
        [
            dest("rollout-service", 100, subset="stable"),
            dest("rollout-service", 0, subset="canary"),
            dest("additional-service", 20, subset="stable-subset"),
        ],
        10,
        [],
        [
            dest("rollout-service", 70, subset="stable"),
            dest("rollout-service", 10, subset="canary"),
            dest("additional-service", 20, subset="stable-subset"),
        ],
    ),
    (
        "not set: a destination to any other subset is removed (processRoutes)",
        SUBSETS,
        [
            dest("rollout-service", 100, subset="stable"),
            dest("rollout-service", 0, subset="canary"),
            dest("additional-service", 20, subset="stable-subset"),
        ],
        10,
        [],
        [
            dest("rollout-service", 90, subset="stable"),
            dest("rollout-service", 10, subset="canary"),
        ],
    ),
    (
        "a subset not in the list is removed, one in it kept",
        with_extra("legacy"),
        [
            dest("svc", 60, subset="stable"),
            dest("svc", 0, subset="canary"),
            dest("svc", 30, subset="legacy"),
            dest("svc", 10, subset="unknown"),
        ],
        10,
        [],
        [
            dest("svc", 60, subset="stable"),
            dest("svc", 10, subset="canary"),
            dest("svc", 30, subset="legacy"),
        ],
    ),
    (
        "several additional subsets, all taken out of the stable's",
        with_extra("legacy", "experimental"),
        [
            dest("svc", 100, subset="stable"),
            dest("svc", 0, subset="canary"),
            dest("legacy-host", 15, subset="legacy"),
            dest("exp-host.ns.svc.cluster.local", 5, subset="experimental"),
        ],
        30,
        [],
        [
            dest("svc", 50, subset="stable"),
            dest("svc", 30, subset="canary"),
            dest("legacy-host", 15, subset="legacy"),
            dest("exp-host.ns.svc.cluster.local", 5, subset="experimental"),
        ],
    ),
    (
        "the stable's weight is never below 0 (Istio refuses negative weights)",
        with_extra("legacy"),
        [
            dest("svc", 40, subset="stable"),
            dest("svc", 0, subset="canary"),
            dest("svc", 60, subset="legacy"),
        ],
        50,
        [],
        [
            dest("svc", 0, subset="stable"),
            dest("svc", 50, subset="canary"),
            dest("svc", 60, subset="legacy"),
        ],
    ),
    (
        "experiments and additional subsets both come out of the stable's",
        with_extra("legacy"),
        [
            dest("svc", 80, subset="stable"),
            dest("svc", 0, subset="canary"),
            dest("svc", 20, subset="legacy"),
        ],
        10,
        [WeightDestination(weight=10, service_name="exp-a")],
        [
            dest("svc", 60, subset="stable"),
            dest("svc", 10, subset="canary"),
            dest("svc", 20, subset="legacy"),
            dest("exp-a", 10),
        ],
    ),
    (
        "an empty name in the list matches no destination without a subset",
        with_extra(""),
        [dest("svc", 95, subset="stable"), dest("svc", 0, subset="canary"), dest("other", 5)],
        10,
        [],
        [dest("svc", 90, subset="stable"), dest("svc", 10, subset="canary")],
    ),
]


@pytest.mark.parametrize(
    ("targets", "destinations", "weight", "experiments", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in ADDITIONAL_SUBSET_CASES],
)
def test_additional_subsets(
    targets: istio.Targets,
    destinations: list[Obj],
    weight: int,
    experiments: list[WeightDestination],
    expected: list[Obj],
) -> None:
    got = istio.calculate_destinations(
        destinations, weight=weight, targets=targets, additional=experiments
    )
    assert got == expected


def additional_subset_rollout(*names: str) -> Obj:
    obj = subset_rollout()
    rule = obj["spec"]["strategy"]["canary"]["trafficRouting"]["istio"]["destinationRule"]
    rule["additionalSubsetNames"] = list(names)
    return obj


def test_additional_subsets_through_the_router_in_http_tls_and_tcp_routes() -> None:
    """Argo's TestHttpReconcileMultipleDestRule end to end; processRoutes serves the tls and tcp
    routes too. The subset of that name in the rollout's own rule is dropped: UpdateHash does not
    read the list (the additional subsets belong to other DestinationRules, never touched)."""
    route = [
        dest("root", 100, subset="stable"),
        dest("root", 0, subset="canary"),
        dest("additional-service", 20, subset="stable-subset"),
    ]
    vs = virtual_service(
        http=[http_route("primary", *route)],
        tls=[tls_route(443, ["a.example"], *route)],
        tcp=[tcp_route(5000, *route)],
    )
    obj = additional_subset_rollout("stable-subset")
    spec = obj["spec"]["strategy"]["canary"]["trafficRouting"]["istio"]["virtualService"]
    spec.update(tlsRoutes=[{"port": 443, "sniHosts": ["a.example"]}], tcpRoutes=[{"port": 5000}])
    rule = destination_rule({"name": "stable"}, {"name": "canary"}, {"name": "stable-subset"})
    router, writer, _ = router_for(obj, vs, rule)
    router.update_hash("abc123", "def456")
    router.set_weight(10)
    expected = [
        dest("root", 70, subset="stable"),
        dest("root", 10, subset="canary"),
        dest("additional-service", 20, subset="stable-subset"),
    ]
    stored = writer.objects[("virtualservices", NS, "vsvc")]["spec"]
    assert [r["route"] for r in (*stored["http"], *stored["tls"], *stored["tcp"])] == [expected] * 3
    subsets = writer.objects[("destinationrules", NS, "istio-destrule")]["spec"]["subsets"]
    assert [s["name"] for s in subsets] == ["stable", "canary"]
    # Level-triggered: the next reconcile at the same weight writes nothing.
    router, _ctx = reread(obj, writer)
    before = len(writes(writer))
    router.update_hash("abc123", "def456")
    router.set_weight(10)
    assert len(writes(writer)) == before


def test_additional_subset_names_are_modelled() -> None:
    parsed = Rollout.from_dict(additional_subset_rollout("legacy", "experimental"))
    assert parsed.spec.strategy is not None and parsed.spec.strategy.canary is not None
    routing = parsed.spec.strategy.canary.traffic_routing
    assert routing is not None and routing.istio is not None
    assert routing.istio.destination_rule is not None
    assert routing.istio.destination_rule.additional_subset_names == ["legacy", "experimental"]
    assert "additionalSubsetNames" in routing.istio.destination_rule.to_dict()


# -- header routes ---------------------------------------------------------------------------


def header_step(name: str = "header-1", **value: str) -> SetHeaderRoute:
    match = [{"headerName": "agent", "headerValue": value or {"exact": "firefox"}}]
    return SetHeaderRoute.from_dict({"name": name, "match": match})


def test_header_route_goes_on_top_in_managed_routes_order() -> None:
    obj = istio_rollout(managed=["header-1", "mirror-1"])
    vs = virtual_service(
        http=[
            http_route("primary", dest("stable", 100, port=8080), dest("canary", 0, port=8080)),
            http_route("secondary", dest("stable", 100), dest("canary", 0)),
        ]
    )
    router, writer, ctx = router_for(obj, vs)
    router.set_header_route(header_step(regex="fire.*"))
    http = stored_http(writer)
    assert [route["name"] for route in http] == ["header-1", "primary", "secondary"]
    assert http[0] == {
        "name": "header-1",
        "match": [{"headers": {"agent": {"regex": "fire.*"}}}],
        "route": [{"destination": {"host": "canary", "port": {"number": 8080}}, "weight": 100}],
    }
    assert events(ctx) == [
        ("Updated VirtualService", "VirtualService `vsvc` set headerRoute 'header-1'")
    ]
    # A mirror route added later goes below it: managedRoutes order, not insertion order.
    router.set_mirror_route(
        SetMirrorRoute.from_dict({"name": "mirror-1", "match": [{"method": {"exact": "GET"}}]})
    )
    assert [route["name"] for route in stored_http(writer)] == [
        "header-1",
        "mirror-1",
        "primary",
        "secondary",
    ]


def test_header_route_is_rewritten_only_when_it_changes() -> None:
    router, writer, _ = router_for(istio_rollout(managed=["header-1"]), base_vs())
    router.set_header_route(header_step(prefix="Mozilla"))
    _, ctx = reread(istio_rollout(managed=["header-1"]), writer)
    again = istio.IstioRouter(ctx, ctx.canary.traffic_routing.istio)
    before = len(writes(writer))
    again.set_header_route(header_step(prefix="Mozilla"))
    assert len(writes(writer)) == before
    again.set_header_route(header_step(exact="curl"))
    assert stored_http(writer)[0]["match"] == [{"headers": {"agent": {"exact": "curl"}}}]


def test_header_route_with_a_destination_rule_uses_its_host_and_canary_subset() -> None:
    router, writer, _ = router_for(subset_rollout(managed=["header-1"]), subset_vs(), subset_rule())
    router.set_header_route(header_step())
    route = stored_http(writer)[0]
    assert route["route"] == [
        {
            "destination": {"host": "root", "port": {"number": 8080}, "subset": "canary"},
            "weight": 100,
        }
    ]


@pytest.mark.parametrize("match", [None, []])
def test_header_route_without_match_removes_it(match: list[Obj] | None) -> None:
    router, writer, _ = router_for(istio_rollout(managed=["header-1"]), base_vs())
    router.set_header_route(header_step())
    _, ctx = reread(istio_rollout(managed=["header-1"]), writer)
    again = istio.IstioRouter(ctx, ctx.canary.traffic_routing.istio)
    again.set_header_route(SetHeaderRoute(name="header-1", match=match))
    assert [route["name"] for route in stored_http(writer)] == ["primary", "secondary"]


def test_header_route_needs_http_routes() -> None:
    vs = virtual_service(tcp=[tcp_route(8080, dest("stable", 100), dest("canary", 0))])
    router, _, _ = router_for(istio_rollout(managed=["header-1"]), vs)
    with pytest.raises(TrafficRoutingError, match=r"spec\.http not found"):
        router.set_header_route(header_step())


# -- mirror routes ---------------------------------------------------------------------------


def mirror_step(percentage: int | None = None, **extra: Any) -> SetMirrorRoute:
    body: Obj = {
        "name": "mirror-1",
        "match": [
            {
                "method": {"exact": "GET"},
                "path": {"prefix": "/api"},
                "headers": {"agent": {"regex": "fire.*"}},
            }
        ],
        **extra,
    }
    if percentage is not None:
        body["percentage"] = percentage
    return SetMirrorRoute.from_dict(body)


def test_mirror_route_keeps_the_weights_and_mirrors_to_the_canary() -> None:
    vs = virtual_service(
        http=[http_route("primary", dest("stable", 80, port=8080), dest("canary", 20, port=8080))]
    )
    router, writer, ctx = router_for(istio_rollout(managed=["mirror-1"]), vs)
    router.set_mirror_route(mirror_step(percentage=50))
    mirror, primary = stored_http(writer)
    assert mirror == {
        "name": "mirror-1",
        "match": [
            {
                "method": {"exact": "GET"},
                "uri": {"prefix": "/api"},
                "headers": {"agent": {"regex": "fire.*"}},
            }
        ],
        "route": [dest("stable", 80, port=8080), dest("canary", 20, port=8080)],
        "mirror": {"host": "canary", "port": {"number": 8080}},
        "mirrorPercentage": {"value": 50},
    }
    assert primary["name"] == "primary"
    assert events(ctx) == [
        ("Updated VirtualService", "VirtualService `vsvc` set mirrorRoute 'mirror-1'")
    ]


def test_mirror_percentage_defaults_to_100_and_is_reweighted_as_managed() -> None:
    obj = istio_rollout(managed=["mirror-1"])
    router, writer, _ = router_for(obj, base_vs())
    router.set_mirror_route(mirror_step())
    assert stored_http(writer)[0]["mirrorPercentage"] == {"value": 100}
    router2, _ = reread(obj, writer)
    router2.set_weight(30)
    mirror, primary, secondary = stored_http(writer)
    assert weights(mirror) == weights(primary) == {"stable": 70, "canary": 30}
    assert weights(secondary) == {"stable": 100, "canary": 0}


def test_mirror_route_without_match_removes_it() -> None:
    obj = istio_rollout(managed=["mirror-1"])
    router, writer, _ = router_for(obj, base_vs())
    router.set_mirror_route(mirror_step())
    router2, _ = reread(obj, writer)
    router2.set_mirror_route(SetMirrorRoute(name="mirror-1"))
    assert [route["name"] for route in stored_http(writer)] == ["primary", "secondary"]


# -- removing the managed routes -------------------------------------------------------------


def test_remove_managed_routes() -> None:
    obj = istio_rollout(managed=["header-1", "mirror-1"])
    router, writer, _ = router_for(obj, base_vs())
    router.set_header_route(header_step())
    router.set_mirror_route(mirror_step())
    router2, ctx = reread(obj, writer)
    router2.remove_managed_routes()
    assert [route["name"] for route in stored_http(writer)] == ["primary", "secondary"]
    assert events(ctx) == [
        ("Updated VirtualService", "VirtualService `vsvc` removed all managed routes.")
    ]
    before = len(writes(writer))
    router3, _ = reread(obj, writer)
    router3.remove_managed_routes()
    assert len(writes(writer)) == before


def test_remove_managed_routes_without_managed_routes_or_http_writes_nothing() -> None:
    router, writer, _ = router_for(istio_rollout(), base_vs())
    router.remove_managed_routes()
    vs = virtual_service(tcp=[tcp_route(8080, dest("stable", 100), dest("canary", 0))])
    router2, writer2, _ = router_for(istio_rollout(managed=["header-1"]), vs)
    router2.remove_managed_routes()
    assert writes(writer) == writes(writer2) == []


def test_verify_weight_is_unknown() -> None:
    router, _, _ = router_for(istio_rollout(), base_vs())
    assert router.verify_weight(10) is None
    assert router.type == "Istio"


# -- errors ----------------------------------------------------------------------------------


def test_missing_virtual_service() -> None:
    router, writer, ctx = router_for(istio_rollout())
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == 'virtualservices.networking.istio.io "vsvc" not found'
    assert events(ctx) == [("VirtualServiceNotFound", "VirtualService `vsvc` not found")]
    assert writes(writer) == []


def test_route_not_found() -> None:
    obj = istio_rollout({"virtualService": {"name": "vsvc", "routes": ["missing"]}})
    router, _, _ = router_for(obj, base_vs())
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == "HTTP Route 'missing' is not found in the defined Virtual Service."


@pytest.mark.parametrize(
    ("destinations", "message"),
    [
        ([dest("stable", 100)], "Canary Service 'canary' not found in route"),
        ([dest("canary", 100)], "Stable Service 'stable' not found in route"),
    ],
)
def test_destination_not_found(destinations: list[Obj], message: str) -> None:
    vs = virtual_service(http=[http_route("primary", *destinations)])
    router, writer, _ = router_for(istio_rollout(), vs)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == message
    assert writes(writer) == []


@pytest.mark.parametrize("kind", ["VirtualService", "DestinationRule"])
def test_kind_not_served(kind: str) -> None:
    served = tuple(k for k in RESOURCES if k != kind)
    router, _, _ = router_for(subset_rollout(), subset_vs(), subset_rule(), served=served)
    with pytest.raises(TrafficRoutingError) as err:
        router.update_hash("abc123", "def456")
        router.set_weight(10)
    assert str(err.value) == f"{kind} (networking.istio.io) is not served by the API server"


# -- level-triggered -------------------------------------------------------------------------


def test_a_changed_weight_and_a_deleted_header_route_are_put_back() -> None:
    obj = istio_rollout(managed=["header-1"])
    router, writer, _ = router_for(obj, base_vs())
    router.set_header_route(header_step())
    router.set_weight(10)
    stored = writer.objects[("virtualservices", NS, "vsvc")]
    stored["spec"]["http"] = [
        route for route in stored["spec"]["http"] if route["name"] != "header-1"
    ]
    stored["spec"]["http"][0]["route"] = [dest("stable", 50), dest("canary", 50)]
    router2, ctx = reread(obj, writer)
    router2.set_header_route(header_step())
    router2.set_weight(10)
    http = stored_http(writer)
    assert [route["name"] for route in http] == ["header-1", "primary", "secondary"]
    assert weights(http[1]) == {"stable": 90, "canary": 10}
    assert len(ctx.events) == 2


# -- registration ----------------------------------------------------------------------------


def test_the_istio_router_is_registered_and_supported() -> None:
    _, _, ctx = router_for(istio_rollout(), base_vs())
    assert [router.type for router in routers_for(ctx)] == ["Istio"]
    assert unsupported_router(ctx.canary.traffic_routing) == ""


# -- validation of the referenced VirtualServices --------------------------------------------


def service(name: str) -> Obj:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {}}


def references(*objects: Obj, served: frozenset[str] | None = None) -> ReferencedResources:
    found = {
        RouterRef(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects
    }
    return ReferencedResources(
        services={n: service(n) for n in ("stable", "canary")},
        router_objects=found,
        served_router_kinds=frozenset(RESOURCES) if served is None else served,
    )


def validate(obj: Obj, refs: ReferencedResources) -> str | None:
    error = v.validate(Rollout.from_dict(obj), refs)
    return None if error is None else str(error)


VS_NAME_PATH = "spec.strategy.canary.trafficRouting.istio.virtualService.name"


@pytest.mark.parametrize(
    ("obj", "refs", "expected"),
    [
        pytest.param(istio_rollout(), references(base_vs()), None, id="valid"),
        pytest.param(
            istio_rollout(),
            references(),
            f'{VS_NAME_PATH}: Invalid value: "vsvc": '
            'virtualservices.networking.istio.io "vsvc" not found',
            id="virtual service not found",
        ),
        pytest.param(
            istio_rollout(),
            references(base_vs(), served=frozenset({"DestinationRule"})),
            f'{VS_NAME_PATH}: Invalid value: "vsvc": '
            'virtualservices.networking.istio.io "vsvc" not found',
            id="virtual services not served",
        ),
        pytest.param(
            istio_rollout(),
            ReferencedResources(services={n: service(n) for n in ("stable", "canary")}),
            None,
            id="router objects not looked up",
        ),
        pytest.param(
            istio_rollout({"virtualService": {"name": "vsvc", "routes": ["nope"]}}),
            references(base_vs()),
            f'{VS_NAME_PATH}: Invalid value: "vsvc": Istio VirtualService has invalid HTTP '
            "routes. Error: HTTP Route 'nope' is not found in the defined Virtual Service.",
            id="route not in the virtual service",
        ),
        pytest.param(
            istio_rollout(),
            references(virtual_service(http=[http_route("primary", dest("canary", 100))])),
            f'{VS_NAME_PATH}: Invalid value: "vsvc": Istio VirtualService has invalid HTTP '
            "routes. Error: Stable Service 'stable' not found in route",
            id="stable not a destination",
        ),
        pytest.param(
            istio_rollout({"virtualServices": [{"name": "vsvc", "tcpRoutes": [{"port": 1}]}]}),
            references(virtual_service(tcp=[tcp_route(8080, dest("stable", 1))])),
            "spec.strategy.canary.trafficRouting.istio.virtualServices.name: Invalid value: "
            '"vsvc": Istio VirtualService has invalid TCP routes. Error: No matching TCP routes '
            "found in the defined Virtual Service.",
            id="tcp route not found",
        ),
        pytest.param(
            istio_rollout(),
            references(virtual_service()),
            f'{VS_NAME_PATH}: Invalid value: "vsvc": Unable to get any of the HTTP, TCP or TLS '
            "routes for the Istio VirtualService",
            id="no routes at all",
        ),
        pytest.param(
            istio_rollout({"virtualServices": []}),
            references(),
            "spec.strategy.canary.trafficRouting.istio: Internal error: "
            "either VirtualService or VirtualServices must be configured",
            id="neither virtualService nor virtualServices",
        ),
        pytest.param(
            istio_rollout(
                {"virtualService": {"name": "vsvc"}, "virtualServices": [{"name": "vsvc"}]}
            ),
            references(base_vs()),
            "spec.strategy.canary.trafficRouting.istio: Internal error: "
            "either VirtualService or VirtualServices must be configured",
            id="both virtualService and virtualServices",
        ),
    ],
)
def test_validation_of_referenced_virtual_services(
    obj: Obj, refs: ReferencedResources, expected: str | None
) -> None:
    assert validate(obj, refs) == expected
