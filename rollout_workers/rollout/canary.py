"""The canary strategy, as a script of steps.

Mirrors argo-rollouts' rollout/canary.go: sync the new ReplicaSet, point the services, set the
traffic weight through the router (with `trafficRouting`), scale stable, new and older
ReplicaSets (one bounded move at a time without a router, see `routedcanary` with one), take or
release pause steps, then compute the status (step index, stable promotion, abort) and send it
in one patch.
"""

from __future__ import annotations

import json
import logging

from rollout_workers.api.analysis import AnalysisPhase
from rollout_workers.api.rollout import CanaryStatus, PauseReason, RolloutStatus
from rollout_workers.objects import Obj
from rollout_workers.rollout import (
    analysis,
    ephemeralmetadata,
    experiment,
    restart,
    routedcanary,
    service,
    sync,
)
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import conditions as c
from rollout_workers.rollout import replicas as rmath
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.hashing import pod_template_hash, steps_hash
from rollout_workers.rollout.phase import canary_step_string
from rollout_workers.rollout.pods import format_selector
from rollout_workers.rollout.scaledown import cleanup_unhealthy
from rollout_workers.rollout.stepplugins import statemachine
from rollout_workers.rollout.trafficrouting import pingpong
from rollout_workers.rollout.trafficstep import (
    max_traffic_weight,
    reconcile_traffic_routing,
    rolling_back_from,
)
from rollout_workers.timefmt import duration_seconds

log = logging.getLogger(__name__)


def counts(rs: Obj | None) -> rmath.RSCounts | None:
    if rs is None:
        return None
    return rmath.RSCounts(
        replicas=rsutil.spec_replicas(rs), available=rsutil.status_count(rs, "availableReplicas")
    )


def current_steps_hash(ctx: RolloutContext) -> str:
    if ctx.blue_green is not None or ctx.canary is None:
        return ""
    steps = [step.to_dict() for step in ctx.steps]
    return steps_hash(json.dumps(steps, separators=(",", ":")).encode())


def template_or_steps_changed(ctx: RolloutContext) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    if (status.current_step_hash or "") != current_steps_hash(ctx):
        return True
    if not status.current_pod_hash:
        return False
    if ctx.new_rs is not None:
        return status.current_pod_hash != (rsutil.pod_hash(ctx.new_rs) or "")
    # No ReplicaSet of the template yet: its hash is computed (Argo's checkPodSpecChange).
    template = dict(ctx.obj["spec"].get("template") or {})
    return status.current_pod_hash != pod_template_hash(template, status.collision_count)


def routed(ctx: RolloutContext) -> bool:
    return ctx.canary is not None and ctx.canary.traffic_routing is not None


def step_weight(ctx: RolloutContext) -> int:
    """The weight the canary should have now (Argo's GetCurrentSetWeight)."""
    if ctx.pause.is_aborted():
        return 0
    step, index = ctx.current_step()
    if index is None or step is None:
        return max_traffic_weight(ctx)  # no steps, or past the last one
    weight = 0
    for candidate in ctx.steps[: index + 1]:
        if candidate.set_weight is not None:
            weight = candidate.set_weight
    return weight


def desired_counts(ctx: RolloutContext) -> tuple[int, int]:
    """(new ReplicaSet replicas, stable ReplicaSet replicas) for this reconcile, without a
    traffic router."""
    status = ctx.rollout.status or RolloutStatus()
    at_stable = not status.stable_rs or status.stable_rs == status.current_pod_hash
    scale = rmath.calculate_canary_scale(
        step_weight=step_weight(ctx),
        promote_full=bool(status.promote_full),
        at_stable=at_stable and not ctx.pause.is_aborted(),
        aborted=ctx.pause.is_aborted(),
    )
    stable_is_new = (
        ctx.stable_rs is not None
        and ctx.new_rs is not None
        and rsutil.name(ctx.stable_rs) == rsutil.name(ctx.new_rs)
    )
    canary = ctx.canary_spec
    new, stable = rmath.calculate_canary_replica_counts(
        rollout_replicas=ctx.replicas,
        weight=scale.weight,
        max_surge=canary.max_surge,
        max_unavailable=canary.max_unavailable,
        canary=counts(ctx.new_rs),
        stable=None if stable_is_new else counts(ctx.stable_rs),
        others=[c_ for rs in ctx.other_rss if (c_ := counts(rs)) is not None],
        stable_is_canary=stable_is_new,
        canary_replicas=scale.replicas,
        min_pods_per_rs=canary.min_pods_per_replica_set,
        aborted=ctx.pause.is_aborted(),
    )
    return new, stable


def at_desired_counts(ctx: RolloutContext) -> bool:
    if routed(ctx):
        return routedcanary.at_desired_counts(ctx, step_weight=step_weight(ctx))
    new_count, stable_count = desired_counts(ctx)
    if ctx.new_rs is None:
        return False
    new_ok = routedcanary.new_rs_progressed(ctx, new_count)
    stable_ok = (
        ctx.stable_rs is None
        or rsutil.name(ctx.stable_rs) == rsutil.name(ctx.new_rs)
        or (
            rsutil.spec_replicas(ctx.stable_rs) == stable_count
            and rsutil.status_count(ctx.stable_rs, "availableReplicas") == stable_count
        )
    )
    others_ok = all(
        rsutil.total([rs], "availableReplicas") == 0 and rsutil.spec_replicas(rs) == 0
        for rs in ctx.other_rss
    )
    return new_ok and stable_ok and others_ok


# -- the script -------------------------------------------------------------------------------


def reconcile_canary(ctx: RolloutContext) -> None:
    if template_or_steps_changed(ctx):
        sync.ensure_new_rs(ctx, create=False)
        sync_status(ctx)
        return
    sync.ensure_new_rs(ctx, create=True)
    restarted = restart.reconcile_restart(ctx)
    if restarted:
        # The ReplicaSets' availability does not count the pods just deleted yet: scaling on
        # it now could take away more than maxUnavailable. The next reconcile sees them.
        log.info("%s: finished reconciliation after %d restarted pods", ctx.key, restarted)
        return
    ephemeralmetadata.reconcile_ephemeral_metadata(ctx)
    sync.cleanup_old_rss(ctx, ctx.other_rss)
    reconcile_ping_pong_service(ctx)
    reconcile_services(ctx)
    if routed(ctx):
        # Before any scaling: the weight follows the pods that are ready, never the reverse.
        reconcile_traffic_routing(ctx, at_desired_counts=at_desired_counts(ctx))
    experiment.reconcile_experiments(ctx)
    analysis.reconcile_analysis_runs(ctx)
    if ctx.pause.has_add_pause():
        log.info("%s: paused for an inconclusive AnalysisRun", ctx.key)
        sync_status(ctx)
        return
    if reconcile_replicasets(ctx):
        log.info("%s: not finished reconciling ReplicaSets", ctx.key)
        sync_status(ctx)
        return
    reconcile_pause(ctx)
    statemachine.reconcile_step_plugins(ctx)
    sync_status(ctx)


def reconcile_ping_pong_service(ctx: RolloutContext) -> None:
    """During an update, the ping-pong Service in the canary role selects the new pods (at
    once: the router's weight, not the selector, decides what it gets)."""
    status = ctx.rollout.status or RolloutStatus()
    if ctx.canary_spec.ping_pong is None or (
        status.stable_rs and status.stable_rs == status.current_pod_hash
    ):
        return
    _, canary_service = pingpong.stable_and_canary_services(
        ctx.canary_spec, status, ping_pong_preferred=True
    )
    service.ensure_targets(ctx, canary_service, ctx.new_rs, check_available=False)


def reconcile_services(ctx: RolloutContext) -> None:
    """The stable Service on the stable pods; the canary Service on the new pods, except:
    aborted, it goes back to the stable (with a router, once the traffic has: see
    reconcile_traffic_routing; Argo points it at the canary first and back again on every
    reconcile of the abort, a switch this skips), and while dynamically rolling back to the
    stable it stays where the traffic still goes until the stable can take it all."""
    canary = ctx.canary_spec
    service.ensure_targets(ctx, canary.stable_service, ctx.stable_rs, check_available=True)
    if ctx.pause.is_aborted():
        if not routed(ctx):
            service.ensure_targets(ctx, canary.canary_service, ctx.stable_rs, check_available=True)
        return
    previous = rolling_back_from(ctx)
    if previous is not None:
        log.info(
            "%s: delaying the switch of service %s from %s: the stable is not fully available",
            ctx.key,
            canary.canary_service,
            previous,
        )
        return
    service.ensure_targets(ctx, canary.canary_service, ctx.new_rs, check_available=True)


def reconcile_replicasets(ctx: RolloutContext) -> bool:
    """Scale stable, then new, then older ReplicaSets; True when anything was scaled."""
    if routed(ctx):
        return routedcanary.reconcile_replicasets(ctx, step_weight=step_weight(ctx))
    if (
        ctx.stable_rs is not None
        and ctx.new_rs is not None
        and rsutil.name(ctx.stable_rs) != rsutil.name(ctx.new_rs)
    ):
        _, stable_count = desired_counts(ctx)
        if sync.scale_rs(ctx, ctx.stable_rs, stable_count):
            return True
    if ctx.new_rs is not None:
        new_count, _ = desired_counts(ctx)
        if sync.scale_rs(ctx, ctx.new_rs, new_count):
            return True
    return scale_down_others(ctx)


def scale_down_others(ctx: RolloutContext) -> bool:
    others = [rs for rs in ctx.other_rss if rsutil.spec_replicas(rs) > 0]
    if not others:
        return False
    cleaned = cleanup_unhealthy(ctx, others)
    others = [ctx.replaced(rs) for rs in others]
    others = [rs for rs in others if rsutil.spec_replicas(rs) > 0]
    canary = ctx.canary_spec
    budget = rmath.calculate_old_rs_scale_down_budget(
        rollout_replicas=ctx.replicas,
        max_surge=canary.max_surge,
        max_unavailable=canary.max_unavailable,
        available_replicas=rsutil.total(list(ctx.all_rss), "availableReplicas"),
    )
    if budget <= 0:
        return cleaned
    newest_first = sorted(others, key=lambda rs: -ann.revision(rs))
    targets = rmath.calculate_basic_canary_old_rs_replicas(
        budget=budget, old_replicas=[rsutil.spec_replicas(rs) for rs in newest_first]
    )
    scaled = cleaned
    for rs, target in zip(newest_first, targets, strict=True):
        if target != rsutil.spec_replicas(rs):
            scaled = sync.scale_rs(ctx, rs, target) or scaled
    return scaled


def reconcile_pause(ctx: RolloutContext) -> None:
    """Take the pause of the current pause step once, and schedule its expiry."""
    status = ctx.rollout.status or RolloutStatus()
    if ctx.rollout.spec.paused or status.promote_full or not ctx.steps:
        return
    step, _ = ctx.current_step()
    if step is None or step.pause is None:
        return
    if ctx.pause.get(PauseReason.CANARY_PAUSE_STEP) is None:
        # No condition: either never paused here (take the pause) or a user resumed it.
        if not status.controller_pause:
            ctx.pause.add.append(PauseReason.CANARY_PAUSE_STEP)
            seconds = duration_seconds(step.pause.duration) if step.pause.duration else None
            if seconds is not None:
                ctx.requeue(seconds)
        return
    remaining = ctx.pause.pause_remaining(step.pause, ctx.now)
    if remaining is not None:
        # The pause expires on a workqueue timer, not in a sleeping worker.
        ctx.requeue(remaining)


def should_full_promote(ctx: RolloutContext) -> str | None:
    """Why the rollout goes straight to its new revision now, or None (Argo's
    shouldFullPromote, which answers "" for no)."""
    status = ctx.rollout.status or RolloutStatus()
    if ctx.stable_rs is None:
        return "Initial deploy"
    if ctx.pause.is_aborted():
        return None
    # Fewer available than desired holds the promotion (unless the progress threshold is met);
    # more (an HPA scaled the rollout down meanwhile) does not: it scales down once promoted.
    if ctx.new_rs is None or (
        rsutil.status_count(ctx.new_rs, "availableReplicas") < ctx.replicas
        and not routedcanary.new_rs_progressed(ctx, ctx.replicas)
    ):
        return None
    if status.promote_full:
        return "Full promotion requested"
    if ctx.rollback_within_window():
        return "Rollback within window"
    _, index = ctx.current_step()
    steps = len(ctx.steps)
    if steps == 0 or (index is not None and index == steps):
        return f"Completed all {steps} canary steps"
    return None


def promote_stable(ctx: RolloutContext, new: RolloutStatus, reason: str) -> None:
    ctx.pause.clear = True
    ctx.pause.remove_abort = True
    steps = len(ctx.steps)
    new.current_step_index = steps if steps > 0 else None
    if new.stable_rs != new.current_pod_hash:
        if ctx.canary_spec.ping_pong is not None:
            # The canary Service, already on the new pods, becomes the stable one.
            ensure_canary_status(new).stable_ping_pong = pingpong.calculate_flipped(
                ctx.rollout.status
            )
        new.stable_rs = new.current_pod_hash
        ctx.event(
            c.ROLLOUT_COMPLETED_REASON,
            c.ROLLOUT_COMPLETED_MESSAGE.format(ann.revision(ctx.obj), new.current_pod_hash, reason),
        )


def reset_status(ctx: RolloutContext, new: RolloutStatus) -> None:
    ctx.pause.clear = True
    ctx.pause.remove_abort = True
    if new.canary is not None:
        new.canary.current_step_analysis_run_status = None
        new.canary.current_background_analysis_run_status = None
    new.current_step_index = 0 if ctx.steps else None


def completed_current_step(ctx: RolloutContext) -> bool:
    if ctx.rollout.spec.paused:
        return False
    step, index = ctx.current_step()
    if step is None or index is None:
        return False
    if step.plugin is not None:
        return statemachine.is_step_completed(ctx, index)
    if step.pause is not None:
        return ctx.pause.completed_pause_step(step.pause, ctx.now)
    if step.set_canary_scale is not None:
        return at_desired_counts(ctx)
    if step.set_weight is not None:
        weights = ctx.new_status.canary.weights if ctx.new_status.canary else None
        # A weight the router has not verified yet holds the step.
        return at_desired_counts(ctx) and not (weights is not None and weights.verified is False)
    if step.experiment is not None:
        return experiment.ex_phase(ctx.current_experiment) == AnalysisPhase.SUCCESSFUL
    if step.analysis is not None:
        run = (
            ctx.new_status.canary.current_step_analysis_run_status
            if ctx.new_status.canary
            else None
        )
        return run is not None and run.status == AnalysisPhase.SUCCESSFUL
    # A header or mirror route: the traffic step of this reconcile applied it (an error would
    # have stopped the reconcile).
    return step.set_header_route is not None or step.set_mirror_route is not None


def ensure_canary_status(new: RolloutStatus) -> CanaryStatus:
    if new.canary is None:
        new.canary = CanaryStatus()
    return new.canary


def sync_status(ctx: RolloutContext) -> None:
    new = sync.calculate_base_status(ctx)
    previous = ctx.rollout.status.canary if ctx.rollout.status else None
    if previous is not None and previous.stable_ping_pong is not None:
        ensure_canary_status(new).stable_ping_pong = previous.stable_ping_pong
    statemachine.update_status(ctx, new)
    all_rss = list(ctx.all_rss)
    new.available_replicas = rsutil.total(all_rss, "availableReplicas")
    new.hpa_replicas = rsutil.total(all_rss, "replicas")
    new.selector = format_selector(ctx.obj["spec"].get("selector") or {})
    step, index = ctx.current_step()
    new.current_step_hash = current_steps_hash(ctx)
    step_count = len(ctx.steps)

    if template_or_steps_changed(ctx):
        reset_status(ctx, new)
        statemachine.reset_status(ctx, new)
        status = ctx.rollout.status or RolloutStatus()
        if (
            ctx.new_rs is not None
            and status.stable_rs == rsutil.pod_hash(ctx.new_rs)
            and step_count
        ):
            ctx.event(c.SKIP_STEPS_REASON, c.ROLLBACK_TO_STABLE_MESSAGE)
            new.current_step_index = step_count
        elif (
            ctx.new_rs is not None
            and step_count
            and rsutil.spec_replicas(ctx.new_rs) > 0
            and ctx.rollback_within_window()
        ):
            ctx.event(c.SKIP_STEPS_REASON, c.ROLLBACK_WITHIN_WINDOW_MESSAGE)
            new.current_step_index = step_count
        persist(ctx, new)
        return

    status = ctx.rollout.status or RolloutStatus()
    if status.promote_full or ctx.rollback_within_window():
        ctx.pause.clear = True
        ctx.pause.remove_abort = True
        if step_count:
            index = step_count

    reason = should_full_promote(ctx)
    if reason:
        promote_stable(ctx, new, reason)
        persist(ctx, new)
        return

    if ctx.pause.is_aborted():
        if step_count:
            new.current_step_index = step_count if new.stable_rs == new.current_pod_hash else 0
        persist(ctx, new)
        return

    if completed_current_step(ctx) and step is not None and index is not None:
        index += 1
        if new.canary is not None:
            new.canary.current_step_analysis_run_status = None
        ctx.event(
            c.ROLLOUT_STEP_COMPLETED_REASON,
            c.ROLLOUT_STEP_COMPLETED_MESSAGE.format(index, step_count, canary_step_string(step)),
        )
        ctx.pause.remove.append(PauseReason.CANARY_PAUSE_STEP)
    new.current_step_index = index
    persist(ctx, new)


def persist(ctx: RolloutContext, new: RolloutStatus) -> None:
    new = sync.calculate_conditions(ctx, new)
    sync.persist_status(ctx, new)
