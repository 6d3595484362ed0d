"""The canary's traffic weight, as Argo's reconcileTrafficRouting decides it: pure functions.

Why this module exists: the weight a router is told to send to the canary must never run ahead
of the pods that serve it. The rules (argo-rollouts rollout/trafficrouting.go, v1.8) are kept
here apart from the routers and the Kubernetes objects, so they can be tested as tables:

- rolling back to the stable with dynamicStableScale (the template set back to the stable's
  while the previous canary still has traffic), or aborted: 0 at once, or with
  dynamicStableScale as much as the stable's available pods can not yet carry (never more than
  the weight already set);
- fully promoted (status.stableRS == status.currentPodHash): 0, every request to the stable;
- no new ReplicaSet, or none of its pods available: 0;
- promote-full: the weight already set, or with dynamicStableScale the share the canary's
  available pods can carry;
- in the steps: the previous setWeight until the ReplicaSets reach the current step's counts,
  then the current setWeight; past the last step, all of maxTrafficWeight.

`calculate_weight_status` builds `status.canary.weights` (canary, stable = max - canary -
additional) and says whether it changed, which resets `verified`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rollout_workers.api.rollout import TrafficWeights, WeightDestination

#: Argo's TrafficWeightUpdated event reason and message.
WEIGHT_UPDATED_REASON = "TrafficWeightUpdated"
WEIGHT_UPDATED_MESSAGE = "Traffic weight updated {}"
#: How soon a weight the router has not verified yet is checked again (Argo's default).
VERIFY_RETRY_SECONDS = 10.0
#: Argo's event when a router fails to verify a weight (the reconcile goes on).
WEIGHT_VERIFY_ERROR_REASON = "WeightVerifyError"
WEIGHT_VERIFY_ERROR_MESSAGE = "Failed to verify weight: {}"


@dataclass(frozen=True)
class WeightInputs:
    """What the weight decision reads from the rollout and its ReplicaSets.

    `step_index` is status.currentStepIndex (None without steps); `previous_set_weight` is the
    last setWeight strictly before it and `current_set_weight` Argo's GetCurrentSetWeight (the
    last at or before it). `new_available` is None when there is no new ReplicaSet.
    """

    max_weight: int
    replicas: int
    fully_promoted: bool
    aborted: bool
    promote_full: bool
    dynamic_stable_scale: bool
    stable_available: int
    new_available: int | None
    current_canary_weight: int | None
    step_index: int | None
    step_count: int
    at_desired_counts: bool
    previous_set_weight: int
    current_set_weight: int
    #: Dynamically rolling back to the stable (see trafficstep.rolling_back_from).
    rolling_back: bool = False


def abort_or_rollback_weight(w: WeightInputs) -> int:
    """Aborted or rolling back to the stable: 0 at once, or with dynamicStableScale what the
    stable's available pods cannot carry yet (never more than the weight already set)."""
    if not w.dynamic_stable_scale or w.replicas == 0:
        return 0
    weight = w.max_weight - (w.max_weight * w.stable_available) // w.replicas
    if w.current_canary_weight is not None:
        # Never raise it again because the stable's availability flaps.
        weight = min(weight, w.current_canary_weight)
    return weight


def calculate_desired_weight(w: WeightInputs) -> int:
    """The canary's weight for this reconcile (see the module docstring for the rules)."""
    if w.rolling_back:
        return abort_or_rollback_weight(w)
    if w.fully_promoted:
        return 0
    if w.aborted:
        return abort_or_rollback_weight(w)
    if w.new_available is None or w.new_available == 0:
        return 0
    if w.promote_full:
        if w.dynamic_stable_scale and w.replicas:
            return (w.max_weight * w.new_available) // w.replicas
        return w.current_canary_weight or 0
    if w.step_index is None:
        return 0
    if not w.at_desired_counts:
        return w.previous_set_weight
    if w.step_index != w.step_count:
        return w.current_set_weight
    return w.max_weight


def experiment_weights_apply(w: WeightInputs) -> bool:
    """Whether a running experiment's templates get their weights this reconcile: while the
    canary has no available pod, or while the steps go on (at or short of the step's counts);
    not once promoted or aborted, on a full promotion, or past the last step (Argo)."""
    if w.fully_promoted or w.aborted:
        return False
    if w.new_available is None or w.new_available == 0:
        return True
    if w.promote_full or w.step_index is None:
        return False
    return not w.at_desired_counts or w.step_index != w.step_count


def calculate_weight_status(
    previous: TrafficWeights | None,
    *,
    desired: int,
    max_weight: int,
    canary_hash: str,
    stable_hash: str,
    canary_service: str | None,
    stable_service: str | None,
    additional: Sequence[WeightDestination] = (),
) -> tuple[bool, TrafficWeights]:
    """(changed, status.canary.weights) for `desired`; `verified` is left for the caller."""
    stable_weight = max_weight - desired - sum(d.weight for d in additional)
    weights = TrafficWeights(
        canary=WeightDestination(
            weight=desired,
            pod_template_hash=canary_hash or None,
            service_name=canary_service or None,
        ),
        stable=WeightDestination(
            weight=stable_weight,
            pod_template_hash=stable_hash or None,
            service_name=stable_service or None,
        ),
        additional=list(additional) or None,
    )
    changed = (
        previous is None
        or previous.canary != weights.canary
        or previous.stable != weights.stable
        or (previous.additional or []) != (weights.additional or [])
    )
    return changed, weights


def weight_updated_message(previous: TrafficWeights | None, new: TrafficWeights) -> str:
    """The TrafficWeightUpdated event's text ("to 20", "from 20 to 50", additional weights)."""
    details = []
    if previous is None:
        details.append(f"to {new.canary.weight}")
    elif previous.canary.weight != new.canary.weight:
        details.append(f"from {previous.canary.weight} to {new.canary.weight}")
    if previous is not None and (previous.additional or []) != (new.additional or []):
        additional = " ".join(
            f"{{{d.weight} {d.service_name or ''} {d.pod_template_hash or ''}}}"
            for d in new.additional or []
        )
        details.append(f"additional: [{additional}]")
    return WEIGHT_UPDATED_MESSAGE.format(", ".join(details))
