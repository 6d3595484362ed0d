"""canary.replicaProgressThreshold (Argo 1.9), after Argo's utils/replicaset/canary_test.go
(TestAllReplicaProgressThresholdMet) and rollout/sync_test.go
(TestShouldFullPromoteWithReplicaProgressThreshold)."""

from __future__ import annotations

import pytest

from rollout_workers.rollout import replicas as rmath
from tests.unit.rollout.onesync import OneSync, rollout

PCT, PODS = "Percent", "Pods"


@pytest.mark.parametrize(
    ("threshold", "available", "spec", "desired", "met"),
    [
        pytest.param((PCT, 90), 9, 10, 10, True, id="90-percent-of-10-passes"),
        pytest.param((PODS, 9), 9, 10, 10, True, id="9-pods-pass"),
        pytest.param((PCT, 90), 8, 10, 10, False, id="80-percent-fails"),
        pytest.param((PODS, 8), 7, 10, 10, False, id="7-of-8-pods-fails"),
        pytest.param((PODS, -100), 10, 10, 10, True, id="negative-means-all-available"),
        pytest.param(None, 10, 5, 10, False, id="nil-needs-spec-replicas-too"),
        pytest.param(None, 10, 10, 10, True, id="nil-all-available"),
        pytest.param((PCT, 100), 100, 100, 10, True, id="well-above-passes"),
        pytest.param((PCT, 90), 0, 0, 0, True, id="desired-0-percent-met"),
        pytest.param((PCT, 33), 1, 3, 3, True, id="one-third-is-33-percent"),
    ],
)
def test_calculate_progress_threshold_met(
    threshold: tuple[str, int] | None, available: int, spec: int, desired: int, met: bool
) -> None:
    got = rmath.calculate_progress_threshold_met(
        threshold=threshold, available=available, spec_replicas=spec, desired=desired
    )
    assert got is met


def canary(threshold: dict[str, object] | None) -> dict[str, object]:
    strategy: dict[str, object] = {"steps": [{"setWeight": 50}, {"setWeight": 100}]}
    if threshold is not None:
        strategy["replicaProgressThreshold"] = threshold
    return rollout(strategy={"canary": strategy}, replicas=10)


@pytest.mark.parametrize(
    ("threshold", "promoted"),
    [
        pytest.param({"type": PCT, "value": 80}, True, id="80-percent-threshold-met-by-8-of-10"),
        pytest.param({"type": PODS, "value": 4}, True, id="4-pods-threshold-met"),
        # Pods count absolutely, whatever a step desires: the 50% step wants 5, and 5 < 8.
        pytest.param({"type": PODS, "value": 8}, False, id="8-pods-more-than-a-step-wants"),
        pytest.param({"type": PCT, "value": 90}, False, id="90-percent-not-met-by-8"),
        pytest.param(None, False, id="no-threshold-needs-all-10"),
    ],
)
def test_steps_and_promotion_wait_for_the_threshold(
    threshold: dict[str, object] | None, promoted: bool
) -> None:
    """Only 8 of the new revision's pods ever become available: a threshold they meet lets the
    steps advance and the rollout promote; without one it waits at the first step."""
    sim = OneSync(canary(threshold))
    sim.settle()
    first = sim.status["stableRS"]
    sim.capped["web:2"] = 8
    sim.set_image("web:2")
    sim.settle()
    if promoted:
        assert sim.status["stableRS"] == sim.status["currentPodHash"] != first
        assert sim.status["currentStepIndex"] == 2
    else:
        assert sim.status["stableRS"] == first
        assert sim.status["currentStepIndex"] in (0, 1)
