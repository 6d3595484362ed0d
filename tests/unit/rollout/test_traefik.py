"""The Traefik router, after argo-rollouts' rollout/trafficrouting/traefik/traefik_test.go: the
weighted TraefikService's canary and stable entries set (TestSetWeight), its errors (no
`spec.weighted.services`, no canary or stable entry, an entry without a name, the object
missing), no header or mirror routes and no verification (TestSetHeaderRoute,
TestSetMirrorRoute, TestVerifyWeight). Then reconciles through the one-sync fixture: the weight
step by step, back to the stable on abort, a weight someone else changed put back, and the
older traefik.containo.us group."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.api.rollout import SetHeaderRoute, SetMirrorRoute
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.reconcile.handlers import Outcome
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, traefik
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.routerrefs import RouterRef, router_refs
from tests.unit.rollout.onesync import NS, T0, OneSync
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
NAME = "mocks-service"
TRAEFIK_IO, CONTAINO_US = r.TRAEFIKSERVICES


def traefik_service(
    *, stable: int = 100, canary: int = 0, resource: r.Resource = TRAEFIK_IO, **spec: Any
) -> Obj:
    """Argo's test TraefikService: the stable and canary entries, weighted."""
    return {
        "apiVersion": resource.api_version,
        "kind": "TraefikService",
        "metadata": {"name": NAME, "namespace": NS, "resourceVersion": "5"},
        "spec": spec
        or {
            "weighted": {
                "services": [
                    {"name": "stable-rollout", "weight": stable, "port": 80},
                    {"name": "canary-rollout", "weight": canary, "port": 80},
                ]
            }
        },
    }


def traefik_rollout(stable: str = "stable-rollout", canary: str = "canary-rollout") -> Obj:
    return rollout(
        strategy={
            "canary": {
                "stableService": stable,
                "canaryService": canary,
                "trafficRouting": {"traefik": {"weightedTraefikServiceName": NAME}},
                "steps": [{"setWeight": 30}, {"pause": {}}],
            }
        }
    )


def router_for(
    obj: Obj, *found: Obj, resource: r.Resource = TRAEFIK_IO
) -> tuple[traefik.TraefikRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    for ts in found:
        writer.seed(resource, copy.deepcopy(ts))
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(
            served={"TraefikService": resource},
            objects={RouterRef("TraefikService", NS, ts["metadata"]["name"]): ts for ts in found},
        ),
    )
    [router] = routers_for(ctx)
    assert isinstance(router, traefik.TraefikRouter) and router.type == "Traefik"
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def weights_of(writer: RecordingWriter, resource: r.Resource = TRAEFIK_IO) -> dict[str, int]:
    stored = writer.objects[(resource.plural, NS, NAME)]
    return {s["name"]: s["weight"] for s in stored["spec"]["weighted"]["services"]}


# -- after traefik_test.go -------------------------------------------------------------------------


def test_set_weight() -> None:
    """TestSetWeight/SetWeight: canary 30, stable 70, in one merge patch fenced by the
    resourceVersion read; the other fields of each entry kept."""
    router, writer, ctx = router_for(traefik_rollout(), traefik_service())
    router.update_hash("abc", "def")  # TestUpdateHash: nothing to do
    router.set_weight(30)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("patch", "traefikservices", NAME)
    assert action.body == {
        "metadata": {"resourceVersion": "5"},
        "spec": {
            "weighted": {
                "services": [
                    {"name": "stable-rollout", "weight": 70, "port": 80},
                    {"name": "canary-rollout", "weight": 30, "port": 80},
                ]
            }
        },
    }
    assert ctx.events == []


def test_set_weight_that_agrees_writes_nothing() -> None:
    router, writer, _ = router_for(traefik_rollout(), traefik_service(stable=70, canary=30))
    router.set_weight(30)
    assert writes(writer) == []


@pytest.mark.parametrize(
    ("case", "obj", "found", "message"),
    [
        (
            "SetWeightWithError",
            traefik_rollout(),
            (),
            f'traefikservices.traefik.io "{NAME}" not found',
        ),
        (
            "SetWeightWithErrorManifest",
            traefik_rollout(),
            (traefik_service(other={}),),
            "spec.weighted.services was not found in traefik service manifest",
        ),
        (
            "SetWeightWithErrorStableName",
            traefik_rollout(stable="fake-stable-rollout"),
            (traefik_service(),),
            "traefik stable service was not found",
        ),
        (
            "SetWeightWithErrorCanaryName",
            traefik_rollout(canary="fake-canary-rollout"),
            (traefik_service(),),
            "traefik canary service was not found",
        ),
        (
            "ErrorGetServiceFromMap",
            traefik_rollout(),
            (traefik_service(weighted={"services": [{"weight": 0}]}),),
            "name field was not found in service",
        ),
        (
            "ErrorGetServiceFromStruct",
            traefik_rollout(),
            (traefik_service(weighted={"services": ["stable-rollout"]}),),
            "Failed type assertion setting weight for traefik service",
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
    """TraefikUpdateError: the write fails, Argo's warning event names the TraefikService."""

    class Failing(RecordingWriter):
        def patch(self, *args: Any, **kwargs: Any) -> Obj:
            raise RuntimeError("boom")

    router, _, ctx = router_for(traefik_rollout(), traefik_service())
    ctx.writer = Failing()
    with pytest.raises(RuntimeError):
        router.set_weight(30)
    [event] = ctx.events
    assert (event.reason, event.warning) == ("TraefikServiceUpdateError", True)
    assert event.message == f'Error updating traefik service "{NAME}": boom'


def test_no_header_or_mirror_routes_and_no_verification() -> None:
    """TestSetHeaderRoute, TestSetMirrorRoute, TestVerifyWeight, TestType."""
    router, writer, _ = router_for(traefik_rollout(), traefik_service())
    router.set_header_route(SetHeaderRoute(name="set-header"))
    router.set_mirror_route(SetMirrorRoute(name="mirror-route"))
    router.remove_managed_routes()
    assert router.verify_weight(30) is None
    assert writes(writer) == [] and router.type == "Traefik"


def test_kind_not_served() -> None:
    obj = traefik_rollout()
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    [router] = routers_for(ctx)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == "TraefikService (traefik.io) is not served by the API server"


def test_the_rollout_names_its_traefik_service_and_is_supported() -> None:
    obj = traefik_rollout()
    assert router_refs(obj) == [RouterRef("TraefikService", NS, NAME)]
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    assert unsupported_router(ctx.canary.traffic_routing) == ""


# -- through the one-sync fixture ----------------------------------------------------------------


def traefik_sim(*steps: Obj, resource: r.Resource = TRAEFIK_IO) -> OneSync:
    """A deployed rollout routing through a TraefikService of web-stable and web-canary."""
    obj = routed_rollout(*steps)
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "traefik": {"weightedTraefikServiceName": NAME}
    }
    sim = routed_sim(obj)
    ts = traefik_service(resource=resource)
    ts["spec"]["weighted"]["services"] = [
        {"name": "web-stable", "weight": 100, "port": 80},
        {"name": "web-canary", "weight": 0, "port": 80},
    ]
    sim.writer.seed(resource, ts)
    sim.settle()
    assert sim.rollout["status"]["stableRS"] == V1
    return sim


def sim_weights(sim: OneSync, resource: r.Resource = TRAEFIK_IO) -> dict[str, int]:
    return weights_of(sim.writer, resource)


def test_weights_step_by_step_then_back_to_the_stable() -> None:
    sim = traefik_sim(
        {"setWeight": 20}, {"pause": {"duration": 10}}, {"setWeight": 60}, {"pause": {}}
    )
    assert sim_weights(sim) == {"web-stable": 100, "web-canary": 0}
    update(sim)
    sim.settle()
    assert sim_weights(sim) == {"web-stable": 80, "web-canary": 20}
    assert sim.rollout["status"]["canary"]["weights"]["canary"]["weight"] == 20
    assert sim.rollout["status"]["canary"]["weights"].get("verified") is None
    sim.advance(11)
    sim.settle()
    assert sim_weights(sim) == {"web-stable": 40, "web-canary": 60}
    assert sim.rollout["status"]["currentStepIndex"] == 3
    sim.rollout["status"]["promoteFull"] = True
    sim.settle()
    assert sim_weights(sim) == {"web-stable": 100, "web-canary": 0}
    assert sim.rollout["status"]["stableRS"] != V1


def test_abort_puts_the_weight_back_on_the_stable() -> None:
    sim = traefik_sim({"setWeight": 30}, {"pause": {}})
    update(sim)
    sim.settle()
    assert sim_weights(sim) == {"web-stable": 70, "web-canary": 30}
    sim.rollout["status"]["abort"] = True
    verbs = sim.sync().kinds()
    assert "patch traefikservices" in verbs
    assert sim_weights(sim) == {"web-stable": 100, "web-canary": 0}


def test_a_weight_someone_else_changed_is_put_back() -> None:
    sim = traefik_sim({"setWeight": 30}, {"pause": {}})
    update(sim)
    sim.settle()
    stored = sim.writer.objects[("traefikservices", NS, NAME)]
    stored["spec"]["weighted"]["services"][1]["weight"] = 90
    version = stored["metadata"]["resourceVersion"]
    synced = sim.sync()
    [body] = synced.writes("traefikservices")
    assert body["metadata"] == {"resourceVersion": version}
    assert sim_weights(sim) == {"web-stable": 70, "web-canary": 30}
    assert sim.sync().actions == []


class ServedTraefik:
    """The API's TraefikServices at one group (the older traefik.containo.us)."""

    def __init__(self, writer: RecordingWriter, resource: r.Resource) -> None:
        self.writer, self.resource = writer, resource

    def served(self, kind: str) -> r.Resource | None:
        return self.resource if kind == "TraefikService" else None

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        assert resource == self.resource
        return copy.deepcopy(self.writer.objects.get((resource.plural, namespace, name)))


def test_the_older_traefik_containo_us_group_through_the_controller() -> None:
    obj = routed_rollout({"setWeight": 20}, {"pause": {}})
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "traefik": {"weightedTraefikServiceName": NAME}
    }
    sim = routed_sim(obj)
    ts = traefik_service(resource=CONTAINO_US)
    ts["spec"]["weighted"]["services"] = [
        {"name": "web-stable", "weight": 50},
        {"name": "web-canary", "weight": 50},
    ]
    sim.writer.seed(CONTAINO_US, ts)
    controller = controller_for(sim.writer, router_objects=ServedTraefik(sim.writer, CONTAINO_US))
    for _ in range(5):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    status = sim.rollout["status"]
    assert "InvalidSpec" not in [c["type"] for c in status["conditions"]]
    assert sim_weights(sim, CONTAINO_US) == {"web-stable": 100, "web-canary": 0}
    assert ts["apiVersion"] == "traefik.containo.us/v1alpha1"
