"""Argo Rollouts' replica arithmetic, as pure functions over plain ints.

Why this module exists: how many pods the canary, stable, preview and older ReplicaSets get at
each reconcile decides whether a rollout behaves like Argo Rollouts. The numbers must match
Argo's exactly (users compare us against it), so the arithmetic is kept apart from the
Kubernetes objects: every input is a plain value (`RSCounts` for a ReplicaSet's spec and
available replicas), there is no I/O and nothing here imports the rest of the project. The
reconcile reads the objects, calls these functions, and scales.

Correspondence with argoproj/argo-rollouts (Go):

- `scaled_value` - `intstrutil.GetValueFromIntOrPercent` (k8s apimachinery), which Argo uses.
- `resolve_fenceposts` - `resolveFenceposts` (utils/replicaset/replicaset.go).
- `calculate_max_surge` / `calculate_max_unavailable` - `MaxSurge` / `MaxUnavailable`, with
  `defaults.GetMaxSurgeOrDefault` / `GetMaxUnavailableOrDefault` (utils/defaults/defaults.go).
- `calculate_replicas_or_default` - `defaults.GetReplicasOrDefault`.
- `calculate_total_replicas` / `calculate_total_available` - `GetReplicaCountForReplicaSets` /
  `GetAvailableReplicaCountForReplicaSets`.
- `calculate_replicas_for_scale_down` - `GetReplicasForScaleDown` (utils/replicaset/canary.go).
- `calculate_weighted_canary_stable_counts` - `approximateWeightedCanaryStableReplicaCounts`
  (with `floorCeilingTied` and `weightDelta`).
- `calculate_traffic_weight_replicas` - `trafficWeightToReplicas`.
- `calculate_canary_scale` - `GetCanaryReplicasOrWeight` with `UseSetCanaryScale` and the
  abort rule of `GetCurrentSetWeight`, over already-resolved step values.
- `calculate_canary_replica_counts` - `CalculateReplicaCountsForBasicCanary` (with
  `calculateScaleDownReplicaCount`, `adjustReplicaWithinLimits`, `CheckStableRSExists`) when
  there is no traffic routing, `CalculateReplicaCountsForTrafficRoutedCanary` (with
  `CheckMinPodsPerReplicaSet`) when there is.
- `calculate_old_rs_scale_down_budget` / `calculate_basic_canary_old_rs_replicas` - the
  arithmetic of `scaleDownOldReplicaSetsForCanary` (rollout/canary.go).
- `calculate_bluegreen_new_rs_replicas` - the blue-green branch of `NewRSNewReplicas`
  (previewReplicaCount).
- `calculate_scale_up_preview_checkpoint` - `calculateScaleUpPreviewCheckPoint`
  (rollout/bluegreen.go).
- `calculate_progress_threshold_met` - `ReplicaProgressThresholdMet` (utils/replicaset/canary.go,
  Argo 1.9's `replicaProgressThreshold`).

Int-or-percent strings: Argo resolves maxSurge/maxUnavailable with the *deprecated*
`GetValueFromIntOrPercent`, which removes every "%" from a string and then reads the rest as a
percentage. So the string "25" means 25% (not 25 pods), and Argo's own defaults rely on it: they
are the strings "25", without "%". `GetScaledValueFromIntOrPercent` (what the Deployment
controller uses) would reject "25" instead. argoproj/argo-rollouts#4567 reports `maxUnavailable:
"1"` being read as 1%; we match Argo, not the Deployment controller.

Floating point: Argo computes some roundings on float64 (`math.Ceil`, `math.Modf`). Python
floats are the same IEEE doubles and the expressions below keep Go's order of operations, so
the results are bit-for-bit the same, including ties.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_SURGE",
    "DEFAULT_MAX_UNAVAILABLE",
    "DEFAULT_REPLICAS",
    "CanaryScale",
    "IntOrPercent",
    "RSCounts",
    "SetCanaryScale",
    "TrafficWeights",
    "calculate_basic_canary_old_rs_replicas",
    "calculate_bluegreen_new_rs_replicas",
    "calculate_canary_replica_counts",
    "calculate_canary_scale",
    "calculate_max_surge",
    "calculate_max_unavailable",
    "calculate_old_rs_scale_down_budget",
    "calculate_replicas_for_scale_down",
    "calculate_replicas_or_default",
    "calculate_scale_up_preview_checkpoint",
    "calculate_total_available",
    "calculate_total_replicas",
    "calculate_traffic_weight_replicas",
    "calculate_weighted_canary_stable_counts",
    "resolve_fenceposts",
    "scaled_value",
]

IntOrPercent = int | str
"""A Kubernetes IntOrString as it appears in a spec: an int (absolute) or a string (percent)."""

DEFAULT_REPLICAS = 1
"""spec.replicas when unset (`defaults.DefaultReplicas`)."""

DEFAULT_MAX_SURGE: IntOrPercent = "25"
"""maxSurge when unset. Argo's own value, a string without "%": it means 25%."""

DEFAULT_MAX_UNAVAILABLE: IntOrPercent = "25"
"""maxUnavailable when unset. Argo's own value, a string without "%": it means 25%."""

# strconv.Atoi's accepted syntax: an optional sign and ASCII digits, nothing else (no spaces,
# no underscores, unlike Python's int()).
_ATOI = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class RSCounts:
    """A ReplicaSet as the replica arithmetic sees it.

    `replicas` is spec.replicas (what the controller asked for), `available` is
    status.availableReplicas (what is serving). A ReplicaSet that does not exist is `None`
    wherever an `RSCounts` is accepted.
    """

    replicas: int
    available: int


@dataclass(frozen=True)
class TrafficWeights:
    """The traffic split currently applied by the router (status.canary.weights), in percent."""

    canary: int
    stable: int


@dataclass(frozen=True)
class SetCanaryScale:
    """A `setCanaryScale` step: explicit canary replicas, an explicit weight, or neither."""

    replicas: int | None = None
    weight: int | None = None
    match_traffic_weight: bool = False


@dataclass(frozen=True)
class CanaryScale:
    """What the canary is scaled to: explicit `replicas` (setCanaryScale) or a `weight` (%).

    When `replicas` is set, `weight` is 0, as Argo's `GetCanaryReplicasOrWeight` returns.
    """

    replicas: int | None
    weight: int


# --- int-or-percent and the surge/unavailable fenceposts ---------------------------------------


def scaled_value(value: IntOrPercent, total: int, round_up: bool) -> int:
    """Resolve an int-or-percent against `total`, as `GetValueFromIntOrPercent` does.

    An int is returned as is. Any string is a percentage: every "%" is removed and the rest must
    be an integer (`strconv.Atoi` syntax), so "25%", "25" and even "2%5" are all 25% of `total`,
    rounded up or down. Raises ValueError for a string that is not a number once the "%" are
    removed (Go returns an error there), TypeError for anything other than int or str.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"expected an int or a percentage string, got {value!r}")
    if isinstance(value, int):
        return value
    digits = value.replace("%", "")
    if not _ATOI.fullmatch(digits):
        raise ValueError(f"invalid int-or-percent value {value!r}")
    percent = int(digits)
    # Same float64 expression as Go: float(value) * float(total) / 100, then Ceil or Floor.
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def resolve_fenceposts(
    *, max_surge: IntOrPercent | None, max_unavailable: IntOrPercent | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) for `desired` replicas, as `resolveFenceposts` does.

    The surge rounds up and the unavailable rounds down. `None` means 0 here (this is the
    low-level function; the 25% defaults are applied by `calculate_max_surge` and
    `calculate_max_unavailable`). If both resolve to 0, unavailable becomes 1 so that a rollout
    can always make progress. Raises ValueError for an unparsable string; Argo's callers ignore
    that error and get (0, 0), relying on validation to have rejected the spec.
    """
    surge = scaled_value(0 if max_surge is None else max_surge, desired, True)
    unavailable = scaled_value(0 if max_unavailable is None else max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def calculate_replicas_or_default(replicas: int | None) -> int:
    """spec.replicas, or 1 when it is unset (`GetReplicasOrDefault`)."""
    return DEFAULT_REPLICAS if replicas is None else replicas


def calculate_max_surge(
    *,
    rollout_replicas: int,
    max_surge: IntOrPercent | None,
    max_unavailable: IntOrPercent | None,
    blue_green: bool = False,
) -> int:
    """How many pods a canary may run above spec.replicas (`MaxSurge`).

    `None` means unset: the 25% default applies. Blue-green never surges this way (0).
    """
    if blue_green:
        return 0
    surge, _ = resolve_fenceposts(
        max_surge=DEFAULT_MAX_SURGE if max_surge is None else max_surge,
        max_unavailable=DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable,
        desired=rollout_replicas,
    )
    return surge


def calculate_max_unavailable(
    *,
    rollout_replicas: int,
    max_surge: IntOrPercent | None,
    max_unavailable: IntOrPercent | None,
    blue_green: bool = False,
) -> int:
    """How many of spec.replicas may be unavailable (`MaxUnavailable`), never above replicas.

    `None` means unset: the 25% default applies. A canary resolves both fenceposts together (so
    0%/0% gives 1); blue-green only rounds its own maxUnavailable down (so it may be 0).
    0 replicas give 0.
    """
    if rollout_replicas == 0:
        return 0
    unavailable_value = DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable
    if blue_green:
        unavailable = scaled_value(unavailable_value, rollout_replicas, False)
    else:
        _, unavailable = resolve_fenceposts(
            max_surge=DEFAULT_MAX_SURGE if max_surge is None else max_surge,
            max_unavailable=unavailable_value,
            desired=rollout_replicas,
        )
    return min(unavailable, rollout_replicas)


# --- sums over ReplicaSets -----------------------------------------------------------------------


def calculate_total_replicas(replica_sets: Iterable[RSCounts | None]) -> int:
    """Sum of spec.replicas, skipping ReplicaSets that do not exist."""
    return sum(rs.replicas for rs in replica_sets if rs is not None)


def calculate_total_available(replica_sets: Iterable[RSCounts | None]) -> int:
    """Sum of status.availableReplicas, skipping ReplicaSets that do not exist."""
    return sum(rs.available for rs in replica_sets if rs is not None)


def calculate_replicas_for_scale_down(rs: RSCounts | None, ignore_availability: bool) -> int:
    """How many of `rs`'s replicas count as available when deciding a scale down.

    Never more than spec.replicas: pods above it are already on their way out, and counting
    them would let a scale down go under the availability floor. With `ignore_availability`
    spec.replicas is used even if the pods are not available, so that a ReplicaSet stuck in
    e.g. CrashLoopBackOff can still be scaled down to make room.
    """
    if rs is None:
        return 0
    if rs.replicas < rs.available:
        return rs.replicas
    if ignore_availability:
        return rs.replicas
    return rs.available


# --- canary --------------------------------------------------------------------------------------


def calculate_traffic_weight_replicas(replicas: int, weight: int, max_weight: int = 100) -> int:
    """Replicas needed to carry `weight` of `max_weight` (maxTrafficWeight) of the traffic,
    rounded up."""
    return math.ceil(weight * replicas / max_weight)


def _floor_ceiling_tied(weight: int, total: int) -> bool:
    # Go: math.Modf(float64(total) * (float64(weight) / 100)); the float product is kept on
    # purpose, a different rounding order could move a tie.
    return math.modf(total * (weight / 100))[0] == 0.5


def _weight_delta(weight: int, canary: int, total: int) -> float:
    return abs(canary * 100 / total - weight)


def calculate_weighted_canary_stable_counts(
    *, replicas: int, weight: int, max_surge: int
) -> tuple[int, int]:
    """(canary, stable) pod counts that best approximate `weight`% for a basic canary.

    Candidates are the canary count rounded up and down, over `replicas` pods or, when
    `max_surge` > 0, over `replicas + 1`; the one whose canary share is closest to `weight`
    wins, the first listed on a tie (rounded up, then without surge). A weight strictly between
    0 and 100 never gives either side 0 pods, unless there is a single replica and no surge.

    One Argo edge kept as is: with no surge, when the canary share is exactly half a pod short
    of all replicas (replicas * (100 - weight) == 50, e.g. 10 replicas at 95%), both candidates
    are rejected and the fallback gives the canary 0 pods and the stable all of them.
    """
    if replicas == 0:
        return 0, 0
    ceil_canary = math.ceil(replicas * weight / 100)
    floor_canary = math.floor(replicas * weight / 100)
    zero_allowed = weight in (0, 100) or (replicas == 1 and max_surge == 0)

    options: list[tuple[int, int]] = []  # (canary, total)
    if ceil_canary < replicas or zero_allowed:
        options.append((ceil_canary, replicas))
    if not _floor_ceiling_tied(weight, replicas) and (floor_canary != 0 or zero_allowed):
        options.append((floor_canary, replicas))
    if max_surge > 0:
        options.append((ceil_canary, replicas + 1))
        if not _floor_ceiling_tied(weight, replicas + 1) and (floor_canary != 0 or zero_allowed):
            options.append((floor_canary, replicas + 1))
    if not options:  # unreachable for weights in 0..100; kept as Argo has it
        return 0, replicas

    best_canary, best_total = options[0]
    best_delta = _weight_delta(weight, best_canary, best_total)
    for canary, total in options[1:]:
        delta = _weight_delta(weight, canary, total)
        if delta < best_delta:
            best_canary, best_total, best_delta = canary, total, delta
    return best_canary, best_total - best_canary


def calculate_canary_scale(
    *,
    step_weight: int,
    set_canary_scale: SetCanaryScale | None = None,
    traffic_routed: bool = False,
    promote_full: bool = False,
    at_stable: bool = False,
    aborted: bool = False,
    abort_scale_down_delay_seconds: int | None = None,
    max_weight: int = 100,
) -> CanaryScale:
    """What the canary should be scaled to now (`GetCanaryReplicasOrWeight`).

    Inputs are the step values the caller already resolved from the rollout:

    - `step_weight`: the last setWeight at or before the current step (100 once past the last
      step or with no steps, 0 if no setWeight precedes the current step);
    - `set_canary_scale`: the last setCanaryScale at or before the current step, if any;
    - `at_stable`: status.stableRS is empty or equal to status.currentPodHash.

    Full promotion or being at the stable gives all of `max_weight` (maxTrafficWeight).
    setCanaryScale needs traffic routing, is dropped by matchTrafficWeight, and is dropped on
    abort unless abortScaleDownDelaySeconds is explicitly 0 (keep the canary up). An abort
    otherwise sets the weight to 0.
    """
    if promote_full or at_stable:
        return CanaryScale(replicas=None, weight=max_weight)
    keep_canary_on_abort = traffic_routed and abort_scale_down_delay_seconds == 0
    scs = set_canary_scale
    if (
        traffic_routed
        and scs is not None
        and not scs.match_traffic_weight
        and (not aborted or keep_canary_on_abort)
    ):
        if scs.replicas is not None:
            return CanaryScale(replicas=scs.replicas, weight=0)
        if scs.weight is not None:
            return CanaryScale(replicas=None, weight=scs.weight)
    return CanaryScale(replicas=None, weight=0 if aborted else step_weight)


def _min_pods(count: int, min_pods_per_rs: int | None) -> int:
    # CheckMinPodsPerReplicaSet; the caller only applies it with traffic routing.
    if count == 0 or min_pods_per_rs is None:
        return count
    return max(count, min_pods_per_rs)


def _traffic_routed_counts(
    *,
    rollout_replicas: int,
    weight: int,
    canary_replicas: int | None,
    min_pods_per_rs: int | None,
    dynamic_stable_scale: bool,
    traffic_weights: TrafficWeights | None,
    aborted: bool,
    max_weight: int,
) -> tuple[int, int]:
    def replicas_for(share: int) -> int:
        return calculate_traffic_weight_replicas(rollout_replicas, share, max_weight)

    if canary_replicas is not None:
        canary = canary_replicas
    else:
        canary = _min_pods(replicas_for(weight), min_pods_per_rs)
    if not dynamic_stable_scale:
        # The router keeps traffic off the canary, so the stable stays fully scaled.
        return canary, rollout_replicas

    # Dynamic stable scale: the stable follows the larger of the desired and the actual stable
    # traffic, so it is never scaled below what the router is still sending it.
    stable = replicas_for(max_weight - weight)
    if traffic_weights is not None:
        stable = max(stable, replicas_for(traffic_weights.stable))
        if aborted:
            # Likewise the canary keeps the pods for the traffic it still receives.
            canary = max(replicas_for(traffic_weights.canary), canary)
    return _min_pods(canary, min_pods_per_rs), _min_pods(stable, min_pods_per_rs)


def _scale_down_count(
    drain: RSCounts | None, desired: int, scale_down: int, drain_count: int
) -> int:
    # calculateScaleDownReplicaCount: move towards `desired` by at most `scale_down` pods.
    if drain is not None and drain.replicas > desired:
        return max(desired, drain.replicas - scale_down)
    return drain_count


def _adjust_within_limits(
    *,
    drain: RSCounts | None,
    adjust: RSCounts | None,
    drain_count: int,
    adjust_count: int,
    max_allowed: int,
    min_available: int,
) -> tuple[int, int]:
    # adjustReplicaWithinLimits. `drain` is the ReplicaSet scaled down without regard to its
    # availability; `adjust` is the other one, whose available pods protect the floor.
    over_limit = max(0, adjust_count + drain_count - max_allowed)
    total_available = 0
    if drain is not None:
        total_available += min(drain.available, drain_count)
    if adjust is not None:
        # Bring the pair back under the surge ceiling at `adjust`'s expense...
        adjust_count -= over_limit
        total_available += min(adjust.available, adjust_count)
        lost_available = max(0, adjust.available - adjust_count)
        # ...give back the available pods that cut would push under the floor...
        missing = max(0, min_available - total_available)
        adjust_count += min(lost_available, missing)
        # ...and take any new excess from `drain`, which cannot breach the floor (the caller
        # only gets here when there is room to scale down).
        over_limit = max(0, adjust_count + drain_count - max_allowed)
        drain_count -= over_limit
    return drain_count, adjust_count


def _basic_counts(
    *,
    rollout_replicas: int,
    weight: int,
    max_surge: IntOrPercent | None,
    max_unavailable: IntOrPercent | None,
    canary: RSCounts | None,
    stable: RSCounts | None,
    others: Sequence[RSCounts],
    stable_is_canary: bool,
) -> tuple[int, int]:
    surge = calculate_max_surge(
        rollout_replicas=rollout_replicas, max_surge=max_surge, max_unavailable=max_unavailable
    )
    desired_canary, desired_stable = calculate_weighted_canary_stable_counts(
        replicas=rollout_replicas, weight=weight, max_surge=surge
    )
    # The ReplicaSet Argo passes as "stable" (for availability sums); `scale_stable` is
    # CheckStableRSExists: there is a stable and it is not the canary itself.
    stable_rs = canary if stable_is_canary else stable
    scale_stable = stable is not None and not stable_is_canary

    canary_count = canary.replicas if canary is not None else 0
    stable_count = 0
    if stable is not None and scale_stable:
        stable_count = stable.replicas
    else:
        # No separate stable: no steps to follow, the canary goes to 100%.
        desired_canary, desired_stable = rollout_replicas, 0

    max_allowed = rollout_replicas + surge
    current_total = calculate_total_replicas([*others, canary, stable if scale_stable else None])
    scale_up = max_allowed - current_total

    # Scale up within the surge, the stable first.
    if stable is not None and scale_stable and stable.replicas < desired_stable and scale_up > 0:
        if stable.replicas + scale_up < desired_stable:
            stable_count = stable.replicas + scale_up
            scale_up = 0
        else:
            stable_count = desired_stable
            scale_up -= desired_stable - stable.replicas
    if canary is not None and canary.replicas < desired_canary and scale_up > 0:
        canary_count = min(canary.replicas + scale_up, desired_canary)

    if calculate_total_replicas(others) > 0:
        # Older ReplicaSets are scaled down first (elsewhere), before canary or stable.
        return canary_count, stable_count

    min_available = rollout_replicas - calculate_max_unavailable(
        rollout_replicas=rollout_replicas, max_surge=max_surge, max_unavailable=max_unavailable
    )
    # Growing the canary may ignore the stable's unavailable pods; shrinking it (lower weight,
    # abort) may ignore the canary's. Either way the other side's availability holds the floor.
    is_increasing = canary is None or desired_canary >= canary.replicas
    countable = calculate_replicas_for_scale_down(
        canary, not is_increasing
    ) + calculate_replicas_for_scale_down(stable_rs, is_increasing)
    if countable <= min_available:
        return canary_count, stable_count
    scale_down = countable - min_available

    if not is_increasing:
        canary_count = _scale_down_count(canary, desired_canary, scale_down, canary_count)
        canary_count, stable_count = _adjust_within_limits(
            drain=canary,
            adjust=stable_rs,
            drain_count=canary_count,
            adjust_count=stable_count,
            max_allowed=max_allowed,
            min_available=min_available,
        )
    elif scale_stable:
        stable_count = _scale_down_count(stable, desired_stable, scale_down, stable_count)
        stable_count, canary_count = _adjust_within_limits(
            drain=stable,
            adjust=canary,
            drain_count=stable_count,
            adjust_count=canary_count,
            max_allowed=max_allowed,
            min_available=min_available,
        )
    return canary_count, stable_count


def calculate_canary_replica_counts(
    *,
    rollout_replicas: int,
    weight: int,
    max_surge: IntOrPercent | None = None,
    max_unavailable: IntOrPercent | None = None,
    canary: RSCounts | None = None,
    stable: RSCounts | None = None,
    others: Sequence[RSCounts] = (),
    stable_is_canary: bool = False,
    traffic_routed: bool = False,
    canary_replicas: int | None = None,
    min_pods_per_rs: int | None = None,
    dynamic_stable_scale: bool = False,
    traffic_weights: TrafficWeights | None = None,
    aborted: bool = False,
    max_traffic_weight: int = 100,
) -> tuple[int, int]:
    """(canary RS replicas, stable RS replicas) for this reconcile.

    `weight` and `canary_replicas` come from `calculate_canary_scale` (its `weight` and
    `replicas`). `max_surge` / `max_unavailable` are the spec values, `None` for unset (25%).

    Without traffic routing (`CalculateReplicaCountsForBasicCanary`) the pod counts *are* the
    traffic split, so the result is one bounded step from the current `canary`, `stable` and
    `others` (older ReplicaSets) towards the weighted target: scale up within
    replicas + maxSurge (stable first), then, once no older ReplicaSet has replicas, scale down
    without going under replicas - maxUnavailable available pods. A missing ReplicaSet is
    `None`. When the stable ReplicaSet is the canary ReplicaSet itself (fully promoted), pass
    `stable=None, stable_is_canary=True`: Argo then still counts that ReplicaSet's pods a second
    time, as the stable, when it decides how far it may scale down, and we do the same.

    With traffic routing (`CalculateReplicaCountsForTrafficRoutedCanary`) the ReplicaSet states
    are not used: the canary gets `canary_replicas` if set (setCanaryScale.replicas, taken as
    is), else enough pods for `weight` (at least `min_pods_per_rs` if not 0); the stable stays
    at `rollout_replicas` unless `dynamic_stable_scale`, where it follows the larger of the
    desired and the current (`traffic_weights`) stable traffic, and an `aborted` canary keeps
    the pods for the traffic it still receives. Weights are shares of `max_traffic_weight`
    (maxTrafficWeight, 100 by default).
    """
    if traffic_routed:
        return _traffic_routed_counts(
            rollout_replicas=rollout_replicas,
            weight=weight,
            canary_replicas=canary_replicas,
            min_pods_per_rs=min_pods_per_rs,
            dynamic_stable_scale=dynamic_stable_scale,
            traffic_weights=traffic_weights,
            aborted=aborted,
            max_weight=max_traffic_weight,
        )
    if canary_replicas is not None:
        raise ValueError("canary_replicas (setCanaryScale.replicas) requires traffic routing")
    if stable_is_canary and stable is not None:
        raise ValueError("stable_is_canary=True: pass stable=None, the canary is the stable")
    return _basic_counts(
        rollout_replicas=rollout_replicas,
        weight=weight,
        max_surge=max_surge,
        max_unavailable=max_unavailable,
        canary=canary,
        stable=stable,
        others=others,
        stable_is_canary=stable_is_canary,
    )


def calculate_old_rs_scale_down_budget(
    *,
    rollout_replicas: int,
    max_surge: IntOrPercent | None,
    max_unavailable: IntOrPercent | None,
    available_replicas: int,
) -> int:
    """How many pods older ReplicaSets may lose now (canary), 0 if none.

    `available_replicas` is the available pods of *all* the rollout's ReplicaSets; whatever is
    above replicas - maxUnavailable may go (`scaleDownOldReplicaSetsForCanary`).
    """
    min_available = rollout_replicas - calculate_max_unavailable(
        rollout_replicas=rollout_replicas, max_surge=max_surge, max_unavailable=max_unavailable
    )
    return max(0, available_replicas - min_available)


def calculate_basic_canary_old_rs_replicas(
    *, budget: int, old_replicas: Sequence[int]
) -> tuple[int, ...]:
    """New spec.replicas for each older ReplicaSet of a basic canary, newest revision first.

    Their pods take traffic, so all must go to 0; the `budget`
    (`calculate_old_rs_scale_down_budget`) is spent on the newest revisions first and the rest
    keep their replicas until a later reconcile. (With traffic routing the decision per
    ReplicaSet also depends on scale-down deadlines and references, which are not arithmetic.)
    """
    result: list[int] = []
    for replicas in old_replicas:
        if budget <= 0 or replicas == 0:
            result.append(replicas)
            continue
        desired = replicas - budget if replicas > budget else 0
        budget -= replicas - desired
        result.append(desired)
    return tuple(result)


# --- blue-green ----------------------------------------------------------------------------------


def calculate_bluegreen_new_rs_replicas(
    *,
    rollout_replicas: int,
    preview_replica_count: int | None,
    has_active_rs: bool,
    new_rs_is_active: bool,
    promote_full: bool = False,
    new_rs_is_current: bool = True,
    paused: bool = False,
    scale_up_preview_checkpoint: bool = False,
) -> int:
    """spec.replicas for a blue-green rollout's new (preview) ReplicaSet (`NewRSNewReplicas`).

    Without previewReplicaCount the new ReplicaSet always gets all replicas. With it, the new
    ReplicaSet gets `preview_replica_count` until it is promoted, i.e. unless: there is no
    active ReplicaSet or the active Service already selects the new one, a full promotion was
    requested, or the rollout was resumed (`paused` false: neither spec.paused nor any pause
    condition) after the scale-up-preview checkpoint. `new_rs_is_current` is false when the new
    ReplicaSet's hash differs from status.currentPodHash, i.e. a fresh update: preview count.
    """
    if preview_replica_count is None:
        return rollout_replicas
    if not has_active_rs or new_rs_is_active:
        return rollout_replicas
    if promote_full:
        return rollout_replicas
    if not new_rs_is_current:
        return preview_replica_count
    if not paused and scale_up_preview_checkpoint:
        return rollout_replicas
    return preview_replica_count


def calculate_scale_up_preview_checkpoint(
    *,
    preview_replica_count: int | None,
    previous: bool,
    pre_promotion_analysis_completed: bool,
    pause_completed: bool,
    new_rs_available: int,
) -> bool:
    """status.blueGreen.scaleUpPreviewCheckPoint (`calculateScaleUpPreviewCheckPoint`).

    A one-way switch for previewReplicaCount: once set it stays set (it is cleared elsewhere,
    on template change or full promotion). It is set when pre-promotion analysis succeeded or
    is not used, the blue-green pause is over, and exactly `preview_replica_count` pods of the
    new ReplicaSet are available.
    """
    if preview_replica_count is None:
        return False
    if previous:
        return True
    if not pre_promotion_analysis_completed or not pause_completed:
        return False
    return new_rs_available == preview_replica_count


#: `replicaProgressThreshold.type` that counts a percentage of the desired pods.
PERCENT_PROGRESS = "Percent"


def calculate_progress_threshold_met(
    *, threshold: tuple[str, int] | None, available: int, spec_replicas: int, desired: int
) -> bool:
    """Enough of a ReplicaSet's pods are available for `desired` (Argo's
    ReplicaProgressThresholdMet); `threshold` is replicaProgressThreshold's (type, value).

    Without a threshold (or with a negative value) all of them are, and the ReplicaSet asks for
    exactly `desired`; with `Percent`, available/desired reaches the value (a desire of 0
    always does); with `Pods`, available reaches it."""
    if threshold is None or threshold[1] < 0:
        return spec_replicas == desired and available == desired
    kind, value = threshold
    if kind == PERCENT_PROGRESS:
        if desired == 0:
            return True
        percent = available / desired * 100
        return percent >= value or math.isclose(percent, value, abs_tol=1e-10)
    return available >= value
