"""The SMI router, after argo-rollouts' rollout/trafficrouting/smi/smi_test.go: a TrafficSplit
created with Argo's defaults (named after the rollout, splitting the stable Service), patched to
the new weight, left alone when it agrees, refused when the rollout does not own it; for each
TrafficSplit version. Then a canary with the SMI router reconciled end to end through the
controller, which reads the TrafficSplit at the version the API serves."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.api.rollout import WeightDestination
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.reconcile.handlers import Outcome
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, smi
from rollout_workers.routerrefs import RouterRef
from tests.unit.rollout.onesync import NS, T0, OneSync, service
from tests.unit.rollout.test_controller import rollout
from tests.unit.rollout.test_routing_reconcile import controller_for, request, routed_sim

Obj = dict[str, Any]
BY_VERSION = {res.version: res for res in r.TRAFFICSPLITS}
VERSIONS = sorted(BY_VERSION)


def smi_rollout(**router: str) -> Obj:
    return rollout(
        replicas=10,
        strategy={
            "canary": {
                "stableService": "stable-service",
                "canaryService": "canary-service",
                "trafficRouting": {"smi": router},
                "steps": [{"setWeight": 10}, {"pause": {}}],
            }
        },
    )


def weight(version: str, value: int) -> int | str:
    """A backend weight as each version writes it (v1alpha1: a quantity)."""
    return str(value) if version == "v1alpha1" else value


def router_for(
    obj: Obj, version: str, *existing: Obj
) -> tuple[smi.SMIRouter, RecordingWriter, RolloutContext]:
    writer = RecordingWriter()
    resource = BY_VERSION[version]
    for split in existing:
        writer.seed(resource, split)
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        routed=RouterObjects(
            served={"TrafficSplit": resource},
            objects={RouterRef("TrafficSplit", NS, s["metadata"]["name"]): s for s in existing},
        ),
    )
    return smi.SMIRouter(ctx, ctx.canary.traffic_routing.smi), writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def existing_split(obj: Obj, version: str, name: str, canary_weight: int) -> Obj:
    split = smi.build_traffic_split(
        BY_VERSION[version],
        name=name,
        owner=obj,
        root_service="root-service",
        backends=smi.calculate_backends(
            version=version,
            canary_service="canary-service",
            stable_service="stable-service",
            weight=canary_weight,
        ),
    )
    split["metadata"].update(namespace=NS, resourceVersion="7")
    return split


@pytest.mark.parametrize("version", VERSIONS)
def test_create_new_traffic_split_with_argos_defaults(version: str) -> None:
    obj = smi_rollout()
    router, writer, ctx = router_for(obj, version)
    router.set_weight(10)
    [action] = writes(writer)
    assert (action.verb, action.resource, action.name) == ("create", "trafficsplits", "web")
    assert action.body["apiVersion"] == f"split.smi-spec.io/{version}"
    assert action.body["metadata"]["ownerReferences"][0]["uid"] == "ro-uid"
    assert action.body["spec"] == {
        "service": "stable-service",
        "backends": [
            {"service": "canary-service", "weight": weight(version, 10)},
            {"service": "stable-service", "weight": weight(version, 90)},
        ],
    }
    assert [e.reason for e in ctx.events] == ["TrafficSplitCreated"]
    assert ctx.events[0].message == "TrafficSplit `web` created"


@pytest.mark.parametrize("version", VERSIONS)
def test_create_with_root_service_and_traffic_split_name(version: str) -> None:
    obj = smi_rollout(rootService="root-service", trafficSplitName="traffic-split-name")
    router, writer, _ = router_for(obj, version)
    router.set_weight(10)
    [action] = writes(writer)
    assert action.name == "traffic-split-name"
    assert action.body["spec"]["service"] == "root-service"


@pytest.mark.parametrize("version", VERSIONS)
def test_patch_existing_traffic_split(version: str) -> None:
    obj = smi_rollout(rootService="root-service", trafficSplitName="traffic-split-name")
    router, writer, ctx = router_for(
        obj, version, existing_split(obj, version, "traffic-split-name", 10)
    )
    router.set_weight(50)
    [action] = writes(writer)
    assert action.verb == "patch"
    assert action.body == {
        "metadata": {"resourceVersion": "7"},
        "spec": {
            "backends": [
                {"service": "canary-service", "weight": weight(version, 50)},
                {"service": "stable-service", "weight": weight(version, 50)},
            ]
        },
    }
    assert [e.reason for e in ctx.events] == ["TrafficSplitModified"]


@pytest.mark.parametrize("version", VERSIONS)
def test_existing_traffic_split_that_agrees_is_not_written(version: str) -> None:
    obj = smi_rollout(rootService="root-service", trafficSplitName="traffic-split-name")
    router, writer, ctx = router_for(
        obj, version, existing_split(obj, version, "traffic-split-name", 10)
    )
    router.set_weight(10)
    assert writes(writer) == [] and ctx.events == []


@pytest.mark.parametrize("version", VERSIONS)
def test_rollout_does_not_own_traffic_split(version: str) -> None:
    obj = smi_rollout(rootService="root-service", trafficSplitName="traffic-split-name")
    split = existing_split(obj, version, "traffic-split-name", 10)
    del split["metadata"]["ownerReferences"]
    router, writer, _ = router_for(obj, version, split)
    with pytest.raises(TrafficRoutingError) as raised:
        router.set_weight(10)
    assert str(raised.value) == "Rollout does not own TrafficSplit `traffic-split-name`"
    assert writes(writer) == []


def test_additional_destinations_come_between_canary_and_stable() -> None:
    backends = smi.calculate_backends(
        version="v1alpha3",
        canary_service="canary",
        stable_service="stable",
        weight=20,
        additional=[WeightDestination(weight=10, service_name="exp")],
    )
    assert backends == [
        {"service": "canary", "weight": 20},
        {"service": "exp", "weight": 10},
        {"service": "stable", "weight": 70},
    ]


def test_no_traffic_split_version_served_is_an_error() -> None:
    obj = smi_rollout()
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    with pytest.raises(TrafficRoutingError, match="not served"):
        smi.SMIRouter(ctx, ctx.canary.traffic_routing.smi).set_weight(0)


# -- through the controller ----------------------------------------------------------------------


class ServedSplits:
    """The API's TrafficSplits as the controller reads them (at one served version)."""

    def __init__(self, writer: RecordingWriter, version: str | None) -> None:
        self.writer, self.version = writer, version
        self.reads = 0

    def served(self, kind: str) -> r.Resource | None:
        assert kind == "TrafficSplit"
        return BY_VERSION[self.version] if self.version else None

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        self.reads += 1
        return self.writer.objects.get((resource.plural, namespace, name))


def smi_sim(version: str | None) -> tuple[OneSync, ServedSplits]:
    sim = routed_sim(smi_rollout())
    sim.seed(service("stable-service"))
    sim.seed(service("canary-service"))
    return sim, ServedSplits(sim.writer, version)


def split_weights(sim: OneSync) -> list[int | str]:
    split = sim.writer.objects[("trafficsplits", NS, "web")]
    return [b["weight"] for b in split["spec"]["backends"]]


def test_the_controller_reads_the_split_and_puts_back_a_change() -> None:
    sim, splits = smi_sim("v1alpha2")
    controller = controller_for(sim.writer, router_objects=splits)
    for _ in range(5):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert split_weights(sim) == [0, 100] and splits.reads >= 5
    status = sim.rollout["status"]
    assert "InvalidSpec" not in [c["type"] for c in status["conditions"]]
    assert status["canary"]["weights"]["stable"]["serviceName"] == "stable-service"
    # Someone else edits the TrafficSplit: the next reconcile puts it back.
    split = sim.writer.objects[("trafficsplits", NS, "web")]
    split["spec"]["backends"][0]["weight"] = 40
    start = len(sim.writer.actions)
    controller.sync(request())
    assert [a.verb for a in sim.writer.actions[start:] if a.resource == "trafficsplits"] == [
        "patch"
    ]
    assert split_weights(sim) == [0, 100]


def test_without_a_served_traffic_split_the_reconcile_retries() -> None:
    sim, splits = smi_sim(None)
    controller = controller_for(sim.writer, router_objects=splits)
    outcomes = []
    for _ in range(3):
        sim.kubelet()
        outcomes.append(controller.sync(request()).outcome)
    assert Outcome.ERROR in outcomes and splits.reads == 0
