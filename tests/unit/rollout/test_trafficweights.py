"""The canary weight and weights status with a traffic router, after Argo's
rollout/trafficrouting_test.go cases; and the routed replica arithmetic with maxTrafficWeight."""

from __future__ import annotations

import dataclasses

import pytest

from rollout_workers.api.rollout import TrafficWeights, WeightDestination
from rollout_workers.rollout import replicas as rmath
from rollout_workers.rollout.trafficrouting import weights as w

BASE = w.WeightInputs(
    max_weight=100,
    replicas=10,
    fully_promoted=False,
    aborted=False,
    promote_full=False,
    dynamic_stable_scale=False,
    stable_available=10,
    new_available=1,
    current_canary_weight=None,
    step_index=0,
    step_count=2,
    at_desired_counts=True,
    previous_set_weight=0,
    current_set_weight=10,
)


def case(**changes: object) -> w.WeightInputs:
    return dataclasses.replace(BASE, **changes)  # type: ignore[arg-type]


WEIGHT_CASES = {
    "at the step's counts: the step's setWeight": (case(), 10),
    "not at the counts yet: the previous setWeight": (
        case(at_desired_counts=False, step_index=2, previous_set_weight=10, current_set_weight=50),
        10,
    ),
    "new ReplicaSet without available pods: 0": (case(new_available=0), 0),
    "no new ReplicaSet: 0": (case(new_available=None), 0),
    "past the last step: all traffic": (case(step_index=2, current_set_weight=100), 100),
    "past the last step with maxTrafficWeight": (case(max_weight=1000, step_index=2), 1000),
    "fully promoted: 0": (case(fully_promoted=True, step_index=2), 0),
    "aborted: 0 at once": (case(aborted=True, current_canary_weight=50), 0),
    "aborted, dynamic: what the stable cannot carry yet": (
        case(aborted=True, dynamic_stable_scale=True, stable_available=7, current_canary_weight=50),
        30,
    ),
    "aborted, dynamic: never raised when the stable flaps": (
        case(aborted=True, dynamic_stable_scale=True, stable_available=4, current_canary_weight=50),
        50,
    ),
    "promote-full: the weight already set": (
        case(promote_full=True, current_canary_weight=20, new_available=10),
        20,
    ),
    "promote-full, dynamic: what the canary's pods carry": (
        case(promote_full=True, dynamic_stable_scale=True, new_available=7),
        70,
    ),
    "no steps: 0 (no step index)": (case(step_index=None, step_count=0), 0),
    "rolling back to the stable: 0 at once": (
        case(rolling_back=True, fully_promoted=True, current_canary_weight=50),
        0,
    ),
    "rolling back, dynamic: what the stable cannot carry yet": (
        case(
            rolling_back=True,
            fully_promoted=True,
            dynamic_stable_scale=True,
            stable_available=8,
            current_canary_weight=50,
        ),
        20,
    ),
    "rolling back, dynamic: never raised": (
        case(
            rolling_back=True,
            fully_promoted=True,
            dynamic_stable_scale=True,
            stable_available=2,
            current_canary_weight=50,
        ),
        50,
    ),
}


@pytest.mark.parametrize(("inputs", "expected"), WEIGHT_CASES.values(), ids=WEIGHT_CASES.keys())
def test_desired_weight(inputs: w.WeightInputs, expected: int) -> None:
    assert w.calculate_desired_weight(inputs) == expected


def dest(weight: int, hash_: str, service: str) -> WeightDestination:
    return WeightDestination(weight=weight, pod_template_hash=hash_, service_name=service)


def test_weight_status_changes_and_stable_takes_the_rest() -> None:
    changed, new = w.calculate_weight_status(
        None,
        desired=20,
        max_weight=100,
        canary_hash="c",
        stable_hash="s",
        canary_service="web-canary",
        stable_service="web-stable",
    )
    assert changed
    assert new.canary == dest(20, "c", "web-canary")
    assert new.stable == dest(80, "s", "web-stable")
    assert w.weight_updated_message(None, new) == "Traffic weight updated to 20"
    changed_again, _ = w.calculate_weight_status(
        new,
        desired=20,
        max_weight=100,
        canary_hash="c",
        stable_hash="s",
        canary_service="web-canary",
        stable_service="web-stable",
    )
    assert not changed_again
    moved, newer = w.calculate_weight_status(
        new,
        desired=50,
        max_weight=1000,
        canary_hash="c",
        stable_hash="s",
        canary_service="web-canary",
        stable_service="web-stable",
    )
    assert moved and newer.stable.weight == 950
    assert w.weight_updated_message(new, newer) == "Traffic weight updated from 20 to 50"


def test_weight_status_with_additional_destinations() -> None:
    extra = [dest(10, "e", "exp")]
    _, new = w.calculate_weight_status(
        TrafficWeights(canary=dest(0, "c", "x"), stable=dest(100, "s", "y")),
        desired=20,
        max_weight=100,
        canary_hash="c",
        stable_hash="s",
        canary_service="x",
        stable_service="y",
        additional=extra,
    )
    assert new.stable.weight == 70 and new.additional == extra


ROUTED_MAX_WEIGHT = {
    # (replicas, weight, max weight, dynamic, applied (canary, stable)) -> (canary, stable)
    "weight of 1000": ((10, 200, 1000, False, None), (2, 10)),
    "weight of 1000, rounded up": ((10, 15, 1000, False, None), (1, 10)),
    "dynamic, stable follows its traffic of 1000": ((10, 500, 1000, True, (200, 800)), (5, 8)),
}


@pytest.mark.parametrize(
    ("inputs", "expected"), ROUTED_MAX_WEIGHT.values(), ids=ROUTED_MAX_WEIGHT.keys()
)
def test_routed_counts_with_max_traffic_weight(
    inputs: tuple[int, int, int, bool, tuple[int, int] | None], expected: tuple[int, int]
) -> None:
    replicas, weight, max_weight, dynamic, applied = inputs
    counts = rmath.calculate_canary_replica_counts(
        rollout_replicas=replicas,
        weight=weight,
        traffic_routed=True,
        dynamic_stable_scale=dynamic,
        traffic_weights=rmath.TrafficWeights(*applied) if applied else None,
        max_traffic_weight=max_weight,
    )
    assert counts == expected


def test_canary_scale_at_stable_is_all_of_max_weight() -> None:
    scale = rmath.calculate_canary_scale(step_weight=10, at_stable=True, max_weight=1000)
    assert scale == rmath.CanaryScale(replicas=None, weight=1000)


EXPERIMENT_CASES = {
    "stepping through the steps": (case(), True),
    "short of the step's counts": (case(at_desired_counts=False), True),
    "canary without available pods": (case(new_available=0), True),
    "no new ReplicaSet": (case(new_available=None), True),
    "past the last step": (case(step_index=2), False),
    "fully promoted": (case(fully_promoted=True), False),
    "aborted": (case(aborted=True), False),
    "promote-full": (case(promote_full=True), False),
    "no steps": (case(step_index=None, step_count=0), False),
}


@pytest.mark.parametrize(
    ("inputs", "expected"), EXPERIMENT_CASES.values(), ids=EXPERIMENT_CASES.keys()
)
def test_when_experiment_templates_get_their_weights(
    inputs: w.WeightInputs, expected: bool
) -> None:
    assert w.experiment_weights_apply(inputs) is expected
