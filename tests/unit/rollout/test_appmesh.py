"""The App Mesh router, after argo-rollouts' rollout/trafficrouting/appmesh/appmesh_test.go: the
VirtualRouter the VirtualService names gets the canary and stable weights in each route type
(TestSetWeightForVsvcWithVrouter), only in the filtered routes
(TestSetWeightForRolloutWithRouteFilter), with Argo's errors for a missing VirtualService,
VirtualRouter or provider and for routes that are not well-formed (TestSetWeightWith...); the
VirtualNodes' pod selectors follow the hashes (TestUpdateHash...); no header or mirror routes.
Then Argo's reference checks (getReferencedAppMeshResources, TestValidateAppMeshResource) and
reconciles through the one-sync fixture: the weights step by step with the VirtualNodes on the
hashes, abort puts the weight back before the canary is scaled down, someone else's edit put
back, and a VirtualService that names no VirtualRouter fails the sync before anything is done."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.api.rollout import Rollout, SetHeaderRoute, SetMirrorRoute
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import validation as v
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, appmesh
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.rollout.validation.references import ReferencedResources
from rollout_workers.routerrefs import (
    RouterRef,
    dependent_router_refs,
    router_refs,
)
from rollout_workers.workqueue import Outcome
from tests.unit.rollout.onesync import NS, T0, OneSync, service
from tests.unit.rollout.test_controller import rollout
from tests.unit.rollout.test_routing_reconcile import (
    V1,
    controller_for,
    request,
    routed_rollout,
    routed_sim,
    update,
)

Obj = dict[str, Any]
VS, VR, VN = r.APPMESH_VIRTUALSERVICES[0], r.APPMESH_VIRTUALROUTERS[0], r.APPMESH_VIRTUALNODES[0]
VS_KIND = r.APPMESH_VIRTUAL_SERVICE
RESOURCES = {VS_KIND: VS, "VirtualRouter": VR, "VirtualNode": VN}
CANARY_VN, STABLE_VN = "mysvc-canary-vn", "mysvc-stable-vn"
HASH = r.POD_TEMPLATE_HASH_LABEL
MANAGED_BY = "argo-rollouts.argoproj.io/managed-by-rollouts"


def obj(resource: r.Resource, name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "5"},
        "spec": spec,
    }


def virtual_service(provider: Obj | None = None) -> Obj:
    """Argo's vsvcWithVrouter (or, given a provider, vsvcWithVnode)."""
    return obj(
        VS,
        "mysvc",
        {
            "awsName": "mysvc.default.svc.cluster.local",
            "provider": provider
            or {"virtualRouter": {"virtualRouterRef": {"name": "mysvc-vrouter"}}},
        },
    )


def targets(canary: int = 0, stable: int = 100) -> list[Obj]:
    return [
        {"virtualNodeRef": {"name": CANARY_VN}, "weight": canary},
        {"virtualNodeRef": {"name": STABLE_VN}, "weight": stable},
    ]


def route(route_type: str = "httpRoute", name: str = "primary", **weights: int) -> Obj:
    match = {"grpcRoute": {"methodName": "GetItem", "serviceName": "MySvc"}}.get(
        route_type, {"prefix": "/"}
    )
    rule: Obj = {"action": {"weightedTargets": targets(**weights)}}
    if route_type != "tcpRoute":
        rule["match"] = match
    return {"name": name, route_type: rule}


def virtual_router(*routes: Obj) -> Obj:
    """Argo's vrouterWith...Routes."""
    return obj(
        VR,
        "mysvc-vrouter",
        {
            "listeners": [{"portMapping": {"port": 8080, "protocol": "http"}}],
            "routes": list(routes or (route(),)),
        },
    )


def virtual_node(name: str, pod_hash: str | None = None) -> Obj:
    """Argo's baselineCanaryVnode / baselineStableVnode (createVnodeWithHash)."""
    labels = {"app": "mysvc-pod"}
    if pod_hash is not None:
        labels[HASH] = pod_hash
    return obj(
        VN,
        name,
        {
            "podSelector": {"matchLabels": labels},
            "listeners": [{"portMapping": {"port": 8080, "protocol": "http"}}],
            "serviceDiscovery": {"dns": {"hostname": "mysvc.default.svc.cluster.local"}},
        },
    )


def mesh_rollout(routes: list[str] | None = None) -> Obj:
    vs: Obj = {"name": "mysvc"}
    if routes is not None:
        vs["routes"] = routes
    return rollout(
        strategy={
            "canary": {
                "stableService": "stable",
                "canaryService": "canary",
                "trafficRouting": {
                    "appMesh": {
                        "virtualService": vs,
                        "virtualNodeGroup": {
                            "canaryVirtualNodeRef": {"name": CANARY_VN},
                            "stableVirtualNodeRef": {"name": STABLE_VN},
                        },
                    }
                },
                "steps": [{"setWeight": 30}, {"pause": {}}],
            }
        }
    )


def kind_of(o: Obj) -> str:
    kind = r.router_kind_of(o)
    assert kind is not None
    return kind


def router_for(
    rollout_obj: Obj, *found: Obj
) -> tuple[appmesh.AppMeshRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    for o in found:
        writer.seed(RESOURCES[kind_of(o)], copy.deepcopy(o))
    ctx = RolloutContext.build(
        obj=rollout_obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(
            served=dict(RESOURCES),
            objects={RouterRef(kind_of(o), NS, o["metadata"]["name"]): o for o in found},
        ),
    )
    [router] = routers_for(ctx)
    assert isinstance(router, appmesh.AppMeshRouter) and router.type == "AppMesh"
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def target_weights(routes: list[Obj], route_type: str = "httpRoute") -> list[dict[str, int]]:
    """assertSetWeightAction: each route's weights, by VirtualNode."""
    return [
        {
            t["virtualNodeRef"]["name"]: t["weight"]
            for t in x[route_type]["action"]["weightedTargets"]
        }
        for x in routes
    ]


# -- weights (SetWeight) ---------------------------------------------------------------------------


@pytest.mark.parametrize("route_type", ["httpRoute", "tcpRoute", "http2Route", "grpcRoute"])
@pytest.mark.parametrize("want_update", [True, False])
def test_set_weight_for_vsvc_with_vrouter(route_type: str, want_update: bool) -> None:
    """TestSetWeightForVsvcWithVrouter: 55 is written (fenced), 0 agrees with the router."""
    router, writer, ctx = router_for(
        mesh_rollout(), virtual_service(), virtual_router(route(route_type))
    )
    weight = 55 if want_update else 0
    router.set_weight(weight)
    if not want_update:
        assert writes(writer) == []
        return
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == (
        "patch",
        "virtualrouters",
        "mysvc-vrouter",
    )
    assert action.body["metadata"] == {"resourceVersion": "5"}
    assert target_weights(action.body["spec"]["routes"], route_type) == [
        {CANARY_VN: 55, STABLE_VN: 45}
    ]
    # The rest of the route is kept.
    written = action.body["spec"]["routes"][0]
    assert written == route(route_type, canary=55, stable=45)
    assert ctx.events == [] and router.verify_weight(55) is None


@pytest.mark.parametrize(
    ("case", "found", "message", "event"),
    [
        (
            "TestSetWeightWithMissingVsvc",
            (),
            "Virtual-service is missing",
            ("VirtualServiceNotFound", "VirtualService `mysvc` not found in namespace `default`"),
        ),
        (
            "TestSetWeightVsvcWithVnodeProvider",
            (virtual_service({"virtualNode": {"virtualNodeRef": {"name": "mysvc-vnode"}}}),),
            "Virtual-service is not associated with virtual-router",
            None,
        ),
        (
            "TestSetWeightForVsvcWithMissingVrouter",
            (virtual_service(),),
            "Virtual-router is missing",
            ("VirtualRouterNotFound", "VirtualRouter for `mysvc` not found in namespace `default`"),
        ),
    ],
)
def test_set_weight_missing_objects(
    case: str, found: tuple[Obj, ...], message: str, event: tuple[str, str] | None
) -> None:
    router, writer, ctx = router_for(mesh_rollout(), *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(50)
    assert str(err.value) == message, case
    assert writes(writer) == []
    assert [(e.reason, e.message) for e in ctx.events if e.warning] == ([event] if event else [])


VR_VALUE = 'Invalid value: "mysvc-vrouter": '


@pytest.mark.parametrize(
    ("case", "routes", "path", "detail"),
    [
        ("missing routes", None, "spec.routes", "No routes found"),
        (
            "route with malformed content",
            ["malformed-content"],
            "spec.routes[0]",
            "not well-formed",
        ),
        ("route with no name", [{"httpRoute": {}}], "spec.routes[0].name", "not well-formed"),
        (
            "route with bad route-type",
            [{"name": "primary", "badRoute": {}}],
            "spec.routes[0]",
            "not well-formed",
        ),
        (
            "route with no targets",
            [{"name": "primary", "httpRoute": {}}],
            "spec.routes[0].httpRoute.action.weightedTargets",
            "not well-formed",
        ),
        (
            "a target that is not an object",
            [{"name": "primary", "httpRoute": {"action": {"weightedTargets": ["x"]}}}],
            "spec.routes[0].httpRoute.action.weightedTargets[0]",
            "not well-formed",
        ),
        (
            "a target without a virtualNodeRef",
            [{"name": "primary", "httpRoute": {"action": {"weightedTargets": [{"weight": 1}]}}}],
            "spec.routes[0].httpRoute.action.weightedTargets[0].virtualNodeRef",
            "not well-formed",
        ),
        (
            "a target without a weight (Argo's toInt64 of nil)",
            [
                {
                    "name": "primary",
                    "tcpRoute": {
                        "action": {"weightedTargets": [{"virtualNodeRef": {"name": "x"}}]}
                    },
                }
            ],
            "spec.routes[0].tcpRoute.action.weightedTargets[0].weight",
            "not well-formed",
        ),
        (
            "a route type that is not an object",
            [{"name": "primary", "httpRoute": "x", "tcpRoute": {}}],
            "spec.routes[0]",
            "not well-formed",
        ),
    ],
)
def test_set_weight_with_invalid_routes(
    case: str, routes: list[Any] | None, path: str, detail: str
) -> None:
    """TestSetWeightWithInvalidRoutes: the field.Error's path; nothing written."""
    vr = virtual_router()
    if routes is None:
        del vr["spec"]["routes"]
    else:
        vr["spec"]["routes"] = routes
    router, writer, _ = router_for(mesh_rollout(), virtual_service(), vr)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(55)
    assert str(err.value) == f"{path}: {VR_VALUE}{detail}", case
    assert writes(writer) == []


def test_set_weight_with_update_virtual_router_error() -> None:
    """TestSetWeightWithUpdateVirtualRouterError: the write's error, as is."""

    class Failing(RecordingWriter):
        def patch(self, *args: Any, **kwargs: Any) -> Obj:
            raise RuntimeError("Failed to update virtual-router")

    router, _, ctx = router_for(mesh_rollout(), virtual_service(), virtual_router())
    ctx.writer = Failing()
    with pytest.raises(RuntimeError, match="Failed to update virtual-router"):
        router.set_weight(50)


@pytest.mark.parametrize(
    ("case", "routes_filter", "want_update"),
    [
        ("with matched route-filter", ["primary"], True),
        ("with mismatched route-filter", ["unknown"], False),
        ("with multiple route-filter", ["unknown", "primary"], True),
    ],
)
def test_set_weight_for_rollout_with_route_filter(
    case: str, routes_filter: list[str], want_update: bool
) -> None:
    router, writer, _ = router_for(mesh_rollout(routes_filter), virtual_service(), virtual_router())
    router.set_weight(55)
    assert len(writes(writer)) == (1 if want_update else 0), case


def test_set_weight_of_the_filtered_routes_only() -> None:
    """Routes not in `virtualService.routes` keep their weights; other targets are left alone,
    and so is a target in another namespace."""
    other = route(name="other", canary=10, stable=90)
    foreign = route(name="foreign")
    foreign["httpRoute"]["action"]["weightedTargets"][0]["virtualNodeRef"]["namespace"] = "x"
    foreign["httpRoute"]["action"]["weightedTargets"].append(
        {"virtualNodeRef": {"name": "third"}, "weight": 7}
    )
    vr = virtual_router(route(), other, foreign)
    router, writer, _ = router_for(mesh_rollout(["primary", "foreign"]), virtual_service(), vr)
    router.set_weight(30)
    routes = writer.objects[("virtualrouters", NS, "mysvc-vrouter")]["spec"]["routes"]
    assert target_weights(routes) == [
        {CANARY_VN: 30, STABLE_VN: 70},
        {CANARY_VN: 10, STABLE_VN: 90},
        {CANARY_VN: 0, STABLE_VN: 70, "third": 7},
    ]


def test_a_virtual_router_in_another_namespace() -> None:
    vs = virtual_service(
        {"virtualRouter": {"virtualRouterRef": {"name": "mysvc-vrouter", "namespace": "mesh"}}}
    )
    vr = virtual_router()
    vr["metadata"]["namespace"] = "mesh"
    vr["spec"]["routes"][0]["httpRoute"]["action"]["weightedTargets"] = [
        {"virtualNodeRef": {"name": CANARY_VN, "namespace": NS}, "weight": 0},
        {"virtualNodeRef": {"name": STABLE_VN, "namespace": NS}, "weight": 100},
    ]
    assert dependent_router_refs({RouterRef(VS_KIND, NS, "mysvc"): vs}) == [
        RouterRef("VirtualRouter", "mesh", "mysvc-vrouter")
    ]
    writer = RecordingWriter()
    writer.seed(VR, copy.deepcopy(vr))
    ctx = RolloutContext.build(
        obj=mesh_rollout(),
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(
            served=dict(RESOURCES),
            objects={
                RouterRef(VS_KIND, NS, "mysvc"): vs,
                RouterRef("VirtualRouter", "mesh", "mysvc-vrouter"): vr,
            },
        ),
    )
    [router] = routers_for(ctx)
    router.set_weight(40)
    [action] = writes(writer)
    assert (action.namespace, action.name) == ("mesh", "mysvc-vrouter")
    assert target_weights(action.body["spec"]["routes"]) == [{CANARY_VN: 40, STABLE_VN: 60}]


# -- hashes (UpdateHash) ---------------------------------------------------------------------------


def node_patch(pod_hash: str) -> Obj:
    return {
        "metadata": {"annotations": {MANAGED_BY: "web"}, "resourceVersion": "5"},
        "spec": {"podSelector": {"matchLabels": {HASH: pod_hash}}},
    }


@pytest.mark.parametrize(
    ("case", "new", "existing", "expected"),
    [
        (
            "with no existing hashes",
            ("canary-new", "stable-new"),
            (None, None),
            ("canary-new", "stable-new"),
        ),
        (
            "with different existing hashes",
            ("canary-new", "stable-new"),
            ("canary-old", "stable-old"),
            ("canary-new", "stable-new"),
        ),
        (
            "with existing hashes cleared",
            ("", ""),
            ("canary-old", "stable-old"),
            ("canary-hash", "stable-hash"),
        ),
        (
            "with canaryHash == stableHash",
            ("12345", "12345"),
            ("canary-old", "stable-old"),
            ("canary-hash", "12345"),
        ),
    ],
)
def test_update_hash(
    case: str,
    new: tuple[str, str],
    existing: tuple[str | None, str | None],
    expected: tuple[str, str],
) -> None:
    """TestUpdateHash: the stable VirtualNode, then the canary, each with the hash label (the
    other labels kept) and the managed-by annotation."""
    canary, stable = existing
    router, writer, _ = router_for(
        mesh_rollout(), virtual_node(CANARY_VN, canary), virtual_node(STABLE_VN, stable)
    )
    router.update_hash(*new)
    actions = writes(writer)
    assert [(a.verb, a.name) for a in actions] == [("patch", STABLE_VN), ("patch", CANARY_VN)], case
    assert [a.body for a in actions] == [node_patch(expected[1]), node_patch(expected[0])]
    stored = writer.objects[("virtualnodes", NS, CANARY_VN)]
    assert stored["spec"]["podSelector"]["matchLabels"] == {"app": "mysvc-pod", HASH: expected[0]}
    # Pointed already: nothing to write (Argo PUTs them at every reconcile).
    router, writer, _ = router_for(
        mesh_rollout(),
        writer.objects[("virtualnodes", NS, CANARY_VN)],
        writer.objects[("virtualnodes", NS, STABLE_VN)],
    )
    router.update_hash(*new)
    assert writes(writer) == []


def test_update_hash_with_virtual_node_missing_match_labels() -> None:
    canary, stable = virtual_node(CANARY_VN), virtual_node(STABLE_VN)
    canary["spec"]["podSelector"] = {}
    del stable["spec"]["podSelector"]
    router, writer, _ = router_for(mesh_rollout(), canary, stable)
    router.update_hash("canary-new", "stable-new")
    assert [a.body for a in writes(writer)] == [node_patch("stable-new"), node_patch("canary-new")]


@pytest.mark.parametrize(
    ("case", "found", "written"),
    [
        ("TestUpdateHashWhenGetStableVirtualNodeFails", (virtual_node(CANARY_VN),), []),
        ("TestUpdateHashWhenGetCanaryVirtualNodeFails", (virtual_node(STABLE_VN),), [STABLE_VN]),
    ],
)
def test_update_hash_when_a_virtual_node_is_missing(
    case: str, found: tuple[Obj, ...], written: list[str]
) -> None:
    router, writer, ctx = router_for(mesh_rollout(), *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.update_hash("canary-new", "stable-new")
    assert str(err.value) == "Virtual-node is missing", case
    assert [a.name for a in writes(writer)] == written
    missing = CANARY_VN if written else STABLE_VN
    [event] = ctx.events
    assert (event.reason, event.message, event.warning) == (
        "VirtualNodeNotFound",
        f"VirtualNode `{missing}` not found in namespace `default`",
        True,
    )


@pytest.mark.parametrize(
    ("case", "failing", "attempted"),
    [
        ("TestUpdateHashWhenUpdateStableVirtualNodeFails", STABLE_VN, [STABLE_VN]),
        ("TestUpdateHashWhenUpdateCanaryVirtualNodeFails", CANARY_VN, [STABLE_VN, CANARY_VN]),
    ],
)
def test_update_hash_when_a_write_fails(case: str, failing: str, attempted: list[str]) -> None:
    router, _, ctx = router_for(mesh_rollout(), virtual_node(CANARY_VN), virtual_node(STABLE_VN))
    seen: list[str] = []

    class Recording(RecordingWriter):
        def patch(self, resource: r.Resource, namespace: str, name: str, *a: Any, **k: Any) -> Obj:
            seen.append(name)
            if name == failing:
                raise RuntimeError("Failed to update virtual-node")
            return super().patch(resource, namespace, name, *a, **k)

    ctx.writer = Recording()
    with pytest.raises(RuntimeError, match="Failed to update virtual-node"):
        router.update_hash("canary-new", "stable-new")
    assert seen == attempted, case


def test_no_header_or_mirror_routes() -> None:
    """TestSetHeaderRoute, TestSetMirrorRoute: nothing done."""
    router, writer, _ = router_for(mesh_rollout())
    router.set_header_route(SetHeaderRoute(name="set-header"))
    router.set_mirror_route(SetMirrorRoute(name="mirror-route"))
    router.remove_managed_routes()
    assert writes(writer) == []


def test_the_rollout_names_its_objects_and_is_supported() -> None:
    o = mesh_rollout()
    assert router_refs(o) == [
        RouterRef("VirtualNode", NS, CANARY_VN),
        RouterRef("VirtualNode", NS, STABLE_VN),
        RouterRef(VS_KIND, NS, "mysvc"),
    ]
    ctx = RolloutContext.build(obj=o, rss=[], now=T0, writer=RecordingWriter())
    assert unsupported_router(ctx.canary.traffic_routing) == ""


# -- Argo's reference checks -----------------------------------------------------------------------

VS_PATH = "spec.strategy.canary.trafficRouting.appmesh.virtualService"
VR_PATH = 'spec.routes[0]: Invalid value: "mysvc-vrouter": '
TARGETS_PATH = 'spec.routes[0].httpRoute.action.weightedTargets: Invalid value: "mysvc-vrouter": '


def references(*found: Obj, served: frozenset[str] | None = None) -> ReferencedResources:
    return ReferencedResources(
        services={n: service(n) for n in ("stable", "canary")},
        router_objects={
            RouterRef(kind_of(o), o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in found
        },
        served_router_kinds=frozenset(RESOURCES) if served is None else served,
    )


THREE = [*targets(), {"virtualNodeRef": {"name": "target-3"}, "weight": 80}]


def with_routes(*routes: Any) -> Obj:
    vr = virtual_router()
    vr["spec"]["routes"] = list(routes)
    return vr


@pytest.mark.parametrize(
    ("case", "refs", "message"),
    [
        ("valid", references(virtual_service(), virtual_router()), None),
        *(
            (
                f"will succeed with valid appmesh virtual-router with {t}",
                references(virtual_service(), virtual_router(route(t))),
                None,
            )
            for t in ("httpRoute", "tcpRoute", "grpcRoute", "http2Route")
        ),
        (
            "router objects not looked up",
            ReferencedResources(services={n: service(n) for n in ("stable", "canary")}),
            None,
        ),
        (
            "the virtual service not found",
            references(),
            f'{VS_PATH}: Invalid value: "mysvc.default": '
            'virtualservices.appmesh.k8s.aws "mysvc" not found',
        ),
        (
            "the kind not served (Argo's dynamic client reads NotFound)",
            references(virtual_service(), virtual_router(), served=frozenset({"VirtualRouter"})),
            f'{VS_PATH}: Invalid value: "mysvc.default": '
            'virtualservices.appmesh.k8s.aws "mysvc" not found',
        ),
        (
            "the virtual router not found",
            references(virtual_service()),
            f'{VS_PATH}: Invalid value: "mysvc.default": '
            'virtualrouters.appmesh.k8s.aws "mysvc-vrouter" not found',
        ),
        (
            "a provider that is not a virtual router: not a spec error (the sync fails)",
            references(virtual_service({"virtualNode": {"virtualNodeRef": {"name": "n"}}})),
            None,
        ),
        (
            "will return error when appmesh virtual-router has no routes",
            references(virtual_service(), with_routes()),
            'spec.routes: Invalid value: "mysvc-vrouter": '
            "No routes defined for AppMesh virtual-router mysvc-vrouter",
        ),
        (
            "will return error with appmesh virtual-router with unsupported route type",
            references(virtual_service(), with_routes({"name": "primary", "badRouteType": None})),
            VR_PATH + "Error getting route details for AppMesh virtual-router mysvc-vrouter and "
            "route primary. Error: Route has unsupported route type",
        ),
        (
            "will return error when appmesh virtual-router has route that is not a struct",
            references(virtual_service(), with_routes("invalid-spec")),
            VR_PATH + "Invalid route was found for AppMesh virtual-router mysvc-vrouter at index 0",
        ),
        (
            "will return error when appmesh virtual-router has routes with no targets",
            references(
                virtual_service(),
                with_routes(
                    {"name": "primary", "httpRoute": {"match": {"prefix": "/"}, "action": None}}
                ),
            ),
            TARGETS_PATH + "Invalid route action found for AppMesh virtual-router "
            "mysvc-vrouter and route primary",
        ),
        (
            "will return error when appmesh virtual-router has routes with 1 target",
            references(
                virtual_service(),
                with_routes(
                    {"name": "primary", "httpRoute": {"action": {"weightedTargets": targets()[:1]}}}
                ),
            ),
            TARGETS_PATH + "Invalid number of weightedTargets (1) for AppMesh virtual-router "
            "mysvc-vrouter and route primary, expected 2",
        ),
        (
            "will return error when appmesh virtual-router has routes with 3 targets",
            references(
                virtual_service(),
                with_routes(
                    {"name": "primary", "httpRoute": {"action": {"weightedTargets": THREE}}}
                ),
            ),
            TARGETS_PATH + "Invalid number of weightedTargets (3) for AppMesh virtual-router "
            "mysvc-vrouter and route primary, expected 2",
        ),
        (
            "every route is checked, not only the filtered ones (a route without a name)",
            references(
                virtual_service(),
                with_routes(route(), {"tcpRoute": {"action": {"weightedTargets": []}}}),
            ),
            'spec.routes[1].tcpRoute.action.weightedTargets: Invalid value: "mysvc-vrouter": '
            "Invalid number of weightedTargets (0) for AppMesh virtual-router mysvc-vrouter and "
            "route %!s(<nil>), expected 2",
        ),
    ],
)
def test_reference_checks(case: str, refs: ReferencedResources, message: str | None) -> None:
    error = v.validate(Rollout.from_dict(mesh_rollout(["primary"])), refs)
    assert (None if error is None else str(error)) == message, case


def test_no_virtual_service_and_no_virtual_node_group() -> None:
    """Argo's "must provide virtual-service"; the virtualNodeGroup Argo's reconcile
    dereferences unchecked is required here."""
    o = mesh_rollout()
    del o["spec"]["strategy"]["canary"]["trafficRouting"]["appMesh"]["virtualService"]
    error = v.validate(Rollout.from_dict(o), references())
    assert str(error) == f"{VS_PATH}: Invalid value: null: must provide virtual-service"
    o = mesh_rollout()
    del o["spec"]["strategy"]["canary"]["trafficRouting"]["appMesh"]["virtualNodeGroup"]
    error = v.validate(Rollout.from_dict(o))
    assert str(error) == (
        "spec.strategy.canary.trafficRouting.appMesh.virtualNodeGroup: Required value"
    )


# -- through the one-sync fixture ----------------------------------------------------------------


def mesh_sim(*steps: Obj, provider: Obj | None = None) -> OneSync:
    """A deployed rollout routing through the VirtualService web-vs, its VirtualRouter web-vr
    and the VirtualNodes web-vn-canary and web-vn-stable."""
    o = routed_rollout(*steps)
    o["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "appMesh": {
            "virtualService": {"name": "web-vs"},
            "virtualNodeGroup": {
                "canaryVirtualNodeRef": {"name": "web-vn-canary"},
                "stableVirtualNodeRef": {"name": "web-vn-stable"},
            },
        }
    }
    sim = routed_sim(o)
    vs = obj(
        VS,
        "web-vs",
        {"provider": provider or {"virtualRouter": {"virtualRouterRef": {"name": "web-vr"}}}},
    )
    weighted = [
        {"virtualNodeRef": {"name": "web-vn-canary"}, "weight": 0},
        {"virtualNodeRef": {"name": "web-vn-stable"}, "weight": 100},
    ]
    vr = obj(
        VR,
        "web-vr",
        {
            "routes": [
                {
                    "name": "primary",
                    "httpRoute": {
                        "match": {"prefix": "/"},
                        "action": {"weightedTargets": weighted},
                    },
                }
            ]
        },
    )
    for o in (
        vs,
        vr,
        virtual_node("web-vn-canary", "canary-tbd"),
        virtual_node("web-vn-stable", "stable-tbd"),
    ):
        sim.seed(o)
    return sim


def deployed(*steps: Obj) -> OneSync:
    sim = mesh_sim(*steps)
    sim.settle()
    assert sim.rollout["status"]["stableRS"] == V1
    assert hashes(sim) == {"canary": "canary-hash", "stable": V1}
    return sim


def mesh_weight(sim: OneSync) -> int:
    vr = sim.writer.objects[("virtualrouters", NS, "web-vr")]
    [route_] = vr["spec"]["routes"]
    found = {
        t["virtualNodeRef"]["name"]: t["weight"]
        for t in route_["httpRoute"]["action"]["weightedTargets"]
    }
    assert found["web-vn-canary"] + found["web-vn-stable"] == 100
    return int(found["web-vn-canary"])


def hashes(sim: OneSync) -> dict[str, str]:
    return {
        role: sim.writer.objects[("virtualnodes", NS, f"web-vn-{role}")]["spec"]["podSelector"][
            "matchLabels"
        ][HASH]
        for role in ("canary", "stable")
    }


def test_weights_step_by_step_with_the_virtual_nodes_on_the_hashes() -> None:
    sim = deployed({"setWeight": 20}, {"pause": {"duration": 10}}, {"setWeight": 60}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert mesh_weight(sim) == 20
    assert hashes(sim) == {"canary": v2, "stable": V1}
    node = sim.writer.objects[("virtualnodes", NS, "web-vn-canary")]
    assert node["metadata"]["annotations"] == {MANAGED_BY: "web"}
    assert node["spec"]["podSelector"]["matchLabels"]["app"] == "mysvc-pod"  # kept
    assert sim.rollout["status"]["canary"]["weights"]["canary"]["weight"] == 20
    sim.advance(11)
    sim.settle()
    assert mesh_weight(sim) == 60
    sim.rollout["status"]["promoteFull"] = True
    sim.settle()
    assert mesh_weight(sim) == 0
    assert hashes(sim) == {"canary": "canary-hash", "stable": v2}
    assert sim.rollout["status"]["stableRS"] == v2


def test_abort_puts_the_weight_back_before_the_canary_is_scaled_down() -> None:
    sim = deployed({"setWeight": 30}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert mesh_weight(sim) == 30
    sim.rollout["status"]["abort"] = True
    start = len(sim.writer.actions)
    sim.sync()
    acts = [(a.verb, a.resource) for a in sim.writer.actions[start:] if a.resource != "events"]
    assert acts.index(("patch", "virtualrouters")) < acts.index(("patch", "replicasets"))
    assert mesh_weight(sim) == 0
    # Argo's UpdateHash: the canary VirtualNode stays on the new ReplicaSet's hash.
    assert hashes(sim) == {"canary": v2, "stable": V1}
    assert int(sim.rs(v2)["spec"]["replicas"]) > 0


def test_someone_elses_edit_is_put_back() -> None:
    sim = deployed({"setWeight": 30}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    vr = sim.writer.objects[("virtualrouters", NS, "web-vr")]
    vr["spec"]["routes"][0]["httpRoute"]["action"]["weightedTargets"][0]["weight"] = 90
    vr["spec"]["routes"][0]["httpRoute"]["action"]["weightedTargets"][1]["weight"] = 10
    node = sim.writer.objects[("virtualnodes", NS, "web-vn-canary")]
    node["spec"]["podSelector"]["matchLabels"][HASH] = "someone-elses"
    version = vr["metadata"]["resourceVersion"]
    synced = sim.sync()
    [body] = synced.writes("virtualrouters")
    assert body["metadata"] == {"resourceVersion": version}
    assert mesh_weight(sim) == 30 and hashes(sim) == {"canary": v2, "stable": V1}
    assert sim.sync().actions == []


def test_a_virtual_service_without_a_virtual_router_fails_the_sync_first() -> None:
    """Argo's GetVirtualRouterCRForVirtualService error, from its reference look-ups: the sync
    fails (retried) before anything is reconciled, with no condition."""
    sim = mesh_sim({"setWeight": 20}, provider={"virtualNode": {"virtualNodeRef": {"name": "n"}}})
    with pytest.raises(TrafficRoutingError, match="Virtual-service is not associated"):
        sim.sync()
    assert sim.writer.actions == []


class ServedAppMesh:
    """The API's App Mesh objects."""

    def __init__(self, writer: RecordingWriter) -> None:
        self.writer = writer

    def served(self, kind: str) -> r.Resource | None:
        return RESOURCES.get(kind)

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        return copy.deepcopy(self.writer.objects.get((resource.plural, namespace, name)))


def test_through_the_controller_the_virtual_router_is_read_after_its_virtual_service() -> None:
    sim = mesh_sim({"setWeight": 20}, {"pause": {}})
    controller = controller_for(sim.writer, router_objects=ServedAppMesh(sim.writer))
    for _ in range(4):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert "InvalidSpec" not in [c["type"] for c in sim.rollout["status"]["conditions"]]
    v2 = update(sim)
    for _ in range(6):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert mesh_weight(sim) == 20 and hashes(sim) == {"canary": v2, "stable": V1}
    # The VirtualService names no VirtualRouter: retried, no condition.
    sim.writer.objects[("virtualservices", NS, "web-vs")]["spec"]["provider"] = {}
    assert controller.sync(request()).outcome == Outcome.ERROR
    # The VirtualRouter gone: Argo's InvalidSpec.
    sim.writer.objects[("virtualservices", NS, "web-vs")]["spec"]["provider"] = {
        "virtualRouter": {"virtualRouterRef": {"name": "gone"}}
    }
    controller.sync(request())
    [condition] = [c for c in sim.rollout["status"]["conditions"] if c["type"] == "InvalidSpec"]
    assert condition["message"] == (
        f'The Rollout "web" is invalid: {VS_PATH}: Invalid value: "web-vs.default": '
        'virtualrouters.appmesh.k8s.aws "gone" not found'
    )
