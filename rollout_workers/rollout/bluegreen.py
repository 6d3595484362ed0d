"""The blue-green strategy, as a script of steps.

Mirrors argo-rollouts' rollout/bluegreen.go: keep the active ReplicaSet at full size, bring the
new one up (all replicas, or previewReplicaCount), point the preview Service at it, pause for
promotion when auto-promotion is off or delayed, switch the active Service once the new
ReplicaSet is saturated, mark it stable, and scale the previous one down after
scaleDownDelaySeconds (the `scale-down-deadline` annotation; a re-deploy of that template
inside the window is a fast rollback that skips the pause).
"""

from __future__ import annotations

import datetime as dt
import logging

from rollout_workers.api.rollout import BlueGreenStatus, PauseReason, RolloutStatus
from rollout_workers.objects import Obj
from rollout_workers.rollout import (
    analysis,
    ephemeralmetadata,
    restart,
    service,
    sync,
    targetgroups,
)
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicas as rmath
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.pods import format_selector
from rollout_workers.rollout.scaledown import (
    abort_scale_down_delay,
    add_scale_down_delay,
    has_deadline,
    remove_scale_down_delay,
    scale_down_delay,
)
from rollout_workers.timefmt import parse_time

log = logging.getLogger(__name__)

# -- facts ------------------------------------------------------------------------------------


def by_hash(ctx: RolloutContext, pod_hash: str | None) -> Obj | None:
    if not pod_hash:
        return None
    return next((rs for rs in ctx.all_rss if rsutil.pod_hash(rs) == pod_hash), None)


def needs_controller_pause(ctx: RolloutContext) -> bool:
    bg = ctx.blue_green_spec
    if bg.auto_promotion_enabled is False:
        return True
    return (bg.auto_promotion_seconds or 0) > 0


def completed_pause(ctx: RolloutContext) -> bool:
    """The automated pause is over: resumed by a user, the preview checkpoint passed, or
    autoPromotionSeconds elapsed."""
    if ctx.pause.has_add_pause():
        return False
    status = ctx.rollout.status or RolloutStatus()
    if (status.blue_green or BlueGreenStatus()).scale_up_preview_check_point:
        return True
    if not needs_controller_pause(ctx):
        return True
    condition = ctx.pause.get(PauseReason.BLUE_GREEN_PAUSE)
    bg = ctx.blue_green_spec
    if bg.auto_promotion_enabled is not False:
        seconds = bg.auto_promotion_seconds or 0
        if seconds == 0:
            return True
        if condition is not None:
            return ctx.now > parse_time(condition.start_time) + dt.timedelta(seconds=seconds)
        return False  # never paused
    # Auto-promotion off: a remaining condition means no one has resumed it yet.
    return bool(status.controller_pause) and condition is None


def template_changed(ctx: RolloutContext) -> bool:
    if ctx.new_rs is None:
        return True
    return (ctx.rollout.status or RolloutStatus()).current_pod_hash != rsutil.pod_hash(ctx.new_rs)


def new_rs_replicas(ctx: RolloutContext) -> int:
    status = ctx.rollout.status or RolloutStatus()
    bg_status = status.blue_green or BlueGreenStatus()
    active = by_hash(ctx, bg_status.active_selector)
    assert ctx.new_rs is not None
    return rmath.calculate_bluegreen_new_rs_replicas(
        rollout_replicas=ctx.replicas,
        preview_replica_count=ctx.blue_green_spec.preview_replica_count,
        has_active_rs=active is not None,
        new_rs_is_active=active is not None and rsutil.name(active) == rsutil.name(ctx.new_rs),
        promote_full=bool(status.promote_full),
        new_rs_is_current=rsutil.pod_hash(ctx.new_rs) == status.current_pod_hash,
        paused=bool(ctx.rollout.spec.paused) or bool(status.pause_conditions),
        scale_up_preview_checkpoint=bool(bg_status.scale_up_preview_check_point),
    )


def ready_for_pause(ctx: RolloutContext) -> bool:
    if ctx.new_rs is None:
        return False
    wanted = new_rs_replicas(ctx)
    return (
        rsutil.spec_replicas(ctx.new_rs) == wanted
        and rsutil.status_count(ctx.new_rs, "availableReplicas") == wanted
    )


def fast_tracked(ctx: RolloutContext, active: Obj) -> bool:
    """Skip the pause: a rollback inside the scale-down window, a full promotion, the first
    deploy, or the new ReplicaSet is active already."""
    if has_deadline(ctx.new_rs):
        return True
    if (ctx.rollout.status or RolloutStatus()).promote_full:
        return True
    active_hash = service.selector_hash(active)
    return not active_hash or active_hash == rsutil.pod_hash(ctx.new_rs or {})


# -- the script -------------------------------------------------------------------------------


def reconcile_bluegreen(ctx: RolloutContext) -> None:
    bg = ctx.blue_green_spec
    active = ctx.services.get(bg.active_service or "")
    preview = ctx.services.get(bg.preview_service) if bg.preview_service else None
    if active is None:
        raise service.ServiceNotFound(bg.active_service or "")
    if bg.preview_service and preview is None:
        raise service.ServiceNotFound(bg.preview_service)
    sync.ensure_new_rs(ctx, create=True)
    if template_changed(ctx):
        ctx.pause.clear = True
        ctx.pause.remove_abort = True
        restart.set_restarted_at(ctx)
        sync_status(ctx)
        return
    restart.reconcile_restart(ctx)
    reconcile_replicasets(ctx)
    if preview is not None and ctx.new_rs is not None:
        service.ensure_targets(ctx, bg.preview_service, ctx.new_rs, check_available=False)
    reconcile_pause(ctx)
    reconcile_active_service(ctx)
    # The new pods in the load balancer before they are stable (and the old ones scaled down).
    targetgroups.reconcile_target_groups(ctx, ctx.services[bg.active_service or ""])
    analysis.reconcile_bluegreen_analysis(ctx)
    ephemeralmetadata.reconcile_ephemeral_metadata(ctx)
    sync_status(ctx)


def reconcile_replicasets(ctx: RolloutContext) -> None:
    reconcile_stable(ctx)
    reconcile_new(ctx)
    scale_down_old(ctx)
    sync.cleanup_old_rss(ctx, ctx.other_rss)


def reconcile_stable(ctx: RolloutContext) -> None:
    """The ReplicaSet behind the active Service stays at full size, without a deadline."""
    active = ctx.services.get(ctx.blue_green_spec.active_service or "")
    active_rs = by_hash(ctx, service.selector_hash(active))
    if active_rs is None:
        return
    if has_deadline(active_rs):
        remove_scale_down_delay(ctx, active_rs)
        active_rs = by_hash(ctx, service.selector_hash(active)) or active_rs
    sync.scale_rs(ctx, active_rs, ctx.replicas)


def reconcile_new(ctx: RolloutContext) -> None:
    new = ctx.new_rs
    if new is None:
        return
    status = ctx.rollout.status or RolloutStatus()
    aborted = ctx.pause.is_aborted()
    if not aborted and has_deadline(new) and (status.aborted_at or rsutil.spec_replicas(new) == 0):
        # A retry, or a return to a template whose update was aborted: the deadline is what is
        # left of an abort window, not a rollback target (a ReplicaSet inside its scale-down
        # window is at full size). Without it the update is analysed and paused again instead
        # of fast-tracked.
        remove_scale_down_delay(ctx, new)
        new = ctx.new_rs or new
    wanted = new_rs_replicas(ctx)
    delay_on_abort = False
    if aborted and status.stable_rs and status.stable_rs != rsutil.pod_hash(new):
        delay = abort_scale_down_delay(ctx.blue_green_spec)
        delay_on_abort = delay is not None
        deadline_text = ann.annotations_of(new).get(ann.SCALE_DOWN_DEADLINE)
        if delay is None:
            wanted = 0
        elif deadline_text:
            # The deadline stays on the ReplicaSet once it has passed (scaled to 0 below): were
            # it dropped, the next reconcile would find no deadline, start a new window and
            # scale the ReplicaSet up again, a flap every abortScaleDownDelaySeconds.
            deadline = parse_time(deadline_text)
            if ctx.now >= deadline:
                wanted = 0
            else:
                ctx.requeue((deadline - ctx.now).total_seconds())
        elif rsutil.status_count(ctx.stable_rs, "availableReplicas") == ctx.replicas:
            # Only start the countdown once the stable side serves everything again.
            add_scale_down_delay(ctx, new, delay)
    sync.scale_rs(ctx, ctx.new_rs or new, wanted, keep_deadline=delay_on_abort)


def scale_down_old(ctx: RolloutContext) -> None:
    """Older, non-active ReplicaSets go to 0 once their scale-down deadline has passed."""
    status = ctx.rollout.status or RolloutStatus()
    if ctx.pause.get(PauseReason.INCONCLUSIVE_ANALYSIS) is not None:
        return
    bg = ctx.blue_green_spec
    if (
        bg.post_promotion_analysis is not None
        and bg.scale_down_delay_seconds is None
        and not analysis.skip_post_promotion(ctx, analysis.current_bluegreen_run(ctx, "post"))
        and analysis.post_promotion_blocks_stable(ctx)
    ):
        return  # keep the previous version up until post-promotion analysis passes
    limit = ctx.blue_green_spec.scale_down_delay_revision_limit
    referenced = {status.stable_rs, (status.blue_green or BlueGreenStatus()).active_selector}
    annotated = 0
    candidates = [rs for rs in ctx.other_rss if rsutil.spec_replicas(rs) > 0]
    for rs in sorted(candidates, key=lambda x: -ann.revision(x)):
        if rsutil.pod_hash(rs) in referenced:
            continue
        desired = 0
        deadline_text = ann.annotations_of(rs).get(ann.SCALE_DOWN_DEADLINE)
        if deadline_text:
            annotated += 1
            try:
                deadline = parse_time(deadline_text)
            except ValueError:
                log.warning("%s: unreadable scale-down deadline on %s", ctx.key, rsutil.name(rs))
            else:
                if limit is not None and annotated > limit:
                    log.info("%s: at scaleDownDelayRevisionLimit (%d)", ctx.key, limit)
                elif deadline > ctx.now:
                    ctx.requeue((deadline - ctx.now).total_seconds())
                    desired = ctx.replicas
        if rsutil.spec_replicas(rs) != desired:
            sync.scale_rs(ctx, rs, desired)


def reconcile_pause(ctx: RolloutContext) -> None:
    status = ctx.rollout.status or RolloutStatus()
    if status.abort or not ready_for_pause(ctx) or ctx.rollout.spec.paused:
        return
    active = ctx.services.get(ctx.blue_green_spec.active_service or "") or {}
    bg_status = status.blue_green or BlueGreenStatus()
    if (
        fast_tracked(ctx, active)
        or bg_status.scale_up_preview_check_point
        or not needs_controller_pause(ctx)
    ):
        ctx.pause.remove.append(PauseReason.BLUE_GREEN_PAUSE)
        return
    if not analysis.completed_pre_promotion(ctx):
        return  # pause only once pre-promotion analysis has passed
    condition = ctx.pause.get(PauseReason.BLUE_GREEN_PAUSE)
    if condition is None and not status.controller_pause:
        ctx.pause.add.append(PauseReason.BLUE_GREEN_PAUSE)
        seconds = ctx.blue_green_spec.auto_promotion_seconds or 0
        if seconds > 0:
            ctx.requeue(seconds)
        return
    if completed_pause(ctx):
        ctx.pause.remove.append(PauseReason.BLUE_GREEN_PAUSE)
    elif condition is not None and (seconds := ctx.blue_green_spec.auto_promotion_seconds or 0) > 0:
        deadline = parse_time(condition.start_time) + dt.timedelta(seconds=seconds)
        ctx.requeue((deadline - ctx.now).total_seconds())


def reconcile_active_service(ctx: RolloutContext) -> None:
    new = ctx.new_rs
    if new is None or not ready_for_pause(ctx):
        return
    if not ann.is_saturated(rollout_replicas=ctx.replicas, rs=new):
        log.info("%s: new ReplicaSet %s is not saturated yet", ctx.key, rsutil.name(new))
        return
    active = ctx.services.get(ctx.blue_green_spec.active_service or "")
    assert active is not None
    wanted = service.selector_hash(active)
    if fast_tracked(ctx, active) or (
        completed_pause(ctx) and analysis.completed_pre_promotion(ctx)
    ):
        wanted = rsutil.pod_hash(new) or wanted
    status = ctx.rollout.status or RolloutStatus()
    if status.abort and status.stable_rs:
        wanted = status.stable_rs
    if wanted and wanted != service.selector_hash(active):
        service.switch_selector(ctx, active, wanted)


def should_update_stable(ctx: RolloutContext, new: RolloutStatus) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    if status.stable_rs == new.current_pod_hash:
        return False
    active = (new.blue_green or BlueGreenStatus()).active_selector
    if not active:
        return True  # first deploy: stable first, then the active Service follows
    if active != new.current_pod_hash:
        return False
    if not targetgroups.targets_verified(ctx):
        return False  # the active Service's target groups do not hold the new pods yet
    if new.promote_full or ctx.rollback_within_window() or has_deadline(ctx.new_rs):
        # A full promotion, a rollback within the window or inside the scale-down delay skips
        # the analysis.
        return True
    return not analysis.post_promotion_blocks_stable(ctx)


def sync_status(ctx: RolloutContext) -> None:
    new = sync.calculate_base_status(ctx)
    status = ctx.rollout.status or RolloutStatus()
    if ctx.new_rs is None or status.current_pod_hash != rsutil.pod_hash(ctx.new_rs):
        ctx.pause.clear = True
        ctx.pause.remove_abort = True
        new.promote_full = None
    if status.promote_full or ctx.rollback_within_window():
        ctx.pause.clear = True
        ctx.pause.remove_abort = True
    bg = ctx.blue_green_spec
    preview = ctx.services.get(bg.preview_service) if bg.preview_service else None
    active = ctx.services.get(bg.active_service or "")
    runs = ctx.bluegreen_runs
    new.blue_green = BlueGreenStatus(
        preview_selector=service.selector_hash(preview) or None,
        active_selector=service.selector_hash(active) or None,
        pre_promotion_analysis_run_status=analysis.as_status(runs.get("pre")),
        post_promotion_analysis_run_status=analysis.as_status(runs.get("post")),
    )
    new.stable_rs = status.stable_rs
    if should_update_stable(ctx, new):
        new.stable_rs = new.current_pod_hash
        new.promote_full = None
        previous = by_hash(ctx, status.stable_rs)
        if previous is not None and rsutil.spec_replicas(previous) > 0:
            add_scale_down_delay(ctx, previous, scale_down_delay(ctx.blue_green_spec))
    active_rs = by_hash(ctx, new.blue_green.active_selector)
    if active_rs is not None:
        new.hpa_replicas = rsutil.status_count(active_rs, "replicas")
        new.selector = format_selector((active_rs.get("spec") or {}).get("selector") or {})
        new.available_replicas = rsutil.status_count(active_rs, "availableReplicas")
        new.ready_replicas = rsutil.status_count(active_rs, "readyReplicas")
    else:
        new.hpa_replicas = rsutil.total(ctx.all_rss, "replicas")
        new.selector = format_selector(ctx.obj["spec"].get("selector") or {})
        new.available_replicas = rsutil.total(ctx.all_rss, "availableReplicas")
    new.blue_green.scale_up_preview_check_point = preview_checkpoint(ctx, new.stable_rs) or None
    new = sync.calculate_conditions(ctx, new)
    sync.persist_status(ctx, new)


def preview_checkpoint(ctx: RolloutContext, stable_hash: str | None) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    previous = bool((status.blue_green or BlueGreenStatus()).scale_up_preview_check_point)
    if ctx.blue_green_spec.preview_replica_count is None:
        return False
    if status.abort and template_changed(ctx):
        return False
    if ctx.new_rs is None or not stable_hash or stable_hash == rsutil.pod_hash(ctx.new_rs):
        return False
    return rmath.calculate_scale_up_preview_checkpoint(
        preview_replica_count=ctx.blue_green_spec.preview_replica_count,
        previous=previous,
        pre_promotion_analysis_completed=analysis.completed_pre_promotion(ctx),
        pause_completed=completed_pause(ctx),
        new_rs_available=rsutil.status_count(ctx.new_rs, "availableReplicas"),
    )


def reconcile_replicas_only(ctx: RolloutContext) -> None:
    """A scaling event or user pause of a blue-green rollout."""
    reconcile_replicasets(ctx)
