"""The ReplicaSets of a canary with a traffic router.

With a router the pod counts are not the traffic split, so the arithmetic differs from the basic
canary (argo-rollouts utils/replicaset/canary.go CalculateReplicaCountsForTrafficRoutedCanary,
rollout/canary.go and rollout/replicaset.go):

- the canary gets enough pods for its weight (or setCanaryScale's replicas or weight); the
  stable stays at spec.replicas unless dynamicStableScale, where it follows the larger of its
  desired and its current traffic (`status.canary.weights`, as last applied);
- older ReplicaSets receive no traffic: one still scaled up mid-update goes at once, the
  previous stable after a promotion keeps its pods for scaleDownDelaySeconds (default 30 s,
  at most scaleDownDelayRevisionLimit of them; at once with dynamicStableScale);
- after an abort the canary keeps its pods for abortScaleDownDelaySeconds (default 30 s; 0
  keeps it up), counted from when the stable is fully available again.

Deadlines are the `scale-down-deadline` annotation and expire on workqueue timers.
"""

from __future__ import annotations

import logging
import sys

from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.api.rollout import TrafficWeights as StatusWeights
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicas as rmath
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout import sync, targetgroups
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.scaledown import (
    abort_scale_down_delay,
    add_scale_down_delay,
    cleanup_unhealthy,
    deadline_of,
    has_deadline,
    remove_scale_down_delay,
    scale_down_delay,
)
from rollout_workers.rollout.trafficstep import fully_promoted, max_traffic_weight

log = logging.getLogger(__name__)


def should_delay_scale_down_on_abort(ctx: RolloutContext) -> bool:
    """Argo's shouldDelayScaleDownOnAbort for a traffic-routed canary."""
    if not ctx.pause.is_aborted() or ctx.stable_rs is None:
        return False
    if abort_scale_down_delay(ctx.canary_spec) is None:
        return False
    explicit = ctx.canary_spec.abort_scale_down_delay_seconds is not None
    return not (ctx.canary_spec.dynamic_stable_scale and not explicit)


def current_set_canary_scale(ctx: RolloutContext) -> rmath.SetCanaryScale | None:
    """The last setCanaryScale at or before the current step, if any."""
    step, index = ctx.current_step()
    if step is None or index is None:
        return None
    for candidate in reversed(ctx.steps[: index + 1]):
        scs = candidate.set_canary_scale
        if scs is not None:
            return rmath.SetCanaryScale(
                replicas=scs.replicas,
                weight=scs.weight,
                match_traffic_weight=bool(scs.match_traffic_weight),
            )
    return None


def _weights(weights: StatusWeights | None) -> rmath.TrafficWeights | None:
    if weights is None:
        return None
    return rmath.TrafficWeights(canary=weights.canary.weight, stable=weights.stable.weight)


def desired_counts(
    ctx: RolloutContext, *, step_weight: int, weights: StatusWeights | None
) -> tuple[int, int]:
    """(new ReplicaSet replicas, stable ReplicaSet replicas) given the applied `weights`."""
    status = ctx.rollout.status or RolloutStatus()
    aborted = ctx.pause.is_aborted()
    at_stable = not status.stable_rs or status.stable_rs == status.current_pod_hash
    max_weight = max_traffic_weight(ctx)
    canary = ctx.canary_spec
    scale = rmath.calculate_canary_scale(
        step_weight=step_weight,
        set_canary_scale=current_set_canary_scale(ctx),
        traffic_routed=True,
        promote_full=bool(status.promote_full),
        at_stable=at_stable and not aborted,
        aborted=aborted,
        abort_scale_down_delay_seconds=canary.abort_scale_down_delay_seconds,
        max_weight=max_weight,
    )
    return rmath.calculate_canary_replica_counts(
        rollout_replicas=ctx.replicas,
        weight=scale.weight,
        traffic_routed=True,
        canary_replicas=scale.replicas,
        min_pods_per_rs=canary.min_pods_per_replica_set,
        dynamic_stable_scale=bool(canary.dynamic_stable_scale),
        traffic_weights=_weights(weights),
        aborted=aborted,
        max_traffic_weight=max_weight,
    )


def _applied_weights(ctx: RolloutContext) -> StatusWeights | None:
    """This reconcile's weights (set by the traffic step)."""
    return ctx.new_status.canary.weights if ctx.new_status.canary else None


def _previous_weights(ctx: RolloutContext) -> StatusWeights | None:
    status = ctx.rollout.status or RolloutStatus()
    return status.canary.weights if status.canary else None


def new_rs_progressed(ctx: RolloutContext, desired: int) -> bool:
    """The new ReplicaSet has enough pods available for `desired`: all of them, or as many as
    `canary.replicaProgressThreshold` asks."""
    threshold = ctx.canary_spec.replica_progress_threshold
    return rmath.calculate_progress_threshold_met(
        threshold=(str(threshold.type), threshold.value) if threshold is not None else None,
        available=rsutil.status_count(ctx.new_rs, "availableReplicas"),
        spec_replicas=rsutil.spec_replicas(ctx.new_rs),
        desired=desired,
    )


def at_desired_counts(ctx: RolloutContext, *, step_weight: int) -> bool:
    """AtDesiredReplicaCountsForCanary with a router: the new ReplicaSet has its pods available
    (all, or as many as replicaProgressThreshold asks); the stable has its pods created (not
    checked with dynamicStableScale). Older ReplicaSets do not matter, the router sends them
    nothing."""
    new_count, stable_count = desired_counts(
        ctx, step_weight=step_weight, weights=_applied_weights(ctx)
    )
    if ctx.new_rs is None or not new_rs_progressed(ctx, new_count):
        return False
    if ctx.canary_spec.dynamic_stable_scale:
        return True
    stable = ctx.stable_rs
    return (
        stable is not None
        and rsutil.spec_replicas(stable) == stable_count
        and rsutil.status_count(stable, "replicas") == stable_count
    )


def reconcile_replicasets(ctx: RolloutContext, *, step_weight: int) -> bool:
    """Scale stable, then new, then older ReplicaSets; True when anything was scaled."""
    remove_scale_down_deadlines(ctx)
    new, stable = ctx.new_rs, ctx.stable_rs
    if stable is not None and (new is None or rsutil.name(stable) != rsutil.name(new)):
        # The weights applied before this reconcile: the stable shrinks a reconcile after the
        # traffic left it, never in the same one.
        _, count = desired_counts(ctx, step_weight=step_weight, weights=_previous_weights(ctx))
        if sync.scale_rs(ctx, stable, count):
            return True
    if ctx.new_rs is not None and reconcile_new_rs(ctx, step_weight=step_weight):
        return True
    return scale_down_others(ctx)


def remove_scale_down_deadlines(ctx: RolloutContext) -> None:
    """The new and stable ReplicaSets carry no deadline (a return to a template still inside
    its delay), except an aborted canary waiting out abortScaleDownDelaySeconds."""
    targets: list[Obj] = []
    if ctx.new_rs is not None and not should_delay_scale_down_on_abort(ctx):
        targets.append(ctx.new_rs)
    if ctx.stable_rs is not None and all(
        rsutil.name(ctx.stable_rs) != rsutil.name(rs) for rs in targets
    ):
        targets.append(ctx.stable_rs)
    for rs in targets:
        if has_deadline(rs):
            remove_scale_down_delay(ctx, rs)


def reconcile_new_rs(ctx: RolloutContext, *, step_weight: int) -> bool:
    new = ctx.new_rs
    assert new is not None
    count, _ = desired_counts(ctx, step_weight=step_weight, weights=_applied_weights(ctx))
    delay_on_abort = should_delay_scale_down_on_abort(ctx)
    if delay_on_abort:
        deadline = deadline_of(ctx, new)
        if deadline is not None:
            if ctx.now < deadline:
                ctx.requeue((deadline - ctx.now).total_seconds())
                return False
            count = 0
        elif not has_deadline(new):
            # The window starts once the stable can take all the traffic again.
            stable = ctx.stable_rs
            if rsutil.status_count(stable, "availableReplicas") == ctx.replicas:
                add_scale_down_delay(ctx, new, abort_scale_down_delay(ctx.canary_spec) or 0)
            return False
    return sync.scale_rs(ctx, new, count, keep_deadline=delay_on_abort)


def _referenced(ctx: RolloutContext) -> set[str]:
    """Pod hashes the rollout still sends, or may send, traffic to."""
    status = ctx.rollout.status or RolloutStatus()
    hashes = {status.stable_rs or "", status.current_pod_hash or ""}
    weights = _previous_weights(ctx)
    if weights is not None:
        hashes |= {weights.canary.pod_template_hash or "", weights.stable.pod_template_hash or ""}
    return hashes - {""}


def scale_down_others(ctx: RolloutContext) -> bool:
    """scaleDownOldReplicaSetsForCanary with a router (see the module docstring)."""
    others = [rs for rs in ctx.other_rss if rsutil.spec_replicas(rs) > 0]
    if not others:
        return False
    scaled = cleanup_unhealthy(ctx, others)
    canary = ctx.canary_spec
    budget = rmath.calculate_old_rs_scale_down_budget(
        rollout_replicas=ctx.replicas,
        max_surge=canary.max_surge,
        max_unavailable=canary.max_unavailable,
        available_replicas=rsutil.total(list(ctx.all_rss), "availableReplicas"),
    )
    if budget <= 0:
        return scaled
    if not targetgroups.can_scale_down(ctx, [ctx.replaced(x) for x in others]):
        return scaled  # the stable pods are not all in the load balancer yet
    limit = canary.scale_down_delay_revision_limit
    limit = sys.maxsize if limit is None else int(limit)
    referenced = _referenced(ctx)
    promoted = fully_promoted(ctx)
    annotated = 0
    for rs in sorted((ctx.replaced(x) for x in others), key=lambda x: -ann.revision(x)):
        if rsutil.pod_hash(rs) in referenced:
            continue
        if budget <= 0:
            break
        replicas = rsutil.spec_replicas(rs)
        if replicas == 0:
            continue
        desired = 0
        if (promoted or has_deadline(rs)) and not canary.dynamic_stable_scale:
            annotated, desired = _delayed_count(ctx, rs, annotated=annotated, limit=limit)
        if desired != replicas:
            scaled = sync.scale_rs(ctx, rs, desired) or scaled
            budget -= replicas - desired
    return scaled


def _delayed_count(ctx: RolloutContext, rs: Obj, *, annotated: int, limit: int) -> tuple[int, int]:
    """Argo's scaleDownDelayHelper: (ReplicaSets now counted as delayed, desired replicas)."""
    replicas = rsutil.spec_replicas(rs)
    if not has_deadline(rs):
        delay = scale_down_delay(ctx.canary_spec)
        if annotated < limit and delay > 0:
            add_scale_down_delay(ctx, rs, delay)
            return annotated + 1, replicas
        return annotated, 0
    annotated += 1
    if annotated > limit:
        log.info("%s: at scaleDownDelayRevisionLimit (%d), scaling down the rest", ctx.key, limit)
        return annotated, 0
    deadline = deadline_of(ctx, rs)
    if deadline is not None and deadline > ctx.now:
        ctx.requeue((deadline - ctx.now).total_seconds())
        return annotated, replicas
    return annotated, 0
