"""A canary's experiment step, in argo-rollouts' style (rollout/experiment_test.go,
utils/experiment/filter_test.go): seed a rollout at an experiment step with its stable and canary
ReplicaSets and the Experiments it owns, run `reconcile_experiments` once, and assert the
recorded API actions and the intents left on the context (current experiment, pause, abort)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from rollout_workers.api.rollout import PauseReason
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import experiment as rex
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.hashing import pod_template_hash

Obj = dict[str, Any]
NS = "default"
RO_UID = "ro-uid"
HASH = r.POD_TEMPLATE_HASH_LABEL
REVISION = "rollout.argoproj.io/revision"
NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def pod_template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}, "annotations": {"note": "kept"}},
        "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": 80}]}]},
    }


STABLE_HASH = pod_template_hash(pod_template("web:1"), None)
CANARY_HASH = pod_template_hash(pod_template("web:2"), None)


def replicaset(
    image: str, *, revision: int, replicas: int = 1, min_ready: int = 0, deleting: bool = False
) -> Obj:
    h = pod_template_hash(pod_template(image), None)
    template = pod_template(image)
    template["metadata"]["labels"][HASH] = h
    meta: Obj = {
        "name": f"web-{h}",
        "namespace": NS,
        "uid": f"rs-{h}",
        "labels": {"app": "web", HASH: h},
        "annotations": {REVISION: str(revision)},
        "ownerReferences": [{"kind": "Rollout", "name": "web", "uid": RO_UID, "controller": True}],
        "creationTimestamp": f"2026-01-01T1{revision}:00:00Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web", HASH: h}},
        "template": template,
    }
    if min_ready:
        spec["minReadySeconds"] = min_ready
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": spec,
        "status": {"replicas": replicas, "availableReplicas": replicas},
    }


def stable_rs(**kwargs: Any) -> Obj:
    return replicaset("web:1", revision=1, **kwargs)


def canary_rs(**kwargs: Any) -> Obj:
    return replicaset("web:2", revision=2, **kwargs)


def experiment_step(**extra: Any) -> Obj:
    return {
        "experiment": {
            "templates": [
                {"name": "baseline", "specRef": "stable"},
                {"name": "canary", "specRef": "canary", "replicas": 2},
            ],
            **extra,
        }
    }


def rollout(
    steps: list[Obj] | None = None,
    *,
    step: int = 0,
    status: Obj | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "uid": RO_UID,
            "labels": labels or {"team": "a"},
            "annotations": {REVISION: "2"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template("web:2"),
            "strategy": {"canary": {"steps": steps or [experiment_step()]}},
            **spec,
        },
        "status": {
            "stableRS": STABLE_HASH,
            "currentPodHash": CANARY_HASH,
            "currentStepIndex": step,
            "canary": {},
            **(status or {}),
        },
    }


def build(
    obj: Obj,
    *,
    rss: list[Obj] | None = None,
    experiments: list[Obj] | None = None,
    writer: RecordingWriter | None = None,
) -> RolloutContext:
    writer = writer if writer is not None else RecordingWriter()
    for ex in experiments or []:
        writer.seed(r.EXPERIMENTS, copy.deepcopy(ex))
    return RolloutContext.build(
        obj=obj,
        rss=[stable_rs(), canary_rs()] if rss is None else rss,
        now=NOW,
        writer=writer,
        experiments=copy.deepcopy(experiments or []),
    )


def body_at_step(obj: Obj, **kwargs: Any) -> Obj:
    """The Experiment the rollout's current step asks for."""
    ctx = build(obj, **kwargs)
    step, index = ctx.current_step()
    assert step is not None and step.experiment is not None and index is not None
    return rex.experiment_body(ctx, step.experiment, index)


def experiment(
    name: str,
    *,
    phase: str | None = None,
    pod_hash: str | None = CANARY_HASH,
    created: str = "2026-01-01T12:00:00Z",
    owner_uid: str = RO_UID,
    spec: Obj | None = None,
    terminate: bool = False,
    deleting: bool = False,
    message: str = "",
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": NS,
        "uid": f"ex-{name}",
        "creationTimestamp": created,
        "labels": {HASH: pod_hash} if pod_hash is not None else {},
        "ownerReferences": [{"kind": "Rollout", "uid": owner_uid, "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    obj: Obj = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Experiment",
        "metadata": meta,
        "spec": copy.deepcopy(spec) if spec is not None else {"templates": []},
        "status": {},
    }
    if terminate:
        obj["spec"]["terminate"] = True
    if phase is not None:
        obj["status"]["phase"] = phase
    if message:
        obj["status"]["message"] = message
    return obj


def actions(ctx: RolloutContext) -> list[str]:
    assert isinstance(ctx.writer, RecordingWriter)
    return [f"{a.verb} {a.resource} {a.name}" for a in ctx.writer.actions if a.resource != "events"]


def current_in_new_status(ctx: RolloutContext) -> str | None:
    canary = ctx.new_status.canary
    return canary.current_experiment if canary is not None else None


BASE = f"web-{CANARY_HASH}-2-0"


# -- the Experiment a step asks for ---------------------------------------------------------------


def test_the_experiment_is_named_after_hash_revision_and_step() -> None:
    steps = [{"setWeight": 10}, experiment_step()]
    body = body_at_step(rollout(steps, step=1))
    assert body["metadata"]["name"] == f"web-{CANARY_HASH}-2-1"
    assert body["metadata"]["namespace"] == NS
    assert body["metadata"]["labels"] == {"team": "a", HASH: CANARY_HASH}
    assert body["metadata"]["annotations"] == {REVISION: "2"}
    assert body["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Rollout",
            "name": "web",
            "uid": RO_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert (body["apiVersion"], body["kind"]) == ("argoproj.io/v1alpha1", "Experiment")


def test_the_templates_copy_the_stable_and_canary_replicasets() -> None:
    # Argo's TestGetExperimentFromTemplate.
    stable, canary = stable_rs(min_ready=5), canary_rs()
    body = body_at_step(rollout(), rss=[stable, canary])
    baseline, candidate = body["spec"]["templates"]
    assert baseline == {
        "name": "baseline",
        "selector": stable["spec"]["selector"],
        "template": stable["spec"]["template"],
        "minReadySeconds": 5,
    }
    assert candidate == {
        "name": "canary",
        "replicas": 2,
        "selector": canary["spec"]["selector"],
        "template": canary["spec"]["template"],
    }
    assert body["spec"] == {"templates": [baseline, candidate]}


def test_step_metadata_is_merged_into_the_template_and_the_selector() -> None:
    step = {
        "experiment": {
            "templates": [
                {
                    "name": "canary",
                    "specRef": "canary",
                    "metadata": {"labels": {"123": "456"}, "annotations": {"abc": "def"}},
                }
            ]
        }
    }
    canary = canary_rs()
    untouched = copy.deepcopy(canary)
    body = body_at_step(rollout([step]), rss=[stable_rs(), canary])
    (template,) = body["spec"]["templates"]
    assert template["template"]["metadata"] == {
        "labels": {"app": "web", HASH: CANARY_HASH, "123": "456"},
        "annotations": {"note": "kept", "abc": "def"},
    }
    assert template["selector"] == {"matchLabels": {"app": "web", HASH: CANARY_HASH, "123": "456"}}
    assert canary == untouched  # the ReplicaSet read from the cache is left alone


def test_a_step_selector_replaces_the_replicasets() -> None:
    step = {
        "experiment": {
            "templates": [
                {
                    "name": "canary",
                    "specRef": "canary",
                    "selector": {"matchLabels": {"role": "exp"}},
                    "metadata": {"labels": {"role": "exp", "x": "y"}},
                }
            ]
        }
    }
    (template,) = body_at_step(rollout([step]))["spec"]["templates"]
    assert template["selector"] == {"matchLabels": {"role": "exp", "x": "y"}}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, None),
        ({"weight": 10}, {}),
        ({"service": {}}, {}),
        ({"service": {"name": "canary-preview"}}, {"name": "canary-preview"}),
        ({"weight": 10, "service": {"name": "canary-preview"}}, {"name": "canary-preview"}),
    ],
    ids=["neither", "weight", "service", "named service", "both"],
)
def test_a_template_gets_a_service_when_weighted_or_asked(extra: Obj, expected: Obj | None) -> None:
    step = {"experiment": {"templates": [{"name": "canary", "specRef": "canary", **extra}]}}
    (template,) = body_at_step(rollout([step]))["spec"]["templates"]
    assert template.get("service") == expected


def test_the_step_settings_are_carried_over() -> None:
    step = experiment_step(
        duration="1h",
        scaleDownDelaySeconds=5,
        dryRun=[{"metricName": "rate"}],
        analysisRunMetadata={"labels": {"l": "1"}, "annotations": {"a": "2"}},
        analyses=[
            {
                "name": "compare",
                "templateName": "compare-hashes",
                "clusterScope": True,
                "requiredForCompletion": True,
                "args": [
                    {"name": "stable", "valueFrom": {"podTemplateHashValue": "Stable"}},
                    {"name": "canary", "valueFrom": {"podTemplateHashValue": "Latest"}},
                    {
                        "name": "team",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}},
                    },
                    {
                        "name": "missing",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['x']"}},
                    },
                    {"name": "plain", "value": "v"},
                ],
            },
            {"name": "plain", "templateName": "t"},
        ],
    )
    body = body_at_step(rollout([step], progressDeadlineSeconds=120))
    spec = body["spec"]
    assert spec["duration"] == "1h"
    assert spec["scaleDownDelaySeconds"] == 5
    assert spec["progressDeadlineSeconds"] == 120
    assert spec["dryRun"] == [{"metricName": "rate"}]
    assert spec["analysisRunMetadata"] == {"labels": {"l": "1"}, "annotations": {"a": "2"}}
    assert spec["analyses"] == [
        {
            "name": "compare",
            "templateName": "compare-hashes",
            "clusterScope": True,
            "requiredForCompletion": True,
            "args": [
                {"name": "stable", "value": STABLE_HASH},
                {"name": "canary", "value": CANARY_HASH},
                {"name": "team", "value": "a"},
                {"name": "missing", "value": ""},
                {"name": "plain", "value": "v"},
            ],
        },
        {"name": "plain", "templateName": "t", "args": []},
    ]


def test_a_template_of_a_missing_replicaset_cannot_be_built() -> None:
    ctx = build(rollout(), rss=[canary_rs()])
    step, index = ctx.current_step()
    assert step is not None and step.experiment is not None and index is not None
    with pytest.raises(
        rex.ExperimentStepError, match="no stable ReplicaSet for template 'baseline'"
    ):
        rex.experiment_body(ctx, step.experiment, index)


def test_an_analysis_argument_naming_no_field_cannot_be_built() -> None:
    # Argo's GetExperimentFromTemplate returns BuildArgumentsForRolloutAnalysisRun's error.
    arg = {"name": "img", "valueFrom": {"fieldRef": {"fieldPath": "spec.nothing[0]"}}}
    step = experiment_step(analyses=[{"name": "a", "templateName": "t", "args": [arg]}])
    ctx = build(rollout([step]))
    current, index = ctx.current_step()
    assert current is not None and current.experiment is not None and index is not None
    with pytest.raises(
        rex.ExperimentStepError, match=r"^invalid path spec.nothing\[0\] in rollout$"
    ):
        rex.experiment_body(ctx, current.experiment, index)


# -- creating and following the step's Experiment -------------------------------------------------


def test_the_step_creates_its_experiment_and_makes_it_current() -> None:
    # Argo's TestRolloutCreateExperiment.
    obj = rollout()
    ctx = build(obj)
    rex.reconcile_experiments(ctx)

    assert actions(ctx) == [f"create experiments {BASE}"]
    assert isinstance(ctx.writer, RecordingWriter)
    created = ctx.writer.actions[0].body
    assert created == body_at_step(obj)
    assert current_in_new_status(ctx) == BASE
    assert [(e.reason, e.message) for e in ctx.events] == [
        ("ExperimentCreated", f"Created Experiment '{BASE}'")
    ]
    assert [rex.ex_name(x) for x in ctx.experiments] == [BASE]


def test_no_experiment_before_there_is_a_stable_replicaset() -> None:
    # Argo's TestRolloutDoNotCreateExperimentWithoutStableRS.
    obj = rollout()
    obj["status"]["stableRS"] = ""
    ctx = build(obj)
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
    assert current_in_new_status(ctx) is None


def test_a_running_current_experiment_is_left_to_run() -> None:
    # Argo's TestRolloutExperimentProcessingDoNothing.
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    spec = body_at_step(obj)["spec"]
    ctx = build(obj, experiments=[experiment(BASE, phase="Running", spec=spec)])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
    assert current_in_new_status(ctx) == BASE
    assert ctx.current_experiment is not None and rex.ex_name(ctx.current_experiment) == BASE
    assert not ctx.pause.add and not ctx.pause.add_abort


def test_our_running_experiment_of_that_name_is_reused() -> None:
    # The status does not name it yet (an earlier reconcile created it and its status patch was
    # lost, or the cache is behind): same spec, ours, running, so it is the step's experiment.
    obj = rollout()
    spec = body_at_step(obj)["spec"]
    ctx = build(obj, experiments=[experiment(BASE, phase="Running", spec=spec, terminate=False)])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
    assert current_in_new_status(ctx) == BASE
    # Argo reaches it through a create that finds the name taken, and records the event the
    # same (createExperimentWithCollisionHandling returns it; the caller says it was created).
    assert [(e.reason, e.message) for e in ctx.events] == [
        ("ExperimentCreated", f"Created Experiment '{BASE}'")
    ]


def test_a_terminating_copy_of_the_same_spec_is_still_reused() -> None:
    # As Argo's IsSemanticallyEqual, `terminate` does not make the specs differ.
    obj = rollout()
    spec = body_at_step(obj)["spec"]
    ctx = build(obj, experiments=[experiment(BASE, phase="Pending", spec=spec, terminate=True)])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
    assert current_in_new_status(ctx) == BASE


@pytest.mark.parametrize(
    "taken",
    [
        {"phase": "Successful", "same": True, "ours": True},
        {"phase": "Failed", "same": True, "ours": True},
        {"phase": "Running", "same": False, "ours": True},
        {"phase": "Running", "same": True, "ours": False},
    ],
    ids=["finished", "failed", "other spec", "not ours"],
)
def test_the_name_is_counted_up_past_an_experiment_that_is_not_this_one(taken: Obj) -> None:
    obj = rollout()
    spec = body_at_step(obj)["spec"]
    if not taken["same"]:
        spec = {**spec, "duration": "5m"}
    existing = experiment(
        BASE, phase=taken["phase"], spec=spec, owner_uid=RO_UID if taken["ours"] else "other"
    )
    ctx = build(obj, experiments=[existing])
    rex.reconcile_experiments(ctx)
    assert actions(ctx)[0] == f"create experiments {BASE}-1"
    assert current_in_new_status(ctx) == f"{BASE}-1"


def test_the_name_is_counted_up_until_free() -> None:
    obj = rollout()
    spec = body_at_step(obj)["spec"]
    taken = [
        experiment(BASE, phase="Successful", spec=spec),
        experiment(f"{BASE}-1", phase="Failed", spec=spec),
    ]
    writer = RecordingWriter()
    # `-2` exists on the server but not among the rollout's experiments (someone else's).
    writer.seed(r.EXPERIMENTS, experiment(f"{BASE}-2", owner_uid="other"))
    ctx = build(obj, experiments=taken, writer=writer)
    rex.reconcile_experiments(ctx)
    assert actions(ctx)[:2] == [f"create experiments {BASE}-2", f"create experiments {BASE}-3"]
    assert current_in_new_status(ctx) == f"{BASE}-3"


def test_no_free_name_is_an_error() -> None:
    obj = rollout()
    spec = body_at_step(obj)["spec"]
    names = [BASE, *(f"{BASE}-{n}" for n in range(1, 6))]
    ctx = build(obj, experiments=[experiment(n, phase="Successful", spec=spec) for n in names])
    with pytest.raises(rex.ExperimentStepError, match="cannot find a free name"):
        rex.reconcile_experiments(ctx)


def test_an_inconclusive_experiment_pauses_the_rollout_and_stays_current() -> None:
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    ctx = build(obj, experiments=[experiment(BASE, phase="Inconclusive")])
    rex.reconcile_experiments(ctx)
    assert ctx.pause.add == [PauseReason.INCONCLUSIVE_EXPERIMENT]
    assert not ctx.pause.add_abort
    assert current_in_new_status(ctx) == BASE
    assert actions(ctx) == []  # finished: nothing to cancel, and the current one is kept


def test_while_paused_on_an_inconclusive_experiment_nothing_changes() -> None:
    paused = {
        "canary": {"currentExperiment": BASE},
        "pauseConditions": [
            {"reason": "InconclusiveExperiment", "startTime": "2026-01-01T11:00:00Z"}
        ],
        "controllerPause": True,
    }
    experiments = [
        experiment(BASE, phase="Inconclusive"),
        experiment("stray", phase="Running", pod_hash="gone"),
    ]
    ctx = build(rollout(status=paused), experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
    assert current_in_new_status(ctx) == BASE
    assert ctx.pause.add == []


def test_resuming_after_an_inconclusive_experiment_runs_a_fresh_one() -> None:
    # A user cleared the pause condition; controllerPause still says we paused.
    resumed = {"canary": {"currentExperiment": BASE}, "controllerPause": True}
    obj = rollout(status=resumed)
    spec = body_at_step(obj)["spec"]
    ctx = build(obj, experiments=[experiment(BASE, phase="Inconclusive", spec=spec)])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == [f"create experiments {BASE}-1"]  # the name of the old one is taken
    assert current_in_new_status(ctx) == f"{BASE}-1"
    assert ctx.pause.add == []


@pytest.mark.parametrize("phase", ["Failed", "Error"])
def test_a_failed_experiment_aborts_the_rollout_with_its_message(phase: str) -> None:
    # Argo's TestRolloutDegradedExperimentEnterDegraded.
    message = "Template 'canary' exceeded its progressDeadlineSeconds (600)"
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    ctx = build(obj, experiments=[experiment(BASE, phase=phase, message=message)])
    rex.reconcile_experiments(ctx)
    assert ctx.pause.add_abort
    assert ctx.pause.abort_message == message
    assert ctx.pause.add == []
    assert current_in_new_status(ctx) is None


def test_a_successful_experiment_is_no_longer_current() -> None:
    # Argo's TestRolloutExperimentFinishedIncrementStep: the step completes, the name is cleared.
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    ctx = build(obj, experiments=[experiment(BASE, phase="Successful")])
    rex.reconcile_experiments(ctx)
    assert current_in_new_status(ctx) is None
    assert (
        ctx.current_experiment is not None and rex.ex_phase(ctx.current_experiment) == "Successful"
    )
    assert not ctx.pause.add and not ctx.pause.add_abort
    assert actions(ctx) == []


# -- cancelling ----------------------------------------------------------------------------------


def test_other_running_experiments_are_terminated_at_the_step() -> None:
    # Argo's TestRolloutExperimentScaleDownExtraExperiment.
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    extra = experiment("extra", phase="Pending", pod_hash=STABLE_HASH)
    ctx = build(obj, experiments=[experiment(BASE, phase="Running"), extra])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == ["patch experiments extra"]
    assert isinstance(ctx.writer, RecordingWriter)
    assert ctx.writer.actions[0].body == {"spec": {"terminate": True}}
    assert current_in_new_status(ctx) == BASE


def test_the_current_experiment_is_terminated_once_past_its_step() -> None:
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(steps, step=1, status={"canary": {"currentExperiment": BASE}})
    ctx = build(obj, experiments=[experiment(BASE, phase="Running")])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == [f"patch experiments {BASE}"]
    assert current_in_new_status(ctx) is None


def test_finished_or_terminating_experiments_are_not_terminated_again() -> None:
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(steps, step=1, status={"canary": {"currentExperiment": BASE}})
    experiments = [
        experiment(BASE, phase="Running", terminate=True),
        experiment("done", phase="Successful"),
        experiment("failed", phase="Failed"),
    ]
    ctx = build(obj, experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []


@pytest.mark.parametrize(
    "status",
    [
        {"abort": True, "canary": {"currentExperiment": BASE}},
        {"promoteFull": True, "canary": {"currentExperiment": BASE}},
    ],
    ids=["aborted", "promote full"],
)
def test_everything_is_cancelled_and_nothing_deleted_when_aborted_or_promoted(status: Obj) -> None:
    # Argo's TestCancelExperimentWhenAborted.
    obj = rollout(status=status)
    experiments = [
        experiment(BASE, phase="Running"),
        experiment("other", phase="Pending", pod_hash=STABLE_HASH),
        experiment("orphan", phase="Successful", pod_hash="gone"),  # would be deleted otherwise
    ]
    ctx = build(obj, experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert sorted(actions(ctx)) == ["patch experiments other", f"patch experiments {BASE}"]
    assert not any(a.startswith("create") for a in actions(ctx))


def test_an_abort_decided_in_this_reconcile_cancels_too() -> None:
    obj = rollout(status={"canary": {"currentExperiment": BASE}})
    ctx = build(obj, experiments=[experiment(BASE, phase="Running")])
    ctx.pause.add_abort = True
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == [f"patch experiments {BASE}"]


def test_an_inconclusive_analysis_pause_leaves_experiments_alone() -> None:
    obj = rollout(
        status={
            "pauseConditions": [
                {"reason": "InconclusiveAnalysisRun", "startTime": "2026-01-01T11:00:00Z"}
            ],
            "controllerPause": True,
        }
    )
    ctx = build(obj, experiments=[experiment("stray", phase="Running", pod_hash="gone")])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []


# -- history -------------------------------------------------------------------------------------


def test_experiments_without_a_live_replicaset_are_deleted() -> None:
    # Argo's TestFilterExperimentsToDelete / TestDeleteExperimentWithNoMatchingRS /
    # TestDeleteExperimentsAfterRSDelete.
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(steps, step=1)
    rss = [stable_rs(deleting=True), canary_rs()]
    experiments = [
        experiment("kept", phase="Successful"),
        experiment("no-hash", phase="Successful", pod_hash=None),
        experiment("rs-deleted", phase="Successful", pod_hash=STABLE_HASH),
        experiment("no-rs", phase="Successful", pod_hash="abc123"),
        experiment("no-rs-running", phase="Running", pod_hash="abc123", terminate=True),
        experiment("being-deleted", phase="Successful", pod_hash="abc123", deleting=True),
    ]
    ctx = build(obj, rss=rss, experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert sorted(actions(ctx)) == [
        "delete experiments no-hash",
        "delete experiments no-rs",
        "delete experiments no-rs-running",
        "delete experiments rs-deleted",
    ]


def history(phases: list[str]) -> list[Obj]:
    """Experiments of the canary's hash, oldest first, one second apart."""
    return [
        experiment(f"ex-{i:02d}", phase=phase, created=f"2026-01-01T11:00:{i:02d}Z")
        for i, phase in enumerate(phases)
    ]


ARGO_HISTORY = [
    *("Successful", "Failed", "Successful", "Error", "Successful"),
    *("Inconclusive", "Successful", "Failed", "Successful", "Failed"),
]


@pytest.mark.parametrize(
    ("successful", "unsuccessful", "deleted"),
    [
        (1, 0, 9),
        (5, 0, 5),
        (10, 0, 5),
        (0, 1, 9),
        (0, 5, 5),
        (0, 10, 5),
        (0, 0, 10),
        (4, 4, 2),
        (10, 10, 0),
    ],
)
def test_finished_experiments_are_kept_up_to_the_history_limits(
    successful: int, unsuccessful: int, deleted: int
) -> None:
    # Argo's TestFilterExperimentsToDeleteByLimit.
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(
        steps,
        step=1,
        analysis={
            "successfulRunHistoryLimit": successful,
            "unsuccessfulRunHistoryLimit": unsuccessful,
        },
    )
    ctx = build(obj, experiments=history(ARGO_HISTORY))
    rex.reconcile_experiments(ctx)
    assert len([a for a in actions(ctx) if a.startswith("delete")]) == deleted


def test_the_newest_finished_experiments_are_the_ones_kept() -> None:
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(
        steps, step=1, analysis={"successfulRunHistoryLimit": 1, "unsuccessfulRunHistoryLimit": 1}
    )
    experiments = history(
        ["Successful", "Failed", "Successful", "Inconclusive", "Successful", "Running"]
    )
    # Same creation time as ex-04: the name breaks the tie (the greater name is the newer).
    experiments.append(experiment("ex-04b", phase="Successful", created="2026-01-01T11:00:04Z"))
    ctx = build(obj, experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert sorted(a for a in actions(ctx) if a.startswith("delete")) == [
        "delete experiments ex-00",
        "delete experiments ex-01",
        "delete experiments ex-02",
        "delete experiments ex-04",
    ]
    assert "patch experiments ex-05" in actions(ctx)  # running: terminated, never deleted


def test_the_history_limits_default_to_five() -> None:
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(steps, step=1)
    ctx = build(obj, experiments=history(["Successful"] * 7 + ["Failed"] * 6))
    rex.reconcile_experiments(ctx)
    assert sorted(actions(ctx)) == [
        "delete experiments ex-00",
        "delete experiments ex-01",
        "delete experiments ex-07",
    ]


def test_the_current_experiment_is_never_deleted() -> None:
    obj = rollout(
        status={"canary": {"currentExperiment": BASE}}, analysis={"successfulRunHistoryLimit": 0}
    )
    ctx = build(obj, experiments=[experiment(BASE, phase="Successful")])
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []


def test_an_experiment_being_deleted_does_not_take_a_history_slot() -> None:
    # Differs from Argo, where it counts against the limit (and then is skipped by the delete).
    steps = [experiment_step(), {"pause": {}}]
    obj = rollout(steps, step=1, analysis={"successfulRunHistoryLimit": 1})
    experiments = history(["Successful", "Successful"])
    experiments[1]["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    ctx = build(obj, experiments=experiments)
    rex.reconcile_experiments(ctx)
    assert actions(ctx) == []
