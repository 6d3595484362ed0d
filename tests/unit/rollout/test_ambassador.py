"""The Ambassador router, after argo-rollouts' rollout/trafficrouting/ambassador/
ambassador_test.go: the canary Mapping created from the base Mapping with the canary Service and
the weight (TestReconciler_SetWeight: with and without a port, as an AmbassadorMapping), updated
to later weights, wound down and deleted at weight 0 (5 s after, here, instead of Argo's sleep),
its errors (the base Mapping missing or defining a weight, every Mapping's errors together), the
name kept within bounds, nothing for hashes, header and mirror routes or verification
(TestReconcilerSetHeaderRoute, TestReconcilerSetMirrorRoute, Type, VerifyWeight, UpdateHash), and
TestGetMappingService. Then Argo's reference checks (getAmbassadorMappings,
TestValidateAmbassadorMapping) and reconciles through the one-sync fixture: the weight step by
step and the canary Mapping gone 5 s after promotion, abort puts the weight back before the
canary is scaled down, someone else's edit put back, and the AmbassadorMapping kind through the
controller (TestGetMappingGVR: the kind spoken is the one the cluster serves)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from rollout_workers.api.rollout import Rollout, SetHeaderRoute, SetMirrorRoute
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import validation as v
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import (
    TrafficRoutingError,
    ambassador,
)
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.rollout.validation.references import ReferencedResources
from rollout_workers.routerrefs import RouterRef, canary_mapping_name, router_refs
from rollout_workers.timefmt import format_micro_time
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
BASE = "myapp-mapping"
CANARY = "myapp-mapping-canary"
V3, V2, PREVIEW = r.MAPPINGS
ZERO = ambassador.ZERO_SINCE_ANNOTATION


def mapping(
    name: str = BASE,
    *,
    service: str = "main-service:8080",
    weight: int | None = None,
    resource: r.Resource = V3,
    **meta: Any,
) -> Obj:
    """Argo's test Mapping (prefix, rewrite, service; a weight when given)."""
    spec: Obj = {"prefix": "/myapp/", "rewrite": "/myapp/", "service": service}
    if weight is not None:
        spec["weight"] = weight
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "5", **meta},
        "spec": spec,
    }


def canary_mapping(weight: int, **meta: Any) -> Obj:
    return mapping(CANARY, weight=weight, **meta)


def ambassador_rollout(*mappings: str, stable: str = "main-service") -> Obj:
    return rollout(
        strategy={
            "canary": {
                "stableService": stable,
                "canaryService": "canary-service",
                "trafficRouting": {"ambassador": {"mappings": list(mappings or [BASE])}},
                "steps": [{"setWeight": 30}, {"pause": {}}],
            }
        }
    )


def router_for(
    obj: Obj, *found: Obj, resource: r.Resource = V3, now: dt.datetime = T0
) -> tuple[ambassador.AmbassadorRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    for m in found:
        writer.seed(resource, copy.deepcopy(m))
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=now,
        writer=writer,
        routed=RouterObjects(
            served={"Mapping": resource},
            objects={RouterRef("Mapping", NS, m["metadata"]["name"]): m for m in found},
        ),
    )
    [router] = routers_for(ctx)
    assert isinstance(router, ambassador.AmbassadorRouter) and router.type == "Ambassador"
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def events(ctx: RolloutContext) -> list[tuple[str, str, bool]]:
    return [(e.reason, e.message, e.warning) for e in ctx.events]


# -- after ambassador_test.go ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "base", "resource", "service"),
    [
        (
            "will create canary mapping and set weight successfully",
            mapping(),
            V3,
            "canary-service:8080",
        ),
        (
            "will create canary ambassadormapping and set weight successfully",
            mapping(resource=PREVIEW),
            PREVIEW,
            "canary-service:8080",
        ),
        (
            "will create canary mapping with no service port",
            mapping(service="main-service"),
            V3,
            "canary-service",
        ),
        (
            "getambassador.io/v2, Argo's default",
            mapping(resource=V2),
            V2,
            "canary-service:8080",
        ),
    ],
)
def test_set_weight_creates_the_canary_mapping(
    case: str, base: Obj, resource: r.Resource, service: str
) -> None:
    router, writer, ctx = router_for(ambassador_rollout(), base, resource=resource)
    router.update_hash("a", "b")  # UpdateHash: nothing to do
    router.set_weight(13)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("create", resource.plural, CANARY), case
    assert action.body == {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": CANARY, "namespace": NS},
        "spec": {"prefix": "/myapp/", "rewrite": "/myapp/", "service": service, "weight": 13},
    }
    assert events(ctx) == [("CanaryMappingWeightUpdate", "Set canary mapping weight to 13", False)]
    assert ctx.routed.get("Mapping", NS, CANARY) is not None  # what the create returned


def test_the_canary_service_replaces_the_stable_one_only_once() -> None:
    """buildCanaryService: the first occurrence of the stable Service's name, so a namespaced
    service keeps its namespace."""
    base = mapping(service="main-service.default:8080")
    body = ambassador.build_canary_mapping(
        base, resource=V3, stable_service="main-service", canary_service="canary-service", weight=1
    )
    assert body["spec"]["service"] == "canary-service.default:8080"
    body = ambassador.build_canary_mapping(
        mapping(service="web-web"), resource=V3, stable_service="web", canary_service="c", weight=1
    )
    assert body["spec"]["service"] == "c-web"


def test_will_update_canary_mapping_according_to_provided_weight() -> None:
    router, writer, ctx = router_for(ambassador_rollout(), mapping(), canary_mapping(20))
    router.set_weight(13)
    [action] = writes(writer)
    assert (action.verb, action.name) == ("patch", CANARY)
    assert action.body == {"metadata": {"resourceVersion": "5"}, "spec": {"weight": 13}}
    assert writer.objects[("mappings", NS, CANARY)]["spec"]["service"] == "main-service:8080"
    assert ctx.events[0].message == "Set canary mapping weight to 13"
    router.set_weight(13)
    assert len(writes(writer)) == 1  # agrees now: nothing written


def test_will_cleanup_canary_mapping_if_current_weight_is_zero() -> None:
    """Argo: weight 0, 5 s of sleep, delete. Here: weight 0 with the time, requeued; deleted by
    the first reconcile 5 s later."""
    router, writer, ctx = router_for(ambassador_rollout(), mapping(), canary_mapping(20))
    router.set_weight(0)
    [action] = writes(writer)
    assert action.body == {
        "metadata": {"resourceVersion": "5", "annotations": {ZERO: format_micro_time(T0)}},
        "spec": {"weight": 0},
    }
    assert ctx.requeue_after == 5
    stored = writer.objects[("mappings", NS, CANARY)]
    for seconds, done in ((4.5, False), (5, True)):
        router, writer, ctx = router_for(
            ambassador_rollout(), mapping(), stored, now=T0 + dt.timedelta(seconds=seconds)
        )
        router.set_weight(0)
        if done:
            assert [(a.verb, a.name) for a in writes(writer)] == [("delete", CANARY)]
            assert ctx.routed.get("Mapping", NS, CANARY) is None and ctx.requeue_after is None
        else:
            assert writes(writer) == [] and ctx.requeue_after == pytest.approx(0.5)
        assert ctx.events == []


def test_a_canary_mapping_at_zero_without_the_time_gets_it_first() -> None:
    """Argo's test case's canary Mapping (weight 0, no time recorded): the time first."""
    router, writer, ctx = router_for(ambassador_rollout(), mapping(), canary_mapping(0))
    router.set_weight(0)
    [action] = writes(writer)
    assert action.body["metadata"]["annotations"] == {ZERO: format_micro_time(T0)}
    assert ctx.requeue_after == 5


def test_weight_back_up_before_the_deletion_clears_the_time() -> None:
    winding = canary_mapping(0, annotations={ZERO: format_micro_time(T0)})
    router, writer, _ = router_for(ambassador_rollout(), mapping(), winding)
    router.set_weight(20)
    [action] = writes(writer)
    assert action.body == {
        "metadata": {"resourceVersion": "5", "annotations": {ZERO: None}},
        "spec": {"weight": 20},
    }
    assert ZERO not in writer.objects[("mappings", NS, CANARY)]["metadata"]["annotations"]


def test_no_canary_mapping_at_weight_zero_is_nothing_to_do() -> None:
    router, writer, ctx = router_for(ambassador_rollout(), mapping())
    router.set_weight(0)
    assert writes(writer) == [] and ctx.events == [] and ctx.requeue_after is None


@pytest.mark.parametrize(
    ("case", "found", "message", "event"),
    [
        (
            "will return error if base mapping defines the weight",
            (mapping(weight=20),),
            'Ambassador mapping "myapp-mapping" can not define weight',
            (
                "AmbassadorMappingConfigError",
                'Ambassador mapping "myapp-mapping" can not define weight',
            ),
        ),
        (
            "will return error if base mapping not found",
            (),
            'mappings.getambassador.io "myapp-mapping" not found',
            ("AmbassadorMappingNotFound", 'Ambassador mapping "myapp-mapping" not found'),
        ),
    ],
)
def test_set_weight_errors(
    case: str, found: tuple[Obj, ...], message: str, event: tuple[str, str]
) -> None:
    router, writer, ctx = router_for(ambassador_rollout(), *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(20)
    assert str(err.value) == message, case
    assert writes(writer) == []
    assert events(ctx) == [(*event, True)]


def test_will_respect_kube_resource_name_size_when_creating_the_canary_mapping() -> None:
    provided = "very-long-mapping-name-" * 11  # 253 characters
    expected = provided[:246] + "-canary"
    assert canary_mapping_name(provided) == expected and len(expected) == 253
    router, writer, _ = router_for(ambassador_rollout(provided), mapping(provided))
    router.set_weight(20)
    [action] = writes(writer)
    assert action.name == expected == action.body["metadata"]["name"]


def test_multiple_base_mappings_each_get_a_canary_mapping() -> None:
    """will create multiple canary mappings when provided multiple base mappings (one event)."""
    names = ["base-mapping-01", "base-mapping-02", "base-mapping-03"]
    existing = mapping("base-mapping-02-canary", weight=5)
    router, writer, ctx = router_for(
        ambassador_rollout(*names), *(mapping(n) for n in names), existing
    )
    router.set_weight(13)
    assert [(a.verb, a.name) for a in writes(writer)] == [
        ("create", "base-mapping-01-canary"),
        ("patch", "base-mapping-02-canary"),
        ("create", "base-mapping-03-canary"),
    ]
    assert {
        name: writer.objects[("mappings", NS, f"{name}-canary")]["spec"]["weight"] for name in names
    } == dict.fromkeys(names, 13)
    assert [e.reason for e in ctx.events] == ["CanaryMappingWeightUpdate"]


def test_will_return_errors_from_all_mapping_creations() -> None:
    names = ["base-mapping-01", "base-mapping-02", "base-mapping-03"]
    router, writer, ctx = router_for(ambassador_rollout(*names), mapping("base-mapping-02"))
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(13)
    assert str(err.value) == (
        '2 errors found: [mappings.getambassador.io "base-mapping-01" not found]'
        '[mappings.getambassador.io "base-mapping-03" not found]'
    )
    # The one that could be made was made.
    assert [(a.verb, a.name) for a in writes(writer)] == [("create", "base-mapping-02-canary")]
    assert [e.reason for e in ctx.events] == [
        "AmbassadorMappingNotFound",
        "CanaryMappingWeightUpdate",
        "AmbassadorMappingNotFound",
    ]


class Failing(RecordingWriter):
    def create(self, *args: Any, **kwargs: Any) -> Obj:
        raise RuntimeError("boom")

    def patch(self, *args: Any, **kwargs: Any) -> Obj:
        raise RuntimeError("boom")

    def delete(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("case", "found", "weight", "event", "raises"),
    [
        (
            "CanaryMappingCreationError",
            (mapping(),),
            10,
            "Error creating canary mapping: boom",
            True,
        ),
        (
            "CanaryMappingUpdateError",
            (mapping(), canary_mapping(20)),
            10,
            f'Error updating canary mapping "{CANARY}": boom',
            True,
        ),
        (
            "CanaryMappingCleanupError",
            (mapping(), canary_mapping(0, annotations={ZERO: format_micro_time(T0)})),
            0,
            f'Error deleting canary mapping "{CANARY}": boom',
            False,  # as Argo: logged and recorded, the reconcile goes on
        ),
    ],
)
def test_write_errors_are_warning_events(
    case: str, found: tuple[Obj, ...], weight: int, event: str, raises: bool
) -> None:
    router, _, ctx = router_for(ambassador_rollout(), *found, now=T0 + dt.timedelta(seconds=6))
    ctx.writer = Failing()
    if raises:
        with pytest.raises(RuntimeError):
            router.set_weight(weight)
    else:
        router.set_weight(weight)
    warnings = [(e.reason, e.message) for e in ctx.events if e.warning]
    assert warnings == [(case, event)]


def test_no_header_or_mirror_routes_no_hashes_and_no_verification() -> None:
    """TestReconcilerSetHeaderRoute, TestReconcilerSetMirrorRoute, Type, VerifyWeight,
    UpdateHash."""
    router, writer, _ = router_for(ambassador_rollout(), mapping())
    router.set_header_route(SetHeaderRoute(name="set-header"))
    router.set_mirror_route(SetMirrorRoute(name="mirror-route"))
    router.remove_managed_routes()
    router.update_hash("", "")
    assert router.verify_weight(0) is None
    assert writes(writer) == [] and router.type == "Ambassador"


def test_get_mapping_service_and_weight() -> None:
    """TestGetMappingService: '' when there is none; GetMappingWeight: 0 unless an integer."""
    assert ambassador.mapping_service({"kind": "Deployment"}) == ""
    assert ambassador.mapping_weight({"spec": {"weight": 20}}) == 20
    assert ambassador.mapping_weight({"spec": {"weight": "20"}}) == 0
    assert ambassador.mapping_weight({"spec": {}}) == 0


def test_the_rollout_names_its_mappings_and_their_canaries_and_is_supported() -> None:
    obj = ambassador_rollout()
    assert router_refs(obj) == [RouterRef("Mapping", NS, BASE), RouterRef("Mapping", NS, CANARY)]
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    assert unsupported_router(ctx.canary.traffic_routing) == ""


def test_kind_not_served() -> None:
    ctx = RolloutContext.build(obj=ambassador_rollout(), rss=[], now=T0, writer=RecordingWriter())
    [router] = routers_for(ctx)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == "Mapping (getambassador.io) is not served by the API server"


# -- Argo's reference checks (getAmbassadorMappings, ValidateAmbassadorMapping) -------------------

MAPPINGS_PATH = "spec.strategy.canary.trafficRouting.ambassador.mappings"


def references(*found: Obj, served: frozenset[str] | None = frozenset({"Mapping"})) -> Any:
    return ReferencedResources(
        services={n: service(n) for n in ("main-service", "canary-service")},
        router_objects={RouterRef("Mapping", NS, m["metadata"]["name"]): m for m in found},
        served_router_kinds=served,
    )


@pytest.mark.parametrize(
    ("obj", "refs", "message"),
    [
        pytest.param(ambassador_rollout(), references(mapping()), None, id="valid"),
        pytest.param(
            ambassador_rollout(),
            references(),
            f'{MAPPINGS_PATH}: Invalid value: "{BASE}": mappings.getambassador.io "{BASE}" not '
            "found",
            id="not found",
        ),
        pytest.param(
            ambassador_rollout(),
            references(served=frozenset()),
            f'{MAPPINGS_PATH}: Invalid value: "{BASE}": mappings.getambassador.io "{BASE}" not '
            "found",
            id="kind not served: Argo's dynamic client reads NotFound",
        ),
        pytest.param(
            ambassador_rollout(),
            references(served=None),
            None,
            id="router objects not looked up",
        ),
        pytest.param(
            ambassador_rollout(),
            references(mapping(weight=20)),
            f'spec.weight: Invalid value: "{BASE}": Ambassador mapping "{BASE}" can not define '
            "weight",
            id="TestValidateAmbassadorMapping: the base defines a weight",
        ),
        pytest.param(
            ambassador_rollout(BASE, "other"),
            references(mapping(), mapping("other", weight=0)),
            None,
            id="TestValidateAmbassadorMapping: weight 0 is no weight",
        ),
    ],
)
def test_reference_checks(obj: Obj, refs: Any, message: str | None) -> None:
    error = v.validate(Rollout.from_dict(obj), refs)
    assert (None if error is None else str(error)) == message


def test_no_mappings() -> None:
    obj = ambassador_rollout()
    obj["spec"]["strategy"]["canary"]["trafficRouting"]["ambassador"]["mappings"] = []
    error = v.validate(Rollout.from_dict(obj), references())
    assert str(error) == f"{MAPPINGS_PATH}: Invalid value: null: must provide at least one mapping"


def test_the_not_found_message_names_the_kind_spoken() -> None:
    refs = ReferencedResources(
        services={n: service(n) for n in ("main-service", "canary-service")},
        served_router_kinds=frozenset({"Mapping"}),
        router_versions={"Mapping": PREVIEW},
    )
    error = v.validate(Rollout.from_dict(ambassador_rollout()), refs)
    assert str(error).endswith(f'ambassadormappings.x.getambassador.io "{BASE}" not found')


# -- through the one-sync fixture ----------------------------------------------------------------


def ambassador_sim(*steps: Obj, **canary: Any) -> OneSync:
    """A deployed rollout routing through the Mapping `web-mapping` to web-stable."""
    obj = routed_rollout(*steps, **canary)
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "ambassador": {"mappings": ["web-mapping"]}
    }
    sim = routed_sim(obj)
    base = mapping("web-mapping", service="web-stable:80")
    base["metadata"]["labels"] = {"app": "web"}
    sim.writer.seed(V3, base)
    sim.settle()
    assert sim.rollout["status"]["stableRS"] == V1
    assert canary_of(sim) is None  # never needed at weight 0
    return sim


def canary_of(sim: OneSync) -> Obj | None:
    return sim.writer.objects.get(("mappings", NS, "web-mapping-canary"))


def canary_weight(sim: OneSync) -> int | None:
    canary = canary_of(sim)
    return None if canary is None else int(canary["spec"]["weight"])


def test_weights_step_by_step_then_the_canary_mapping_goes() -> None:
    sim = ambassador_sim(
        {"setWeight": 20}, {"pause": {"duration": 10}}, {"setWeight": 60}, {"pause": {}}
    )
    update(sim)
    sim.settle()
    canary = canary_of(sim)
    assert canary is not None and canary_weight(sim) == 20
    assert canary["spec"]["service"] == "web-canary:80"
    assert canary["metadata"].get("labels") is None  # a copy of the spec only, as Argo's
    assert sim.rollout["status"]["canary"]["weights"]["canary"]["weight"] == 20
    assert "CanaryMappingWeightUpdate" in sim.reasons()
    sim.advance(11)
    sim.settle()
    assert canary_weight(sim) == 60
    assert sim.rollout["status"]["currentStepIndex"] == 3
    sim.rollout["status"]["promoteFull"] = True
    synced = sim.settle()
    assert canary_weight(sim) == 0 and sim.rollout["status"]["stableRS"] != V1
    assert synced[-1].requeue_after is not None and synced[-1].requeue_after <= 5
    sim.advance(3)
    assert sim.sync().actions == []  # not yet
    sim.advance(2)
    assert sim.sync().verbs() == ["delete mappings/web-mapping-canary"]
    assert canary_of(sim) is None
    assert sim.sync().actions == []
    # The user's Mapping is never written.
    assert all(a.name != "web-mapping" for a in sim.writer.actions)


def test_abort_puts_the_weight_back_before_the_canary_is_scaled_down() -> None:
    sim = ambassador_sim({"setWeight": 30}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert canary_weight(sim) == 30
    sim.rollout["status"]["abort"] = True
    start = len(sim.writer.actions)
    sim.sync()
    acts = [(a.verb, a.resource) for a in sim.writer.actions[start:] if a.resource != "events"]
    assert acts.index(("patch", "mappings")) < acts.index(("patch", "replicasets"))
    assert canary_weight(sim) == 0
    assert int(sim.rs(v2)["spec"]["replicas"]) > 0  # abortScaleDownDelaySeconds: 30 s
    sim.advance(5)
    sim.sync()
    assert canary_of(sim) is None
    sim.advance(26)
    sim.settle()
    assert int(sim.rs(v2)["spec"]["replicas"]) == 0 and canary_of(sim) is None


def test_someone_elses_edit_is_put_back() -> None:
    sim = ambassador_sim({"setWeight": 30}, {"pause": {}})
    update(sim)
    sim.settle()
    stored = canary_of(sim)
    assert stored is not None
    stored["spec"]["weight"] = 90
    version = stored["metadata"]["resourceVersion"]
    [body] = sim.sync().writes("mappings")
    assert body == {"metadata": {"resourceVersion": version}, "spec": {"weight": 30}}
    assert sim.sync().actions == []
    # Deleted by someone: created again.
    del sim.writer.objects[("mappings", NS, "web-mapping-canary")]
    assert sim.sync().verbs() == ["create mappings/web-mapping-canary"]
    assert canary_weight(sim) == 30


class ServedMappings:
    """The API's Mappings at one kind (the x.getambassador.io AmbassadorMapping)."""

    def __init__(self, writer: RecordingWriter, resource: r.Resource) -> None:
        self.writer, self.resource = writer, resource

    def served(self, kind: str) -> r.Resource | None:
        return self.resource if kind == "Mapping" else None

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        assert resource == self.resource
        return copy.deepcopy(self.writer.objects.get((resource.plural, namespace, name)))


def test_the_ambassador_mapping_kind_through_the_controller() -> None:
    """TestGetMappingGVR: the kind spoken is the one served (Argo: its flag's)."""
    obj = routed_rollout({"setWeight": 20}, {"pause": {}})
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "ambassador": {"mappings": ["web-mapping"]}
    }
    sim = routed_sim(obj)
    sim.writer.seed(PREVIEW, mapping("web-mapping", service="web-stable", resource=PREVIEW))
    controller = controller_for(sim.writer, router_objects=ServedMappings(sim.writer, PREVIEW))
    for _ in range(4):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert "InvalidSpec" not in [c["type"] for c in sim.rollout["status"]["conditions"]]
    update(sim)
    for _ in range(6):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    canary = sim.writer.objects[("ambassadormappings", NS, "web-mapping-canary")]
    assert canary["apiVersion"] == "x.getambassador.io/v3alpha1"
    assert canary["kind"] == "AmbassadorMapping"
    assert canary["spec"]["weight"] == 20 and canary["spec"]["service"] == "web-canary"


def test_a_missing_base_mapping_is_invalid_spec_through_the_controller() -> None:
    obj = routed_rollout({"setWeight": 20})
    obj["spec"]["strategy"]["canary"]["trafficRouting"] = {
        "ambassador": {"mappings": ["web-mapping"]}
    }
    sim = routed_sim(obj)
    controller = controller_for(sim.writer, router_objects=ServedMappings(sim.writer, V3))
    controller.sync(request())
    [condition] = [c for c in sim.rollout["status"]["conditions"] if c["type"] == "InvalidSpec"]
    assert condition["message"] == (
        f'The Rollout "web" is invalid: {MAPPINGS_PATH}: Invalid value: "web-mapping": '
        'mappings.getambassador.io "web-mapping" not found'
    )
