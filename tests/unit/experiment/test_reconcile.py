"""One Experiment reconcile, in argo-rollouts' style (experiments/experiment_test.go,
analysisrun_test.go, conditions_test.go, utils/experiment and utils/conditions): seed the
experiment and the objects it owns, run one reconcile at a fixed `now`, and assert the recorded
API actions, the new status, the events and when the experiment asks to be looked at again."""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.analysis.templates import TemplateLookup
from rollout_workers.api.analysis import AnalysisPhase, AnalysisTemplateSpec
from rollout_workers.api.base import ConditionStatus
from rollout_workers.api.experiment import (
    Experiment,
    ExperimentCondition,
    ExperimentConditionType,
    ExperimentStatus,
    TemplateStatusCode,
)
from rollout_workers.experiment import reconcile as rec
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import Conflict, KubeError, Unavailable
from rollout_workers.kube.writer import Action, RecordingWriter
from rollout_workers.rollout.hashing import pod_template_hash
from rollout_workers.timefmt import format_time

Obj = dict[str, Any]
Code = TemplateStatusCode
Phase = AnalysisPhase

NS = "default"
EX_UID = "ex-uid"
HASH = r.POD_TEMPLATE_HASH_LABEL
NAME_ANN = rec.NAME_ANNOTATION
TEMPLATE_ANN = rec.TEMPLATE_ANNOTATION
SCALE_DOWN = "scale-down-deadline"
NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
NOW_TEXT = "2026-01-01T12:00:00Z"
PROGRESSING_MSG = 'Experiment "foo" is progressing.'
RUNNING_MSG = 'Experiment "foo" is running.'
COMPLETED_MSG = 'Experiment "foo" has successfully ran and completed.'


def at(seconds: float) -> str:
    """NOW shifted by `seconds` (negative: in the past), as the API server writes times."""
    return format_time(NOW + dt.timedelta(seconds=seconds))


# -- builders ------------------------------------------------------------------------------------


def pod_template(name: str, ports: list[Obj] | None = None) -> Obj:
    container: Obj = {"name": "app", "image": name}
    if ports is not None:
        container["ports"] = ports
    return {"metadata": {"labels": {"key": name}}, "spec": {"containers": [container]}}


def template(
    name: str, *, replicas: int | None = 1, ports: list[Obj] | None = None, **extra: Any
) -> Obj:
    body: Obj = {
        "name": name,
        "selector": {"matchLabels": {"key": name}},
        "template": pod_template(name, ports),
    }
    if replicas is not None:
        body["replicas"] = replicas
    body.update(extra)
    return body


def experiment(*templates: Obj, status: Obj | None = None, **spec: Any) -> Obj:
    obj: Obj = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Experiment",
        "metadata": {"name": "foo", "namespace": NS, "uid": EX_UID, "resourceVersion": "7"},
        "spec": {"templates": list(templates) or [template("bar")], **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def pod_hash(tmpl: Obj, collisions: int | None = None) -> str:
    return pod_template_hash(tmpl["template"], collisions)


def replicaset(
    tmpl: Obj,
    *,
    replicas: int | None = None,
    available: int = 0,
    current: int | None = None,
    annotations: dict[str, str] | None = None,
    experiment_name: str = "foo",
    owner_uid: str = EX_UID,
) -> Obj:
    """The ReplicaSet an experiment made for `tmpl`, as the cache holds it: spec.replicas at the
    template's count unless given, status counts as given."""
    h = pod_hash(tmpl)
    pod = copy.deepcopy(tmpl["template"])
    pod["metadata"]["labels"][HASH] = h
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{experiment_name}-{tmpl['name']}",
            "namespace": NS,
            "uid": f"rs-{tmpl['name']}",
            "resourceVersion": "11",
            "labels": {HASH: h},
            "annotations": {
                NAME_ANN: experiment_name,
                TEMPLATE_ANN: tmpl["name"],
                **(annotations or {}),
            },
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Experiment",
                    "name": experiment_name,
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": tmpl.get("replicas", 1) if replicas is None else replicas,
            "selector": {"matchLabels": {**tmpl["selector"]["matchLabels"], HASH: h}},
            "template": pod,
        },
        "status": {
            "replicas": available if current is None else current,
            "readyReplicas": available,
            "availableReplicas": available,
        },
    }


def service(tmpl: Obj, rs: Obj, *, name: str | None = None, owner_uid: str = EX_UID) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name or rs["metadata"]["name"],
            "namespace": NS,
            "annotations": {NAME_ANN: "foo", TEMPLATE_ANN: tmpl["name"]},
            "ownerReferences": [{"kind": "Experiment", "uid": owner_uid, "controller": True}],
        },
        "spec": {"selector": dict(rs["metadata"]["labels"]), "ports": []},
    }


def tstatus(
    name: str, current: int, available: int, code: Code, *, since: str = NOW_TEXT, **extra: Any
) -> Obj:
    """A template status as our reconcile writes it (Argo's generateTemplatesStatus)."""
    return {
        "name": name,
        "replicas": current,
        "updatedReplicas": current,
        "readyReplicas": available,
        "availableReplicas": available,
        "status": str(code),
        "lastTransitionTime": since,
        **extra,
    }


def condition(reason: str, *, state: str = "True", message: str = "", since: str = NOW_TEXT) -> Obj:
    return {
        "type": "Progressing",
        "status": state,
        "lastUpdateTime": since,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


RUNNING_CONDITION = condition("NewReplicaSetAvailable", message=RUNNING_MSG)


def run_status(name: str, phase: Phase | None, *, run: str | None = None, **extra: Any) -> Obj:
    out: Obj = {"name": name, "analysisRun": run or f"foo-{name}", **extra}
    if phase is not None:
        out["phase"] = str(phase)
    return out


def analysis_run(
    name: str, phase: Phase | None, *, terminate: bool = False, message: str = ""
) -> Obj:
    run: Obj = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [{"kind": "Experiment", "uid": EX_UID, "controller": True}],
        },
        "spec": {"metrics": [], **({"terminate": True} if terminate else {})},
        "status": {},
    }
    if phase is not None:
        run["status"]["phase"] = str(phase)
    if message:
        run["status"]["message"] = message
    return run


def analysis_template(*args: str) -> Obj:
    return {
        "args": [{"name": a} for a in args],
        "metrics": [
            {
                "name": "rate",
                "successCondition": "result == 1",
                "provider": {"web": {"url": "http://metrics/{{args.canary-hash}}"}},
            }
        ],
    }


# -- the harness ---------------------------------------------------------------------------------


@dataclass
class FailingWriter(RecordingWriter):
    """A RecordingWriter whose chosen calls fail: (verb, resource plural) -> the error."""

    failures: dict[tuple[str, str], KubeError] = field(default_factory=dict)

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
        error = self.failures.get(("create", resource.plural))
        if error is not None:
            self.actions.append(
                Action("create", resource.plural, namespace, body["metadata"]["name"], body)
            )
            raise error
        return super().create(resource, namespace, body)

    def patch(
        self, resource: r.Resource, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj:
        error = self.failures.get(("patch", resource.plural))
        if error is not None:
            self.actions.append(Action("patch", resource.plural, namespace, name, patch))
            raise error
        return super().patch(resource, namespace, name, patch, status=status)

    def delete(
        self, resource: r.Resource, namespace: str, name: str, *, propagation: str | None = None
    ) -> None:
        error = self.failures.get(("delete", resource.plural))
        if error is not None:
            self.actions.append(Action("delete", resource.plural, namespace, name, {}))
            raise error
        super().delete(resource, namespace, name, propagation=propagation)


def without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


@dataclass
class Outcome:
    ctx: rec.ExperimentContext
    status: ExperimentStatus
    writer: RecordingWriter

    @property
    def actions(self) -> list[str]:
        return [f"{a.verb} {a.resource} {a.name}" for a in self.writer.actions]

    def body(self, index: int) -> Obj:
        return self.writer.actions[index].body

    @property
    def out(self) -> Obj:
        """The new status as the controller writes it (fields cleared on the model left out)."""
        out: Obj = without_none(self.status.to_dict())
        return out

    def template(self, name: str) -> Obj:
        return next(t for t in self.out["templateStatuses"] if t["name"] == name)

    def analysis(self, name: str) -> Obj:
        return next(a for a in self.out["analysisRuns"] if a["name"] == name)

    @property
    def conditions(self) -> list[Obj]:
        return list(self.out.get("conditions") or [])

    @property
    def events(self) -> list[str]:
        return [reason for reason, _, _ in self.ctx.events]

    def event(self, reason: str) -> tuple[str, bool]:
        return next((msg, warning) for why, msg, warning in self.ctx.events if why == reason)


def lookup(
    templates: dict[str, Obj] | None, cluster: dict[str, Obj] | None = None
) -> TemplateLookup:
    def find(name: str, cluster_scope: bool) -> AnalysisTemplateSpec | None:
        source = (cluster if cluster_scope else templates) or {}
        spec = source.get(name)
        return AnalysisTemplateSpec.from_dict(spec) if spec is not None else None

    return find


def reconcile(
    obj: Obj,
    *,
    rss: Iterable[Obj] = (),
    services: Iterable[Obj] = (),
    runs: Iterable[Obj] = (),
    templates: dict[str, Obj] | None = None,
    cluster_templates: dict[str, Obj] | None = None,
    writer: RecordingWriter | None = None,
    cached_rss: Iterable[Obj] = (),
    cached_services: Iterable[Obj] = (),
    now: dt.datetime = NOW,
) -> Outcome:
    """One reconcile of `obj`. `rss`, `services` and `runs` are what the experiment owns in the
    cache (and on the server); `cached_rss` and `cached_services` are objects the cache knows by
    name that were not matched to a template (they are not seeded on the server)."""
    writer = writer if writer is not None else RecordingWriter()
    rss, services, runs = list(rss), list(services), list(runs)
    cached_rss, cached_services = list(cached_rss), list(cached_services)
    for rs in rss:
        writer.seed(r.REPLICASETS, copy.deepcopy(rs))
    for svc in services:
        writer.seed(r.SERVICES, copy.deepcopy(svc))
    for run in runs:
        writer.seed(r.ANALYSISRUNS, copy.deepcopy(run))
    ex = Experiment.from_dict(obj)
    names = {t.name for t in ex.spec.templates}
    ctx = rec.ExperimentContext(
        obj=obj,
        ex=ex,
        template_rss=rec.claimed(obj, rss, names, "ReplicaSet"),
        template_services=rec.claimed(obj, services, names, "Service"),
        runs={x["metadata"]["name"]: x for x in runs},
        lookup=lookup(templates, cluster_templates),
        writer=writer,
        now=now,
        replicasets={x["metadata"]["name"]: x for x in [*rss, *cached_rss]},
        services={x["metadata"]["name"]: x for x in [*services, *cached_services]},
    )
    return Outcome(ctx, rec.reconcile(ctx), writer)


def running(*statuses: Obj, available_at: str = NOW_TEXT, **extra: Any) -> Obj:
    """A Running experiment status whose templates became available at `available_at`."""
    return {
        "phase": "Running",
        "availableAt": available_at,
        "templateStatuses": list(statuses),
        "conditions": [RUNNING_CONDITION],
        **extra,
    }


# -- the first reconcile -------------------------------------------------------------------------


def test_first_reconcile_creates_a_replicaset_per_template_and_goes_pending() -> None:
    bar, baz = template("bar"), template("baz", replicas=2, minReadySeconds=7)
    out = reconcile(experiment(bar, baz))

    assert out.actions == ["create replicasets foo-bar", "create replicasets foo-baz"]
    for index, (tmpl, replicas, min_ready) in enumerate([(bar, 1, 0), (baz, 2, 7)]):
        body = out.body(index)
        h = pod_hash(tmpl)
        assert body["metadata"] == {
            "name": f"foo-{tmpl['name']}",
            "namespace": NS,
            "labels": {HASH: h},
            "annotations": {NAME_ANN: "foo", TEMPLATE_ANN: tmpl["name"]},
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Experiment",
                    "name": "foo",
                    "uid": EX_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        assert body["spec"] == {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "selector": {"matchLabels": {"key": tmpl["name"], HASH: h}},
            "template": {
                "metadata": {"labels": {"key": tmpl["name"], HASH: h}},
                "spec": tmpl["template"]["spec"],
            },
        }
    # Argo's TestSetExperimentToPending: Pending, both templates Progressing, progress made.
    assert out.out == {
        "phase": "Pending",
        "templateStatuses": [
            tstatus("bar", 0, 0, Code.PROGRESSING),
            tstatus("baz", 0, 0, Code.PROGRESSING),
        ],
        "conditions": [condition("ReplicaSetUpdated", message=PROGRESSING_MSG)],
    }
    assert out.events == [
        "NewReplicaSetCreated",
        "TemplateProgressing",
        "NewReplicaSetCreated",
        "TemplateProgressing",
    ]
    assert out.event("NewReplicaSetCreated") == ("Created ReplicaSet foo-bar with size 1", False)
    assert out.event("TemplateProgressing") == (
        "Template 'bar' transitioned from  -> Progressing",
        False,
    )
    # Nothing is available yet: look again when the progress deadline (600s default) passes.
    assert out.ctx.requeue_after == 600


def test_the_template_hash_ignores_a_hash_label_in_the_template_and_counts_collisions() -> None:
    tmpl = template("bar")
    stale = copy.deepcopy(tmpl)
    stale["template"]["metadata"]["labels"][HASH] = "stale"
    status = {"phase": "Pending", "templateStatuses": [{"name": "bar", "collisionCount": 2}]}
    out = reconcile(experiment(stale, status=status))

    body = out.body(0)
    assert body["metadata"]["labels"] == {HASH: pod_hash(tmpl, 2)}
    assert body["spec"]["template"]["metadata"]["labels"] == {"key": "bar", HASH: pod_hash(tmpl, 2)}
    assert pod_hash(tmpl, 2) != pod_hash(tmpl)


def test_a_zero_replica_template_is_created_without_a_created_event() -> None:
    out = reconcile(experiment(template("bar", replicas=0)))
    assert out.actions == ["create replicasets foo-bar"]
    assert out.body(0)["spec"]["replicas"] == 0
    assert "NewReplicaSetCreated" not in out.events


def test_a_replicaset_that_cannot_be_created_errors_the_template_and_the_experiment() -> None:
    writer = FailingWriter(
        failures={("create", "replicasets"): KubeError(403, "Forbidden", "intentional error")}
    )
    out = reconcile(experiment(template("bar"), status={"phase": "Pending"}), writer=writer)

    ts = out.template("bar")
    assert ts["status"] == "Error"
    assert ts["message"] == "Failed to create ReplicaSet for template 'bar': intentional error"
    assert out.out["phase"] == "Error"
    assert out.out["message"] == ts["message"]
    assert out.event("ReplicaSetCreateError") == (
        'Failed to create new replica set "foo-bar": intentional error',
        False,
    )
    assert out.event("TemplateError")[1] is True  # a warning


def test_a_replicaset_created_by_an_earlier_reconcile_is_claimed() -> None:
    # The create answers AlreadyExists; the one there is ours with the same template.
    bar = template("bar")
    existing = replicaset(bar, available=1)
    writer = RecordingWriter()
    writer.seed(r.REPLICASETS, copy.deepcopy(existing))
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}), writer=writer, cached_rss=[existing]
    )

    assert out.actions == ["create replicasets foo-bar"]
    assert out.ctx.template_rss["bar"] is existing
    assert out.template("bar")["status"] == "Running"
    assert "NewReplicaSetCreated" not in out.events


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda rs: rs["metadata"]["ownerReferences"][0].update(uid="someone-else"), "owner"),
        (lambda rs: rs["spec"]["template"]["spec"]["containers"][0].update(image="x"), "template"),
        (lambda rs: rs["metadata"]["annotations"].update({TEMPLATE_ANN: "baz"}), "annotation"),
    ],
)
def test_a_foreign_replicaset_under_the_name_errors_the_template(change: Any, what: str) -> None:
    bar = template("bar")
    foreign = replicaset(bar)
    change(foreign)
    writer = RecordingWriter()
    writer.seed(r.REPLICASETS, copy.deepcopy(foreign))
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}), writer=writer, cached_rss=[foreign]
    )

    ts = out.template("bar")
    assert ts["status"] == "Error", what
    assert ts["message"] == (
        "Failed to create ReplicaSet for template 'bar': replicasets.apps \"foo-bar\" already "
        "exists and is not owned by this experiment"
    )
    assert out.out["phase"] == "Error"


def test_a_name_taken_by_a_replicaset_the_cache_has_not_seen_is_retried() -> None:
    writer = RecordingWriter()
    writer.seed(r.REPLICASETS, replicaset(template("bar")))
    with pytest.raises(rec.ExperimentError, match="not in the cache yet"):
        reconcile(experiment(template("bar")), writer=writer)


# -- template statuses ---------------------------------------------------------------------------


def test_templates_become_running_and_the_experiment_available() -> None:
    # Argo's TestSetAvailableAt.
    bar, baz = template("bar"), template("baz")
    status = {
        "phase": "Pending",
        "templateStatuses": [
            tstatus("bar", 1, 0, Code.PROGRESSING, since=at(-60)),
            tstatus("baz", 1, 0, Code.PROGRESSING, since=at(-60)),
        ],
        "conditions": [condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-60))],
    }
    out = reconcile(
        experiment(bar, baz, status=status),
        rss=[replicaset(bar, available=1), replicaset(baz, available=1)],
    )

    assert out.actions == []
    progressed = condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-60))
    progressed["lastUpdateTime"] = NOW_TEXT  # progress: updated now, transition time kept
    assert out.out == {
        "phase": "Running",
        "availableAt": NOW_TEXT,
        "templateStatuses": [
            tstatus("bar", 1, 1, Code.RUNNING),
            tstatus("baz", 1, 1, Code.RUNNING),
        ],
        "conditions": [progressed],
    }
    assert out.event("TemplateRunning") == (
        "Template 'bar' transitioned from Progressing -> Running",
        False,
    )
    assert out.ctx.requeue_after is None  # no duration: nothing to wait for


def test_a_settled_running_experiment_changes_nothing() -> None:
    # Argo's TestNoPatch and TestDontRequeueWithoutDuration.
    bar, baz = template("bar"), template("baz")
    status = running(tstatus("bar", 1, 1, Code.RUNNING), tstatus("baz", 1, 1, Code.RUNNING))
    obj = experiment(bar, baz, status=status)
    out = reconcile(obj, rss=[replicaset(bar, available=1), replicaset(baz, available=1)])

    assert out.actions == []
    assert out.out == status
    assert out.events == []
    assert out.ctx.requeue_after is None


def test_templates_succeed_once_the_duration_has_passed() -> None:
    # Argo's TestSuccessAfterDurationPasses.
    bar, baz = template("bar"), template("baz")
    status = running(
        tstatus("bar", 1, 1, Code.RUNNING),
        tstatus("baz", 1, 1, Code.RUNNING),
        available_at=at(-10),
    )
    out = reconcile(
        experiment(bar, baz, status=status, duration="5s", progressDeadlineSeconds=4),
        rss=[replicaset(bar, available=1), replicaset(baz, available=1)],
    )

    assert out.actions == []  # the scale-down comes with the next reconcile
    assert out.out == {
        "phase": "Successful",
        "availableAt": at(-10),
        "templateStatuses": [
            tstatus("bar", 1, 1, Code.SUCCESSFUL),
            tstatus("baz", 1, 1, Code.SUCCESSFUL),
        ],
        "conditions": [condition("ExperimentCompleted", state="False", message=COMPLETED_MSG)],
    }
    assert out.ctx.requeue_after is None


def test_a_template_past_its_progress_deadline_fails_the_experiment() -> None:
    bar = template("bar")
    status = {
        "phase": "Pending",
        "templateStatuses": [tstatus("bar", 1, 0, Code.PROGRESSING, since=at(-31))],
        "conditions": [condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-31))],
    }
    out = reconcile(
        experiment(bar, status=status, progressDeadlineSeconds=30),
        rss=[replicaset(bar, available=0, current=1)],
    )

    message = "Template 'bar' exceeded its progressDeadlineSeconds (30)"
    assert out.template("bar") == tstatus("bar", 1, 0, Code.FAILED, since=at(-31), message=message)
    assert out.out["phase"] == "Failed"
    assert out.out["message"] == message
    assert out.conditions == [
        condition("ExperimentCompleted", state="False", message=COMPLETED_MSG)
    ]
    assert out.event("TemplateFailed") == (
        f"Template 'bar' transitioned from Progressing -> Failed: {message}",
        True,
    )
    assert out.ctx.requeue_after is None


def test_the_progress_deadline_defaults_to_ten_minutes() -> None:
    bar = template("bar")
    for age, code in [(600, Code.PROGRESSING), (601, Code.FAILED)]:
        status = {
            "phase": "Pending",
            "templateStatuses": [tstatus("bar", 1, 0, Code.PROGRESSING, since=at(-age))],
        }
        out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, current=1)])
        assert out.template("bar")["status"] == code, age
    assert out.template("bar")["message"] == (
        "Template 'bar' exceeded its progressDeadlineSeconds (600)"
    )


def test_a_finished_template_keeps_its_status() -> None:
    # Completed template statuses never transition again, even if pods come back.
    bar = template("bar")
    message = "Template 'bar' exceeded its progressDeadlineSeconds (30)"
    status = {
        "phase": "Failed",
        "message": message,
        "templateStatuses": [tstatus("bar", 0, 0, Code.FAILED, message=message)],
    }
    rs = replicaset(bar, replicas=0, available=0)
    out = reconcile(experiment(bar, status=status, scaleDownDelaySeconds=0), rss=[rs])
    assert out.template("bar")["status"] == "Failed"
    assert out.out["phase"] == "Failed"
    assert out.actions == []


# -- when to look again --------------------------------------------------------------------------


def test_requeue_at_the_end_of_the_duration() -> None:
    # Argo's TestRequeueAfterDuration.
    bar = template("bar")
    status = running(tstatus("bar", 1, 1, Code.RUNNING), available_at=at(-10))
    out = reconcile(
        experiment(bar, status=status, duration="30s"), rss=[replicaset(bar, available=1)]
    )
    assert out.ctx.requeue_after == 20


def test_requeue_at_the_progress_deadline() -> None:
    # Argo's TestRequeueAfterProgressDeadlineSeconds.
    bar = template("bar")
    status = {"phase": "Pending", "templateStatuses": [tstatus("bar", 0, 0, Code.PROGRESSING)]}
    out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, available=0)])
    assert out.ctx.requeue_after == 600


def test_requeue_at_the_earliest_of_duration_and_progress_deadlines() -> None:
    bar, baz = template("bar"), template("baz", replicas=2)
    status = running(
        tstatus("bar", 1, 1, Code.RUNNING),
        tstatus("baz", 2, 1, Code.RUNNING, since=at(-100)),
        available_at=at(-10),
    )
    ex = Experiment.from_dict(
        experiment(bar, baz, status=status, duration="5m", progressDeadlineSeconds=120)
    )
    assert ex.status is not None
    # baz is short of a replica since 100s ago: deadline in 20s, before the duration's end.
    assert rec.enqueue_after(ex, ex.status, NOW) == 20
    status["templateStatuses"][1] = tstatus("baz", 2, 2, Code.RUNNING, since=at(-100))
    ex = Experiment.from_dict(experiment(bar, baz, status=status, duration="5m"))
    assert ex.status is not None
    assert rec.enqueue_after(ex, ex.status, NOW) == 290  # 300s after availableAt


@pytest.mark.parametrize(
    "why",
    [
        {"spec": {"terminate": True}},
        {"status": {"phase": "Successful"}},
        {"status": {"templateStatuses": [tstatus("bar", 1, 0, Code.FAILED)]}},
        {"status": {"analysisRuns": [run_status("a", Phase.INCONCLUSIVE)]}},
    ],
    ids=["terminate", "finished", "template failed", "analysis inconclusive"],
)
def test_no_requeue_while_terminating(why: Obj) -> None:
    bar = template("bar")
    obj = experiment(bar, status=running(tstatus("bar", 1, 0, Code.RUNNING)), duration="1m")
    obj["spec"].update(why.get("spec", {}))
    obj["status"].update(why.get("status", {}))
    ex = Experiment.from_dict(obj)
    assert ex.status is not None
    assert rec.enqueue_after(ex, ex.status, NOW) is None


def test_a_duration_that_has_just_ended_requeues_now() -> None:
    bar = template("bar")
    obj = experiment(
        bar, status=running(tstatus("bar", 1, 1, Code.RUNNING), available_at=at(-60)), duration="1m"
    )
    ex = Experiment.from_dict(obj)
    assert ex.status is not None
    assert rec.enqueue_after(ex, ex.status, NOW) == 0
    assert not rec.passed_duration(ex, NOW)
    assert rec.passed_duration(ex, NOW + dt.timedelta(seconds=1))


# -- terminating and scaling down ----------------------------------------------------------------


def test_terminate_succeeds_the_templates_and_stamps_the_scale_down_deadline() -> None:
    bar = template("bar")
    rs = replicaset(bar, available=1)
    status = running(tstatus("bar", 1, 1, Code.RUNNING, since=at(-300)))
    out = reconcile(experiment(bar, status=status, terminate=True), rss=[rs])

    # The deadline first (30s default delay); the ReplicaSet keeps its replica until then.
    assert out.actions == ["patch replicasets foo-bar"]
    assert out.body(0) == {
        "metadata": {"annotations": {SCALE_DOWN: at(30)}, "resourceVersion": "11"}
    }
    assert out.ctx.requeue_after == 30
    assert out.template("bar") == tstatus("bar", 1, 1, Code.SUCCESSFUL)  # transition: now
    assert out.out["phase"] == "Successful"
    assert out.conditions == [
        condition("ExperimentCompleted", state="False", message=COMPLETED_MSG)
    ]


def test_a_terminated_experiment_whose_pods_never_came_up_is_successful() -> None:
    bar = template("bar")
    status = {"phase": "Pending", "templateStatuses": [tstatus("bar", 1, 0, Code.PROGRESSING)]}
    out = reconcile(
        experiment(bar, status=status, terminate=True), rss=[replicaset(bar, current=1)]
    )
    assert out.template("bar")["status"] == "Successful"
    assert out.out["phase"] == "Successful"


def test_the_replicaset_waits_for_its_scale_down_deadline() -> None:
    bar = template("bar")
    rs = replicaset(bar, available=1, annotations={SCALE_DOWN: at(12)})
    status = running(tstatus("bar", 1, 1, Code.SUCCESSFUL), phase="Successful")
    out = reconcile(experiment(bar, status=status), rss=[rs])
    assert out.actions == []
    assert out.ctx.requeue_after == 12


def test_the_replicaset_is_scaled_down_after_its_deadline() -> None:
    bar = template("bar")
    rs = replicaset(bar, available=1, annotations={SCALE_DOWN: at(-1)})
    status = running(tstatus("bar", 1, 1, Code.SUCCESSFUL), phase="Successful")
    out = reconcile(experiment(bar, status=status), rss=[rs])

    assert out.actions == ["patch replicasets foo-bar"]
    assert out.body(0) == {"spec": {"replicas": 0}, "metadata": {"resourceVersion": "11"}}
    assert out.event("ScalingReplicaSet") == (
        "Scaled down ReplicaSet foo-bar from 1 to 0",
        False,
    )
    assert out.ctx.template_rss["bar"]["spec"]["replicas"] == 0
    assert out.template("bar")["status"] == "Successful"
    assert out.ctx.requeue_after is None


def test_with_no_scale_down_delay_the_deadline_is_removed_and_the_replicaset_scaled_down() -> None:
    # Argo's TestRemoveScaleDownDelayFromRS.
    bar = template("bar")
    rs = replicaset(bar, available=1, annotations={SCALE_DOWN: at(600)})
    status = running(tstatus("bar", 1, 1, Code.SUCCESSFUL), phase="Successful")
    out = reconcile(experiment(bar, status=status, scaleDownDelaySeconds=0), rss=[rs])

    assert out.actions == ["patch replicasets foo-bar", "patch replicasets foo-bar"]
    assert out.body(0) == {"metadata": {"annotations": {SCALE_DOWN: None}, "resourceVersion": "11"}}
    assert out.body(1)["spec"] == {"replicas": 0}
    scaled = out.writer.objects[("replicasets", NS, "foo-bar")]
    assert SCALE_DOWN not in scaled["metadata"]["annotations"]
    assert scaled["spec"]["replicas"] == 0


def test_a_failed_template_scales_the_others_down_after_the_delay() -> None:
    bar, baz = template("bar"), template("baz")
    message = "Template 'bar' exceeded its progressDeadlineSeconds (600)"
    status = {
        "phase": "Failed",
        "message": message,
        "templateStatuses": [
            tstatus("bar", 1, 0, Code.FAILED, message=message),
            tstatus("baz", 1, 1, Code.RUNNING),
        ],
    }
    out = reconcile(
        experiment(bar, baz, status=status, scaleDownDelaySeconds=45),
        rss=[replicaset(bar, current=1), replicaset(baz, available=1)],
    )
    assert out.actions == ["patch replicasets foo-bar", "patch replicasets foo-baz"]
    for index in (0, 1):
        assert out.body(index)["metadata"]["annotations"] == {SCALE_DOWN: at(45)}
    assert out.ctx.requeue_after == 45
    assert out.template("baz")["status"] == "Successful"  # terminating: it ran its course
    assert out.out["phase"] == "Failed"


def test_a_conflict_while_scaling_is_left_to_the_retry() -> None:
    # Argo's TestFailAddScaleDownDelayIsConflict: a lost race is not an Error verdict.
    bar = template("bar")
    rs = replicaset(bar, available=1)
    status = running(tstatus("bar", 1, 1, Code.SUCCESSFUL), phase="Successful")
    writer = FailingWriter(failures={("patch", "replicasets"): Conflict(409, "Conflict", "stale")})
    with pytest.raises(Conflict):
        reconcile(experiment(bar, status=status, scaleDownDelaySeconds=0), rss=[rs], writer=writer)


def test_a_failed_scale_errors_the_template() -> None:
    # Argo's TestFailAddScaleDownDelay.
    bar = template("bar")
    rs = replicaset(bar, available=1)
    status = {"phase": "Running", "templateStatuses": [tstatus("bar", 1, 1, Code.FAILED)]}
    writer = FailingWriter(
        failures={("patch", "replicasets"): KubeError(422, "Invalid", "intentional error")}
    )
    out = reconcile(
        experiment(bar, status=status, scaleDownDelaySeconds=0), rss=[rs], writer=writer
    )
    ts = out.template("bar")
    assert ts["status"] == "Error"
    assert ts["message"] == (
        "Unable to scale ReplicaSet for template 'bar' to desired replica count '0': "
        "intentional error"
    )
    assert out.out["phase"] == "Error"


# -- services ------------------------------------------------------------------------------------


PORTS: list[Obj] = [
    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
    {"containerPort": 9090, "protocol": "UDP"},
    {"containerPort": 7070},
]


def test_a_service_is_created_once_the_replicaset_exists() -> None:
    bar = template("bar", ports=PORTS, service={})
    first = reconcile(experiment(bar))
    assert first.actions == ["create replicasets foo-bar"]  # the Service comes next time

    rs = replicaset(bar, available=0)
    status = {"phase": "Pending", "templateStatuses": [tstatus("bar", 0, 0, Code.PROGRESSING)]}
    out = reconcile(experiment(bar, status=status), rss=[rs])
    assert out.actions == ["create services foo-bar"]
    assert out.body(0) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "foo-bar",
            "namespace": NS,
            "annotations": {NAME_ANN: "foo", TEMPLATE_ANN: "bar"},
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Experiment",
                    "name": "foo",
                    "uid": EX_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "selector": {HASH: pod_hash(bar)},  # the ReplicaSet's labels
            "ports": [
                {"protocol": "TCP", "port": 8080, "targetPort": 8080, "name": "http"},
                {"protocol": "UDP", "port": 9090, "targetPort": 9090},
                {"protocol": "TCP", "port": 7070, "targetPort": 7070},
            ],
        },
    }
    ts = out.template("bar")
    assert ts["serviceName"] == "foo-bar"
    assert ts["podTemplateHash"] == pod_hash(bar)
    assert out.ctx.template_services["bar"]["metadata"]["name"] == "foo-bar"


def test_no_service_is_created_while_terminating() -> None:
    bar = template("bar", ports=PORTS, service={})
    out = reconcile(
        experiment(bar, status=running(tstatus("bar", 1, 1, Code.RUNNING)), terminate=True),
        rss=[replicaset(bar, available=1)],
    )
    assert out.actions == ["patch replicasets foo-bar"]  # the scale-down deadline only


def test_a_service_takes_the_name_the_template_gives() -> None:
    # Argo's TestServiceNameSet.
    bar = template("bar", ports=PORTS[:1], service={"name": "service-name"})
    out = reconcile(experiment(bar, status={"phase": "Pending"}), rss=[replicaset(bar)])
    assert out.actions == ["create services service-name"]
    assert out.template("bar")["serviceName"] == "service-name"


def test_no_service_without_container_ports() -> None:
    bar = template("bar", service={})
    out = reconcile(experiment(bar, status={"phase": "Pending"}), rss=[replicaset(bar)])
    assert out.actions == []
    assert "serviceName" not in out.template("bar")


def test_an_existing_service_is_kept() -> None:
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar, available=1)
    status = running(tstatus("bar", 1, 1, Code.RUNNING, serviceName="foo-bar"))
    out = reconcile(experiment(bar, status=status), rss=[rs], services=[service(bar, rs)])
    assert out.actions == []
    assert out.template("bar")["serviceName"] == "foo-bar"


def test_a_service_the_cache_knows_but_did_not_match_is_adopted() -> None:
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar)
    ours = service(bar, rs)
    writer = RecordingWriter()
    writer.seed(r.SERVICES, copy.deepcopy(ours))
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}),
        rss=[rs],
        writer=writer,
        cached_services=[ours],
    )
    assert out.actions == ["create services foo-bar"]  # AlreadyExists: it is ours
    assert out.template("bar")["status"] == "Progressing"
    assert out.template("bar")["serviceName"] == "foo-bar"
    assert out.ctx.template_services["bar"] is ours


def test_our_service_not_yet_in_the_cache_is_not_an_error() -> None:
    # The Service created by the previous reconcile (its name is in the status) has not reached
    # the cache yet, which the experiment's own status write may outrun: the create answers
    # AlreadyExists, and that is no reason to fail the template.
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar, available=1)
    writer = RecordingWriter()
    writer.seed(r.SERVICES, service(bar, rs))
    status = running(
        tstatus("bar", 1, 1, Code.RUNNING, serviceName="foo-bar", podTemplateHash=pod_hash(bar))
    )
    out = reconcile(experiment(bar, status=status), rss=[rs], writer=writer)
    assert out.actions == ["create services foo-bar"]
    assert out.out == status


def test_a_service_whose_creator_died_before_its_status_write_is_named() -> None:
    # kill -9 between the Service's create and the status write: the next reconcile finds the
    # Service ours in the cache and writes the name and hash that write would have, so that a
    # rollout's router sends the template's weight to it.
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar, available=1)
    status = running(tstatus("bar", 1, 1, Code.RUNNING))
    out = reconcile(experiment(bar, status=status), rss=[rs], services=[service(bar, rs)])
    assert out.actions == []
    assert out.template("bar")["serviceName"] == "foo-bar"
    assert out.template("bar")["podTemplateHash"] == pod_hash(bar)


def test_our_service_whose_creator_died_is_adopted_before_the_cache_has_it() -> None:
    # The same, before the watcher has cached the Service: the create answers AlreadyExists and
    # the server's copy says it is ours.
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar)
    writer = RecordingWriter()
    writer.seed(r.SERVICES, service(bar, rs))
    out = reconcile(experiment(bar, status={"phase": "Pending"}), rss=[rs], writer=writer)
    assert out.actions == ["create services foo-bar"]
    ts = out.template("bar")
    assert ts["status"] == "Progressing"
    assert ts["serviceName"] == "foo-bar"
    assert ts["podTemplateHash"] == pod_hash(bar)


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "only on the server"])
def test_a_foreign_service_under_the_name_errors_the_template(cached: bool) -> None:
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar)
    foreign = service(bar, rs, owner_uid="someone-else")
    writer = RecordingWriter()
    writer.seed(r.SERVICES, copy.deepcopy(foreign))
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}),
        rss=[rs],
        writer=writer,
        cached_services=[foreign] if cached else [],
    )
    ts = out.template("bar")
    assert ts["status"] == "Error"
    assert ts["message"] == (
        "Failed to create Service foo-bar for template 'bar': service foo-bar already exists "
        "and is not owned by experiment template bar"
    )
    assert out.out["phase"] == "Error"


def test_a_service_that_cannot_be_created_errors_the_experiment() -> None:
    # Argo's TestFailServiceCreation.
    bar = template("bar", ports=PORTS, service={})
    writer = FailingWriter(
        failures={("create", "services"): KubeError(403, "Forbidden", "intentional error")}
    )
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}), rss=[replicaset(bar)], writer=writer
    )
    ts = out.template("bar")
    assert ts["status"] == "Error"
    assert ts["message"] == "Failed to create Service foo-bar for template 'bar': intentional error"
    assert out.out["phase"] == "Error"


def test_a_service_is_deleted_when_the_template_no_longer_asks_for_one() -> None:
    # Argo's TestDeleteServiceIfServiceFieldNil.
    bar = template("bar", ports=PORTS)
    rs = replicaset(bar, available=1)
    status = running(
        tstatus("bar", 1, 1, Code.RUNNING, serviceName="foo-bar", podTemplateHash=pod_hash(bar))
    )
    out = reconcile(experiment(bar, status=status), rss=[rs], services=[service(bar, rs)])
    assert out.actions == ["delete services foo-bar"]
    ts = out.template("bar")
    assert "serviceName" not in ts
    assert "podTemplateHash" not in ts
    assert "bar" not in out.ctx.template_services


def test_the_service_is_deleted_once_the_replicaset_is_scaled_down_and_drained() -> None:
    # Argo's TestScaleDownRSAfterFinish: bar has a Service, both ReplicaSets are past the deadline.
    bar, baz = template("bar", ports=PORTS, service={}), template("baz")
    rs1 = replicaset(bar, available=0, annotations={SCALE_DOWN: at(-10)})
    rs2 = replicaset(baz, available=0, annotations={SCALE_DOWN: at(-10)})
    status = running(
        tstatus("bar", 0, 0, Code.SUCCESSFUL, serviceName="foo-bar"),
        tstatus("baz", 0, 0, Code.SUCCESSFUL),
    )
    out = reconcile(
        experiment(bar, baz, status=status), rss=[rs1, rs2], services=[service(bar, rs1)]
    )
    assert out.actions == [
        "patch replicasets foo-bar",
        "delete services foo-bar",
        "patch replicasets foo-baz",
    ]
    assert out.out["phase"] == "Successful"
    assert "serviceName" not in out.template("bar")


def test_the_service_stays_while_the_scaled_down_pods_are_still_available() -> None:
    # Argo's TestScaleDownRSAfterFinishAndTerminateForRolloutCreatedExperiment.
    bar = template("bar", ports=PORTS, service={})
    rs = replicaset(bar, available=1, annotations={SCALE_DOWN: at(-10)})
    status = running(tstatus("bar", 1, 1, Code.SUCCESSFUL, serviceName="foo-bar"))
    out = reconcile(
        experiment(bar, status=status, terminate=True), rss=[rs], services=[service(bar, rs)]
    )
    assert out.actions == ["patch replicasets foo-bar"]
    assert out.template("bar")["serviceName"] == "foo-bar"

    # Drained on a later reconcile: the Service goes.
    drained = replicaset(bar, replicas=0, available=0, annotations={SCALE_DOWN: at(-10)})
    later = reconcile(
        experiment(bar, status=out.out, terminate=True),
        rss=[drained],
        services=[service(bar, drained)],
    )
    assert later.actions == ["delete services foo-bar"]


# -- analyses ------------------------------------------------------------------------------------


def analysis(name: str = "success-rate", template_name: str = "success-rate", **extra: Any) -> Obj:
    return {"name": name, "templateName": template_name, **extra}


def test_analyses_do_not_start_before_the_templates_are_available() -> None:
    # Argo's TestDontStartAnalysisRunIfNotAvailable.
    bar = template("bar")
    status = {"phase": "Pending", "templateStatuses": [tstatus("bar", 1, 0, Code.PROGRESSING)]}
    out = reconcile(
        experiment(bar, status=status, analyses=[analysis()]),
        rss=[replicaset(bar, current=1)],
        templates={"success-rate": analysis_template()},
    )
    assert out.actions == []
    # As Go writes it (no omitempty; Argo's CRD requires both).
    assert out.analysis("success-rate") == {"name": "success-rate", "analysisRun": "", "phase": ""}
    assert out.out["phase"] == "Pending"


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        (
            False,
            "AnalysisTemplate verification failed for analysis 'success-rate': "
            'analysistemplate.argoproj.io "does-not-exist" not found',
        ),
        (
            True,
            "ClusterAnalysisTemplate verification failed for analysis 'success-rate': "
            'clusteranalysistemplate.argoproj.io "does-not-exist" not found',
        ),
    ],
)
def test_a_missing_template_errors_the_analysis_before_availability(
    cluster: bool, expected: str
) -> None:
    # Argo's TestAnalysisTemplateNotExists / TestClusterAnalysisTemplateNotExists.
    bar = template("bar")
    ref = analysis(template_name="does-not-exist", clusterScope=cluster)
    out = reconcile(
        experiment(bar, status={"phase": "Pending"}, analyses=[ref]),
        rss=[replicaset(bar, current=1)],
        # A template of that name in the other scope does not count.
        templates={"does-not-exist": analysis_template()} if cluster else None,
        cluster_templates=None if cluster else {"does-not-exist": analysis_template()},
    )
    assert out.analysis("success-rate") == {
        "name": "success-rate",
        "analysisRun": "",
        "phase": "Error",
        "message": expected,
    }
    assert out.out["phase"] == "Error"
    assert out.out["message"] == expected
    assert out.event("AnalysisRunError") == (
        f"AnalysisRun 'success-rate' transitioned from  -> Error: {expected}",
        True,
    )


def test_analyses_start_once_available_with_the_experiment_placeholders_resolved() -> None:
    # Argo's TestCreateAnalysisRunWhenAvailable / TestCreateAnalysisRunWithArg /
    # TestCreateAnalysisRunWithInstanceID.
    bar = template("bar")
    rs = replicaset(bar, available=1)
    obj = experiment(
        bar,
        status=running(tstatus("bar", 1, 1, Code.RUNNING), available_at=at(-5)),
        duration="1m",
        analyses=[
            analysis(
                args=[
                    {"name": "canary-hash", "value": "{{templates.bar.podTemplateHash}}"},
                    {"name": "rs", "value": "{{ templates.bar.replicaset.name }}"},
                    {
                        "name": "window",
                        "value": "{{experiment.availableAt}}..{{experiment.finishedAt}}",
                    },
                    {"name": "plain", "value": "sss"},
                ]
            )
        ],
        dryRun=[{"metricName": "rate"}],
        measurementRetention=[{"metricName": "rate", "limit": 3}],
        analysisRunMetadata={"labels": {"team": "a"}, "annotations": {"note": "b"}},
    )
    obj["metadata"]["labels"] = {r.INSTANCE_ID_LABEL: "my-instance-id"}
    out = reconcile(
        obj,
        rss=[rs],
        templates={"success-rate": analysis_template("canary-hash", "rs", "window", "plain")},
    )

    assert out.actions == ["create analysisruns foo-success-rate"]
    run = out.body(0)
    assert run["metadata"]["name"] == "foo-success-rate"
    assert run["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Experiment",
            "name": "foo",
            "uid": EX_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert run["metadata"]["labels"] == {r.INSTANCE_ID_LABEL: "my-instance-id", "team": "a"}
    assert run["metadata"]["annotations"] == {"note": "b"}
    assert run["spec"]["args"] == [
        {"name": "canary-hash", "value": pod_hash(bar)},
        {"name": "rs", "value": "foo-bar"},
        {"name": "window", "value": f"{at(-5)}..{at(55)}"},
        {"name": "plain", "value": "sss"},
    ]
    assert run["spec"]["dryRun"] == [{"metricName": "rate"}]
    assert run["spec"]["measurementRetention"] == [{"metricName": "rate", "limit": 3}]
    assert out.analysis("success-rate") == run_status("success-rate", Phase.PENDING)
    assert out.out["phase"] == "Running"
    assert out.event("AnalysisRunPending") == (
        "AnalysisRun 'success-rate' transitioned from  -> Pending",
        False,
    )


def test_a_cluster_scoped_analysis_starts_from_the_cluster_template() -> None:
    # Argo's TestCreateAnalysisRunWithClusterTemplate.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(tstatus("bar", 1, 1, Code.RUNNING)),
        analyses=[analysis("cluster-success-rate", "cluster-success-rate", clusterScope=True)],
    )
    out = reconcile(
        obj,
        rss=[replicaset(bar, available=1)],
        cluster_templates={"cluster-success-rate": analysis_template()},
    )
    assert out.actions == ["create analysisruns foo-cluster-success-rate"]
    assert out.analysis("cluster-success-rate")["phase"] == "Pending"


def test_an_unresolvable_argument_errors_the_analysis() -> None:
    # Argo's TestAnalysisRunFailToResolveArg.
    bar = template("bar")
    ref = analysis(args=[{"name": "canary-hash", "value": "{{not a real substitution}}"}])
    out = reconcile(
        experiment(bar, status=running(tstatus("bar", 1, 1, Code.RUNNING)), analyses=[ref]),
        rss=[replicaset(bar, available=1)],
        templates={"success-rate": analysis_template("canary-hash")},
    )
    assert out.actions == []
    assert out.analysis("success-rate") == {
        "name": "success-rate",
        "analysisRun": "",
        "phase": "Error",
        "message": "Failed to create AnalysisRun for analysis 'success-rate': "
        "failed to resolve {{not a real substitution}}",
    }
    assert out.out["phase"] == "Error"


def test_a_template_that_vanished_errors_the_analysis_at_creation() -> None:
    # Argo's TestAnalysisTemplateNotFoundShouldFailTheExperiment (its message differs, see the
    # report: Argo quotes the API's NotFound, `analysistemplate.argoproj.io "bar" not found`).
    bar = template("bar")
    out = reconcile(
        experiment(
            bar,
            status={"phase": "Running", "availableAt": NOW_TEXT},
            analyses=[analysis("exp-bar", "bar")],
        ),
        rss=[replicaset(bar, replicas=1)],
    )
    message = out.analysis("exp-bar")["message"]
    assert message.startswith("Failed to create AnalysisRun for analysis 'exp-bar': ")
    assert message.endswith('"bar" not found')
    assert out.analysis("exp-bar")["phase"] == "Error"
    assert out.out == {
        "phase": "Error",
        "message": message,
        "availableAt": NOW_TEXT,
        "templateStatuses": [tstatus("bar", 0, 0, Code.PROGRESSING)],
        "analysisRuns": [
            {"name": "exp-bar", "analysisRun": "", "phase": "Error", "message": message}
        ],
        "conditions": [condition("ExperimentCompleted", state="False", message=COMPLETED_MSG)],
    }


def test_a_failed_run_create_errors_the_analysis() -> None:
    # Argo's TestAnalysisRunCreateError.
    bar = template("bar")
    writer = FailingWriter(
        failures={("create", "analysisruns"): KubeError(403, "Forbidden", "intentional error")}
    )
    out = reconcile(
        experiment(bar, status=running(tstatus("bar", 1, 1, Code.RUNNING)), analyses=[analysis()]),
        rss=[replicaset(bar, available=1)],
        templates={"success-rate": analysis_template()},
        writer=writer,
    )
    assert out.analysis("success-rate") == {
        "name": "success-rate",
        "analysisRun": "",
        "phase": "Error",
        "message": "Failed to create AnalysisRun for analysis 'success-rate': intentional error",
    }
    assert out.out["phase"] == "Error"


@pytest.mark.parametrize(
    "error",
    [Conflict(409, "Conflict", "stale"), Unavailable(503, "Unavailable", "down")],
    ids=["conflict", "unavailable"],
)
def test_a_run_create_that_may_succeed_later_is_retried(error: KubeError) -> None:
    bar = template("bar")
    writer = FailingWriter(failures={("create", "analysisruns"): error})
    with pytest.raises(type(error)):
        reconcile(
            experiment(
                bar, status=running(tstatus("bar", 1, 1, Code.RUNNING)), analyses=[analysis()]
            ),
            rss=[replicaset(bar, available=1)],
            templates={"success-rate": analysis_template()},
            writer=writer,
        )


def test_a_run_created_by_an_earlier_reconcile_is_claimed() -> None:
    # Argo's TestAnalysisRunCreateCollisionSemanticallyEqual.
    bar = template("bar")
    obj = experiment(bar, status=running(tstatus("bar", 1, 1, Code.RUNNING)), analyses=[analysis()])
    first = reconcile(
        obj, rss=[replicaset(bar, available=1)], templates={"success-rate": analysis_template()}
    )
    created = first.writer.objects[("analysisruns", NS, "foo-success-rate")]

    out = reconcile(
        obj,
        rss=[replicaset(bar, available=1)],
        runs=[created],
        templates={"success-rate": analysis_template()},
    )
    assert out.actions == []
    assert out.analysis("success-rate") == run_status("success-rate", Phase.PENDING)


def test_analyses_are_not_started_while_terminating() -> None:
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(tstatus("bar", 1, 1, Code.RUNNING)),
        analyses=[analysis()],
        terminate=True,
    )
    out = reconcile(
        obj, rss=[replicaset(bar, available=1)], templates={"success-rate": analysis_template()}
    )
    assert "create analysisruns foo-success-rate" not in out.actions
    assert out.analysis("success-rate") == {"name": "success-rate", "analysisRun": "", "phase": ""}


def test_the_run_phase_and_message_are_mirrored() -> None:
    # Argo's TestAnalysisRunSuccessful.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            analysisRuns=[run_status("success-rate", Phase.RUNNING)],
        ),
        analyses=[analysis()],
    )
    run = analysis_run("foo-success-rate", Phase.SUCCESSFUL, message="all good")
    out = reconcile(obj, rss=[replicaset(bar, available=1)], runs=[run])
    assert out.analysis("success-rate") == run_status(
        "success-rate", Phase.SUCCESSFUL, message="all good"
    )
    assert out.out["phase"] == "Running"  # not required: the templates still run


def test_a_run_message_that_went_away_is_cleared() -> None:
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            analysisRuns=[run_status("success-rate", Phase.RUNNING, message="metric errored")],
        ),
        analyses=[analysis()],
    )
    run = analysis_run("foo-success-rate", Phase.RUNNING)
    out = reconcile(obj, rss=[replicaset(bar, available=1)], runs=[run])
    assert out.analysis("success-rate") == run_status("success-rate", Phase.RUNNING)


def test_a_run_missing_from_the_cache_errors_the_analysis() -> None:
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            analysisRuns=[run_status("success-rate", Phase.RUNNING)],
        ),
        analyses=[analysis()],
    )
    out = reconcile(obj, rss=[replicaset(bar, available=1)])
    assert out.analysis("success-rate") == run_status(
        "success-rate",
        Phase.ERROR,
        message='analysisrun.argoproj.io "foo-success-rate" not found',
    )
    assert out.out["phase"] == "Error"


def test_a_successful_required_analysis_completes_the_experiment() -> None:
    # Argo's TestCompleteExperimentOnSuccessfulRequiredAnalysisRun.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            available_at=at(-60),
            analysisRuns=[run_status("success-rate", Phase.RUNNING)],
        ),
        analyses=[analysis(requiredForCompletion=True)],
    )
    run = analysis_run("foo-success-rate", Phase.SUCCESSFUL)
    out = reconcile(obj, rss=[replicaset(bar, available=1)], runs=[run])
    assert out.out["phase"] == "Successful"
    assert out.out["message"] == "Required AnalysisRuns completed"
    assert out.conditions == [
        condition("ExperimentCompleted", state="False", message=COMPLETED_MSG)
    ]
    # Now terminating: the next reconcile succeeds the template and starts the scale-down.
    later = reconcile(
        experiment(bar, status=out.out, analyses=[analysis(requiredForCompletion=True)]),
        rss=[replicaset(bar, available=1)],
        runs=[run],
    )
    assert later.actions == ["patch replicasets foo-bar"]
    assert later.template("bar")["status"] == "Successful"


def test_a_required_analysis_still_running_keeps_the_experiment_going() -> None:
    # Argo's TestDoNotCompleteExperimentWithRemainingRequiredAnalysisRun.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            analysisRuns=[
                run_status("success-rate", Phase.SUCCESSFUL),
                run_status("success-rate-2", Phase.RUNNING),
            ],
        ),
        analyses=[
            analysis(requiredForCompletion=True),
            analysis("success-rate-2", requiredForCompletion=True),
        ],
    )
    run2 = analysis_run("foo-success-rate-2", Phase.RUNNING)
    out = reconcile(obj, rss=[replicaset(bar, available=1)], runs=[run2])
    assert out.out["phase"] == "Running"
    assert "message" not in out.out


def test_a_running_optional_analysis_does_not_hold_a_finished_experiment() -> None:
    # Argo's TestCompleteExperimentWithNoRequiredAnalysis.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.SUCCESSFUL),
            available_at=at(-61),
            analysisRuns=[run_status("success-rate", Phase.RUNNING)],
        ),
        duration="1m",
        analyses=[analysis()],
    )
    out = reconcile(
        obj,
        rss=[replicaset(bar, available=1)],
        runs=[analysis_run("foo-success-rate", Phase.RUNNING)],
    )
    assert out.out["phase"] == "Successful"
    assert "message" not in out.out


ANALYSIS_TABLE = [
    (Phase.SUCCESSFUL, Phase.SUCCESSFUL),
    (Phase.FAILED, Phase.SUCCESSFUL),
    (Phase.SUCCESSFUL, Phase.FAILED),
    (Phase.RUNNING, Phase.SUCCESSFUL),
    (Phase.INCONCLUSIVE, Phase.RUNNING),
    (Phase.ERROR, Phase.INCONCLUSIVE),
    (Phase.FAILED, Phase.ERROR),
    (Phase.PENDING, Phase.RUNNING),
]


def two_analyses(
    first: Phase, second: Phase, *, required: bool, template_code: Code, **spec: Any
) -> Outcome:
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, template_code),
            available_at=at(-61),
            analysisRuns=[
                run_status("success-rate", Phase.RUNNING),
                run_status("latency", Phase.RUNNING),
            ],
        ),
        analyses=[
            analysis(requiredForCompletion=required),
            analysis("latency", "latency", requiredForCompletion=required),
        ],
        **spec,
    )
    runs = [
        analysis_run("foo-success-rate", first, message=f"success-rate {first}"),
        analysis_run("foo-latency", second, message=f"latency {second}"),
    ]
    return reconcile(obj, rss=[replicaset(bar, available=1)], runs=runs)


@pytest.mark.parametrize(
    ("first", "second", "expected", "message"),
    [
        (Phase.SUCCESSFUL, Phase.SUCCESSFUL, Phase.RUNNING, None),
        (Phase.FAILED, Phase.SUCCESSFUL, Phase.FAILED, "success-rate Failed"),
        (Phase.SUCCESSFUL, Phase.FAILED, Phase.FAILED, "latency Failed"),
        (Phase.RUNNING, Phase.SUCCESSFUL, Phase.RUNNING, None),
        (Phase.INCONCLUSIVE, Phase.RUNNING, Phase.INCONCLUSIVE, "success-rate Inconclusive"),
        (Phase.ERROR, Phase.INCONCLUSIVE, Phase.ERROR, "success-rate Error"),
        (Phase.FAILED, Phase.ERROR, Phase.FAILED, "success-rate Failed"),
        (Phase.INCONCLUSIVE, Phase.FAILED, Phase.FAILED, "latency Failed"),
    ],
)
def test_a_bad_analysis_ends_a_running_experiment_early(
    first: Phase, second: Phase, expected: Phase, message: str | None
) -> None:
    # Argo's TestFailExperimentWhenAnalysisFails (not required, templates still running).
    out = two_analyses(first, second, required=False, template_code=Code.RUNNING, duration="5m")
    assert out.out["phase"] == expected
    assert out.out.get("message") == message


@pytest.mark.parametrize(
    ("first", "second", "expected", "message"),
    [
        (Phase.SUCCESSFUL, Phase.SUCCESSFUL, Phase.SUCCESSFUL, "Required AnalysisRuns completed"),
        (Phase.FAILED, Phase.SUCCESSFUL, Phase.FAILED, "success-rate Failed"),
        (Phase.SUCCESSFUL, Phase.FAILED, Phase.FAILED, "latency Failed"),
        (Phase.RUNNING, Phase.SUCCESSFUL, Phase.RUNNING, "success-rate Running"),
        (Phase.SUCCESSFUL, Phase.INCONCLUSIVE, Phase.INCONCLUSIVE, "latency Inconclusive"),
        # A run not started yet: the experiment says Running, not Pending.
        (Phase.PENDING, Phase.SUCCESSFUL, Phase.RUNNING, "success-rate Pending"),
    ],
)
def test_required_analyses_decide_once_the_templates_are_done(
    first: Phase, second: Phase, expected: Phase, message: str | None
) -> None:
    # Argo's TestAssessAnalysisRunStatusesAfterTemplateSuccess.
    out = two_analyses(first, second, required=True, template_code=Code.SUCCESSFUL, duration="1m")
    assert out.out["phase"] == expected
    assert out.out.get("message") == message


def test_a_bad_analysis_terminates_the_experiment_and_its_other_runs() -> None:
    bar = template("bar")
    analyses = [analysis(), analysis("latency", "latency")]
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 1, 1, Code.RUNNING),
            analysisRuns=[
                run_status("success-rate", Phase.RUNNING),
                run_status("latency", Phase.RUNNING),
            ],
        ),
        analyses=analyses,
    )
    runs = [
        analysis_run("foo-success-rate", Phase.INCONCLUSIVE, message="unsure"),
        analysis_run("foo-latency", Phase.RUNNING),
    ]
    out = reconcile(obj, rss=[replicaset(bar, available=1)], runs=runs)
    assert out.out["phase"] == "Inconclusive"
    assert out.out["message"] == "unsure"
    assert out.actions == []  # this reconcile only records the verdict
    assert out.event("AnalysisRunInconclusive") == (
        "AnalysisRun 'success-rate' transitioned from Running -> Inconclusive: unsure",
        True,
    )

    # The next reconcile sees a finished experiment: it stops the run still going, the template
    # succeeds, and the scale-down starts.
    later = reconcile(
        experiment(bar, status=out.out, analyses=analyses),
        rss=[replicaset(bar, available=1)],
        runs=runs,
    )
    assert later.actions == ["patch replicasets foo-bar", "patch analysisruns foo-latency"]
    assert later.body(1) == {"spec": {"terminate": True}}
    assert later.event("AnalysisRunTerminating") == ("Terminating latency (foo-latency)", False)
    assert later.analysis("latency")["phase"] == "Running"  # as last seen; the run will say
    assert later.out["phase"] == "Inconclusive"
    assert later.template("bar")["status"] == "Successful"


def test_a_terminated_experiment_stops_its_runs_once() -> None:
    # Argo's TestTerminateAnalysisRuns.
    bar = template("bar")
    obj = experiment(
        bar,
        status=running(
            tstatus("bar", 0, 0, Code.SUCCESSFUL),
            analysisRuns=[run_status("success-rate", Phase.RUNNING)],
        ),
        analyses=[analysis()],
        terminate=True,
        scaleDownDelaySeconds=0,
    )
    rs = replicaset(bar, replicas=0)
    out = reconcile(obj, rss=[rs], runs=[analysis_run("foo-success-rate", Phase.RUNNING)])
    assert out.actions == ["patch analysisruns foo-success-rate"]
    assert out.body(0) == {"spec": {"terminate": True}}

    again = reconcile(
        obj, rss=[rs], runs=[analysis_run("foo-success-rate", Phase.RUNNING, terminate=True)]
    )
    assert again.actions == []


# -- the worst-of orders -------------------------------------------------------------------------

#: Argo's templateStatusOrder and analysisStatusOrder, best to worst.
ARGO_TEMPLATE_ORDER = ["Successful", "Running", "Progressing", "Error", "Failed"]
ARGO_ANALYSIS_ORDER = ["Successful", "Running", "Pending", "Inconclusive", "Error", "Failed"]


@pytest.mark.parametrize("current", ARGO_TEMPLATE_ORDER)
@pytest.mark.parametrize("new", ARGO_TEMPLATE_ORDER)
def test_worse_template_follows_argos_order(current: str, new: str) -> None:
    expected = ARGO_TEMPLATE_ORDER.index(new) > ARGO_TEMPLATE_ORDER.index(current)
    assert rec.worse_template(Code(current), Code(new)) is expected


@pytest.mark.parametrize("current", ARGO_ANALYSIS_ORDER)
@pytest.mark.parametrize("new", ARGO_ANALYSIS_ORDER)
def test_worse_analysis_follows_argos_order(current: str, new: str) -> None:
    expected = ARGO_ANALYSIS_ORDER.index(new) > ARGO_ANALYSIS_ORDER.index(current)
    assert rec.worse_analysis(Phase(current), new) is expected


def test_an_unknown_code_ranks_as_the_best() -> None:
    # Argo's index lookups default to 0 for a value not in the order.
    assert not rec.worse_template(Code.SUCCESSFUL, None)
    assert not rec.worse_analysis(Phase.SUCCESSFUL, None)
    assert not rec.worse_analysis(Phase.SUCCESSFUL, "")
    assert rec.worse_analysis(Phase.RUNNING, "") is False


def test_the_experiment_takes_the_worst_template() -> None:
    bar, baz, qux = template("bar"), template("baz"), template("qux")
    message = "Template 'baz' exceeded its progressDeadlineSeconds (600)"
    status = {
        "phase": "Running",
        "availableAt": NOW_TEXT,
        "templateStatuses": [
            tstatus("bar", 1, 1, Code.RUNNING),
            tstatus("baz", 1, 0, Code.FAILED, message=message),
            tstatus("qux", 1, 0, Code.ERROR, message="broken"),
        ],
    }
    out = reconcile(
        experiment(bar, baz, qux, status=status, scaleDownDelaySeconds=0),
        rss=[replicaset(bar, available=1), replicaset(baz, current=1), replicaset(qux, current=1)],
    )
    assert (out.out["phase"], out.out["message"]) == ("Failed", message)


# -- pure questions ------------------------------------------------------------------------------


def test_terminating_cases() -> None:
    # Argo's TestIsTerminating.
    def ex(status: Obj | None = None, **spec: Any) -> Experiment:
        return Experiment.from_dict(experiment(template("bar"), status=status, **spec))

    assert rec.terminating(ex(terminate=True))
    assert rec.terminating(ex({"phase": "Failed"}))
    assert rec.terminating(
        ex({"phase": "Running", "templateStatuses": [{"name": "bar", "status": "Failed"}]})
    )
    assert rec.terminating(
        ex({"phase": "Running", "templateStatuses": [{"name": "bar", "status": "Error"}]})
    )
    for phase in ("Failed", "Error", "Inconclusive"):
        assert rec.terminating(
            ex({"phase": "Running", "analysisRuns": [{"name": "a", "phase": phase}]})
        )
    required = [analysis("a", "t", requiredForCompletion=True)]
    assert rec.terminating(
        ex(
            {"phase": "Running", "analysisRuns": [{"name": "a", "phase": "Successful"}]},
            analyses=required,
        )
    )
    assert not rec.terminating(
        ex(
            {"phase": "Running", "analysisRuns": [{"name": "a", "phase": "Running"}]},
            analyses=required,
        )
    )
    assert not rec.terminating(
        ex({"phase": "Running", "analysisRuns": [{"name": "a", "phase": "Successful"}]})
    )
    assert not rec.terminating(ex())


def test_required_analyses_successful() -> None:
    # Argo's TestRequiredAnalysisRunsSuccessful.
    obj = experiment(template("bar"))
    assert not rec.required_analyses_successful(Experiment.from_dict(obj), None)
    obj["spec"]["analyses"] = [analysis("foo", "t")]
    obj["status"] = {"analysisRuns": [{"name": "foo", "phase": "Running"}]}
    ex = Experiment.from_dict(obj)
    assert not rec.required_analyses_successful(ex, ex.status)
    obj["spec"]["analyses"][0]["requiredForCompletion"] = True
    ex = Experiment.from_dict(obj)
    assert not rec.required_analyses_successful(ex, ex.status)
    obj["status"]["analysisRuns"][0]["phase"] = "Successful"
    ex = Experiment.from_dict(obj)
    assert rec.required_analyses_successful(ex, ex.status)
    # A required analysis with no status at all is not successful.
    obj["spec"]["analyses"].append(analysis("bar", "t", requiredForCompletion=True))
    ex = Experiment.from_dict(obj)
    assert not rec.required_analyses_successful(ex, ex.status)


def test_desired_replicas() -> None:
    # Argo's TestCalculateTemplateReplicasCount.
    tmpl = template("template", replicas=None)
    ex = Experiment.from_dict(experiment(tmpl))
    spec = ex.spec.templates[0]
    assert rec.desired_replicas(ex, spec) == 1
    ex = Experiment.from_dict(experiment(tmpl, status={"phase": "Successful"}))
    assert rec.desired_replicas(ex, spec) == 0
    ex = Experiment.from_dict(
        experiment(
            tmpl,
            status={
                "phase": "Running",
                "templateStatuses": [{"name": "template", "status": "Failed"}],
            },
        )
    )
    assert rec.desired_replicas(ex, spec) == 0
    ex = Experiment.from_dict(experiment(template("template", replicas=3), terminate=True))
    assert rec.desired_replicas(ex, ex.spec.templates[0]) == 0


def test_passed_duration() -> None:
    # Argo's TestPassedDurations.
    def ex(duration: str | None, available_at: str | None) -> Experiment:
        spec = {"duration": duration} if duration else {}
        status = {"availableAt": available_at} if available_at else None
        return Experiment.from_dict(experiment(template("bar"), status=status, **spec))

    assert not rec.passed_duration(ex(None, None), NOW)
    assert not rec.passed_duration(ex("1s-typo", at(-60)), NOW)
    assert not rec.passed_duration(ex("1s", None), NOW)
    assert not rec.passed_duration(ex("1s", NOW_TEXT), NOW)
    assert rec.passed_duration(ex("1s", at(-2)), NOW)


# -- conditions ----------------------------------------------------------------------------------


def test_progress_keeps_the_transition_time_of_a_true_progressing_condition() -> None:
    bar = template("bar", replicas=2)
    status = {
        "phase": "Pending",
        "templateStatuses": [tstatus("bar", 2, 0, Code.PROGRESSING, since=at(-100))],
        "conditions": [condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-300))],
    }
    out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, current=2, available=1)])
    assert out.conditions == [
        {
            **condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-300)),
            "lastUpdateTime": NOW_TEXT,
        }
    ]
    assert out.template("bar")["lastTransitionTime"] == NOW_TEXT  # the counts changed


def test_progress_after_a_false_progressing_condition_transitions_now() -> None:
    bar = template("bar", replicas=2)
    status = {
        "phase": "Pending",
        "templateStatuses": [tstatus("bar", 2, 0, Code.PROGRESSING, since=at(-100))],
        "conditions": [condition("Whatever", state="False", since=at(-300))],
    }
    out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, current=2, available=1)])
    assert out.conditions == [condition("ReplicaSetUpdated", message=PROGRESSING_MSG)]


def test_a_running_experiment_without_progress_says_it_is_running() -> None:
    bar = template("bar")
    status = running(tstatus("bar", 1, 1, Code.RUNNING))
    status["conditions"] = [condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-300))]
    out = reconcile(
        experiment(bar, status=status, duration="1h"), rss=[replicaset(bar, available=1)]
    )
    assert out.conditions == [
        {
            **condition("NewReplicaSetAvailable", message=RUNNING_MSG, since=at(-300)),
            "lastUpdateTime": NOW_TEXT,
        }
    ]


def test_no_progress_before_availability_leaves_the_conditions() -> None:
    bar = template("bar")
    kept = condition("ReplicaSetUpdated", message=PROGRESSING_MSG, since=at(-30))
    status = {
        "phase": "Pending",
        "templateStatuses": [tstatus("bar", 1, 0, Code.PROGRESSING, since=at(-30))],
        "conditions": [kept],
    }
    out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, current=1)])
    assert out.conditions == [kept]
    assert out.out == status  # nothing to write


def test_an_invalid_spec_condition_is_removed_once_reconciled() -> None:
    bar = template("bar")
    invalid = {
        "type": "InvalidSpec",
        "status": "True",
        "reason": "InvalidSpec",
        "message": "Experiment foo has empty template name at index 0",
        "lastUpdateTime": at(-60),
        "lastTransitionTime": at(-60),
    }
    status = running(tstatus("bar", 1, 1, Code.RUNNING))
    status["conditions"] = [invalid, RUNNING_CONDITION]
    out = reconcile(experiment(bar, status=status), rss=[replicaset(bar, available=1)])
    assert out.conditions == [RUNNING_CONDITION]


def cond(kind: str, state: str, reason: str, updated: str = NOW_TEXT) -> ExperimentCondition:
    return ExperimentCondition(
        type=ExperimentConditionType(kind),
        status=ConditionStatus(state),
        reason=reason,
        last_update_time=updated,
        last_transition_time=updated,
    )


@pytest.mark.parametrize(
    ("before", "new", "after"),
    [
        ([], cond("Running", "True", "Awesome"), [cond("Running", "True", "Awesome")]),
        (
            [cond("InvalidSpec", "False", "Some")],
            cond("Running", "True", "Awesome"),
            [cond("InvalidSpec", "False", "Some"), cond("Running", "True", "Awesome")],
        ),
        (
            [cond("Running", "True", "Awesome", at(-60))],
            cond("Running", "True", "Awesome"),
            [cond("Running", "True", "Awesome", at(-60))],
        ),
        (
            [cond("Running", "True", "Awesome", at(-60))],
            cond("Running", "False", "Awesome"),
            [cond("Running", "False", "Awesome")],
        ),
        (
            [cond("InvalidSpec", "False", "Some")],
            cond("InvalidSpec", "True", "Because"),
            [cond("InvalidSpec", "True", "Because")],
        ),
    ],
    ids=["first", "simple set", "no change", "status change", "overwrite"],
)
def test_set_condition(
    before: list[ExperimentCondition], new: ExperimentCondition, after: list[ExperimentCondition]
) -> None:
    # Argo's TestSetExperimentCondition.
    status = ExperimentStatus(conditions=before or None)
    rec.set_condition(status, new)
    assert status.conditions == after


def test_set_condition_keeps_the_transition_time_when_only_the_reason_changes() -> None:
    status = ExperimentStatus(
        conditions=[cond("Progressing", "True", "ReplicaSetUpdated", at(-60))]
    )
    rec.set_condition(status, cond("Progressing", "True", "NewReplicaSetAvailable"))
    assert status.conditions is not None
    (only,) = status.conditions
    assert (only.reason, only.last_transition_time, only.last_update_time) == (
        "NewReplicaSetAvailable",
        at(-60),
        NOW_TEXT,
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, None, False),
        (None, [(0, 0, 0, 0)], True),
        ([(1, 0, 0, 0)], [(0, 0, 0, 0)], True),
        ([(0, 1, 0, 0)], [(0, 0, 0, 0)], True),
        ([(0, 0, 1, 0)], [(0, 0, 0, 0)], True),
        ([(0, 0, 0, 1)], [(0, 0, 0, 0)], True),
        ([(1, 1, 1, 1)], [(1, 1, 1, 1)], False),
    ],
    ids=["no changes", "new template", "replicas", "updated", "ready", "available", "same"],
)
def test_made_progress(
    old: list[tuple[int, int, int, int]] | None,
    new: list[tuple[int, int, int, int]] | None,
    expected: bool,
) -> None:
    # Argo's TestExperimentProgressing.
    def statuses(counts: list[tuple[int, int, int, int]] | None) -> list[Obj] | None:
        if counts is None:
            return None
        return [
            {
                "name": "foo",
                "replicas": a,
                "updatedReplicas": b,
                "readyReplicas": c,
                "availableReplicas": d,
            }
            for a, b, c, d in counts
        ]

    obj = experiment(template("foo"), status={"templateStatuses": statuses(old)} if old else None)
    new_status = ExperimentStatus.from_dict({"templateStatuses": statuses(new)} if new else {})
    assert rec.made_progress(Experiment.from_dict(obj), new_status) is expected


# -- spec validation -----------------------------------------------------------------------------


def invalid(*templates: Obj, **spec: Any) -> str:
    return rec.invalid_spec_message(Experiment.from_dict(experiment(*templates, **spec)))


def test_a_valid_spec_has_no_message() -> None:
    assert invalid(template("bar"), template("baz")) == ""


def test_invalid_spec_messages() -> None:
    # Argo's TestVerifyExperimentSpecBaseCases, one case per VerifyExperimentSpec check.
    no_selector = template("bar")
    del no_selector["selector"]
    assert invalid(template("ok"), no_selector) == (
        "Rollout has missing field '.Spec.Templates[1].Selector'"
    )
    assert invalid(template("bar", selector={})) == (
        "This experiment is selecting all pods at index 0. A non-empty selector is required."
    )
    expressions = {"matchExpressions": [{"key": "key", "operator": "Exists"}]}
    assert invalid(template("bar", selector=expressions)) == ""
    assert invalid(template("bar", minReadySeconds=1000)) == (
        "MinReadySeconds cannot be longer than ProgressDeadlineSeconds. Check template index 0"
    )
    assert invalid(template("bar", minReadySeconds=600)) == ""
    assert invalid(template("bar", minReadySeconds=40), progressDeadlineSeconds=30) == (
        "MinReadySeconds cannot be longer than ProgressDeadlineSeconds. Check template index 0"
    )
    assert invalid(template("")) == "Experiment foo has empty template name at index 0"
    assert invalid(template("bar"), template("bar")) == (
        "Experiment foo has repeated template name 'bar' in templates"
    )


def test_the_first_invalid_check_wins() -> None:
    # Argo checks, per template in order: selector, select-all, minReadySeconds, name, repeats.
    empty = template("", selector={})
    assert invalid(empty) == (
        "This experiment is selecting all pods at index 0. A non-empty selector is required."
    )
    assert invalid(template("bar"), template("bar", minReadySeconds=1000)) == (
        "MinReadySeconds cannot be longer than ProgressDeadlineSeconds. Check template index 1"
    )


# -- experiment arguments ------------------------------------------------------------------------


def resolve(value: str, *, status: Obj | None = None, with_rs: bool = True, **spec: Any) -> str:
    bar = template("bar")
    ex = Experiment.from_dict(experiment(bar, status=status, **spec))
    return rec.resolve_experiment_arg(value, ex, {"bar": replicaset(bar)} if with_rs else {})


def test_resolve_experiment_arg() -> None:
    h = pod_hash(template("bar"))
    available = {"availableAt": "2026-01-01T11:59:00Z"}
    assert resolve("no placeholders") == "no placeholders"
    assert resolve("{{templates.bar.podTemplateHash}}") == h
    assert resolve("{{ templates.bar.replicaset.name }}") == "foo-bar"
    assert resolve("{{templates.bar.replicaset.name}}/{{templates.bar.podTemplateHash}}") == (
        f"foo-bar/{h}"
    )
    assert resolve("{{experiment.availableAt}}", status=available) == "2026-01-01T11:59:00Z"
    assert resolve("{{experiment.finishedAt}}", status=available, duration="1m30s") == (
        "2026-01-01T12:00:30Z"
    )


@pytest.mark.parametrize(
    ("value", "kwargs"),
    [
        ("{{templates.bar.podTemplateHash}}", {"with_rs": False}),
        ("{{templates.baz.podTemplateHash}}", {}),
        ("{{experiment.availableAt}}", {}),
        ("{{experiment.finishedAt}}", {"status": {"availableAt": NOW_TEXT}}),
        ("{{args.foo}}", {}),
    ],
    ids=["no replicaset", "unknown template", "not available", "no duration", "foreign tag"],
)
def test_an_unresolvable_tag_raises(value: str, kwargs: Obj) -> None:
    with pytest.raises(ValueError, match=re.escape(f"failed to resolve {value}")):
        resolve(f"x-{value}-y", **kwargs)


def test_an_unreadable_duration_raises() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        resolve("{{experiment.availableAt}}", status={"availableAt": NOW_TEXT}, duration="1s-typo")


# -- claiming ------------------------------------------------------------------------------------


def test_claimed_maps_objects_to_templates() -> None:
    bar, baz = template("bar"), template("baz")
    obj = experiment(bar, baz)
    other = replicaset(bar, experiment_name="other")
    unknown = replicaset(template("gone"))
    no_annotations = replicaset(baz)
    no_annotations["metadata"]["annotations"] = {}
    ours = replicaset(bar)
    found = rec.claimed(obj, [other, unknown, no_annotations, ours], {"bar", "baz"}, "ReplicaSet")
    assert found == {"bar": ours}


def test_claimed_refuses_two_objects_for_one_template() -> None:
    bar = template("bar")
    first, second = replicaset(bar), replicaset(bar)
    second["metadata"]["name"] = "foo-bar-2"
    with pytest.raises(
        rec.ExperimentError, match="multiple ReplicaSets match single experiment template: bar"
    ):
        rec.claimed(experiment(bar), [first, second], {"bar"}, "ReplicaSet")
    with pytest.raises(rec.ExperimentError, match="multiple Services match"):
        rec.claimed(
            experiment(bar), [service(bar, first), service(bar, second)], {"bar"}, "Service"
        )


# -- a whole run ---------------------------------------------------------------------------------


def test_an_experiment_runs_its_course() -> None:
    """Reconcile after reconcile, with the controller's status write and the kubelet's part
    played by hand: Pending → Running → Successful → scaled down."""
    bar = template("bar", replicas=2)
    obj = experiment(bar, duration="1m", scaleDownDelaySeconds=10)
    writer = RecordingWriter()
    now = NOW

    def step(available: int | None = None) -> Outcome:
        rss = [o for (plural, _, _), o in writer.objects.items() if plural == "replicasets"]
        for rs in rss:
            if available is not None:
                rs["status"] = {
                    "replicas": rs["spec"]["replicas"],
                    "readyReplicas": available,
                    "availableReplicas": available,
                }
        ex = Experiment.from_dict(obj)
        ctx = rec.ExperimentContext(
            obj=obj,
            ex=ex,
            template_rss=rec.claimed(obj, rss, {"bar"}, "ReplicaSet"),
            template_services={},
            runs={},
            lookup=lookup(None),
            writer=writer,
            now=now,
        )
        status = rec.reconcile(ctx)
        obj["status"] = status.to_dict()
        return Outcome(ctx, status, writer)

    out = step()
    assert (out.out["phase"], out.template("bar")["status"]) == ("Pending", "Progressing")
    now += dt.timedelta(seconds=5)
    out = step(available=1)
    assert (out.out["phase"], out.template("bar")["status"]) == ("Pending", "Progressing")
    assert out.ctx.requeue_after == 600
    now += dt.timedelta(seconds=5)
    out = step(available=2)
    assert (out.out["phase"], out.template("bar")["status"]) == ("Running", "Running")
    assert out.out["availableAt"] == at(10)
    assert out.ctx.requeue_after == 60
    now += dt.timedelta(seconds=61)
    out = step()
    assert (out.out["phase"], out.template("bar")["status"]) == ("Successful", "Successful")
    start = len(writer.actions)
    out = step()
    assert [a.body["metadata"]["annotations"] for a in writer.actions[start:]] == [
        {SCALE_DOWN: at(81)}
    ]
    assert out.ctx.requeue_after == 10
    now += dt.timedelta(seconds=11)
    start = len(writer.actions)
    out = step(available=0)
    assert [a.body["spec"] for a in writer.actions[start:]] == [{"replicas": 0}]
    assert out.ctx.requeue_after is None
    assert out.out["phase"] == "Successful"


def test_analysis_args_from_a_secret_are_dropped_as_argo_drops_them() -> None:
    """An Experiment's analysis argument with valueFrom (secretKeyRef) and no value: Argo's
    ResolveAnalysisRunArgs keeps only values, so the template's own argument decides, and
    without a default the run cannot be created ("args.token was not resolved")."""
    bar = template("bar")
    ref = {"secretKeyRef": {"name": "creds", "key": "token"}}
    obj = experiment(
        bar,
        status=running(tstatus("bar", 1, 1, Code.RUNNING), available_at=at(-5)),
        duration="1m",
        analyses=[analysis(args=[{"name": "token", "valueFrom": ref}])],
    )
    out = reconcile(
        obj,
        rss=[replicaset(bar, available=1)],
        templates={"success-rate": analysis_template("token")},
    )
    assert out.actions == []
    (run,) = out.status.analysis_runs or []
    assert run.message == (
        "Failed to create AnalysisRun for analysis 'success-rate': args.token was not resolved"
    )
