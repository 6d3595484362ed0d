"""The canary strategy (rollout/canary.py), one sync at a time: cases ported from argo-rollouts'
rollout/canary_test.go, seeded as Argo's fixture seeds them (a rollout with its status, its
ReplicaSets with their replica counts) and run once in the one-sync fixture, with the kubelet
off so the seeded counts are what the sync sees.

`seeded(...)` follows Argo's `newCanaryRollout` and `bumpVersion`: each revision changes the
image, bumps the revision annotation and records its pod hash and steps hash in the status; a
ReplicaSet is `newReplicaSetWithStatus(rollout, replicas, available)`.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.api.analysis import AnalysisTemplateSpec
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import canary
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.hashing import pod_template_hash
from rollout_workers.timefmt import format_time
from tests.unit.rollout.onesync import NS, T0, OneSync, Synced, rollout

Obj = dict[str, Any]
HASH = "rollouts-pod-template-hash"


def revision(base: Obj, number: int) -> Obj:
    """The rollout at revision `number` (Argo's bumpVersion applied number-1 times)."""
    obj = copy.deepcopy(base)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = f"foo/bar{number}"
    obj["metadata"]["annotations"] = {"rollout.argoproj.io/revision": str(number)}
    status = obj.setdefault("status", {})
    status["currentPodHash"] = pod_template_hash(obj["spec"]["template"], None)
    ctx = RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter())
    status["currentStepHash"] = canary.current_steps_hash(ctx)
    status["observedGeneration"] = "1"
    return obj


def replica_set(obj: Obj, replicas: int, available: int, *, seconds: int = 0) -> Obj:
    """Argo's newReplicaSetWithStatus: the ReplicaSet of `obj`'s template."""
    pod_hash = pod_template_hash(obj["spec"]["template"], None)
    labels = {**obj["spec"]["template"]["metadata"]["labels"], HASH: pod_hash}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"web-{pod_hash}",
            "namespace": NS,
            "uid": f"uid-{pod_hash}",
            "labels": labels,
            "resourceVersion": "5",
            "creationTimestamp": format_time(T0 + dt.timedelta(seconds=seconds)),
            "annotations": {
                "rollout.argoproj.io/revision": obj["metadata"]["annotations"][
                    "rollout.argoproj.io/revision"
                ],
                "rollout.argoproj.io/desired-replicas": str(obj["spec"]["replicas"]),
            },
            "ownerReferences": [
                {"kind": "Rollout", "name": "web", "uid": "web-uid", "controller": True}
            ],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {**obj["spec"]["template"], "metadata": {"labels": labels}},
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": available,
            "availableReplicas": available,
            "observedGeneration": 1,
        },
    }


def base(
    replicas: int, steps: list[Obj] | None, *, surge: int | str, unavailable: int | str
) -> Obj:
    """Argo's newCanaryRollout."""
    strategy: Obj = {"maxSurge": surge, "maxUnavailable": unavailable}
    if steps is not None:
        strategy["steps"] = steps
    return rollout(strategy={"canary": strategy}, replicas=replicas)


def scaled(synced: Synced) -> dict[str, int]:
    """ReplicaSet name -> the replicas each write of this sync gave it."""
    return {
        a.name: a.body["spec"]["replicas"]
        for a in synced.actions
        if a.resource == "replicasets" and "replicas" in (a.body.get("spec") or {})
    }


def short(name: str) -> str:
    return name.removeprefix("web-")


@dataclass
class Case:
    """Revisions 1..N of a rollout; the ReplicaSets seeded for some of them; which one is
    stable; the rollout synced is the last revision."""

    replicas: int
    steps: list[Obj] | None
    surge: int | str
    unavailable: int | str
    seeded: list[tuple[int, int, int]]  # (revision, replicas, available)
    revisions: int = 2
    stable: int = 1
    status: Obj = field(default_factory=dict)
    expected: dict[int, int] = field(default_factory=dict)  # revision -> replicas written
    created: int | None = None  # the revision whose ReplicaSet this sync creates


CASES = {
    "TestCanaryRolloutCreateNewReplicaWithCorrectWeight": Case(
        10, [{"setWeight": 10}], 1, 0, seeded=[(1, 10, 10)], created=2, expected={2: 1}
    ),
    "TestCanaryRolloutScaleUpNewReplicaWithCorrectWeight": Case(
        5, [{"setWeight": 40}], 0, 1, seeded=[(1, 3, 3), (2, 1, 1)], expected={2: 2}
    ),
    "TestCanaryRolloutScaleDownStableToMatchWeight": Case(
        10, [{"setWeight": 10}], 0, 1, seeded=[(1, 10, 10), (2, 0, 0)], expected={1: 9}
    ),
    "TestCanaryRolloutScaleDownOldRs": Case(
        10,
        [{"setWeight": 10}],
        1,
        0,
        seeded=[(1, 9, 9), (2, 1, 1), (3, 1, 1)],
        revisions=3,
        expected={2: 0},
    ),
    "TestCanaryRolloutScaleDownOldRsDontScaleDownTooMuch": Case(
        4,
        None,
        1,
        0,
        seeded=[(1, 5, 5), (2, 5, 5), (3, 5, 0)],
        revisions=3,
        stable=3,
        # Argo's test names its two update actions rs1 and rs2, but they come newest first:
        # revision 2 goes to 0 and revision 1 gives one pod.
        expected={2: 0, 1: 4},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_replica_counts(case: Case) -> None:
    first = base(case.replicas, case.steps, surge=case.surge, unavailable=case.unavailable)
    versions = {n: revision(first, n) for n in range(1, case.revisions + 1)}
    obj = versions[case.revisions]
    obj["status"]["stableRS"] = versions[case.stable]["status"]["currentPodHash"]
    obj["status"].update(case.status)
    rss = [
        replica_set(versions[n], replicas, available, seconds=n)
        for n, replicas, available in case.seeded
    ]
    sim = OneSync(obj, rss, kubelet_enabled=False)
    synced = sim.sync()
    names = {n: replica_set(versions[n], 0, 0)["metadata"]["name"] for n in versions}
    assert scaled(synced) == {names[n]: replicas for n, replicas in case.expected.items()} | (
        {names[case.created]: case.expected[case.created]} if case.created else {}
    )
    if case.created:
        (created,) = [a for a in synced.actions if a.verb == "create"]
        assert created.name == names[case.created] and created.body["spec"]["replicas"] == 0
        # Created at 0, then scaled (Argo's create then update); the rollout says so.
        assert (
            "NewReplicaSetCreated",
            f"Created ReplicaSet {names[case.created]} (revision {case.created})",
        ) in [(e.reason, e.message) for e in synced.events]
        progressing = next(c for c in sim.status["conditions"] if c["type"] == "Progressing")
        assert progressing["message"] == f'ReplicaSet "{names[case.created]}" is progressing.'
    old_scaled_down = [
        a.body for a in synced.actions if a.verb == "patch" and a.body["spec"].get("replicas") == 0
    ]
    for body in old_scaled_down:  # the desired-replicas annotation is refreshed with the scale
        assert body["metadata"]["annotations"]["rollout.argoproj.io/desired-replicas"] == str(
            case.replicas
        )


def paused_at(steps: list[Obj], index: int, *, user_resumed: bool) -> OneSync:
    """Revision 2 at step `index`, paused there by the controller (or resumed by a user:
    the condition gone, controllerPause still true)."""
    first = base(10, steps, surge=1, unavailable=0)
    one, two = revision(first, 1), revision(first, 2)
    two["status"].update(
        stableRS=one["status"]["currentPodHash"],
        currentStepIndex=index,
        controllerPause=True,
        pauseConditions=[]
        if user_resumed
        else [{"reason": "CanaryPauseStep", "startTime": format_time(T0)}],
    )
    return OneSync(two, [replica_set(one, 9, 9), replica_set(two, 1, 1, seconds=2)])


STEPS = [{"setWeight": 10}, {"pause": {}}, {"setWeight": 20}]


def test_canary_rollout_no_progress_while_paused() -> None:
    """TestCanaryRolloutNoProgressWhilePaused: a paused rollout writes nothing new."""
    sim = paused_at(STEPS, 1, user_resumed=False)
    synced = sim.sync()
    assert scaled(synced) == {}
    assert sim.status["currentStepIndex"] == 1


def test_canary_rollout_increment_step_after_unpaused() -> None:
    """TestCanaryRolloutIncrementStepAfterUnPaused: once a user removed the pause condition,
    the step completes: the index moves on, with Argo's RolloutStepCompleted event."""
    sim = paused_at(STEPS, 1, user_resumed=True)
    synced = sim.sync()
    assert sim.status["currentStepIndex"] == 2
    assert not sim.status.get("pauseConditions")
    assert [(e.reason, e.message) for e in synced.events if e.reason == "RolloutStepCompleted"] == [
        ("RolloutStepCompleted", "Rollout step 2/3 completed (pause)")
    ]


def test_reset_current_step_index_on_step_change() -> None:
    """TestResetCurrentStepIndexOnStepChange: new steps start from the first one, and the
    pause is cleared."""
    sim = paused_at(STEPS, 1, user_resumed=False)
    sim.edit_spec(
        strategy={"canary": {"maxSurge": 1, "maxUnavailable": 0, "steps": [{"setWeight": 5}]}}
    )
    sim.sync()
    assert sim.status["currentStepIndex"] == 0
    assert not sim.status.get("pauseConditions")


def test_roll_back_to_stable() -> None:
    """TestRollBackToStable: the template set back to the stable's skips every step, with
    Argo's SkipSteps event."""
    first = base(10, STEPS, surge=1, unavailable=0)
    one, two = revision(first, 1), revision(first, 2)
    back = copy.deepcopy(two)
    back["spec"]["template"] = copy.deepcopy(one["spec"]["template"])
    back["status"].update(stableRS=one["status"]["currentPodHash"], currentStepIndex=1)
    sim = OneSync(back, [replica_set(one, 10, 10), replica_set(two, 1, 1, seconds=2)])
    synced = sim.sync()
    assert ("SkipSteps", "Rollback to stable ReplicaSets") in [
        (e.reason, e.message) for e in synced.events
    ]
    assert sim.status["currentStepIndex"] == len(STEPS)


def test_canary_rollout_scale_while_paused() -> None:
    """TestCanaryRolloutScaleWhilePaused: 5 -> 10 replicas while paused at 20%: the stable is
    scaled at once (to 8: the new ReplicaSet's 2 come within maxSurge next)."""
    first = base(5, [{"setWeight": 20}], surge=1, unavailable=0)
    one, two = revision(first, 1), revision(first, 2)
    two["status"].update(
        stableRS=one["status"]["currentPodHash"],
        currentStepIndex=0,
        controllerPause=True,
        pauseConditions=[{"reason": "CanaryPauseStep", "startTime": format_time(T0)}],
    )
    two["spec"]["replicas"] = 10
    sim = OneSync(two, [replica_set(one, 5, 5), replica_set(two, 0, 0, seconds=2)])
    sim.kubelet_enabled = False
    synced = sim.sync()
    assert scaled(synced) == {replica_set(one, 0, 0)["metadata"]["name"]: 8}


def test_restarted_pods_end_the_reconcile_before_any_scaling() -> None:
    """rolloutCanary: "we would cause downtime if we continue" — after deleting pods for
    spec.restartAt, the sync scales nothing; the next one does."""
    first = base(4, [{"setWeight": 50}], surge=1, unavailable=1)
    one, two = revision(first, 1), revision(first, 2)
    two["status"]["stableRS"] = one["status"]["currentPodHash"]
    two["spec"]["restartAt"] = format_time(T0 + dt.timedelta(seconds=30))
    sim = OneSync(two, [replica_set(one, 4, 4)])
    sim.kubelet()  # the stable's pods, created at T0, ready
    for pod in sim.pods():
        pod["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    sim.advance(60)
    sim.writer.objects[("replicasets", NS, replica_set(two, 0, 0)["metadata"]["name"])] = (
        replica_set(two, 0, 0, seconds=1)
    )
    synced = sim.sync()
    deletes = [a for a in synced.actions if a.verb == "delete" and a.resource == "pods"]
    assert deletes, "a pod is restarted"
    assert scaled(synced) == {}
    assert sim.status.get("restartedAt") is None


def test_background_analysis_waits_for_its_starting_step() -> None:
    """canary.analysis.startingStep (Argo's TestCanaryRolloutCreateAnalysisRun...
    StartingStep): the background run is created only once the step index reaches it."""
    template = AnalysisTemplateSpec.from_dict(
        {"metrics": [{"name": "m", "provider": {"web": {"url": "http://x/"}}}]}
    )
    steps = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]
    obj = base(2, steps, surge=1, unavailable=0)
    obj["spec"]["strategy"]["canary"]["analysis"] = {
        "templates": [{"templateName": "bg"}],
        "startingStep": 2,
    }
    sim = OneSync(obj, template_lookup=lambda name, cluster: template if name == "bg" else None)
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    assert sim.status["currentStepIndex"] == 1  # paused before the starting step
    assert sim.of(r.ANALYSISRUNS) == {}
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.status["currentStepIndex"] == 3
    (run,) = sim.of(r.ANALYSISRUNS).values()
    assert run["metadata"]["labels"]["rollout-type"] == "Background"


@pytest.mark.parametrize(
    ("limit", "kept"),
    [pytest.param(None, True, id="no-limit-keeps-it-for-the-delay"),
     pytest.param(0, False, id="limit-0-scales-it-down-at-once")],
)  # fmt: skip
def test_scale_down_delay_revision_limit(limit: int | None, kept: bool) -> None:
    """canary.scaleDownDelayRevisionLimit (Argo's scaleDownDelayHelper): with a router, the
    previous stable waits out scaleDownDelaySeconds, unless the limit of ReplicaSets left up
    is reached."""
    from tests.unit.rollout.onesync import service
    from tests.unit.rollout.test_nginx import stable_ingress

    strategy: Obj = {
        "stableService": "stable-service",
        "canaryService": "canary-service",
        "trafficRouting": {"nginx": {"stableIngress": "ing"}},
        "steps": [{"setWeight": 50}],
    }
    if limit is not None:
        strategy["scaleDownDelayRevisionLimit"] = limit
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", **stable_ingress("ing")}
    sim = OneSync(
        rollout(strategy={"canary": strategy}, replicas=2),
        [service("stable-service"), service("canary-service"), ingress],
    )
    sim.settle()
    first = sim.status["stableRS"]
    sim.set_image("web:2")
    sim.settle()
    assert sim.status["stableRS"] != first
    old = sim.rs(first)
    assert (old["spec"]["replicas"] > 0) is kept
    assert ("scale-down-deadline" in (old["metadata"].get("annotations") or {})) is kept
