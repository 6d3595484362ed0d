"""The APISIX router, after argo-rollouts' rollout/trafficrouting/apisix/apisix_test.go: backend
weights of the named HTTP rules (TestSetWeight), its errors (TestSetWeight/...WithError...,
TestGetHttpRouteError, TestGetBackendsError, TestSetBackendWeightError), header routes as
ApisixRoutes of their own (TestSetHeaderRoute: created with the priority one up and the header
exprs, updated, deleted by a step without matches, refused when not the rollout's) and their
removal (TestRemoveManagedRoutes). Then reconciles through the one-sync fixture: the weight step
by step with a header route, abort puts the weight back and removes the header route, and a
change someone else made is put back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.api.rollout import HeaderRoutingMatch, SetHeaderRoute, StringMatch
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, apisix
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.routerrefs import RouterRef, router_refs
from tests.unit.rollout.onesync import NS, T0, OneSync
from tests.unit.rollout.test_controller import rollout
from tests.unit.rollout.test_routing_reconcile import V1, routed_rollout, routed_sim, update

Obj = dict[str, Any]
ROUTE = "mocks-apisix-route"
HEADER = "set-header"
RESOURCE = r.APISIXROUTES[0]
OWNER = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Rollout",
    "name": "web",
    "uid": "ro-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def backend(service: str, weight: int) -> Obj:
    return {"serviceName": service, "servicePort": 80, "weight": weight}


def rule(name: str = ROUTE, *backends: Obj, **extra: Any) -> Obj:
    return {
        "name": name,
        "match": {"paths": ["/*"], "methods": ["GET"]},
        "backends": list(
            backends or (backend("stable-rollout", 100), backend("canary-rollout", 0))
        ),
        **extra,
    }


def apisix_route(name: str = ROUTE, *rules: Obj, owned: bool = False, **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": NS, "resourceVersion": "5"}
    if owned:
        meta["ownerReferences"] = [dict(OWNER)]
    return {
        "apiVersion": "apisix.apache.org/v2",
        "kind": "ApisixRoute",
        "metadata": meta,
        "spec": spec or {"http": list(rules or (rule(),))},
    }


def apisix_rollout(
    stable: str = "stable-rollout",
    canary: str = "canary-rollout",
    rules: list[str] | None = None,
    managed: bool = True,
) -> Obj:
    route: Obj = {"name": ROUTE}
    if rules is not None:
        route["rules"] = rules
    routing: Obj = {"apisix": {"route": route}}
    if managed:
        routing["managedRoutes"] = [{"name": HEADER}]
    return rollout(
        strategy={
            "canary": {
                "stableService": stable,
                "canaryService": canary,
                "trafficRouting": routing,
                "steps": [{"setWeight": 30}, {"pause": {}}],
            }
        }
    )


def router_for(
    obj: Obj, *found: Obj
) -> tuple[apisix.ApisixRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    for route in found:
        writer.seed(RESOURCE, copy.deepcopy(route))
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(
            served={"ApisixRoute": RESOURCE},
            objects={RouterRef("ApisixRoute", NS, o["metadata"]["name"]): o for o in found},
        ),
    )
    [router] = routers_for(ctx)
    assert isinstance(router, apisix.ApisixRouter) and router.type == "Apisix"
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def header(*values: StringMatch | None) -> SetHeaderRoute:
    return SetHeaderRoute(
        name=HEADER,
        match=[HeaderRoutingMatch(header_name="header-name", header_value=v) for v in values],
    )


def expr(op: str, value: str) -> Obj:
    return {"subject": {"scope": "Header", "name": "header-name"}, "op": op, "value": value}


# -- weights -------------------------------------------------------------------------------------


def test_set_weight() -> None:
    """TestSetWeight/SetWeight: the rule named as the route, canary 30 and stable 70, in one
    merge patch of spec.http fenced by the resourceVersion read."""
    router, writer, ctx = router_for(apisix_rollout(), apisix_route())
    router.update_hash("a", "b")  # TestUpdateHash: nothing to do
    router.set_weight(30)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("patch", "apisixroutes", ROUTE)
    assert action.body == {
        "metadata": {"resourceVersion": "5"},
        "spec": {
            "http": [rule(ROUTE, backend("stable-rollout", 70), backend("canary-rollout", 30))]
        },
    }
    assert ctx.events == [] and router.verify_weight(30) is None
    router.set_weight(30)
    assert len(writes(writer)) == 1  # agrees now: nothing written


def test_set_weight_of_the_named_rules_only() -> None:
    other = rule("other")
    router, writer, _ = router_for(
        apisix_rollout(rules=["a", "b"]), apisix_route(ROUTE, rule("a"), other, rule("b"))
    )
    router.set_weight(10)
    http = writer.objects[("apisixroutes", NS, ROUTE)]["spec"]["http"]
    weighted = [backend("stable-rollout", 90), backend("canary-rollout", 10)]
    assert http == [rule("a", *weighted), other, rule("b", *weighted)]


@pytest.mark.parametrize(
    ("case", "obj", "found", "message"),
    [
        (
            "SetWeightWithError",
            apisix_rollout(),
            (),
            f'apisixroutes.apisix.apache.org "{ROUTE}" not found',
        ),
        (
            "SetWeightWithErrorManifest",
            apisix_rollout(),
            (apisix_route(other={}),),
            "spec.http was not found in Apisix Route manifest",
        ),
        (
            "SetWeightWithErrorStableName",
            apisix_rollout(stable="fake-stable-rollout"),
            (apisix_route(),),
            "apisix route fake-stable-rollout backend was not found",
        ),
        (
            "SetWeightWithErrorCanaryName",
            apisix_rollout(canary="fake-canary-rollout"),
            (apisix_route(),),
            "apisix route fake-canary-rollout backend was not found",
        ),
        (
            "TestGetHttpRouteError: not found",
            apisix_rollout(rules=["nope"]),
            (apisix_route(),),
            "Apisix http route rule nope not found",
        ),
        (
            "TestGetHttpRouteError: no name",
            apisix_rollout(),
            (apisix_route(http=[{"backends": []}]),),
            "Apisix http route rule name field not found",
        ),
        (
            "TestGetHttpRouteError: not a map",
            apisix_rollout(),
            (apisix_route(http=["x"]),),
            "Failed type assertion for Apisix http route",
        ),
        (
            "TestGetBackendsError",
            apisix_rollout(),
            (apisix_route(http=[{"name": ROUTE}]),),
            "Apisix http route backends not found",
        ),
        (
            "TestSetBackendWeightError",
            apisix_rollout(),
            (apisix_route(http=[{"name": ROUTE, "backends": [{"weight": 1}]}]),),
            "serviceName field was not found in backend",
        ),
    ],
)
def test_set_weight_errors(case: str, obj: Obj, found: tuple[Obj, ...], message: str) -> None:
    router, writer, _ = router_for(obj, *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(30)
    assert str(err.value) == message, case
    assert writes(writer) == []


def test_update_error_is_a_warning_event() -> None:
    """ApisixUpdateError."""

    class Failing(RecordingWriter):
        def patch(self, *args: Any, **kwargs: Any) -> Obj:
            raise RuntimeError("boom")

    router, _, ctx = router_for(apisix_rollout(), apisix_route())
    ctx.writer = Failing()
    with pytest.raises(RuntimeError):
        router.set_weight(30)
    [event] = ctx.events
    assert (event.reason, event.warning) == ("ApisixRouteUpdateError", True)
    assert event.message == f'Error updating apisix route "{ROUTE}": boom'


# -- header routes -------------------------------------------------------------------------------


def test_header_route_created_from_the_route() -> None:
    """SetHeaderRoutePriorityWithNew and SetHeaderRouteExprsWithNew: a copy of the route owned
    by the rollout, the canary at 100 and the stable removed, the priority one up, the exprs
    from the matches (exact, regex, prefix)."""
    route = apisix_route()
    route["metadata"]["labels"] = {"app": "web"}
    router, writer, _ = router_for(apisix_rollout(), route)
    router.set_header_route(
        header(StringMatch(exact="value"), StringMatch(regex="value"), StringMatch(prefix="value"))
    )
    [action] = writes(writer)
    assert (action.verb, action.name) == ("create", HEADER)
    assert action.body["metadata"] == {
        "name": HEADER,
        "namespace": NS,
        "labels": {"app": "web"},
        "ownerReferences": [OWNER],
    }
    assert action.body["apiVersion"] == "apisix.apache.org/v2"
    [created] = action.body["spec"]["http"]
    assert created["backends"] == [backend("canary-rollout", 100)]
    assert created["priority"] == 1
    assert created["match"] == {
        "paths": ["/*"],
        "methods": ["GET"],
        "exprs": [
            expr("Equal", "value"),
            expr("RegexMatch", "value"),
            expr("RegexMatch", "^value.*"),
        ],
    }
    # The route itself is left alone.
    assert writer.objects[("apisixroutes", NS, ROUTE)] == route


def test_header_route_updated_keeps_its_priority_and_is_put_back() -> None:
    """SetHeaderRoutePriority (existing: the priority stays) and SetHeaderRouteExprs."""
    existing = apisix_route(
        HEADER,
        rule(ROUTE, backend("canary-rollout", 100), priority=2),
        owned=True,
    )
    router, writer, _ = router_for(apisix_rollout(), apisix_route(), existing)
    router.set_header_route(header(StringMatch(exact="value")))
    [action] = writes(writer)
    assert (action.verb, action.name) == ("patch", HEADER)
    assert action.body["metadata"] == {"resourceVersion": "5"}
    [updated] = action.body["spec"]["http"]
    assert updated["priority"] == 2
    assert updated["match"]["exprs"] == [expr("Equal", "value")]


def test_header_route_without_matches() -> None:
    """SetHeaderRouteNilMatchWithNew: nothing to create; SetHeaderRouteNilMatch: deleted."""
    router, writer, _ = router_for(apisix_rollout(), apisix_route())
    router.set_header_route(SetHeaderRoute(name=HEADER))
    assert writes(writer) == []
    existing = apisix_route(HEADER, rule(ROUTE, backend("canary-rollout", 100)), owned=True)
    router, writer, ctx = router_for(apisix_rollout(), apisix_route(), existing)
    router.set_header_route(SetHeaderRoute(name=HEADER))
    assert [(a.verb, a.name) for a in writes(writer)] == [("delete", HEADER)]
    assert ctx.routed.get("ApisixRoute", NS, HEADER) is None


def test_header_route_errors() -> None:
    """SetHeaderGetRouteError (the route missing), SetHeaderDuplicateManagedRouteError (an
    ApisixRoute of the header route's name the rollout does not own)."""
    router, _, _ = router_for(apisix_rollout())
    with pytest.raises(TrafficRoutingError, match="not found"):
        router.set_header_route(header(StringMatch(exact="v")))
    foreign = apisix_route(HEADER)
    router, writer, _ = router_for(apisix_rollout(), apisix_route(), foreign)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_header_route(header(StringMatch(exact="v")))
    assert str(err.value) == "duplicate ApisixRoute [set-header] already exists"
    assert writes(writer) == []


def test_remove_managed_routes() -> None:
    """RemoveManagedRoutes: the owned ones deleted; RemoveManagedRoutesNotFound: skipped; a
    foreign one kept; RemoveManagedRoutesNilManagedRoutes: nothing."""
    owned = apisix_route(HEADER, rule(), owned=True)
    obj = apisix_rollout()
    obj["spec"]["strategy"]["canary"]["trafficRouting"]["managedRoutes"] = [
        {"name": HEADER},
        {"name": "gone"},
        {"name": "foreign"},
    ]
    router, writer, _ = router_for(obj, apisix_route(), owned, apisix_route("foreign"))
    router.remove_managed_routes()
    assert [(a.verb, a.name) for a in writes(writer)] == [("delete", HEADER)]
    router, writer, _ = router_for(apisix_rollout(managed=False), apisix_route(), owned)
    router.remove_managed_routes()
    assert writes(writer) == []


def test_refs_name_the_route_and_the_managed_routes() -> None:
    obj = apisix_rollout()
    assert router_refs(obj) == [
        RouterRef("ApisixRoute", NS, ROUTE),
        RouterRef("ApisixRoute", NS, HEADER),
    ]
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    assert unsupported_router(ctx.canary.traffic_routing) == ""


# -- through the one-sync fixture ----------------------------------------------------------------

HEADER_STEP = {
    "setHeaderRoute": {
        "name": HEADER,
        "match": [{"headerName": "x-canary", "headerValue": {"exact": "yes"}}],
    }
}


def apisix_sim(*steps: Obj) -> OneSync:
    obj = routed_rollout(*steps)
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "apisix": {"route": {"name": ROUTE}},
        "managedRoutes": [{"name": HEADER}],
    }
    sim = routed_sim(obj)
    sim.writer.seed(
        RESOURCE,
        apisix_route(ROUTE, rule(ROUTE, backend("web-stable", 100), backend("web-canary", 0))),
    )
    sim.settle()
    assert sim.rollout["status"]["stableRS"] == V1
    return sim


def weights(sim: OneSync) -> dict[str, int]:
    [only] = sim.writer.objects[("apisixroutes", NS, ROUTE)]["spec"]["http"]
    return {b["serviceName"]: b["weight"] for b in only["backends"]}


def header_route(sim: OneSync) -> Obj | None:
    return sim.writer.objects.get(("apisixroutes", NS, HEADER))


def test_weights_step_by_step_with_a_header_route_removed_at_the_end() -> None:
    sim = apisix_sim(
        {"setWeight": 20}, HEADER_STEP, {"pause": {}}, {"setWeight": 60}, {"pause": {}}
    )
    assert weights(sim) == {"web-stable": 100, "web-canary": 0} and header_route(sim) is None
    update(sim)
    sim.settle()
    assert weights(sim) == {"web-stable": 80, "web-canary": 20}
    assert sim.rollout["status"]["currentStepIndex"] == 2
    route = header_route(sim)
    assert route is not None
    [only] = route["spec"]["http"]
    assert only["backends"] == [backend("web-canary", 100)] and only["priority"] == 1
    assert only["match"]["exprs"] == [
        {"subject": {"scope": "Header", "name": "x-canary"}, "op": "Equal", "value": "yes"}
    ]
    sim.rollout["status"]["pauseConditions"] = None  # `rollouts promote`
    sim.settle()
    assert weights(sim) == {"web-stable": 40, "web-canary": 60}
    sim.rollout["status"]["promoteFull"] = True
    sim.settle()
    assert weights(sim) == {"web-stable": 100, "web-canary": 0}
    assert header_route(sim) is None
    assert sim.rollout["status"]["stableRS"] != V1


def test_abort_puts_the_weight_back_and_removes_the_header_route() -> None:
    sim = apisix_sim({"setWeight": 30}, HEADER_STEP, {"pause": {}})
    update(sim)
    sim.settle()
    assert weights(sim) == {"web-stable": 70, "web-canary": 30} and header_route(sim) is not None
    sim.rollout["status"]["abort"] = True
    verbs = sim.sync().verbs()
    assert f"delete apisixroutes/{HEADER}" in verbs and f"patch apisixroutes/{ROUTE}" in verbs
    assert weights(sim) == {"web-stable": 100, "web-canary": 0} and header_route(sim) is None


def test_a_weight_someone_else_changed_is_put_back() -> None:
    """The weighted route is corrected on every reconcile (a header route only while its step
    is the current one, as Argo sets it: test_header_route_updated_keeps_its_priority...)."""
    sim = apisix_sim({"setWeight": 30}, HEADER_STEP, {"pause": {}})
    update(sim)
    sim.settle()
    route = sim.writer.objects[("apisixroutes", NS, ROUTE)]
    route["spec"]["http"][0]["backends"][1]["weight"] = 90
    version = route["metadata"]["resourceVersion"]
    synced = sim.sync()
    assert synced.verbs() == [f"patch apisixroutes/{ROUTE}"]
    assert synced.actions[0].body["metadata"] == {"resourceVersion": version}
    assert weights(sim) == {"web-stable": 70, "web-canary": 30}
    assert sim.sync().actions == []
