"""One reconcile of one Experiment, after argo-rollouts' experiments/experiment.go.

Each template gets a ReplicaSet `<experiment>-<template>` at its replica count (and a Service
when asked); its status goes Progressing → Running once every replica is available, and
Successful when the duration has passed or the experiment is terminating, or Failed when it
makes no progress for progressDeadlineSeconds. Analyses start once all templates are available.
The experiment's phase is the worst of its templates, or of its analyses when those finish
first or are required for completion. A finished experiment scales its ReplicaSets down after
scaleDownDelaySeconds. Every wait (duration, progress deadline, scale-down delay) is a workqueue
timer, set through `ExperimentContext.requeue`.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rollout_workers.analysis import creation
from rollout_workers.analysis.templates import (
    TemplateError,
    TemplateLookup,
    owner_reference,
    run_body,
)
from rollout_workers.api.analysis import AnalysisPhase
from rollout_workers.api.base import ConditionStatus as S
from rollout_workers.api.experiment import (
    Experiment,
    ExperimentAnalysisRunStatus,
    ExperimentAnalysisTemplateRef,
    ExperimentCondition,
    ExperimentConditionType,
    ExperimentStatus,
    TemplateSpec,
    TemplateStatus,
    TemplateStatusCode,
)
from rollout_workers.cache.indexers import controller_owner
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists, Conflict, KubeError, NotFound, Unavailable
from rollout_workers.kube.writer import Writer
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.hashing import pod_template_hash
from rollout_workers.timefmt import duration_seconds, format_time, parse_time

log = logging.getLogger(__name__)

Code = TemplateStatusCode

NAME_ANNOTATION = "experiment.argoproj.io/name"
TEMPLATE_ANNOTATION = "experiment.argoproj.io/template-name"
DEFAULT_PROGRESS_DEADLINE = 600
DEFAULT_SCALE_DOWN_DELAY = 30
REQUIRED_ANALYSIS_COMPLETED = "Required AnalysisRuns completed"

COMPLETED = frozenset(
    {
        AnalysisPhase.SUCCESSFUL,
        AnalysisPhase.FAILED,
        AnalysisPhase.ERROR,
        AnalysisPhase.INCONCLUSIVE,
    }
)
TEMPLATE_COMPLETED = frozenset({Code.SUCCESSFUL, Code.FAILED, Code.ERROR})
#: Best to worst, as Argo orders them to pick the experiment's verdict.
TEMPLATE_ORDER = [Code.SUCCESSFUL, Code.RUNNING, Code.PROGRESSING, Code.ERROR, Code.FAILED]
ANALYSIS_ORDER = [
    AnalysisPhase.SUCCESSFUL,
    AnalysisPhase.RUNNING,
    AnalysisPhase.PENDING,
    AnalysisPhase.INCONCLUSIVE,
    AnalysisPhase.ERROR,
    AnalysisPhase.FAILED,
]
_PLACEHOLDER = re.compile(r"\{\{([^{}]*)\}\}")
#: API errors worth a retry with backoff rather than an Error verdict: a lost write race (the
#: fence) and a server that is briefly unavailable.
RETRYABLE = (Conflict, Unavailable)


class ExperimentError(RuntimeError):
    """The experiment cannot be reconciled now (a claimed object is ambiguous or missing from
    the cache); the reconcile is retried with backoff."""


def completed(phase: AnalysisPhase | str | None) -> bool:
    return phase in COMPLETED


def _rank(order: list[Any], value: Any) -> int:
    return order.index(value) if value in order else 0


def worse_template(current: Code, new: Code | None) -> bool:
    return _rank(TEMPLATE_ORDER, new) > _rank(TEMPLATE_ORDER, current)


def worse_analysis(current: AnalysisPhase, new: AnalysisPhase | str | None) -> bool:
    return _rank(ANALYSIS_ORDER, new) > _rank(ANALYSIS_ORDER, current)


# -- pure questions about an experiment -------------------------------------------------------


def template_status(status: ExperimentStatus | None, name: str) -> TemplateStatus | None:
    found = next(
        (t for t in (status.template_statuses if status else None) or [] if t.name == name), None
    )
    return found.model_copy(deep=True) if found is not None else None


def run_status(status: ExperimentStatus | None, name: str) -> ExperimentAnalysisRunStatus | None:
    found = next(
        (a for a in (status.analysis_runs if status else None) or [] if a.name == name), None
    )
    return found.model_copy(deep=True) if found is not None else None


def finished(ex: Experiment) -> bool:
    return ex.status is not None and completed(ex.status.phase)


def required_analyses_successful(ex: Experiment, status: ExperimentStatus | None) -> bool:
    """Some analysis is requiredForCompletion, and every such one succeeded."""
    required = [a for a in ex.spec.analyses or [] if a.required_for_completion]
    if not required or status is None:
        return False
    return all(
        (found := run_status(status, a.name)) is not None
        and found.phase == AnalysisPhase.SUCCESSFUL
        for a in required
    )


def terminating(ex: Experiment) -> bool:
    """Asked to stop, finished, or bound to end: a template or an analysis went bad, or the
    required analyses all succeeded."""
    if ex.spec.terminate or finished(ex):
        return True
    status = ex.status
    for ts in (status.template_statuses if status else None) or []:
        if ts.status in (Code.FAILED, Code.ERROR):
            return True
    bad = (AnalysisPhase.FAILED, AnalysisPhase.ERROR, AnalysisPhase.INCONCLUSIVE)
    for run in (status.analysis_runs if status else None) or []:
        if run.phase in bad:
            return True
    return required_analyses_successful(ex, status)


def duration_remaining(ex: Experiment, now: dt.datetime) -> float | None:
    """Seconds until the duration has passed (<= 0 once it has); None while it cannot pass
    (no duration, or the templates were never all available)."""
    if not ex.spec.duration or ex.status is None or not ex.status.available_at:
        return None
    seconds = duration_seconds(ex.spec.duration)
    if seconds is None:
        return None
    ends = parse_time(ex.status.available_at) + dt.timedelta(seconds=seconds)
    return (ends - now).total_seconds()


def passed_duration(ex: Experiment, now: dt.datetime) -> bool:
    remaining = duration_remaining(ex, now)
    return remaining is not None and remaining < 0


def progress_deadline(ex: Experiment) -> int:
    value = ex.spec.progress_deadline_seconds
    return DEFAULT_PROGRESS_DEADLINE if value is None else value


def scale_down_delay(ex: Experiment) -> int:
    value = ex.spec.scale_down_delay_seconds
    return DEFAULT_SCALE_DOWN_DELAY if value is None else value


def template_replicas(template: TemplateSpec) -> int:
    return 1 if template.replicas is None else template.replicas


def desired_replicas(ex: Experiment, template: TemplateSpec) -> int:
    if finished(ex) or terminating(ex):
        return 0
    ts = template_status(ex.status, template.name)
    if ts is not None and ts.status in TEMPLATE_COMPLETED:
        return 0
    return template_replicas(template)


def claimed(ex_obj: Obj, objects: Iterable[Obj], names: set[str], kind: str) -> dict[str, Obj]:
    """The experiment's objects by template name: those it controls that carry its name and a
    template name it defines. Two for one template is an error, as in Argo."""
    meta = ex_obj["metadata"]
    found: dict[str, Obj] = {}
    for obj in objects:
        annotations = ann.annotations_of(obj)
        if annotations.get(NAME_ANNOTATION) != meta["name"]:
            continue
        template = annotations.get(TEMPLATE_ANNOTATION, "")
        if template not in names:
            continue
        if template in found:
            raise ExperimentError(f"multiple {kind}s match single experiment template: {template}")
        found[template] = obj
    return found


def resolve_experiment_arg(value: str, ex: Experiment, template_rss: dict[str, Obj]) -> str:
    """An analysis argument with the experiment's placeholders filled in:
    `{{templates.<name>.podTemplateHash}}`, `{{templates.<name>.replicaset.name}}`,
    `{{experiment.availableAt}}` and `{{experiment.finishedAt}}`."""
    values: dict[str, str] = {}
    if ex.status is not None and ex.status.available_at:
        values["experiment.availableAt"] = ex.status.available_at
        if ex.spec.duration:
            seconds = duration_seconds(ex.spec.duration)
            if seconds is None:
                raise ValueError(f"invalid duration {ex.spec.duration!r}")
            ends = parse_time(ex.status.available_at) + dt.timedelta(seconds=seconds)
            values["experiment.finishedAt"] = format_time(ends)
    for template in ex.spec.templates:
        rs = template_rss.get(template.name)
        if rs is not None:
            values[f"templates.{template.name}.podTemplateHash"] = rsutil.pod_hash(rs) or ""
            values[f"templates.{template.name}.replicaset.name"] = rsutil.name(rs)

    def substitute(match: re.Match[str]) -> str:
        tag = match.group(1).strip()
        if tag not in values:
            raise ValueError(f"failed to resolve {{{{{match.group(1)}}}}}")
        return values[tag]

    return _PLACEHOLDER.sub(substitute, value)


# -- the reconcile ------------------------------------------------------------------------------


@dataclass
class ExperimentContext:
    obj: Obj  # the experiment as read
    ex: Experiment
    template_rss: dict[str, Obj]  # by template name
    template_services: dict[str, Obj]  # by template name
    runs: dict[str, Obj]  # the AnalysisRuns it owns, by name
    lookup: TemplateLookup
    writer: Writer
    now: dt.datetime
    replicasets: dict[str, Obj] = field(default_factory=dict)  # every RS of its namespace, by name
    services: dict[str, Obj] = field(default_factory=dict)  # every Service of it, by name
    new_status: ExperimentStatus = field(default_factory=ExperimentStatus)
    events: list[tuple[str, str, bool]] = field(default_factory=list)
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        self.new_status = (self.ex.status or ExperimentStatus()).model_copy(deep=True)
        self.is_terminating = terminating(self.ex)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", "default"))

    def now_text(self) -> str:
        return format_time(self.now)

    def requeue(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append((reason, message, warning))

    def set_template_status(self, ts: TemplateStatus) -> None:
        statuses = list(self.new_status.template_statuses or [])
        index = next((i for i, t in enumerate(statuses) if t.name == ts.name), None)
        if index is None:
            statuses.append(ts)
        else:
            statuses[index] = ts
        self.new_status.template_statuses = statuses

    def set_run_status(self, run: ExperimentAnalysisRunStatus) -> None:
        runs = list(self.new_status.analysis_runs or [])
        index = next((i for i, a in enumerate(runs) if a.name == run.name), None)
        if index is None:
            runs.append(run)
        else:
            runs[index] = run
        self.new_status.analysis_runs = runs


def reconcile(ctx: ExperimentContext) -> ExperimentStatus:
    for template in ctx.ex.spec.templates:
        reconcile_template(ctx, template)
    for analysis in ctx.ex.spec.analyses or []:
        reconcile_analysis(ctx, analysis)
    status = calculate_status(ctx)
    wake = enqueue_after(ctx.ex, status, ctx.now)
    if wake is not None:
        ctx.requeue(wake)
    return status


# -- templates ----------------------------------------------------------------------------------


def reconcile_template(ctx: ExperimentContext, template: TemplateSpec) -> None:
    ts = template_status(ctx.ex.status, template.name) or TemplateStatus(name=template.name)
    before = ts.model_copy(deep=True)
    desired = desired_replicas(ctx.ex, template)
    rs = ctx.template_rss.get(template.name)
    if rs is None:
        rs = create_replicaset(ctx, template, ts, desired)
    else:
        if template.service is not None:
            if desired != 0:
                ensure_service(ctx, template, ts, rs)
        else:
            delete_service(ctx, template.name, ts)
        if desired == 0:
            rs = set_scale_down_deadline(ctx, template.name, rs)
        if rsutil.spec_replicas(rs) != desired:
            scale_template(ctx, template, ts, rs, desired)
            ts.last_transition_time = ctx.now_text()
            rs = ctx.template_rss.get(template.name, rs)
        if (
            desired == 0
            and template.service is not None
            and rsutil.spec_replicas(rs) == 0
            and rsutil.status_count(rs, "availableReplicas") == 0
        ):
            # Scaled down and drained: the Service has nothing left to select.
            delete_service(ctx, template.name, ts)

    ts.replicas = rsutil.status_count(rs, "replicas") if rs else 0
    ts.updated_replicas = ts.replicas
    ts.ready_replicas = rsutil.status_count(rs, "readyReplicas") if rs else 0
    ts.available_replicas = rsutil.status_count(rs, "availableReplicas") if rs else 0
    counts = ("replicas", "updated_replicas", "ready_replicas", "available_replicas")
    if any(getattr(before, f) != getattr(ts, f) for f in counts):
        ts.last_transition_time = ctx.now_text()

    if ts.status not in TEMPLATE_COMPLETED:
        if desired == ts.available_replicas:
            if passed_duration(ctx.ex, ctx.now) or ctx.is_terminating:
                ts.status = Code.SUCCESSFUL
            else:
                ts.status = Code.RUNNING
        else:
            since = parse_time(ts.last_transition_time) if ts.last_transition_time else ctx.now
            deadline = progress_deadline(ctx.ex)
            if ctx.now > since + dt.timedelta(seconds=deadline):
                ts.status = Code.FAILED
                ts.message = (
                    f"Template '{template.name}' exceeded its progressDeadlineSeconds ({deadline})"
                )
            elif ctx.is_terminating:
                ts.status = Code.SUCCESSFUL
            else:
                ts.status = Code.PROGRESSING
    if before.status != ts.status:
        message = (
            f"Template '{template.name}' transitioned from {before.status or ''} -> {ts.status}"
        )
        if ts.message:
            message += f": {ts.message}"
        ctx.event(f"Template{ts.status}", message, warning=ts.status in (Code.FAILED, Code.ERROR))
    ctx.set_template_status(ts)


def replicaset_body(ctx: ExperimentContext, template: TemplateSpec, ts: TemplateStatus) -> Obj:
    pod_template = copy.deepcopy(template.template or {})
    meta = pod_template.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != r.POD_TEMPLATE_HASH_LABEL}
    meta["labels"] = labels
    pod_hash = pod_template_hash(pod_template, ts.collision_count)
    labels[r.POD_TEMPLATE_HASH_LABEL] = pod_hash
    selector = template.selector.to_dict() if template.selector is not None else {}
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        r.POD_TEMPLATE_HASH_LABEL: pod_hash,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{ctx.name}-{template.name}",
            "namespace": ctx.namespace,
            "labels": {r.POD_TEMPLATE_HASH_LABEL: pod_hash},
            "annotations": {NAME_ANNOTATION: ctx.name, TEMPLATE_ANNOTATION: template.name},
            "ownerReferences": [owner_reference({"kind": "Experiment", **ctx.obj})],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": template.min_ready_seconds or 0,
            "selector": selector,
            "template": pod_template,
        },
    }


def create_replicaset(
    ctx: ExperimentContext, template: TemplateSpec, ts: TemplateStatus, desired: int
) -> Obj | None:
    body = replicaset_body(ctx, template, ts)
    body["spec"]["replicas"] = desired
    name = body["metadata"]["name"]
    try:
        rs = ctx.writer.create(r.REPLICASETS, ctx.namespace, body)
    except AlreadyExists:
        existing = ctx.replicasets.get(name)
        if existing is None:
            raise ExperimentError(f"ReplicaSet {name} exists but is not in the cache yet") from None
        if not _semantically_equal(ctx, body, existing):
            ts.status = Code.ERROR
            ts.message = (
                f"Failed to create ReplicaSet for template '{template.name}': replicasets.apps "
                f'"{name}" already exists and is not owned by this experiment'
            )
            return None
        rs = existing
        log.warning("claimed existing ReplicaSet %s with an equivalent template", name)
    except RETRYABLE:
        raise
    except KubeError as err:
        ts.status = Code.ERROR
        ts.message = f"Failed to create ReplicaSet for template '{template.name}': {err.message}"
        ctx.event(
            "ReplicaSetCreateError", f'Failed to create new replica set "{name}": {err.message}'
        )
        return None
    else:
        if desired > 0:
            ctx.event("NewReplicaSetCreated", f"Created ReplicaSet {name} with size {desired}")
    ctx.template_rss[template.name] = rs
    ts.last_transition_time = ctx.now_text()
    return rs


def _semantically_equal(ctx: ExperimentContext, body: Obj, existing: Obj) -> bool:
    owner = controller_owner(existing) or {}
    wanted, have = ann.annotations_of(body), ann.annotations_of(existing)
    return (
        owner.get("uid") == ctx.obj["metadata"].get("uid")
        and rsutil.template_equal_ignoring_hash(
            (existing.get("spec") or {}).get("template") or {}, body["spec"]["template"]
        )
        and all(have.get(k) == wanted[k] for k in (NAME_ANNOTATION, TEMPLATE_ANNOTATION))
    )


def _write_rs(ctx: ExperimentContext, template_name: str, rs: Obj, patch: Obj) -> Obj:
    written = rsutil.patch(ctx.writer, ctx.namespace, rs, patch)
    ctx.template_rss[template_name] = written
    return written


def set_scale_down_deadline(ctx: ExperimentContext, template_name: str, rs: Obj) -> Obj:
    """Stamp the scale-down deadline once (or drop it when the delay is 0)."""
    delay = scale_down_delay(ctx.ex)
    has_deadline = ann.SCALE_DOWN_DEADLINE in ann.annotations_of(rs)
    if delay == 0:
        if not has_deadline:
            return rs
        value: str | None = None
    elif has_deadline:
        return rs
    else:
        value = format_time(ctx.now + dt.timedelta(seconds=delay))
    return _write_rs(
        ctx, template_name, rs, {"metadata": {"annotations": {ann.SCALE_DOWN_DEADLINE: value}}}
    )


def scale_down_remaining(rs: Obj, now: dt.datetime) -> float | None:
    """Seconds until the ReplicaSet's scale-down deadline; None without one or once passed."""
    value = ann.annotations_of(rs).get(ann.SCALE_DOWN_DEADLINE)
    if not value:
        return None
    try:
        remaining = (parse_time(value) - now).total_seconds()
    except ValueError:
        log.warning(
            "ignoring unreadable %s on %s: %r", ann.SCALE_DOWN_DEADLINE, rsutil.name(rs), value
        )
        return None
    return remaining if remaining > 0 else None


def scale_template(
    ctx: ExperimentContext, template: TemplateSpec, ts: TemplateStatus, rs: Obj, desired: int
) -> None:
    if desired == 0:
        remaining = scale_down_remaining(rs, ctx.now)
        if remaining is not None:
            ctx.requeue(remaining)
            desired = template_replicas(template)
    old = rsutil.spec_replicas(rs)
    if old != desired:
        try:
            _write_rs(ctx, template.name, rs, {"spec": {"replicas": desired}})
        except RETRYABLE:
            raise
        except KubeError as err:
            ts.status = Code.ERROR
            ts.message = (
                f"Unable to scale ReplicaSet for template '{template.name}' to desired replica "
                f"count '{desired}': {err.message}"
            )
            return
        direction = "up" if desired > old else "down"
        ctx.event(
            "ScalingReplicaSet",
            f"Scaled {direction} ReplicaSet {rsutil.name(rs)} from {old} to {desired}",
        )


# -- services -----------------------------------------------------------------------------------


def _ports(rs: Obj) -> list[Obj]:
    ports: list[Obj] = []
    containers = (((rs.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    )
    for container in containers or []:
        for port in container.get("ports") or []:
            number = port.get("containerPort")
            if number is None:
                continue
            entry: Obj = {
                "protocol": port.get("protocol", "TCP"),
                "port": number,
                "targetPort": number,
            }
            if port.get("name"):
                entry["name"] = port["name"]
            ports.append(entry)
    return ports


def ensure_service(
    ctx: ExperimentContext, template: TemplateSpec, ts: TemplateStatus, rs: Obj
) -> None:
    """The template's Service: selecting its ReplicaSet's pods, with the containers' ports.

    The status names the Service whenever it exists, also when the reconcile that created it
    died before its status write (kill -9 of a worker): the next one finds the Service and
    writes what that one would have."""
    have = ctx.template_services.get(template.name)
    if have is not None:
        ts.service_name = str((have.get("metadata") or {}).get("name", "")) or ts.service_name
        ts.pod_template_hash = rsutil.pod_hash(rs)
        return
    ports = _ports(rs)
    if not ports:
        return
    name = (template.service.name if template.service else None) or rsutil.name(rs)
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": ctx.namespace,
            "annotations": {NAME_ANNOTATION: ctx.name, TEMPLATE_ANNOTATION: template.name},
            "ownerReferences": [owner_reference({"kind": "Experiment", **ctx.obj})],
        },
        "spec": {"selector": dict((rs.get("metadata") or {}).get("labels") or {}), "ports": ports},
    }
    try:
        svc = ctx.writer.create(r.SERVICES, ctx.namespace, body)
    except AlreadyExists:
        existing = ctx.services.get(name)
        if existing is None and ts.service_name == name:
            # Created by an earlier reconcile (the status names a Service only after its create
            # succeeded) and not in the cache yet, which our own status write can outrun.
            log.info("%s: Service %s is not in the cache yet", ctx.name, name)
            return
        if existing is None:
            # Not cached yet, and the status does not name it: an earlier reconcile may have
            # created it and died before its status write. Whose it is, the server says.
            with contextlib.suppress(NotFound):
                existing = ctx.writer.get(r.SERVICES, ctx.namespace, name)
        owner = controller_owner(existing or {}) or {}
        annotations = ann.annotations_of(existing or {})
        if (
            existing is None
            or owner.get("uid") != ctx.obj["metadata"].get("uid")
            or annotations.get(NAME_ANNOTATION) != ctx.name
            or annotations.get(TEMPLATE_ANNOTATION) != template.name
        ):
            ts.status = Code.ERROR
            ts.message = (
                f"Failed to create Service {name} for template '{template.name}': service {name} "
                f"already exists and is not owned by experiment template {template.name}"
            )
            return
        svc = existing
    except RETRYABLE:
        raise
    except KubeError as err:
        ts.status = Code.ERROR
        ts.message = (
            f"Failed to create Service {name} for template '{template.name}': {err.message}"
        )
        return
    ctx.template_services[template.name] = svc
    ts.service_name = name
    ts.pod_template_hash = rsutil.pod_hash(rs)


def delete_service(ctx: ExperimentContext, template_name: str, ts: TemplateStatus) -> None:
    svc = ctx.template_services.get(template_name)
    if svc is None:
        return
    try:
        ctx.writer.delete(r.SERVICES, ctx.namespace, str(svc["metadata"]["name"]))
    except RETRYABLE:
        raise
    except KubeError as err:
        ts.status = Code.ERROR
        ts.message = f"Failed to delete Service for template '{template_name}': {err.message}"
        return
    ctx.template_services.pop(template_name, None)
    ts.service_name = None
    ts.pod_template_hash = None


# -- analyses -----------------------------------------------------------------------------------


def reconcile_analysis(ctx: ExperimentContext, analysis: ExperimentAnalysisTemplateRef) -> None:
    before = run_status(ctx.ex.status, analysis.name) or ExperimentAnalysisRunStatus(
        name=analysis.name
    )
    new = before.model_copy(deep=True)
    try:
        _reconcile_analysis(ctx, analysis, before, new)
    finally:
        if new.phase and new.phase != before.phase:
            message = (
                f"AnalysisRun '{analysis.name}' transitioned from {before.phase or ''} "
                f"-> {new.phase}"
            )
            if new.message:
                message += f": {new.message}"
            bad = new.phase in (
                AnalysisPhase.FAILED,
                AnalysisPhase.ERROR,
                AnalysisPhase.INCONCLUSIVE,
            )
            ctx.event(f"AnalysisRun{new.phase}", message, warning=bad)
        ctx.set_run_status(new)


def _reconcile_analysis(
    ctx: ExperimentContext,
    analysis: ExperimentAnalysisTemplateRef,
    before: ExperimentAnalysisRunStatus,
    new: ExperimentAnalysisRunStatus,
) -> None:
    ex = ctx.ex
    if ex.status is None or not ex.status.available_at:
        # Not every template is available yet: only check that the template exists.
        if ctx.lookup(analysis.template_name, bool(analysis.cluster_scope)) is None:
            kind = "ClusterAnalysisTemplate" if analysis.cluster_scope else "AnalysisTemplate"
            resource = "clusteranalysistemplate" if analysis.cluster_scope else "analysistemplate"
            new.phase = AnalysisPhase.ERROR
            new.message = (
                f"{kind} verification failed for analysis '{analysis.name}': "
                f'{resource}.argoproj.io "{analysis.template_name}" not found'
            )
        return
    if not before.analysis_run:
        if ctx.is_terminating:
            log.info(
                "%s: not starting analysis %s: experiment is terminating", ctx.name, analysis.name
            )
            return
        try:
            run = create_run(ctx, analysis)
        except RETRYABLE:
            raise
        except (TemplateError, ValueError, creation.NameExhausted, KubeError) as err:
            # As for the ReplicaSets: an API refusal (other than a lost race or an unavailable
            # server) is the analysis' Error, as in Argo, not a retry that can never succeed.
            reason = err.message if isinstance(err, KubeError) else str(err)
            new.phase = AnalysisPhase.ERROR
            new.message = f"Failed to create AnalysisRun for analysis '{analysis.name}': {reason}"
            return
        new.phase = AnalysisPhase.PENDING
        new.analysis_run = str(run["metadata"]["name"])
        return
    if completed(before.phase):
        return
    existing = ctx.runs.get(before.analysis_run)
    if existing is None:
        new.phase = AnalysisPhase.ERROR
        new.message = f'analysisrun.argoproj.io "{before.analysis_run}" not found'
        return
    run_state = existing.get("status") or {}
    if ctx.is_terminating:
        if not completed(run_state.get("phase")) and not (existing.get("spec") or {}).get(
            "terminate"
        ):
            ctx.event(
                "AnalysisRunTerminating", f"Terminating {analysis.name} ({before.analysis_run})"
            )
            ctx.writer.patch(
                r.ANALYSISRUNS, ctx.namespace, before.analysis_run, {"spec": {"terminate": True}}
            )
        return
    if run_state.get("phase"):
        new.phase = AnalysisPhase(run_state["phase"])
        if run_state.get("message") or new.message:
            new.message = run_state.get("message") or None


def create_run(ctx: ExperimentContext, analysis: ExperimentAnalysisTemplateRef) -> Obj:
    args = [
        {
            "name": arg.name,
            "value": resolve_experiment_arg(arg.value, ctx.ex, ctx.template_rss)
            if arg.value is not None
            else None,
        }
        for arg in analysis.args or []
    ]
    run_meta = ctx.ex.spec.analysis_run_metadata
    body = run_body(
        owner={"kind": "Experiment", **ctx.obj},
        name=f"{ctx.name}-{analysis.name}",
        templates=[
            {"templateName": analysis.template_name, "clusterScope": bool(analysis.cluster_scope)}
        ],
        args=args,
        lookup=ctx.lookup,
        labels=dict((run_meta.labels if run_meta else None) or {}),
        annotations=dict((run_meta.annotations if run_meta else None) or {}),
        dry_run=[d.to_dict() for d in ctx.ex.spec.dry_run or []],
        retention=[m.to_dict() for m in ctx.ex.spec.measurement_retention or []],
    )
    run = creation.create_run(ctx.writer, ctx.namespace, body, list(ctx.runs.values()))
    ctx.runs[str(run["metadata"]["name"])] = run
    log.info("%s/%s: created AnalysisRun %s", ctx.namespace, ctx.name, run["metadata"]["name"])
    return run


# -- the experiment's verdict -------------------------------------------------------------------


def assess_templates(ctx: ExperimentContext) -> tuple[AnalysisPhase, str]:
    worst, message = Code.SUCCESSFUL, ""
    for template in ctx.ex.spec.templates:
        ts = template_status(ctx.new_status, template.name)
        if ts is None:
            if worse_template(worst, Code.PROGRESSING):
                worst = Code.PROGRESSING
        elif worse_template(worst, ts.status):
            assert ts.status is not None
            worst, message = ts.status, ts.message or ""
    phase = {
        Code.PROGRESSING: AnalysisPhase.PENDING,
        Code.FAILED: AnalysisPhase.FAILED,
        Code.ERROR: AnalysisPhase.ERROR,
        Code.SUCCESSFUL: AnalysisPhase.SUCCESSFUL,
    }.get(worst, AnalysisPhase.RUNNING)
    return phase, message


def assess_analyses(ctx: ExperimentContext) -> tuple[AnalysisPhase, str]:
    worst, message = AnalysisPhase.SUCCESSFUL, ""
    for analysis in ctx.ex.spec.analyses or []:
        found = run_status(ctx.new_status, analysis.name)
        phase = found.phase if found else None
        if found is not None and phase is not None and worse_analysis(worst, phase):
            worst, message = AnalysisPhase(phase), found.message or ""
    if required_analyses_successful(ctx.ex, ctx.new_status) and worse_analysis(
        worst, AnalysisPhase.RUNNING
    ):
        return AnalysisPhase.SUCCESSFUL, REQUIRED_ANALYSIS_COMPLETED
    if worst == AnalysisPhase.PENDING:
        worst = AnalysisPhase.RUNNING
    return worst, message


def calculate_status(ctx: ExperimentContext) -> ExperimentStatus:
    status = ctx.new_status
    if status.phase is None:
        status.phase = AnalysisPhase.PENDING
    elif status.phase in (AnalysisPhase.PENDING, AnalysisPhase.RUNNING):
        templates, template_message = assess_templates(ctx)
        analyses, analysis_message = assess_analyses(ctx)
        if templates == AnalysisPhase.RUNNING and not status.available_at:
            status.available_at = ctx.now_text()
        has_required = any(a.required_for_completion for a in ctx.ex.spec.analyses or [])
        if completed(templates):
            if templates == AnalysisPhase.SUCCESSFUL and (completed(analyses) or has_required):
                # The templates ran their course: the analyses have the last word.
                phase, message = analyses, analysis_message
            else:
                phase, message = templates, template_message
        elif (
            completed(analyses) and analyses != AnalysisPhase.SUCCESSFUL
        ) or required_analyses_successful(ctx.ex, status):
            # An analysis went bad while the templates run, or every required one succeeded.
            phase, message = analyses, analysis_message
        else:
            phase, message = templates, template_message
        status.phase, status.message = phase, message or None
    calculate_conditions(ctx)
    return status


def enqueue_after(ex: Experiment, status: ExperimentStatus, now: dt.datetime) -> float | None:
    """When to look again: the end of the duration, or the earliest progress deadline of a
    template still short of its replicas (None when nothing is pending)."""
    upcoming = ex.model_copy(update={"status": status})
    if terminating(upcoming):
        return None
    candidates: list[float] = []
    remaining = duration_remaining(upcoming, now)
    if remaining is not None and remaining >= 0:
        candidates.append(remaining)
    deadline = progress_deadline(ex)
    for template in ex.spec.templates:
        ts = template_status(status, template.name)
        if ts is None or ts.status not in (Code.PROGRESSING, Code.RUNNING):
            continue
        if (
            ts.available_replicas != desired_replicas(upcoming, template)
            and ts.last_transition_time
        ):
            due = parse_time(ts.last_transition_time) + dt.timedelta(seconds=deadline)
            candidates.append((due - now).total_seconds())
    return min(candidates) if candidates else None


# -- conditions ---------------------------------------------------------------------------------


def _condition(
    status: ExperimentStatus, kind: ExperimentConditionType
) -> ExperimentCondition | None:
    return next((c for c in status.conditions or [] if c.type == kind), None)


def _remove_condition(status: ExperimentStatus, kind: ExperimentConditionType) -> None:
    kept = [c for c in status.conditions or [] if c.type != kind]
    status.conditions = kept or None


def set_condition(status: ExperimentStatus, condition: ExperimentCondition) -> None:
    """Add or replace a condition; the same status and reason is left alone, and the transition
    time is kept while the status does not change."""
    current = _condition(status, condition.type)
    if (
        current is not None
        and current.status == condition.status
        and current.reason == condition.reason
    ):
        return
    if current is not None and current.status == condition.status:
        condition.last_transition_time = current.last_transition_time
    status.conditions = [c for c in status.conditions or [] if c.type != condition.type] + [
        condition
    ]


def new_condition(
    kind: ExperimentConditionType, state: S, reason: str, message: str, now: str
) -> ExperimentCondition:
    return ExperimentCondition(
        type=kind,
        status=state,
        reason=reason,
        message=message,
        last_update_time=now,
        last_transition_time=now,
    )


def made_progress(ex: Experiment, status: ExperimentStatus) -> bool:
    old = {t.name: t for t in (ex.status.template_statuses if ex.status else None) or []}
    new = {t.name: t for t in status.template_statuses or []}
    if len(old) < len(new):
        return True
    counts = ("replicas", "updated_replicas", "ready_replicas", "available_replicas")
    return any(
        getattr(old[name], f) != getattr(new[name], f)
        for name in old.keys() & new.keys()
        for f in counts
    )


def calculate_conditions(ctx: ExperimentContext) -> None:
    status, ex, now = ctx.new_status, ctx.ex, ctx.now_text()
    _remove_condition(status, ExperimentConditionType.INVALID_SPEC)
    progressing = ExperimentConditionType.PROGRESSING
    if completed(status.phase):
        set_condition(
            status,
            new_condition(
                progressing,
                S.FALSE,
                "ExperimentCompleted",
                f'Experiment "{ctx.name}" has successfully ran and completed.',
                now,
            ),
        )
    elif made_progress(ex, status):
        condition = new_condition(
            progressing,
            S.TRUE,
            "ReplicaSetUpdated",
            f'Experiment "{ctx.name}" is progressing.',
            now,
        )
        current = _condition(ex.status or ExperimentStatus(), progressing)
        if current is not None:
            if current.status == S.TRUE:
                condition.last_transition_time = current.last_transition_time
            _remove_condition(status, progressing)
        set_condition(status, condition)
    elif ex.status is not None and ex.status.available_at and not passed_duration(ex, ctx.now):
        set_condition(
            status,
            new_condition(
                progressing,
                S.TRUE,
                "NewReplicaSetAvailable",
                f'Experiment "{ctx.name}" is running.',
                now,
            ),
        )


# -- spec validation ----------------------------------------------------------------------------


def invalid_spec_message(ex: Experiment) -> str:
    """Argo's VerifyExperimentSpec: '' when the spec is valid, else why not."""
    names: set[str] = set()
    deadline = progress_deadline(ex)
    for i, template in enumerate(ex.spec.templates):
        if template.selector is None:
            return f"Rollout has missing field '.Spec.Templates[{i}].Selector'"
        if not template.selector.match_labels and not template.selector.match_expressions:
            return (
                f"This experiment is selecting all pods at index {i}. "
                "A non-empty selector is required."
            )
        if (template.min_ready_seconds or 0) > deadline:
            return (
                "MinReadySeconds cannot be longer than ProgressDeadlineSeconds. "
                f"Check template index {i}"
            )
        if not template.name:
            return f"Experiment {ex.metadata.name} has empty template name at index {i}"
        if template.name in names:
            return (
                f"Experiment {ex.metadata.name} has repeated template name "
                f"'{template.name}' in templates"
            )
        names.add(template.name)
    return ""
