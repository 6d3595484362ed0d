"""A canary's `experiment` steps, after argo-rollouts' rollout/experiment.go.

At an experiment step the rollout creates one Experiment (named after the pod hash, revision
and step) from the step's templates: each copies the stable or the canary ReplicaSet's pod
template. The step completes when the Experiment is Successful; Failed or Error aborts the
rollout with the experiment's message, and Inconclusive pauses it (InconclusiveExperiment)
until a user resumes, which runs a fresh Experiment (as a promote analyses a step again).
Experiments that are no longer current are terminated, and finished ones are deleted beyond the
rollout's history limits or once their ReplicaSet is gone.
"""

from __future__ import annotations

import copy
import logging

from rollout_workers.analysis import creation
from rollout_workers.analysis.templates import (
    TemplateError,
    owner_reference,
    resolve_rollout_args,
)
from rollout_workers.api.analysis import AnalysisPhase
from rollout_workers.api.rollout import (
    PauseReason,
    ReplicaSetSpecRef,
    RolloutExperimentStep,
    RolloutStatus,
)
from rollout_workers.kube import resources as r
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.analysis import history_limits
from rollout_workers.rollout.context import RolloutContext

log = logging.getLogger(__name__)

COMPLETED = creation.COMPLETED
UNSUCCESSFUL = frozenset({"Failed", "Error", "Inconclusive"})


class ExperimentStepError(RuntimeError):
    """The step's Experiment cannot be built (a template's ReplicaSet is missing, an analysis
    argument's fieldRef names no field of the rollout)."""


def ex_name(ex: Obj | None) -> str:
    return str(((ex or {}).get("metadata") or {}).get("name", ""))


def ex_phase(ex: Obj | None) -> str:
    return str(((ex or {}).get("status") or {}).get("phase") or "")


def current_experiment(ctx: RolloutContext) -> Obj | None:
    """The experiment the status names as current."""
    status = ctx.rollout.status or RolloutStatus()
    name = status.canary.current_experiment if status.canary else None
    if not name:
        return None
    return next((x for x in ctx.experiments if ex_name(x) == name), None)


def service_names(experiments: list[Obj]) -> set[str]:
    """The Services the experiments' templates run behind (status.templateStatuses[]
    .serviceName): a router adds them to its routes while their weight applies."""
    names: set[str] = set()
    for ex in experiments:
        for template in ((ex.get("status") or {}).get("templateStatuses")) or []:
            if isinstance(template, dict) and template.get("serviceName"):
                names.add(str(template["serviceName"]))
    return names


def experiment_body(ctx: RolloutContext, step: RolloutExperimentStep, index: int) -> Obj:
    """The Experiment an experiment step asks for (Argo's GetExperimentFromTemplate)."""
    pod_hash = rsutil.pod_hash(ctx.new_rs or {}) or ""
    revision = ann.annotations_of(ctx.obj).get(ann.REVISION, "")
    meta = ctx.obj["metadata"]
    templates: list[Obj] = []
    for spec in step.templates:
        source = ctx.new_rs if spec.spec_ref == ReplicaSetSpecRef.CANARY else ctx.stable_rs
        if source is None:
            raise ExperimentStepError(f"no {spec.spec_ref} ReplicaSet for template '{spec.name}'")
        rs_spec = source.get("spec") or {}
        pod_template = copy.deepcopy(rs_spec.get("template") or {})
        selector = (
            spec.selector.to_dict()
            if spec.selector is not None
            else copy.deepcopy(rs_spec.get("selector") or {})
        )
        extra = spec.metadata
        if extra is not None and extra.labels:
            pod_meta = pod_template.setdefault("metadata", {})
            pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **extra.labels}
            selector["matchLabels"] = {**(selector.get("matchLabels") or {}), **extra.labels}
        if extra is not None and extra.annotations:
            pod_meta = pod_template.setdefault("metadata", {})
            pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **extra.annotations}
        template: Obj = {"name": spec.name, "selector": selector, "template": pod_template}
        if spec.replicas is not None:
            template["replicas"] = spec.replicas
        if rs_spec.get("minReadySeconds"):
            template["minReadySeconds"] = rs_spec["minReadySeconds"]
        if spec.weight is not None or spec.service is not None:
            service_name = spec.service.name if spec.service else None
            template["service"] = {"name": service_name} if service_name else {}
        templates.append(template)
    status = ctx.rollout.status or RolloutStatus()
    analyses: list[Obj] = []
    for analysis in step.analyses or []:
        try:
            args = resolve_rollout_args(
                [a.to_dict() for a in analysis.args or []],
                rollout=ctx.obj,
                stable_hash=status.stable_rs,
                latest_hash=pod_hash,
            )
        except TemplateError as err:  # a fieldRef naming no field of the rollout
            raise ExperimentStepError(str(err)) from None
        analyses.append(
            {
                "name": analysis.name,
                "templateName": analysis.template_name,
                **({"clusterScope": True} if analysis.cluster_scope else {}),
                "args": [{k: v for k, v in arg.items() if v is not None} for arg in args],
                **({"requiredForCompletion": True} if analysis.required_for_completion else {}),
            }
        )
    spec_body: Obj = {"templates": templates}
    if step.duration:
        spec_body["duration"] = step.duration
    if ctx.rollout.spec.progress_deadline_seconds is not None:
        spec_body["progressDeadlineSeconds"] = ctx.rollout.spec.progress_deadline_seconds
    if analyses:
        spec_body["analyses"] = analyses
    if step.dry_run:
        spec_body["dryRun"] = [d.to_dict() for d in step.dry_run]
    if step.analysis_run_metadata is not None:
        spec_body["analysisRunMetadata"] = step.analysis_run_metadata.to_dict()
    if step.scale_down_delay_seconds is not None:
        spec_body["scaleDownDelaySeconds"] = step.scale_down_delay_seconds
    labels = {**(meta.get("labels") or {}), r.POD_TEMPLATE_HASH_LABEL: pod_hash}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Experiment",
        "metadata": {
            "name": f"{ctx.name}-{pod_hash}-{revision}-{index}",
            "namespace": ctx.namespace,
            "labels": labels,
            "annotations": {ann.REVISION: revision},
            "ownerReferences": [owner_reference({"kind": "Rollout", **ctx.obj})],
        },
        "spec": spec_body,
    }


def create_experiment(ctx: RolloutContext, body: Obj) -> Obj:
    """Create the step's Experiment; one of ours by that name that is still running (created
    by an earlier reconcile) is taken as it is, else the name is counted up. Either way the
    event says it was created, as Argo's does."""
    try:
        created, _ = creation.create_counted(
            ctx.writer,
            r.EXPERIMENTS,
            ctx.namespace,
            body,
            ctx.experiments,
            separator="-",
            same=creation.same_experiment_spec,
        )
    except creation.NameExhausted as err:
        raise ExperimentStepError(str(err)) from None
    if all(ex_name(x) != ex_name(created) for x in ctx.experiments):
        ctx.experiments.append(created)
    ctx.event("ExperimentCreated", f"Created Experiment '{ex_name(created)}'")
    return created


def reconcile_experiments(ctx: RolloutContext) -> None:
    status = ctx.rollout.status or RolloutStatus()
    current = current_experiment(ctx)
    ctx.current_experiment = current
    others = [x for x in ctx.experiments if current is None or ex_name(x) != ex_name(current)]
    if ctx.pause.is_aborted() or status.promote_full:
        cancel(ctx, [*others, *([current] if current else [])])
        return
    if ctx.pause.get(PauseReason.INCONCLUSIVE_ANALYSIS) is not None:
        return
    if ctx.pause.get(PauseReason.INCONCLUSIVE_EXPERIMENT) is not None:
        if current is not None:  # paused on it: keep it current until a user resumes
            ctx.set_current_experiment(ex_name(current))
        return
    step, index = ctx.current_step()
    at_experiment = step is not None and step.experiment is not None and index is not None
    if at_experiment:
        assert step is not None and step.experiment is not None and index is not None
        if (
            current is not None
            and ex_phase(current) == AnalysisPhase.INCONCLUSIVE
            and status.controller_pause
        ):
            # We paused on an inconclusive experiment and a user resumed: experiment again.
            others.append(current)
            current = None
        if current is None:
            if ctx.stable_rs is None:
                log.info("%s: cannot create the experiment before a stable ReplicaSet", ctx.key)
                return
            current = create_experiment(ctx, experiment_body(ctx, step.experiment, index))
            others = [x for x in others if ex_name(x) != ex_name(current)]
        phase = ex_phase(current)
        if phase == AnalysisPhase.INCONCLUSIVE:
            ctx.pause.add.append(PauseReason.INCONCLUSIVE_EXPERIMENT)
            ctx.set_current_experiment(ex_name(current))
        elif phase in (AnalysisPhase.ERROR, AnalysisPhase.FAILED):
            ctx.pause.add_abort = True
            ctx.pause.abort_message = str((current.get("status") or {}).get("message") or "")
        elif phase != AnalysisPhase.SUCCESSFUL:
            ctx.set_current_experiment(ex_name(current))
    elif current is not None:
        others.append(current)
    cancel(ctx, others)
    delete_beyond_history(ctx, others)


def cancel(ctx: RolloutContext, experiments: list[Obj]) -> None:
    for ex in experiments:
        if ex_phase(ex) in COMPLETED or (ex.get("spec") or {}).get("terminate"):
            continue
        log.info("%s: terminating experiment %s", ctx.key, ex_name(ex))
        ctx.writer.patch(r.EXPERIMENTS, ctx.namespace, ex_name(ex), {"spec": {"terminate": True}})


def delete_beyond_history(ctx: RolloutContext, others: list[Obj]) -> None:
    """Experiments whose ReplicaSet is gone (or going), and finished ones beyond the history
    limits, newest kept first (Argo's FilterExperimentsToDelete)."""
    keep_ok, keep_bad = history_limits(ctx)
    rs_going = {
        rsutil.pod_hash(rs): bool((rs.get("metadata") or {}).get("deletionTimestamp"))
        for rs in ctx.all_rss
        if rsutil.pod_hash(rs)
    }
    newest_first = sorted(
        others,
        key=lambda x: (str(x["metadata"].get("creationTimestamp", "")), ex_name(x)),
        reverse=True,
    )
    kept_ok = kept_bad = 0
    for ex in newest_first:
        if (ex.get("metadata") or {}).get("deletionTimestamp"):
            continue
        pod_hash = ((ex.get("metadata") or {}).get("labels") or {}).get(r.POD_TEMPLATE_HASH_LABEL)
        phase = ex_phase(ex)
        delete = pod_hash is None or rs_going.get(pod_hash, True)
        if not delete and phase == AnalysisPhase.SUCCESSFUL:
            kept_ok += 1
            delete = kept_ok > keep_ok
        elif not delete and phase in UNSUCCESSFUL:
            kept_bad += 1
            delete = kept_bad > keep_bad
        if delete:
            log.info("%s: deleting experiment %s", ctx.key, ex_name(ex))
            ctx.writer.delete(r.EXPERIMENTS, ctx.namespace, ex_name(ex))
