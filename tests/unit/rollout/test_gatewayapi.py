"""The Gateway API router, after the gatewayAPI plugin's tests (pkg/plugin/plugin_test.go,
httproute_mirror_test.go): weights on HTTPRoutes, GRPCRoutes, TCPRoutes and TLSRoutes,
configured as the plugin or the first-class field; header and mirror routes added, replaced and
removed; the managed rules removed at the end; the plugin's errors; a foreign weight change put
back. Then the validation of the routes, and the refusal of other plugins."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from rollout_workers.api.rollout import Rollout, SetHeaderRoute, SetMirrorRoute, WeightDestination
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import validation as v
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import (
    TrafficRoutingError,
    gatewayapi,
)
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.rollout.validation.references import ReferencedResources, reference_errors
from rollout_workers.rollout.validation.spec import spec_errors
from rollout_workers.routerrefs import RouterRef
from tests.unit.rollout.onesync import NS, T0
from tests.unit.rollout.test_controller import rollout

Obj = dict[str, Any]
PLUGIN = "argoproj-labs/gatewayAPI"
RESOURCES = {
    "HTTPRoute": r.HTTPROUTES[0],
    "GRPCRoute": r.GRPCROUTES[0],
    "TCPRoute": r.TCPROUTES[0],
    "TLSRoute": r.TLSROUTES[0],
}


def gw_rollout(config: Obj, *, first_class: bool = False, **routing: Any) -> Obj:
    traffic = {"gatewayAPI": config} if first_class else {"plugins": {PLUGIN: config}}
    traffic.update(routing)
    return rollout(
        strategy={
            "canary": {
                "stableService": "stable",
                "canaryService": "canary",
                "trafficRouting": traffic,
                "steps": [{"setWeight": 30}, {"pause": {}}],
            }
        }
    )


def backend(name: str, weight: int | None = None, port: int = 80) -> Obj:
    ref: Obj = {"name": name, "port": port}
    if weight is not None:
        ref["weight"] = weight
    return ref


def route(
    kind: str, name: str, *rules: Obj, namespace: str = NS, labels: dict[str, str] | None = None
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "resourceVersion": "5"}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": f"{RESOURCES[kind].group}/{RESOURCES[kind].version}",
        "kind": kind,
        "metadata": meta,
        "spec": {"rules": list(rules)},
    }


def weighted_rule(canary: int = 0, stable: int = 100, **extra: Any) -> Obj:
    return {"backendRefs": [backend("stable", stable), backend("canary", canary)], **extra}


IN_PROGRESS = "rollouts.argoproj.io/gatewayapi-canary"  # the plugin's default label key
PATH_MATCH = {"path": {"type": "PathPrefix", "value": "/api"}}


def router_for(
    obj: Obj,
    *routes: Obj,
    served: tuple[str, ...] = tuple(RESOURCES),
    services: dict[str, Obj] | None = None,
) -> tuple[gatewayapi.GatewayAPIRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    for found in routes:
        writer.seed(RESOURCES[found["kind"]], copy.deepcopy(found))
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        services=services,
        routed=RouterObjects(
            served={kind: RESOURCES[kind] for kind in served},
            objects={
                RouterRef(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o
                for o in routes
            },
        ),
    )
    [router] = [x for x in routers_for(ctx) if x.type == "GatewayAPI"]
    assert isinstance(router, gatewayapi.GatewayAPIRouter)
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def stored(writer: RecordingWriter, kind: str, name: str, namespace: str = NS) -> Obj:
    return writer.objects[(RESOURCES[kind].plural, namespace, name)]


def rules_of(writer: RecordingWriter, name: str = "web-route", kind: str = "HTTPRoute") -> Any:
    return stored(writer, kind, name)["spec"]["rules"]


def record_of(writer: RecordingWriter, name: str = "web-route") -> Any:
    annotations = stored(writer, "HTTPRoute", name)["metadata"].get("annotations") or {}
    text = annotations.get(gatewayapi.MANAGED_ANNOTATION)
    return json.loads(text) if text else None


# -- weights -------------------------------------------------------------------------------------


@pytest.mark.parametrize("first_class", [False, True], ids=["plugin", "gatewayAPI"])
def test_http_route_weight_as_the_plugin_sets_it(first_class: bool) -> None:
    obj = gw_rollout({"httpRoute": "web-route"}, first_class=first_class)
    router, writer, ctx = router_for(obj, route("HTTPRoute", "web-route", weighted_rule()))
    router.set_weight(30)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("patch", "httproutes", "web-route")
    assert action.body == {
        "metadata": {"labels": {IN_PROGRESS: "in-progress"}, "resourceVersion": "5"},
        "spec": {"rules": [weighted_rule(canary=30, stable=70)]},
    }
    assert [(e.reason, e.message) for e in ctx.events] == [
        ("HTTPRouteModified", "HTTPRoute `web-route` modified: weight 30")
    ]
    assert router.verify_weight(30) is True
    assert router.verify_weight(40) is False


def test_weight_again_writes_nothing() -> None:
    obj = gw_rollout({"httpRoute": "web-route"})
    labels = {IN_PROGRESS: "in-progress"}
    found = route("HTTPRoute", "web-route", weighted_rule(30, 70), labels=labels)
    router, writer, _ = router_for(obj, found)
    router.set_weight(30)
    assert writes(writer) == []


@pytest.mark.parametrize(
    ("field", "kind"),
    [
        ("grpcRoute", "GRPCRoute"),
        ("tcpRoute", "TCPRoute"),
        ("tlsRoute", "TLSRoute"),
        ("httpRoute", "HTTPRoute"),
    ],
)
def test_each_kind_is_weighted(field: str, kind: str) -> None:
    obj = gw_rollout({field: "r1"})
    router, writer, _ = router_for(obj, route(kind, "r1", weighted_rule()))
    router.set_weight(10)
    [action] = writes(writer)
    assert action.resource == RESOURCES[kind].plural
    assert rules_of(writer, "r1", kind) == [weighted_rule(canary=10, stable=90)]


def test_several_routes_of_each_kind_and_rules_naming_one_service_left_alone() -> None:
    config = {
        "httpRoutes": [{"name": "a"}, {"name": "b", "useHeaderRoutes": True}],
        "grpcRoutes": [{"name": "g"}],
        "tcpRoutes": [{"name": "t"}],
        "tlsRoutes": [{"name": "s"}],
    }
    lone = {"backendRefs": [backend("canary")]}
    routes = [
        route("HTTPRoute", "a", weighted_rule(), lone),
        route("HTTPRoute", "b", weighted_rule(), weighted_rule(matches=[PATH_MATCH])),
        route("GRPCRoute", "g", weighted_rule()),
        route("TCPRoute", "t", weighted_rule()),
        route("TLSRoute", "s", weighted_rule()),
    ]
    router, writer, _ = router_for(gw_rollout(config), *routes)
    router.set_weight(40)
    assert [a.name for a in writes(writer)] == ["a", "b", "g", "t", "s"]
    assert rules_of(writer, "a") == [weighted_rule(40, 60), lone]
    assert rules_of(writer, "b") == [
        weighted_rule(40, 60),
        weighted_rule(40, 60, matches=[PATH_MATCH]),
    ]
    assert rules_of(writer, "g", "GRPCRoute") == [weighted_rule(40, 60)]
    assert rules_of(writer, "t", "TCPRoute") == [weighted_rule(40, 60)]
    assert rules_of(writer, "s", "TLSRoute") == [weighted_rule(40, 60)]


def test_routes_in_the_configs_namespace() -> None:
    obj = gw_rollout({"httpRoute": "web-route", "namespace": "gateways"})
    found = route("HTTPRoute", "web-route", weighted_rule(), namespace="gateways")
    router, writer, _ = router_for(obj, found)
    router.set_weight(5)
    [action] = writes(writer)
    assert (action.namespace, action.name) == ("gateways", "web-route")
    assert rules_of_ns(writer, "gateways") == [weighted_rule(5, 95)]


def rules_of_ns(writer: RecordingWriter, namespace: str) -> Any:
    return stored(writer, "HTTPRoute", "web-route", namespace)["spec"]["rules"]


def test_max_traffic_weight_and_additional_destinations() -> None:
    from rollout_workers.api.rollout import WeightDestination

    obj = gw_rollout({"httpRoute": "web-route"}, maxTrafficWeight=1000)
    rule = {"backendRefs": [backend("stable", 1000), backend("canary", 0), backend("exp", 0)]}
    router, writer, _ = router_for(obj, route("HTTPRoute", "web-route", rule))
    router.set_weight(100, [WeightDestination(serviceName="exp", weight=50)])
    assert rules_of(writer) == [
        {"backendRefs": [backend("stable", 850), backend("canary", 100), backend("exp", 50)]}
    ]


def test_a_foreign_weight_change_is_put_back() -> None:
    obj = gw_rollout({"httpRoute": "web-route"})
    router, writer, ctx = router_for(obj, route("HTTPRoute", "web-route", weighted_rule()))
    router.set_weight(30)
    changed = copy.deepcopy(stored(writer, "HTTPRoute", "web-route"))
    changed["spec"]["rules"] = [weighted_rule(canary=0, stable=100)]
    writer.seed(RESOURCES["HTTPRoute"], changed)
    ctx.routed.put(
        RouterRef("HTTPRoute", NS, "web-route"), changed
    )  # what the next reconcile reads
    assert router.verify_weight(30) is False
    router.set_weight(30)
    assert len(writes(writer)) == 2
    assert rules_of(writer) == [weighted_rule(30, 70)]
    assert writes(writer)[1].body["metadata"] == {
        "resourceVersion": changed["metadata"]["resourceVersion"]
    }


# -- experiment Services ------------------------------------------------------------------------


def service(name: str, *ports: tuple[str, int]) -> Obj:
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {"ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports]},
    }


def exp_ref(name: str, weight: int, port: int, namespace: str = NS) -> Obj:
    """A backendRef the router adds for an experiment Service."""
    return {
        "group": "",
        "kind": "Service",
        "name": name,
        "namespace": namespace,
        "port": port,
        "weight": weight,
    }


def dest(name: str, weight: int) -> WeightDestination:
    return WeightDestination(serviceName=name, weight=weight)


EXP_SERVICES = {
    "exp-a": service("exp-a", ("metrics", 9090), ("http", 8000)),
    "exp-b": service("exp-b", ("grpc", 9000), ("admin", 9001)),
    "exp-c": service("exp-c"),
}
EXPERIMENT_CASES: list[tuple[str, list[Obj], list[WeightDestination], list[Obj]]] = [
    # (name, the route's rules, the destinations at weight 20, the rules written)
    (
        "plugin HandleExperiment: the Service's port named http, the stable gets the rest",
        [weighted_rule(20, 80)],
        [dest("exp-a", 10)],
        [
            {
                "backendRefs": [
                    backend("stable", 70),
                    backend("canary", 20),
                    exp_ref("exp-a", 10, 8000),
                ]
            }
        ],
    ),
    (
        "plugin TestHandleExperiment_ExperimentStatusChecking: two Services, no http port: the "
        "first; no ports at all: 8080",
        [weighted_rule()],
        [dest("exp-b", 15), dest("exp-c", 40)],
        [
            {
                "backendRefs": [
                    backend("stable", 25),
                    backend("canary", 20),
                    exp_ref("exp-b", 15, 9000),
                    exp_ref("exp-c", 40, 8080),
                ]
            }
        ],
    ),
    (
        "a backendRef the user wrote to the Service only gets its weight",
        [{"backendRefs": [backend("stable"), backend("canary"), backend("exp-a", 0, port=1)]}],
        [dest("exp-a", 10)],
        [{"backendRefs": [backend("stable", 70), backend("canary", 20), backend("exp-a", 10, 1)]}],
    ),
    (
        "every weighted rule gets it; a rule naming one of the services alone is left alone",
        [
            weighted_rule(),
            weighted_rule(matches=[PATH_MATCH]),
            {"backendRefs": [backend("stable")]},
        ],
        [dest("exp-c", 5)],
        [
            {
                "backendRefs": [
                    backend("stable", 75),
                    backend("canary", 20),
                    exp_ref("exp-c", 5, 8080),
                ]
            },
            {
                "matches": [PATH_MATCH],
                "backendRefs": [
                    backend("stable", 75),
                    backend("canary", 20),
                    exp_ref("exp-c", 5, 8080),
                ],
            },
            {"backendRefs": [backend("stable")]},
        ],
    ),
    (
        "no destinations: nothing added",
        [weighted_rule()],
        [],
        [weighted_rule(20, 80)],
    ),
]


@pytest.mark.parametrize(
    ("rules", "additional", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in EXPERIMENT_CASES],
)
def test_experiment_services_are_added_with_their_weights(
    rules: list[Obj], additional: list[WeightDestination], expected: list[Obj]
) -> None:
    found = route("HTTPRoute", "web-route", *rules)
    router, writer, _ = router_for(
        gw_rollout({"httpRoute": "web-route"}), found, services=EXP_SERVICES
    )
    router.set_weight(20, additional)
    assert rules_of(writer) == expected
    assert router.verify_weight(20, additional) is True
    assert router.verify_weight(20, [*additional, dest("exp-c", 1)]) is False
    # The same weights again write nothing.
    count = len(writes(writer))
    router.set_weight(20, additional)
    assert len(writes(writer)) == count


def experiment_record(
    writer: RecordingWriter, kind: str = "HTTPRoute", name: str = "web-route"
) -> Any:
    annotations = stored(writer, kind, name)["metadata"].get("annotations") or {}
    text = annotations.get(gatewayapi.EXPERIMENT_ANNOTATION)
    return json.loads(text) if text else None


def test_experiment_services_are_removed_when_the_experiment_ends() -> None:
    """Plugin TestHandleExperiment_RemoveExperimentServices, and its fix "Do not tamper with
    unmanaged backends" (#204): only the backendRefs the rollout added go; the user's third
    Service and their own reference to an experiment Service stay (and that one is not added to
    the rule that lacks it)."""
    users = backend("mine", 0)
    rules = [
        {"backendRefs": [backend("stable"), backend("canary"), users]},
        {"backendRefs": [backend("stable"), backend("canary"), backend("exp-b", 0)]},
    ]
    obj = gw_rollout({"httpRoute": "web-route"})
    router, writer, _ = router_for(
        obj, route("HTTPRoute", "web-route", *rules), services=EXP_SERVICES
    )
    router.set_weight(20, [dest("exp-a", 10), dest("exp-b", 5)])
    assert experiment_record(writer) == {"web": ["exp-a"]}
    assert rules_of(writer) == [
        {
            "backendRefs": [
                backend("stable", 65),
                backend("canary", 20),
                users,
                exp_ref("exp-a", 10, 8000),
            ]
        },
        {
            "backendRefs": [
                backend("stable", 65),
                backend("canary", 20),
                backend("exp-b", 5),
                exp_ref("exp-a", 10, 8000),
            ]
        },
    ]
    router.set_weight(20)
    assert rules_of(writer) == [
        {"backendRefs": [backend("stable", 80), backend("canary", 20), users]},
        {"backendRefs": [backend("stable", 80), backend("canary", 20), backend("exp-b", 5)]},
    ]
    assert experiment_record(writer) is None
    assert router.verify_weight(20) is True
    assert len(writes(writer)) == 2  # each change in one patch with its record


def test_experiment_services_of_another_rollout_are_left_alone() -> None:
    theirs = {"other": ["exp-z"]}
    rule = {"backendRefs": [backend("stable"), backend("canary"), exp_ref("exp-z", 5, 80)]}
    found = route("HTTPRoute", "web-route", rule)
    found["metadata"]["annotations"] = {gatewayapi.EXPERIMENT_ANNOTATION: json.dumps(theirs)}
    router, writer, _ = router_for(
        gw_rollout({"httpRoute": "web-route"}), found, services=EXP_SERVICES
    )
    router.set_weight(10, [dest("exp-c", 5)])
    assert experiment_record(writer) == {"other": ["exp-z"], "web": ["exp-c"]}
    router.set_weight(10)
    assert experiment_record(writer) == theirs
    assert rules_of(writer) == [
        {"backendRefs": [backend("stable", 90), backend("canary", 10), exp_ref("exp-z", 5, 80)]}
    ]


@pytest.mark.parametrize(
    ("field", "kind"),
    [("grpcRoute", "GRPCRoute"), ("tcpRoute", "TCPRoute"), ("tlsRoute", "TLSRoute")],
)
def test_experiment_services_on_each_kind_in_the_configs_namespace(field: str, kind: str) -> None:
    """The plugin does it on HTTPRoutes only; the other kinds' backendRefs have the same shape,
    so they get them too. The backendRef names the rollout's namespace, where the Service is."""
    obj = gw_rollout({field: "r1", "namespace": "gateways"})
    found = route(kind, "r1", weighted_rule(), namespace="gateways")
    router, writer, _ = router_for(obj, found, services=EXP_SERVICES)
    router.set_weight(30, [dest("exp-b", 20)])
    assert stored(writer, kind, "r1", "gateways")["spec"]["rules"] == [
        {"backendRefs": [backend("stable", 50), backend("canary", 30), exp_ref("exp-b", 20, 9000)]}
    ]


def test_an_experiment_service_not_in_the_cache_is_an_error() -> None:
    router, writer, _ = router_for(
        gw_rollout({"httpRoute": "web-route"}), route("HTTPRoute", "web-route", weighted_rule())
    )
    with pytest.raises(TrafficRoutingError, match=r'^services "exp-a" not found$'):
        router.set_weight(20, [dest("exp-a", 10)])
    assert writes(writer) == []
    assert router.verify_weight(20, [dest("exp-a", 10)]) is False


# -- errors --------------------------------------------------------------------------------------


def test_missing_route_is_the_api_servers_not_found() -> None:
    router, _, _ = router_for(gw_rollout({"httpRoute": "web-route"}))
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == 'httproutes.gateway.networking.k8s.io "web-route" not found'


def test_route_without_a_rule_naming_both_services() -> None:
    obj = gw_rollout({"grpcRoute": "g"})
    only_stable = {"backendRefs": [backend("stable", 100)]}
    router, _, _ = router_for(obj, route("GRPCRoute", "g", only_stable))
    with pytest.raises(TrafficRoutingError, match=r"^backendRef was not found in grpcRoute$"):
        router.set_weight(10)


def test_no_routes_is_the_plugins_manifest_error() -> None:
    router, _, _ = router_for(gw_rollout({"namespace": "x"}))
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == gatewayapi.NO_ROUTES_MESSAGE


def test_kind_not_served() -> None:
    obj = gw_rollout({"tcpRoute": "t"})
    router, _, _ = router_for(obj, served=("HTTPRoute",))
    with pytest.raises(
        TrafficRoutingError, match=r"^TCPRoute \(gateway.networking.k8s.io\) is not"
    ):
        router.set_weight(10)


# -- the in-progress label (pkg/plugin/labels.go) ------------------------------------------------

IN_PROGRESS_CASES: list[tuple[str, Obj, dict[str, str] | None, int, dict[str, str]]] = [
    # (name, config beside httpRoute, route labels before, weight, route labels after)
    (
        "plugin SetHTTPRouteWeightAddsAndRemovesLabel: added above 0",
        {},
        None,
        25,
        {IN_PROGRESS: "in-progress"},
    ),
    (
        "plugin SetHTTPRouteWeightAddsAndRemovesLabel: removed at 0, other labels kept",
        {},
        {IN_PROGRESS: "in-progress", "app": "web"},
        0,
        {"app": "web"},
    ),
    ("absent at 0: nothing to remove", {}, {"app": "web"}, 0, {"app": "web"}),
    ("another value is overwritten", {}, {IN_PROGRESS: "done"}, 100, {IN_PROGRESS: "in-progress"}),
    (
        "inProgressLabelKey and inProgressLabelValue",
        {"inProgressLabelKey": "example.com/canary", "inProgressLabelValue": "yes"},
        {"app": "web"},
        25,
        {"app": "web", "example.com/canary": "yes"},
    ),
    (
        "inProgressLabelKey removed at 0, the default key left alone",
        {"inProgressLabelKey": "example.com/canary"},
        {"example.com/canary": "in-progress", IN_PROGRESS: "in-progress"},
        0,
        {IN_PROGRESS: "in-progress"},
    ),
    (
        "empty key and value fall back to the defaults",
        {"inProgressLabelKey": "", "inProgressLabelValue": ""},
        None,
        25,
        {IN_PROGRESS: "in-progress"},
    ),
    ("disableInProgressLabel: not added", {"disableInProgressLabel": True}, None, 25, {}),
    (
        "disableInProgressLabel: not removed",
        {"disableInProgressLabel": True},
        {IN_PROGRESS: "in-progress"},
        0,
        {IN_PROGRESS: "in-progress"},
    ),
    (
        "disableInProgressLabel false: as by default",
        {"disableInProgressLabel": False},
        None,
        25,
        {IN_PROGRESS: "in-progress"},
    ),
]


@pytest.mark.parametrize("first_class", [False, True], ids=["plugin", "gatewayAPI"])
@pytest.mark.parametrize(
    ("config", "before", "weight", "after"),
    [pytest.param(*case[1:], id=case[0]) for case in IN_PROGRESS_CASES],
)
def test_in_progress_label(
    config: Obj,
    before: dict[str, str] | None,
    weight: int,
    after: dict[str, str],
    first_class: bool,
) -> None:
    obj = gw_rollout({"httpRoute": "web-route", **config}, first_class=first_class)
    found = route("HTTPRoute", "web-route", weighted_rule(), labels=before)
    router, writer, _ = router_for(obj, found)
    router.set_weight(weight)
    assert (stored(writer, "HTTPRoute", "web-route")["metadata"].get("labels") or {}) == after
    # Level-triggered: the same weight again writes nothing.
    count = len(writes(writer))
    router.set_weight(weight)
    assert len(writes(writer)) == count


@pytest.mark.parametrize(("field", "kind"), [(f, k) for k, f in gatewayapi.FIELDS.items()])
def test_in_progress_label_on_each_kind(field: str, kind: str) -> None:
    """The plugin's Set{HTTP,GRPC,TCP,TLS}RouteWeightAddsAndRemovesLabel, in one write with
    the weights."""
    obj = gw_rollout({field: "r"})
    router, writer, _ = router_for(obj, route(kind, "r", weighted_rule()))
    router.set_weight(25)
    [action] = writes(writer)
    assert action.body["metadata"]["labels"] == {IN_PROGRESS: "in-progress"}
    assert action.body["spec"]["rules"] == [weighted_rule(canary=25, stable=75)]
    router.set_weight(0)
    assert IN_PROGRESS not in (stored(writer, kind, "r")["metadata"].get("labels") or {})


# -- header routes -------------------------------------------------------------------------------


HEADER_ROUTE = SetHeaderRoute.from_dict(
    {
        "name": "canary-header",
        "match": [{"headerName": "X-Canary", "headerValue": {"exact": "yes"}}],
    }
)
HEADER = {"name": "X-Canary", "type": "Exact", "value": "yes"}
GRPC_METHOD = {"type": "Exact", "service": "my.service.v1.MyService", "method": "GetUser"}
#: The kinds with header routes (the plugin's setHTTPHeaderRoute and setGRPCHeaderRoute): the
#: route's config field, and a match of its own besides headers (a path, a gRPC method).
HEADER_KINDS = [
    pytest.param("HTTPRoute", "httpRoute", PATH_MATCH, id="HTTPRoute"),
    pytest.param("GRPCRoute", "grpcRoute", {"method": GRPC_METHOD}, id="GRPCRoute"),
]


def header_rollout(config: Obj | None = None) -> Obj:
    return gw_rollout(
        config or {"httpRoute": "web-route"}, managedRoutes=[{"name": "canary-header"}]
    )


def record_of_kind(writer: RecordingWriter, kind: str, name: str) -> Any:
    annotations = stored(writer, kind, name)["metadata"].get("annotations") or {}
    text = annotations.get(gatewayapi.MANAGED_ANNOTATION)
    return json.loads(text) if text else None


@pytest.mark.parametrize(("kind", "field", "own_match"), HEADER_KINDS)
def test_header_route_added_per_weighted_rule_and_recorded(
    kind: str, field: str, own_match: Obj
) -> None:
    """Plugin TestSetHTTPHeaderRouteMultiRule / TestSetGRPCHeaderRouteMultiRule (#207): one
    rule per weighted rule, its own matches with the headers added, its filters kept."""
    filt = {
        "type": "RequestHeaderModifier",
        "requestHeaderModifier": {"set": [{"name": "a", "value": "b"}]},
    }
    host = {"name": "h", "type": "Exact", "value": "1"}
    first = weighted_rule(30, 70, matches=[{**own_match, "headers": [host]}])
    second = weighted_rule(30, 70, filters=[filt])
    found = route(kind, "web-route", first, second, labels={IN_PROGRESS: "in-progress"})
    router, writer, ctx = router_for(header_rollout({field: "web-route"}), found)
    router.set_header_route(HEADER_ROUTE)
    canary_ref = {"group": "", "kind": "Service", "name": "canary", "port": 80}
    added = [
        {
            "name": "canary-header",
            "matches": [{**own_match, "headers": [host, HEADER]}],
            "backendRefs": [canary_ref],
        },
        {
            "name": "canary-header-1",
            "matches": [{"headers": [HEADER]}],
            "filters": [filt],
            "backendRefs": [canary_ref],
        },
    ]
    assert rules_of(writer, "web-route", kind) == [first, second, *added]
    assert record_of_kind(writer, kind, "web-route") == {
        "web": {"canary-header": {"rules": [gatewayapi.fingerprint(a) for a in added]}}
    }
    # The same step again changes nothing; weights leave the header rules alone.
    router.set_header_route(HEADER_ROUTE)
    router.set_weight(30)
    assert len(writes(writer)) == 1
    assert ctx.events[0].reason == f"{kind}Modified"


SERVER_DEFAULT_CASES: list[tuple[str, str, list[Obj], Obj]] = [
    # (name, kind, the weighted rule's matches, what the server adds to the managed rule's
    # first match besides the backendRef's weight 1)
    (
        "HTTPRoute: the default path",
        "HTTPRoute",
        [],
        {"path": {"type": "PathPrefix", "value": "/"}},
    ),
    ("HTTPRoute with a path", "HTTPRoute", [PATH_MATCH], {}),
    ("GRPCRoute without matches", "GRPCRoute", [], {}),
    ("GRPCRoute with a method", "GRPCRoute", [{"method": GRPC_METHOD}], {}),
]


@pytest.mark.parametrize(
    ("kind", "matches", "defaults"),
    [pytest.param(*case[1:], id=case[0]) for case in SERVER_DEFAULT_CASES],
)
def test_header_route_recognised_after_the_server_defaults_and_prunes_names(
    kind: str, matches: list[Obj], defaults: Obj
) -> None:
    source = weighted_rule(matches=matches) if matches else weighted_rule()
    found = route(kind, "web-route", source)
    config = {gatewayapi.FIELDS[kind]: "web-route"}
    router, writer, ctx = router_for(header_rollout(config), found)
    router.set_header_route(HEADER_ROUTE)
    as_stored = copy.deepcopy(stored(writer, kind, "web-route"))
    managed = as_stored["spec"]["rules"][1]
    del managed["name"]  # Gateway API before 1.2 has no rule names
    managed["backendRefs"][0]["weight"] = 1
    managed["matches"][0].update(defaults)
    writer.seed(RESOURCES[kind], as_stored)
    ctx.routed.put(RouterRef(kind, NS, "web-route"), as_stored)
    router.set_header_route(HEADER_ROUTE)
    assert len(writes(writer)) == 1
    router.remove_managed_routes()
    assert rules_of(writer, "web-route", kind) == [source]
    assert record_of_kind(writer, kind, "web-route") is None


HEADER_VALUE_CASES: list[tuple[str, str, Obj, str | None]] = [
    # (name, kind, the step's header value, the regular expression written; None: exact)
    ("HTTP prefix: anchored and quoted", "HTTPRoute", {"prefix": "v1.2"}, r"^v1\.2.*"),
    (
        "GRPC prefix: `<prefix>.*`, neither anchored nor quoted (getGRPCHeaderRouteRuleList)",
        "GRPCRoute",
        {"prefix": "v1.2"},
        "v1.2.*",
    ),
    ("HTTP regex as given", "HTTPRoute", {"regex": "x+"}, "x+"),
    ("GRPC regex as given", "GRPCRoute", {"regex": "^a|b$"}, "^a|b$"),
    ("HTTP exact", "HTTPRoute", {"exact": "1"}, None),
    ("GRPC exact", "GRPCRoute", {"exact": "1"}, None),
]


@pytest.mark.parametrize(
    ("kind", "value", "regex"),
    [pytest.param(*case[1:], id=case[0]) for case in HEADER_VALUE_CASES],
)
def test_header_match_types(kind: str, value: Obj, regex: str | None) -> None:
    header = SetHeaderRoute.from_dict(
        {"name": "canary-header", "match": [{"headerName": "a", "headerValue": value}]}
    )
    field = gatewayapi.FIELDS[kind]
    found = route(kind, "web-route", weighted_rule())
    router, writer, _ = router_for(header_rollout({field: "web-route"}), found)
    router.set_header_route(header)
    expected = (
        {"name": "a", "type": "Exact", "value": value["exact"]}
        if regex is None
        else {"name": "a", "type": "RegularExpression", "value": regex}
    )
    assert rules_of(writer, "web-route", kind)[1]["matches"] == [{"headers": [expected]}]


@pytest.mark.parametrize(("kind", "field", "own_match"), HEADER_KINDS)
def test_header_route_invalid_match_is_the_plugins_error(
    kind: str, field: str, own_match: Obj
) -> None:
    found = route(kind, "web-route", weighted_rule())
    router, writer, _ = router_for(header_rollout({field: "web-route"}), found)
    bad = SetHeaderRoute.from_dict({"name": "canary-header", "match": [{"headerName": "a"}]})
    with pytest.raises(TrafficRoutingError, match=r"^invalid header match type$"):
        router.set_header_route(bad)
    assert writes(writer) == []


def test_several_header_matches_in_one_rule() -> None:
    header = SetHeaderRoute.from_dict(
        {
            "name": "canary-header",
            "match": [
                {"headerName": "a", "headerValue": {"prefix": "v1.2"}},
                {"headerName": "b", "headerValue": {"regex": "x+"}},
            ],
        }
    )
    router, writer, _ = router_for(
        header_rollout(), route("HTTPRoute", "web-route", weighted_rule())
    )
    router.set_header_route(header)
    assert rules_of(writer)[1]["matches"] == [
        {
            "headers": [
                {"name": "a", "type": "RegularExpression", "value": r"^v1\.2.*"},
                {"name": "b", "type": "RegularExpression", "value": "x+"},
            ]
        }
    ]


@pytest.mark.parametrize(("kind", "field", "own_match"), HEADER_KINDS)
def test_header_route_replaced_then_removed_by_an_empty_match(
    kind: str, field: str, own_match: Obj
) -> None:
    found = route(kind, "web-route", weighted_rule())
    router, writer, _ = router_for(header_rollout({field: "web-route"}), found)
    router.set_header_route(HEADER_ROUTE)
    other = SetHeaderRoute.from_dict(
        {
            "name": "canary-header",
            "match": [{"headerName": "X-Canary", "headerValue": {"exact": "no"}}],
        }
    )
    router.set_header_route(other)
    assert len(rules_of(writer, "web-route", kind)) == 2
    assert rules_of(writer, "web-route", kind)[1]["matches"] == [
        {"headers": [{**HEADER, "value": "no"}]}
    ]
    router.set_header_route(SetHeaderRoute.from_dict({"name": "canary-header"}))
    assert rules_of(writer, "web-route", kind) == [weighted_rule()]
    assert record_of_kind(writer, kind, "web-route") is None


def test_header_routes_only_on_routes_with_use_header_routes() -> None:
    config = {"httpRoutes": [{"name": "a"}, {"name": "b", "useHeaderRoutes": True}]}
    routes = [route("HTTPRoute", n, weighted_rule()) for n in ("a", "b")]
    router, writer, _ = router_for(header_rollout(config), *routes)
    router.set_header_route(HEADER_ROUTE)
    assert [a.name for a in writes(writer)] == ["b"]


HOST = {"name": "Host", "type": "Exact", "value": "example.com"}
CANARY_GRPC_REF = {"group": "", "kind": "Service", "name": "canary", "port": 80}
GRPC_HEADER_CASES: list[tuple[str, Obj, list[Obj], list[Obj]]] = [
    # (name, the step's header value, the weighted rule's matches, the added rule's matches)
    (
        "plugin SetGRPCHeaderRoute: no matches, the header alone",
        {"exact": "yes"},
        [],
        [{"headers": [HEADER]}],
    ),
    (
        "plugin TestSetGRPCHeaderRouteWithMethodAndHeaders: method and headers kept",
        {"exact": "yes"},
        [{"method": GRPC_METHOD, "headers": [HOST]}],
        [{"method": GRPC_METHOD, "headers": [HOST, HEADER]}],
    ),
    (
        "prefix: `<prefix>.*`, neither anchored nor quoted (getGRPCHeaderRouteRuleList)",
        {"prefix": "v1.2"},
        [],
        [{"headers": [{"name": "X-Canary", "type": "RegularExpression", "value": "v1.2.*"}]}],
    ),
    (
        "regex as given",
        {"regex": "^a|b$"},
        [{"method": GRPC_METHOD}],
        [
            {
                "method": GRPC_METHOD,
                "headers": [{"name": "X-Canary", "type": "RegularExpression", "value": "^a|b$"}],
            }
        ],
    ),
]


@pytest.mark.parametrize(
    ("value", "matches", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in GRPC_HEADER_CASES],
)
def test_header_route_on_a_grpc_route(value: Obj, matches: list[Obj], expected: list[Obj]) -> None:
    step = SetHeaderRoute.from_dict(
        {"name": "canary-header", "match": [{"headerName": "X-Canary", "headerValue": value}]}
    )
    weighted = weighted_rule(matches=matches) if matches else weighted_rule()
    found = route("GRPCRoute", "g", weighted)
    router, writer, _ = router_for(header_rollout({"grpcRoute": "g"}), found)
    router.set_header_route(step)
    added = {"name": "canary-header", "matches": expected, "backendRefs": [CANARY_GRPC_REF]}
    assert rules_of(writer, "g", "GRPCRoute") == [weighted, added]
    # The same step again changes nothing (TestSetGRPCHeaderRouteNoDuplicateOnRepeatedCall).
    count = len(writes(writer))
    router.set_header_route(step)
    assert len(writes(writer)) == count


def test_grpc_header_routes_follow_use_header_routes_and_are_removed() -> None:
    """The plugin's SetHeaderRoute and RemoveManagedRoutes on GRPCRoutes: only those with
    useHeaderRoutes (grpcRoute has it); mirror routes stay on HTTPRoutes."""
    config = {"grpcRoutes": [{"name": "a"}, {"name": "b", "useHeaderRoutes": True}]}
    routes = [route("GRPCRoute", n, weighted_rule()) for n in ("a", "b")]
    obj = header_rollout(config)
    obj["spec"]["strategy"]["canary"]["trafficRouting"]["managedRoutes"].append({"name": "m"})
    router, writer, _ = router_for(obj, *routes)
    router.set_header_route(HEADER_ROUTE)
    assert [a.name for a in writes(writer)] == ["b"]
    assert len(rules_of(writer, "b", "GRPCRoute")) == 2
    router.set_mirror_route(mirror())
    assert [a.name for a in writes(writer)] == ["b"]
    router.remove_managed_routes()
    assert rules_of(writer, "b", "GRPCRoute") == [weighted_rule()]
    assert record_of_kind(writer, "GRPCRoute", "b") is None


def test_header_route_without_a_weighted_rule() -> None:
    only = route("HTTPRoute", "web-route", {"backendRefs": [backend("stable")]})
    router, _, _ = router_for(header_rollout(), only)
    with pytest.raises(TrafficRoutingError, match=r"^backendRef was not found in httpRoute$"):
        router.set_header_route(HEADER_ROUTE)


# -- mirror routes -------------------------------------------------------------------------------


def mirror(percentage: int | None = 50, *, match: bool = True) -> SetMirrorRoute:
    body: Obj = {"name": "mirror-route"}
    if match:
        body["match"] = [{"method": {"exact": "GET"}, "headers": {"X-M": {"prefix": "a"}}}]
    if percentage is not None:
        body["percentage"] = percentage
    return SetMirrorRoute.from_dict(body)


MIRROR_FILTER = {
    "type": "RequestMirror",
    "requestMirror": {
        "backendRef": {"group": "", "kind": "Service", "name": "canary", "port": 80},
        "percent": 50,
    },
}


def mirror_rollout(**config: Any) -> Obj:
    return gw_rollout(
        {"httpRoute": "web-route", **config}, managedRoutes=[{"name": "mirror-route"}]
    )


def test_mirror_route_as_a_filter_on_the_weighted_rules_then_removed() -> None:
    lone = {"backendRefs": [backend("other")]}
    found = route("HTTPRoute", "web-route", weighted_rule(), lone)
    router, writer, _ = router_for(mirror_rollout(), found)
    router.set_mirror_route(mirror())
    assert rules_of(writer) == [{**weighted_rule(), "filters": [MIRROR_FILTER]}, lone]
    assert record_of(writer) == {"web": {"mirror-route": {"mirrorFilter": True}}}
    router.set_mirror_route(mirror())
    router.set_weight(20)
    assert rules_of(writer)[0] == {**weighted_rule(20, 80), "filters": [MIRROR_FILTER]}
    router.set_mirror_route(mirror(match=False))
    assert rules_of(writer) == [weighted_rule(20, 80), lone]
    assert record_of(writer) is None
    assert len(writes(writer)) == 3


def test_mirror_filter_without_percentage_and_a_pruned_percent_is_not_rewritten() -> None:
    router, writer, _ = router_for(
        mirror_rollout(), route("HTTPRoute", "web-route", weighted_rule())
    )
    router.set_mirror_route(mirror(None))
    assert "percent" not in rules_of(writer)[0]["filters"][0]["requestMirror"]
    # A server that prunes `percent` (Gateway API before 1.2) stores the filter without it.
    router, writer, ctx = router_for(
        mirror_rollout(), route("HTTPRoute", "web-route", weighted_rule())
    )
    router.set_mirror_route(mirror(50))
    as_stored = copy.deepcopy(stored(writer, "HTTPRoute", "web-route"))
    del as_stored["spec"]["rules"][0]["filters"][0]["requestMirror"]["percent"]
    writer.seed(RESOURCES["HTTPRoute"], as_stored)
    ctx.routed.put(RouterRef("HTTPRoute", NS, "web-route"), as_stored)
    router.set_mirror_route(mirror(50))
    assert len(writes(writer)) == 1


def test_mirror_route_as_a_rule() -> None:
    router, writer, _ = router_for(
        mirror_rollout(mirrorMode="rule"), route("HTTPRoute", "web-route", weighted_rule())
    )
    router.set_mirror_route(mirror())
    rule = {
        "name": "mirror-route",
        "matches": [
            {
                "method": "GET",
                "headers": [{"name": "X-M", "type": "RegularExpression", "value": "a.*"}],
            }
        ],
        "filters": [MIRROR_FILTER],
        "backendRefs": [{"group": "", "kind": "Service", "name": "stable", "port": 80}],
    }
    assert rules_of(writer) == [weighted_rule(), rule]
    router.set_mirror_route(mirror(70))
    assert len(rules_of(writer)) == 2
    assert rules_of(writer)[1]["filters"][0]["requestMirror"]["percent"] == 70
    router.set_mirror_route(mirror(match=False))
    assert rules_of(writer) == [weighted_rule()]


# -- removing managed routes ---------------------------------------------------------------------


def test_remove_managed_routes_removes_every_recorded_rule_and_the_plugins_named_ones() -> None:
    obj = gw_rollout(
        {"httpRoute": "web-route"},
        managedRoutes=[{"name": "canary-header"}, {"name": "mirror-route"}, {"name": "legacy"}],
    )
    plugin_made = {"name": "legacy-1", "backendRefs": [backend("canary")]}
    users = {"name": "users", "backendRefs": [backend("canary")]}
    found = route("HTTPRoute", "web-route", weighted_rule(), plugin_made, users)
    router, writer, _ = router_for(obj, found)
    router.set_header_route(HEADER_ROUTE)
    router.set_mirror_route(mirror())
    assert len(rules_of(writer)) == 4
    router.remove_managed_routes()
    assert rules_of(writer) == [weighted_rule(), users]
    assert record_of(writer) is None
    router.remove_managed_routes()
    assert len(writes(writer)) == 3


def test_remove_managed_routes_keeps_other_rollouts_records() -> None:
    theirs = {"other": {"x": {"rules": ["0123456789abcdef"]}}}
    found = route("HTTPRoute", "web-route", weighted_rule())
    found["metadata"]["annotations"] = {gatewayapi.MANAGED_ANNOTATION: json.dumps(theirs)}
    router, writer, _ = router_for(header_rollout(), found)
    router.set_header_route(HEADER_ROUTE)
    assert set(record_of(writer)) == {"other", "web"}
    router.remove_managed_routes()
    assert record_of(writer) == theirs


def test_remove_managed_routes_skips_routes_that_are_gone() -> None:
    router, writer, _ = router_for(header_rollout())
    router.remove_managed_routes()
    assert writes(writer) == []


# -- validation ----------------------------------------------------------------------------------


def refs(*found: tuple[str, str, str], served: frozenset[str] | None = frozenset(RESOURCES)) -> Any:
    return ReferencedResources(
        services={
            "stable": {"metadata": {"name": "stable"}},
            "canary": {"metadata": {"name": "canary"}},
        },
        router_objects={RouterRef(*ref): {} for ref in found},
        served_router_kinds=served,
    )


def errors(obj: Obj, references: Any) -> list[str]:
    return [str(e) for e in reference_errors(Rollout.from_dict(obj), references)]


def test_validation_of_the_routes() -> None:
    base = "spec.strategy.canary.trafficRouting"
    obj = gw_rollout({"namespace": "gw"})
    assert errors(obj, refs()) == [
        f"{base}.plugins[argoproj-labs/gatewayAPI]: Required value: {gatewayapi.NO_ROUTES_MESSAGE}"
    ]
    obj = gw_rollout({"httpRoutes": [{"name": "a"}], "grpcRoute": "g"}, first_class=True)
    assert errors(obj, refs()) == [
        f'{base}.gatewayAPI.httpRoute: Invalid value: "a": '
        'httproutes.gateway.networking.k8s.io "a" not found'
    ]
    assert errors(obj, refs(("HTTPRoute", NS, "a"), served=frozenset({"HTTPRoute"}))) == [
        f'{base}.gatewayAPI.grpcRoute: Invalid value: "g": '
        "GRPCRoute (gateway.networking.k8s.io) is not served by the API server"
    ]
    assert errors(obj, refs(("HTTPRoute", NS, "a"), ("GRPCRoute", NS, "g"))) == []
    assert errors(obj, refs(served=None)) == []  # not looked up
    in_gw = gw_rollout({"httpRoute": "a", "namespace": "gw"})
    assert errors(in_gw, refs(("HTTPRoute", NS, "a"))) != []
    assert errors(in_gw, refs(("HTTPRoute", "gw", "a"))) == []


def selector_refused(path: str, field: str, kind: str, single: str) -> str:
    return (
        f"spec.strategy.canary.trafficRouting.{path}.{field}: Forbidden: {field} is not "
        f"supported by this controller: it does not discover {kind}s by label; name them in "
        f"{single} or {single}s"
    )


PLUGIN_PATH = f"plugins[{PLUGIN}]"
SELECTOR = {"matchLabels": {"app": "web"}}
SELECTOR_CASES: list[tuple[str, Obj, bool, list[str]]] = [
    # (name, config, first-class field, the spec errors)
    (
        "plugin TestHTTPRouteWithSelector: httpRouteSelector refused",
        {"httpRouteSelector": SELECTOR},
        False,
        [selector_refused(PLUGIN_PATH, "httpRouteSelector", "HTTPRoute", "httpRoute")],
    ),
    (
        "plugin TestCombinedSelectorAndExplicitRoute: refused beside a named route",
        {"httpRoute": "a", "httpRouteSelector": SELECTOR},
        False,
        [selector_refused(PLUGIN_PATH, "httpRouteSelector", "HTTPRoute", "httpRoute")],
    ),
    (
        "grpcRouteSelector refused",
        {"grpcRoute": "g", "grpcRouteSelector": SELECTOR},
        False,
        [selector_refused(PLUGIN_PATH, "grpcRouteSelector", "GRPCRoute", "grpcRoute")],
    ),
    (
        "tcpRouteSelector refused (first-class gatewayAPI)",
        {"tcpRoute": "t", "tcpRouteSelector": SELECTOR},
        True,
        [selector_refused("gatewayAPI", "tcpRouteSelector", "TCPRoute", "tcpRoute")],
    ),
    (
        "tlsRouteSelector refused",
        {"tlsRoute": "t", "tlsRouteSelector": {"matchExpressions": []}},
        False,
        [selector_refused(PLUGIN_PATH, "tlsRouteSelector", "TLSRoute", "tlsRoute")],
    ),
    (
        "an empty selector is refused too (the plugin would list the whole namespace)",
        {"httpRoute": "a", "httpRouteSelector": {}},
        True,
        [selector_refused("gatewayAPI", "httpRouteSelector", "HTTPRoute", "httpRoute")],
    ),
    (
        "several selectors: one error each",
        {"httpRouteSelector": SELECTOR, "tlsRouteSelector": SELECTOR},
        False,
        [
            selector_refused(PLUGIN_PATH, "httpRouteSelector", "HTTPRoute", "httpRoute"),
            selector_refused(PLUGIN_PATH, "tlsRouteSelector", "TLSRoute", "tlsRoute"),
        ],
    ),
    ("a null selector is no selector", {"httpRoute": "a", "httpRouteSelector": None}, False, []),
    (
        "the in-progress label's fields are applied, not refused",
        {
            "httpRoute": "a",
            "disableInProgressLabel": True,
            "inProgressLabelKey": "k",
            "inProgressLabelValue": "v",
        },
        True,
        [],
    ),
]


@pytest.mark.parametrize(
    ("config", "first_class", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in SELECTOR_CASES],
)
def test_route_selectors_are_refused(config: Obj, first_class: bool, expected: list[str]) -> None:
    obj = gw_rollout(config, first_class=first_class)
    assert [str(e) for e in spec_errors(Rollout.from_dict(obj))] == expected
    first = v.validate_raw(obj, refs(("HTTPRoute", NS, "a")))
    assert (str(first) if first else None) == (expected[0] if expected else None)


def test_header_and_mirror_steps_are_valid_with_the_gateway_api_router() -> None:
    obj = gw_rollout({"httpRoute": "a"}, first_class=True, managedRoutes=[{"name": "h"}])
    obj["spec"]["strategy"]["canary"]["steps"] = [
        {
            "setHeaderRoute": {
                "name": "h",
                "match": [{"headerName": "x", "headerValue": {"exact": "1"}}],
            }
        }
    ]
    assert spec_errors(Rollout.from_dict(obj)) == []


# -- which plugins are accepted ------------------------------------------------------------------


def routing_of(obj: Obj) -> Any:
    canary = Rollout.from_dict(obj).spec.strategy.canary  # type: ignore[union-attr]
    return canary.traffic_routing if canary else None


def test_the_gateway_api_plugin_is_native_beside_other_plugins() -> None:
    """argoproj-labs/gatewayAPI is driven natively whatever plugins the settings enable; any
    other plugin must be enabled (tests/unit/rollout/test_traffic_plugin.py)."""
    from rollout_workers.rollout.trafficrouting.plugins import TrafficRouterPluginRegistry

    assert unsupported_router(routing_of(gw_rollout({"httpRoute": "a"}))) == ""
    assert unsupported_router(routing_of(gw_rollout({"httpRoute": "a"}, first_class=True))) == ""
    other = rollout(
        strategy={"canary": {"trafficRouting": {"plugins": {PLUGIN: {}, "acme/router": {}}}}}
    )
    assert "plugin acme/router not configured in configmap" in unsupported_router(routing_of(other))
    enabled = TrafficRouterPluginRegistry(enabled=frozenset({"acme/router"}))
    assert unsupported_router(routing_of(other), enabled) == ""
    # An entry point named as the native plugin does not replace the native router.
    ctx = RolloutContext.build(
        obj=gw_rollout({"httpRoute": "a"}), rss=[], now=T0, writer=RecordingWriter()
    )
    ctx.traffic_plugins = TrafficRouterPluginRegistry(enabled=frozenset({PLUGIN}))
    assert [x.type for x in routers_for(ctx)] == ["GatewayAPI"]


# -- through the controller ----------------------------------------------------------------------


class ServedRoutes:
    """The API's routes as the controller reads them (every Gateway API kind served)."""

    def __init__(self, writer: RecordingWriter) -> None:
        self.writer = writer

    def served(self, kind: str) -> r.Resource | None:
        return RESOURCES.get(kind)

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        return self.writer.objects.get((resource.plural, namespace, name))


def test_the_controller_weights_the_plugins_route_and_puts_back_a_change() -> None:
    from rollout_workers.reconcile.handlers import Outcome
    from tests.unit.rollout.test_routing_reconcile import (
        controller_for,
        request,
        routed_rollout,
        routed_sim,
    )

    obj = routed_rollout({"setWeight": 20}, {"pause": {}})
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {"plugins": {PLUGIN: {"httpRoute": "rt"}}}
    sim = routed_sim(obj)
    rule = {"backendRefs": [backend("web-stable", 100), backend("web-canary", 0)]}
    sim.writer.seed(RESOURCES["HTTPRoute"], copy.deepcopy(route("HTTPRoute", "rt", rule)))
    controller = controller_for(sim.writer, router_objects=ServedRoutes(sim.writer))
    for _ in range(5):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    status = sim.rollout["status"]
    assert "InvalidSpec" not in [c["type"] for c in status["conditions"]]
    assert status["canary"]["weights"]["verified"] is True
    assert rules_of(sim.writer, "rt") == [rule]
    # Someone else edits the route: the next reconcile puts it back.
    stored(sim.writer, "HTTPRoute", "rt")["spec"]["rules"][0]["backendRefs"][1]["weight"] = 40
    controller.sync(request())
    assert rules_of(sim.writer, "rt") == [rule]


def test_the_controller_adds_the_experiments_service_to_the_route_then_removes_it() -> None:
    """The experiment's Services are read with the rollout's (by the names in its status), so
    the router can add them at their port."""
    from rollout_workers.reconcile.handlers import Outcome
    from tests.unit.rollout.test_routing_reconcile import (
        WriterReader,
        controller_for,
        request,
        routed_rollout,
        routed_sim,
        update,
    )

    experiment = {"templates": [{"name": "exp", "specRef": "canary", "weight": 10}]}
    obj = routed_rollout({"setWeight": 20}, {"experiment": experiment}, {"pause": {}})
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {"plugins": {PLUGIN: {"httpRoute": "rt"}}}
    sim = routed_sim(obj)
    rule = {"backendRefs": [backend("web-stable", 100), backend("web-canary", 0)]}
    sim.writer.seed(RESOURCES["HTTPRoute"], copy.deepcopy(route("HTTPRoute", "rt", rule)))
    controller = controller_for(
        sim.writer,
        router_objects=ServedRoutes(sim.writer),
        experiments=WriterReader(sim.writer, r.EXPERIMENTS),
    )

    def sync() -> None:
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR

    for _ in range(3):
        sync()
    update(sim)
    for _ in range(6):
        sync()
    [ex] = sim.of(r.EXPERIMENTS).values()
    assert sim.status["currentStepIndex"] == 1
    # The experiment controller's part: the Service, then the status naming it.
    sim.seed({"kind": "Service", **service("web-exp-svc", ("http", 8080), ("metrics", 9090))})
    ex["status"] = {
        "phase": "Running",
        "templateStatuses": [{"name": "exp", "serviceName": "web-exp-svc", "status": "Running"}],
    }
    sync()
    stable, canary = backend("web-stable", 70), backend("web-canary", 20)
    added = {**exp_ref("web-exp-svc", 10, 8080)}
    assert rules_of(sim.writer, "rt") == [{"backendRefs": [stable, canary, added]}]
    assert sim.status["canary"]["weights"]["additional"] == [
        {"weight": 10, "serviceName": "web-exp-svc"}
    ]
    ex["status"]["phase"] = "Successful"
    sync()
    assert rules_of(sim.writer, "rt")[0]["backendRefs"][2:] == []
