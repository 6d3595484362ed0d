"""Reconciles of a canary with the nginx router, in argo-rollouts' style: seed objects, run one
sync, assert the recorded API actions. The order matters: the weight moves to a step's setWeight
only in a reconcile after the canary's pods are up, and on abort it goes back to the stable
before the canary is scaled down (after abortScaleDownDelaySeconds)."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterable
from typing import Any

from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.reconcile.handlers import Outcome, SyncRequest
from rollout_workers.rollout.controller import INVALID_SPEC_REQUEUE, RolloutController
from rollout_workers.rollout.hashing import pod_template_hash
from tests.unit.rollout.onesync import NS, OneSync, service
from tests.unit.rollout.test_controller import TEMPLATE, rollout

Obj = dict[str, Any]
CANARY_INGRESS = "web-web-ing-canary"
WEIGHT = "nginx.ingress.kubernetes.io/canary-weight"


def ingress() -> Obj:
    backend = {"service": {"name": "web-stable", "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web-ing", "namespace": NS, "resourceVersion": "5"},
        "spec": {
            "rules": [
                {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
            ]
        },
    }


def routed_rollout(*steps: Obj, **canary: Any) -> Obj:
    return rollout(
        replicas=10,
        strategy={
            "canary": {
                "stableService": "web-stable",
                "canaryService": "web-canary",
                "trafficRouting": {"nginx": {"stableIngress": "web-ing"}},
                "steps": list(steps),
                **canary,
            }
        },
    )


def routed_sim(obj: Obj) -> OneSync:
    """The rollout with its Services and Ingress; pods come up when the rollout is let settle
    (or the kubelet is called)."""
    return OneSync(
        obj,
        [service("web-stable"), service("web-canary"), ingress()],
        owned_only=True,
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
    )


def weight(sim: OneSync) -> str:
    return str(sim.of(r.INGRESSES)[CANARY_INGRESS]["metadata"]["annotations"][WEIGHT])


def rs_replicas(sim: OneSync, pod_hash: str) -> int:
    return int(sim.rs(pod_hash)["spec"]["replicas"])


def update(sim: OneSync) -> str:
    """A new template (image web:2); returns its pod hash."""
    sim.set_image("web:2")
    return pod_template_hash(sim.rollout["spec"]["template"], None)


V1 = pod_template_hash(TEMPLATE, None)


def deployed(*steps: Obj, **canary: Any) -> OneSync:
    sim = routed_sim(routed_rollout(*steps, **canary))
    sim.settle()
    assert weight(sim) == "0"
    assert sim.rollout["status"]["stableRS"] == V1
    return sim


def test_scale_first_then_shift_the_weight() -> None:
    sim = deployed({"setWeight": 20}, {"pause": {}})
    v2 = update(sim)
    assert sim.sync().kinds() == ["patch-status rollouts"]  # the new template and steps recorded
    verbs = sim.sync().kinds()
    # The canary is created and scaled; its pods are not up, so the weight stays 0.
    assert "patch ingresses" not in verbs and verbs.count("patch replicasets") == 1
    assert rs_replicas(sim, v2) == 2 and weight(sim) == "0"
    sim.kubelet()
    verbs = sim.sync().kinds()
    # Pods available: the canary Service is pointed at them, then the weight moves.
    assert verbs.index("patch services") < verbs.index("patch ingresses")
    assert "patch replicasets" not in verbs
    assert weight(sim) == "20"
    weights = sim.rollout["status"]["canary"]["weights"]
    assert weights["canary"] == {"weight": 20, "podTemplateHash": v2, "serviceName": "web-canary"}
    assert weights["stable"] == {"weight": 80, "podTemplateHash": V1, "serviceName": "web-stable"}
    assert sim.rollout["status"]["currentStepIndex"] == 1
    assert rs_replicas(sim, V1) == 10  # the router keeps the stable fully scaled


def test_abort_shifts_the_weight_back_before_scaling_the_canary_down() -> None:
    sim = deployed({"setWeight": 20}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert weight(sim) == "20" and rs_replicas(sim, v2) == 2
    sim.rollout["status"]["abort"] = True
    start = len(sim.writer.actions)
    sim.sync()
    acts = [(a.verb, a.resource, a.body) for a in sim.writer.actions[start:]]
    ingress_at = next(i for i, a in enumerate(acts) if a[1] == "ingresses")
    rs_at = next(i for i, a in enumerate(acts) if a[1] == "replicasets")
    assert ingress_at < rs_at
    assert weight(sim) == "0"
    # The canary keeps its pods for abortScaleDownDelaySeconds (30 s by default).
    assert "spec" not in acts[rs_at][2] and rs_replicas(sim, v2) == 2
    assert sim.last is not None and sim.last.requeue_after == 30
    sim.now += dt.timedelta(seconds=10)
    sim.sync()
    assert rs_replicas(sim, v2) == 2
    sim.now += dt.timedelta(seconds=21)
    sim.sync()
    assert rs_replicas(sim, v2) == 0 and weight(sim) == "0"


def test_promotion_moves_the_stable_service_then_scales_the_old_stable_down_after_delay() -> None:
    sim = deployed({"setWeight": 50}, scaleDownDelaySeconds=10)
    v2 = update(sim)
    sim.settle()
    status = sim.rollout["status"]
    assert status["stableRS"] == v2
    assert weight(sim) == "0"
    assert sim.of(r.SERVICES)["web-stable"]["spec"]["selector"][r.POD_TEMPLATE_HASH_LABEL] == v2
    assert status["canary"]["weights"]["canary"]["weight"] == 0
    assert status["canary"]["weights"]["stable"] == {
        "weight": 100,
        "podTemplateHash": v2,
        "serviceName": "web-stable",
    }
    # The previous stable keeps its pods for scaleDownDelaySeconds, on a workqueue timer.
    assert rs_replicas(sim, V1) == 10
    sim.now += dt.timedelta(seconds=11)
    sim.settle()
    assert rs_replicas(sim, V1) == 0


def test_a_changed_canary_ingress_is_put_back() -> None:
    sim = deployed({"setWeight": 20}, {"pause": {}})
    sim.writer.objects[(r.INGRESSES.plural, NS, CANARY_INGRESS)]["metadata"]["annotations"][
        WEIGHT
    ] = "99"
    assert sim.sync().kinds() == ["patch ingresses"]
    assert weight(sim) == "0"


class WriterReader:
    """A cache lister over the recording writer's objects of one type (always up to date)."""

    def __init__(self, writer: RecordingWriter, resource: r.Resource) -> None:
        self.writer, self.plural = writer, resource.plural

    def get(self, key: str) -> Obj | None:
        namespace, name = key.split("/")
        found = self.writer.objects.get((self.plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def get_many(self, keys: Iterable[str]) -> list[Obj]:
        return [o for o in (self.get(k) for k in keys) if o is not None]

    def by_owner(self, uid: str) -> list[Obj]:
        return [
            copy.deepcopy(o)
            for (plural, _, _), o in self.writer.objects.items()
            if plural == self.plural
            and any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])
        ]


class NothingWritten:
    """The stale-cache guard of a cache that is never behind."""

    def stale(self, plural: str, items: dict[str, str]) -> list[str]:
        return []

    def stale_objects(self, plural: str, objs: list[Obj]) -> list[str]:
        return []

    def unseen(self, plural: str, keys: list[str], cached: set[str]) -> list[str]:
        return []

    def record_own(self, plural: str, key: str, resource_version: str) -> None:
        return None


class NoLease:
    def lost(self) -> bool:
        return False

    def check(self) -> None:
        return None


def controller_for(writer: RecordingWriter, **readers: Any) -> RolloutController:
    def reader(resource: r.Resource) -> WriterReader:
        return WriterReader(writer, resource)

    return RolloutController(
        rollouts=reader(r.ROLLOUTS),
        replicasets=reader(r.REPLICASETS),
        services=reader(r.SERVICES),
        ingresses=reader(r.INGRESSES),
        written=NothingWritten(),
        writer=writer,
        **readers,
    )


def request() -> SyncRequest:
    return SyncRequest("rollouts", ObjectKey(f"{NS}/web"), NoLease())


def test_a_missing_stable_ingress_is_invalid_spec_rechecked_slowly() -> None:
    sim = routed_sim(routed_rollout({"setWeight": 20}, {"pause": {}}))
    del sim.writer.objects[(r.INGRESSES.plural, NS, "web-ing")]
    controller = controller_for(sim.writer)

    result = controller.sync(request())

    assert (result.outcome, result.delay) == (Outcome.AFTER, INVALID_SPEC_REQUEUE)
    condition = next(c for c in sim.status_patch()["conditions"] if c["type"] == "InvalidSpec")
    assert condition["message"] == (
        'The Rollout "web" is invalid: spec.strategy.canary.trafficRouting.nginx.stableIngress: '
        'Invalid value: "web-ing": ingress.networking.k8s.io "web-ing" not found'
    )
    assert sim.of(r.REPLICASETS) == {} and sim.of(r.INGRESSES) == {}
    # Nothing changed: the next check writes nothing (no hot loop of status patches).
    start = len(sim.writer.actions)
    assert controller.sync(request()).delay == INVALID_SPEC_REQUEUE
    assert sim.writer.actions[start:] == []
    # The Ingress appears: the rollout is reconciled and the condition goes.
    sim.seed(ingress())
    for _ in range(2):
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert "InvalidSpec" not in [c["type"] for c in sim.rollout["status"]["conditions"]]
    assert len(sim.of(r.REPLICASETS)) == 1


def selector_of(sim: OneSync, name: str) -> str | None:
    return sim.of(r.SERVICES)[name]["spec"]["selector"].get(r.POD_TEMPLATE_HASH_LABEL)


def test_abort_points_the_canary_service_back_at_the_stable_with_the_traffic() -> None:
    sim = deployed({"setWeight": 20}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert selector_of(sim, "web-canary") == v2
    sim.rollout["status"]["abort"] = True
    sim.sync()
    assert weight(sim) == "0" and selector_of(sim, "web-canary") == V1
    # Once there it stays: the abort's reconciles do not switch it back and forth.
    assert "patch services" not in sim.sync().kinds()


def test_a_basic_canary_aborted_points_the_canary_service_at_the_stable() -> None:
    obj = routed_rollout({"setWeight": 20}, {"pause": {}})
    del obj["spec"]["strategy"]["canary"]["trafficRouting"]
    sim = routed_sim(obj)
    sim.settle()
    v2 = update(sim)
    sim.settle()
    assert selector_of(sim, "web-canary") == v2
    sim.rollout["status"]["abort"] = True
    sim.sync()
    assert selector_of(sim, "web-canary") == V1


def test_dynamic_rollback_to_the_stable_moves_the_traffic_as_the_stable_comes_up() -> None:
    """Argo's isDynamicallyRollingBackToStable: the template set back to the stable's in the
    middle of a dynamicStableScale update. The traffic stays weighted to the previous canary
    (and its Service on it) until the stable can carry it, never more than it already had."""
    sim = deployed({"setWeight": 50}, {"pause": {}}, dynamicStableScale=True)
    v2 = update(sim)
    sim.settle()
    assert weight(sim) == "50" and rs_replicas(sim, V1) == 5 and rs_replicas(sim, v2) == 5
    sim.rollout["spec"]["template"] = TEMPLATE
    sim.rollout["metadata"]["generation"] = 3
    for _ in range(3):
        sim.sync()
    status = sim.rollout["status"]
    assert status["stableRS"] == status["currentPodHash"] == V1
    # The stable is scaled back up; until its pods are available the previous canary keeps
    # its pods, its weight and the canary Service.
    assert rs_replicas(sim, V1) == 10 and rs_replicas(sim, v2) == 5
    assert weight(sim) == "50" and selector_of(sim, "web-canary") == v2
    assert status["canary"]["weights"]["canary"]["podTemplateHash"] == v2
    sim.settle()
    assert weight(sim) == "0" and selector_of(sim, "web-canary") == V1
    assert rs_replicas(sim, v2) == 0
