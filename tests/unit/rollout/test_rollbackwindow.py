"""spec.rollbackWindow, after Argo's rollout/sync_test.go (TestIsRollbackWithinWindow...) and
canary_test.go / bluegreen_test.go (TestCanaryRollbackWithinWindow...), in the one-sync
fixture."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.rollout import replicasets as rsutil
from tests.unit.rollout.onesync import OneSync, rollout, service

Obj = dict[str, Any]


def rs(name: str, second: int, *, experiment: bool = False) -> Obj:
    annotations = {rsutil.EXPERIMENT_NAME_ANNOTATION: "ex"} if experiment else {}
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": f"2026-01-01T12:00:{second:02d}Z",
            "annotations": annotations,
        }
    }


A, B, C, D = rs("a", 1), rs("b", 2), rs("c", 3), rs("d", 4)
EXP = rs("exp", 2, experiment=True)


@pytest.mark.parametrize(
    ("new", "stable", "all_rss", "revisions", "expected"),
    [
        pytest.param(A, B, [A, B], None, False, id="no-window"),
        pytest.param(A, B, [A, B], 0, False, id="zero-revisions"),
        pytest.param(B, A, [A, B], 3, False, id="forward-not-a-rollback"),
        pytest.param(A, B, [A, B], 1, True, id="previous-revision"),
        pytest.param(A, C, [A, B, C], 1, False, id="one-between-outside-1"),
        pytest.param(A, C, [A, B, C], 2, True, id="one-between-inside-2"),
        pytest.param(A, D, [A, B, C, D], 2, False, id="two-between-outside-2"),
        pytest.param(A, C, [A, EXP, C], 1, True, id="experiment-rs-not-counted"),
        pytest.param(None, B, [B], 5, False, id="no-new"),
        pytest.param(A, None, [A], 5, False, id="no-stable"),
        pytest.param(rs("same", 1), A, [A], 5, False, id="same-second-is-not-before"),
    ],
)
def test_is_rollback_within_window(
    new: Obj | None, stable: Obj | None, all_rss: list[Obj], revisions: int | None, expected: bool
) -> None:
    got = rsutil.is_rollback_within_window(
        new=new, stable=stable, all_rss=all_rss, revisions=revisions
    )
    assert got is expected


def deploy(sim: OneSync, image: str) -> list[str]:
    """Set the image, advance the clock (creation order), settle; the events' reasons."""
    sim.advance(10)
    sim.set_image(image)
    reasons: list[str] = []
    for synced in sim.settle():
        reasons += [f"{e.reason}: {e.message}" for e in synced.events]
    return reasons


def canary(revisions: int) -> Obj:
    return rollout(
        strategy={"canary": {"steps": [{"setWeight": 50}, {"pause": {}}]}},
        replicas=2,
        rollbackWindow={"revisions": revisions},
    )


def test_canary_back_within_the_window_skips_steps_and_pauses() -> None:
    sim = OneSync(canary(1))
    sim.settle()
    deploy(sim, "web:2")
    sim.rollout["status"]["pauseConditions"] = None  # promote past the pause
    sim.settle()
    two = sim.status["stableRS"]
    deploy(sim, "web:3")
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    reasons = deploy(sim, "web:2")
    assert sim.status["stableRS"] == two  # promoted without a pause
    assert "RolloutPaused: Rollout is paused (CanaryPauseStep)" not in reasons
    assert any(r.startswith("RolloutCompleted:") and "Rollback within window" in r for r in reasons)


def test_canary_back_outside_the_window_runs_the_steps() -> None:
    sim = OneSync(canary(1))
    sim.settle()
    for image in ("web:2", "web:3", "web:4"):
        deploy(sim, image)
        sim.rollout["status"]["pauseConditions"] = None
        sim.settle()
    deploy(sim, "web:2")
    assert sim.status["currentStepIndex"] == 1
    assert sim.status["pauseConditions"][0]["reason"] == "CanaryPauseStep"


def test_rollback_to_an_active_replicaset_within_the_window_says_skip_steps() -> None:
    """The ReplicaSet rolled back to still has pods (the update never finished): Argo's
    SkipSteps event, with the step index moved to the end."""
    sim = OneSync(canary(2))
    sim.settle()
    deploy(sim, "web:2")
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    deploy(sim, "web:3")  # paused at 50%: revision 2 (the stable) still has a pod
    reasons = deploy(sim, "web:2")
    assert "SkipSteps: Rollback to stable ReplicaSets" in reasons


def test_bluegreen_back_within_the_window_skips_the_pause() -> None:
    obj = rollout(
        strategy={"blueGreen": {"activeService": "active", "autoPromotionEnabled": False}},
        replicas=1,
        rollbackWindow={"revisions": 1},
    )
    sim = OneSync(obj, [service("active")])
    sim.settle()
    for image in ("web:2", "web:3"):
        deploy(sim, image)
        assert sim.status.get("pauseConditions"), image  # a normal update pauses
        sim.rollout["status"]["pauseConditions"] = None
        sim.settle()
        if image == "web:2":
            two = sim.status["stableRS"]
    sim.advance(60)  # past the scale-down delay: no fast track through it
    sim.settle()
    assert sim.rs(two)["spec"]["replicas"] == 0
    reasons = deploy(sim, "web:2")
    # Argo clears the pause conditions on every reconcile within the window, so the promotion
    # pause is never taken. (With manual promotion Argo then waits: its pause step adds the
    # pause again on each reconcile, and CompletedBlueGreenPause says no while a pause is being
    # added. The same is kept here.)
    assert not sim.status.get("pauseConditions")
    assert not any(r.startswith("RolloutPaused") for r in reasons)
