"""A canary's AnalysisRuns: the run of an analysis step, and the background run.

Mirrors argo-rollouts' rollout/analysis.go for the canary: while a step is an `analysis`
step, its run is created once (per pod hash and step) and its verdict decides the step:
Successful completes it, Failed or Error aborts the rollout with the run's message,
Inconclusive pauses it (InconclusiveAnalysisRun; a promote starts a fresh run). The background
run starts at `startingStep` and aborts or pauses the same way. Runs that are no longer current
are terminated (`spec.terminate`), and finished ones beyond the history limits are deleted.
"""

from __future__ import annotations

import logging

from rollout_workers.analysis import creation
from rollout_workers.analysis.templates import (
    BACKGROUND,
    POST_PROMOTION,
    PRE_PROMOTION,
    STEP,
    TemplateError,
    TemplateLookup,
    analysis_run_body,
)
from rollout_workers.api.analysis import AnalysisPhase
from rollout_workers.api.rollout import (
    CanaryStatus,
    PauseReason,
    RolloutAnalysisRunStatus,
    RolloutStatus,
)
from rollout_workers.kube import resources as r
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout import targetgroups
from rollout_workers.rollout.context import RolloutContext

log = logging.getLogger(__name__)

COMPLETED = creation.COMPLETED
DEFAULT_HISTORY_LIMIT = 5


class AnalysisTemplateError(RuntimeError):
    """The rollout's analysis cannot be instantiated (missing template, unresolved argument)."""


def run_name(run: Obj | None) -> str:
    return str(((run or {}).get("metadata") or {}).get("name", ""))


def run_phase(run: Obj | None) -> str:
    return str(((run or {}).get("status") or {}).get("phase") or "")


def _find(ctx: RolloutContext, status: RolloutAnalysisRunStatus | None) -> Obj | None:
    if status is None:
        return None
    return next((x for x in ctx.analysis_runs if run_name(x) == status.name), None)


def skip_analysis(ctx: RolloutContext) -> bool:
    """No analysis runs, and running ones are cancelled: aborted, a full promotion, a rollback
    to a ReplicaSet still inside its scale-down delay or within the rollback window, or the
    initial deploy."""
    status = ctx.rollout.status or RolloutStatus()
    return (
        ctx.pause.is_aborted()
        or bool(status.promote_full)
        or ann.SCALE_DOWN_DEADLINE in ann.annotations_of(ctx.new_rs or {})
        or not status.stable_rs
        or ctx.rollback_within_window()
    )


def reconcile_analysis_runs(ctx: RolloutContext) -> None:
    lookup = ctx.template_lookup
    status = ctx.rollout.status or RolloutStatus()
    canary_status = status.canary or CanaryStatus()
    current_step = _find(ctx, canary_status.current_step_analysis_run_status)
    current_background = _find(ctx, canary_status.current_background_analysis_run_status)
    new_canary = ctx.new_status.canary or CanaryStatus()
    ctx.new_status.canary = new_canary

    if skip_analysis(ctx):
        # Keep the statuses as they are, stop whatever is still running.
        new_canary.current_step_analysis_run_status = canary_status.current_step_analysis_run_status
        new_canary.current_background_analysis_run_status = (
            canary_status.current_background_analysis_run_status
        )
        cancel(ctx, ctx.analysis_runs)
        return

    step_run = reconcile_step(ctx, current_step, lookup)
    background_run = reconcile_background(ctx, current_background, lookup)
    new_canary.current_step_analysis_run_status = as_status(step_run)
    new_canary.current_background_analysis_run_status = as_status(background_run)
    emit_changes(ctx, canary_status.current_step_analysis_run_status, step_run, STEP)
    emit_changes(
        ctx, canary_status.current_background_analysis_run_status, background_run, BACKGROUND
    )

    current = {run_name(step_run), run_name(background_run)} - {""}
    others = [x for x in ctx.analysis_runs if run_name(x) not in current]
    cancel(ctx, others)
    delete_beyond_history(ctx, others)


def as_status(run: Obj | None) -> RolloutAnalysisRunStatus | None:
    if run is None:
        return None
    phase = run_phase(run) or AnalysisPhase.PENDING
    message = ((run.get("status") or {}).get("message")) or None
    return RolloutAnalysisRunStatus(
        name=run_name(run), status=AnalysisPhase(phase), message=message
    )


def needs_new_run(ctx: RolloutContext, current: Obj | None) -> bool:
    if current is None:
        return True
    status = ctx.rollout.status or RolloutStatus()
    if status.controller_pause and ctx.pause.get(PauseReason.BLUE_GREEN_PAUSE) is None:
        # We paused for an inconclusive run and a user resumed: analyse again.
        return run_phase(current) == AnalysisPhase.INCONCLUSIVE
    return bool(status.aborted_at)


def verdict(ctx: RolloutContext, run: Obj | None) -> None:
    """Failed or Error aborts the rollout; Inconclusive pauses it."""
    phase = run_phase(run)
    if phase == AnalysisPhase.INCONCLUSIVE:
        ctx.pause.add.append(PauseReason.INCONCLUSIVE_ANALYSIS)
    elif phase in (AnalysisPhase.FAILED, AnalysisPhase.ERROR):
        ctx.pause.add_abort = True
        ctx.pause.abort_message = str(((run or {}).get("status") or {}).get("message") or "")


def reconcile_step(ctx: RolloutContext, current: Obj | None, lookup: TemplateLookup) -> Obj | None:
    status = ctx.rollout.status or RolloutStatus()
    if status.pause_conditions or status.abort:
        return current
    step, index = ctx.current_step()
    if step is None or step.analysis is None or index is None:
        cancel(ctx, [current] if current else [])
        return None
    if needs_new_run(ctx, current):
        return create_run(
            ctx, step.analysis.to_dict(), lookup, infix=str(index), kind=STEP, index=index
        )
    verdict(ctx, current)
    return current


def before_starting_step(ctx: RolloutContext) -> bool:
    analysis = ctx.canary_spec.analysis
    starting: int | None = analysis.starting_step if analysis else None
    if starting is None:
        return False
    _, index = ctx.current_step()
    return (index or 0) < starting


def reconcile_background(
    ctx: RolloutContext, current: Obj | None, lookup: TemplateLookup
) -> Obj | None:
    analysis = ctx.canary_spec.analysis
    if analysis is None:
        cancel(ctx, [current] if current else [])
        return None
    status = ctx.rollout.status or RolloutStatus()
    fully_promoted = (status.stable_rs or "") == (status.current_pod_hash or "")
    if (
        fully_promoted
        or not status.stable_rs
        or not status.current_pod_hash
        or before_starting_step(ctx)
    ):
        return None
    if ctx.pause.get(PauseReason.INCONCLUSIVE_ANALYSIS) is not None:
        return current
    if needs_new_run(ctx, current):
        return create_run(ctx, analysis.to_dict(), lookup, infix="", kind=BACKGROUND, index=None)
    verdict(ctx, current)
    return current


def create_run(
    ctx: RolloutContext,
    analysis: Obj,
    lookup: TemplateLookup,
    *,
    infix: str,
    kind: str,
    index: int | None,
) -> Obj:
    pod_hash = rsutil.pod_hash(ctx.new_rs or {}) or ""
    if not pod_hash:
        raise AnalysisTemplateError("the latest ReplicaSet has no pod hash")
    try:
        body = analysis_run_body(
            rollout=ctx.obj,
            analysis=analysis,
            lookup=lookup,
            pod_hash=pod_hash,
            stable_hash=(ctx.rollout.status or RolloutStatus()).stable_rs,
            revision=ann.revision(ctx.obj),
            infix=infix,
            rollout_type=kind,
            step_index=index,
        )
    except TemplateError as err:
        raise AnalysisTemplateError(str(err)) from None
    try:
        run = creation.create_run(ctx.writer, ctx.namespace, body, ctx.analysis_runs)
    except creation.NameExhausted as err:
        raise AnalysisTemplateError(str(err)) from None
    if all(run_name(x) != run_name(run) for x in ctx.analysis_runs):
        ctx.analysis_runs.append(run)
        log.info("%s: created %s AnalysisRun %s", ctx.key, kind, run_name(run))
    return run


def cancel(ctx: RolloutContext, runs: list[Obj]) -> None:
    for run in runs:
        if run_phase(run) in COMPLETED or (run.get("spec") or {}).get("terminate"):
            continue
        ctx.writer.patch(
            r.ANALYSISRUNS, ctx.namespace, run_name(run), {"spec": {"terminate": True}}
        )


def history_limits(ctx: RolloutContext) -> tuple[int, int]:
    """How many successful and unsuccessful finished runs (and experiments) to keep."""
    limits = ctx.rollout.spec.analysis
    ok = limits.successful_run_history_limit if limits else None
    bad = limits.unsuccessful_run_history_limit if limits else None
    return (
        DEFAULT_HISTORY_LIMIT if ok is None else ok,
        DEFAULT_HISTORY_LIMIT if bad is None else bad,
    )


def delete_beyond_history(ctx: RolloutContext, others: list[Obj]) -> None:
    keep_ok, keep_bad = history_limits(ctx)
    finished = sorted(
        (x for x in others if run_phase(x) in COMPLETED),
        key=lambda x: str(x["metadata"].get("creationTimestamp", "")),
        reverse=True,
    )
    ok = [x for x in finished if run_phase(x) == AnalysisPhase.SUCCESSFUL]
    bad = [x for x in finished if run_phase(x) != AnalysisPhase.SUCCESSFUL]
    for run in ok[keep_ok:] + bad[keep_bad:]:
        ctx.writer.delete(r.ANALYSISRUNS, ctx.namespace, run_name(run))


def emit_changes(
    ctx: RolloutContext, previous: RolloutAnalysisRunStatus | None, run: Obj | None, kind: str
) -> None:
    phase = run_phase(run)
    if not phase:
        return
    if previous is None or (previous.name == run_name(run) and previous.status != phase):
        before = str(previous.status) if previous is not None else "NoPreviousStatus"
        ctx.event(
            f"AnalysisRun{phase}",
            f"{kind} Analysis Run '{run_name(run)}' Status New: '{phase}' Previous: '{before}'",
            warning=phase in (AnalysisPhase.FAILED, AnalysisPhase.ERROR),
        )


# -- blue-green ---------------------------------------------------------------------------------


def current_bluegreen_run(ctx: RolloutContext, which: str) -> Obj | None:
    """The pre- or post-promotion run named in the status as read."""
    status = ctx.rollout.status or RolloutStatus()
    bg = status.blue_green
    if bg is None:
        return None
    named = (
        bg.pre_promotion_analysis_run_status
        if which == "pre"
        else bg.post_promotion_analysis_run_status
    )
    return _find(ctx, named)


def completed_pre_promotion(ctx: RolloutContext) -> bool:
    """No pre-promotion analysis, or its current run succeeded."""
    if ctx.blue_green is None or ctx.blue_green.pre_promotion_analysis is None:
        return True
    return run_phase(current_bluegreen_run(ctx, "pre")) == AnalysisPhase.SUCCESSFUL


def post_promotion_blocks_stable(ctx: RolloutContext) -> bool:
    """Post-promotion analysis configured and not (yet) successful."""
    if ctx.blue_green is None or ctx.blue_green.post_promotion_analysis is None:
        return False
    return run_phase(current_bluegreen_run(ctx, "post")) != AnalysisPhase.SUCCESSFUL


def skip_pre_promotion(ctx: RolloutContext, run: Obj | None) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    current = rsutil.pod_hash(ctx.new_rs or {}) or ""
    active = (status.blue_green.active_selector if status.blue_green else None) or ""
    if status.stable_rs == current or not active or active == current or not current:
        return True
    if run is not None:
        # Started: not cancelled, nor left unreplaced after a retry, because the preview lost a
        # pod (or was scaled down by the abort).
        return False
    preview: int | None = ctx.blue_green_spec.preview_replica_count
    if preview is not None:
        return (
            rsutil.spec_replicas(ctx.new_rs) != preview
            or rsutil.status_count(ctx.new_rs, "availableReplicas") != preview
        )
    return not ann.is_saturated(rollout_replicas=ctx.replicas, rs=ctx.new_rs)


def skip_post_promotion(ctx: RolloutContext, run: Obj | None) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    current = rsutil.pod_hash(ctx.new_rs or {}) or ""
    active = (status.blue_green.active_selector if status.blue_green else None) or ""
    if status.stable_rs == current or active != current or not current:
        return True
    return run is None and not ann.is_saturated(rollout_replicas=ctx.replicas, rs=ctx.new_rs)


def reconcile_bluegreen_analysis(ctx: RolloutContext) -> None:
    """Pre-promotion analysis gates the active switch; post-promotion gates stable."""
    status = ctx.rollout.status or RolloutStatus()
    pre, post = current_bluegreen_run(ctx, "pre"), current_bluegreen_run(ctx, "post")
    if skip_analysis(ctx):
        cancel(ctx, ctx.analysis_runs)
        ctx.bluegreen_runs = {"pre": pre, "post": post}
        return
    # Argo's skip{Pre,Post}PromotionAnalysisRun: a run once started is not skipped because
    # the new ReplicaSet became unsaturated.
    pre = _reconcile_promotion_run(ctx, "pre", pre, skip_pre_promotion(ctx, pre))
    # Not before the new pods are in the load balancer (AWS target group verification).
    skip_post = skip_post_promotion(ctx, post) or not targetgroups.targets_verified(ctx)
    post = _reconcile_promotion_run(ctx, "post", post, skip_post)
    ctx.bluegreen_runs = {"pre": pre, "post": post}
    previous = status.blue_green
    emit_changes(
        ctx, previous.pre_promotion_analysis_run_status if previous else None, pre, "PrePromotion"
    )
    emit_changes(
        ctx,
        previous.post_promotion_analysis_run_status if previous else None,
        post,
        "PostPromotion",
    )
    current = {run_name(pre), run_name(post)} - {""}
    others = [x for x in ctx.analysis_runs if run_name(x) not in current]
    cancel(ctx, others)
    delete_beyond_history(ctx, others)


def _reconcile_promotion_run(
    ctx: RolloutContext, which: str, current: Obj | None, skip: bool
) -> Obj | None:
    bg = ctx.blue_green_spec
    spec = bg.pre_promotion_analysis if which == "pre" else bg.post_promotion_analysis
    if spec is None:
        cancel(ctx, [current] if current else [])
        return None
    if skip:
        cancel(ctx, [current] if current else [])
        return current
    if ctx.pause.get(PauseReason.INCONCLUSIVE_ANALYSIS) is not None:
        return current
    if needs_new_run(ctx, current):
        kind = PRE_PROMOTION if which == "pre" else POST_PROMOTION
        return create_run(
            ctx, spec.to_dict(), ctx.template_lookup, infix=which, kind=kind, index=None
        )
    verdict(ctx, current)
    return current
