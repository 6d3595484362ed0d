"""Phase calculation and pause intents: tables of named cases."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.api.rollout import (
    CanaryStep,
    PauseReason,
    RolloutPause,
    RolloutSpec,
    RolloutStatus,
)
from rollout_workers.rollout.pause import PauseContext, calculate_pause_status
from rollout_workers.rollout.phase import calculate_phase, canary_step_string, go_duration
from rollout_workers.rollout.status import normalize
from rollout_workers.timefmt import duration_seconds

CANARY: dict[str, Any] = {"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 50}]}}}
BLUEGREEN: dict[str, Any] = {"replicas": 3, "strategy": {"blueGreen": {"activeService": "a"}}}
DONE: dict[str, Any] = {
    "replicas": 3,
    "updatedReplicas": 3,
    "availableReplicas": 3,
    "currentPodHash": "h2",
    "stableRS": "h2",
}

PHASES = {
    "healthy canary": (CANARY, DONE, ("Healthy", "")),
    "invalid spec": (
        CANARY,
        {**DONE, "conditions": [{"type": "InvalidSpec", "status": "True", "message": "bad"}]},
        ("Degraded", "InvalidSpec: bad"),
    ),
    "aborted": (
        CANARY,
        {
            **DONE,
            "conditions": [
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "RolloutAborted",
                    "message": "m",
                }
            ],
        },
        ("Degraded", "RolloutAborted: m"),
    ),
    "manually paused": ({**CANARY, "paused": True}, DONE, ("Paused", "manually paused")),
    "pause step": (
        CANARY,
        {**DONE, "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "t"}]},
        ("Paused", "CanaryPauseStep"),
    ),
    "restarting": ({**CANARY, "restartAt": "t1"}, DONE, ("Progressing", "rollout is restarting")),
    "updating": (
        CANARY,
        {**DONE, "updatedReplicas": 1},
        ("Progressing", "more replicas need to be updated"),
    ),
    "becoming available": (
        CANARY,
        {**DONE, "availableReplicas": 2},
        ("Progressing", "updated replicas are still becoming available"),
    ),
    "old pending": (
        CANARY,
        {**DONE, "replicas": 4},
        ("Progressing", "old replicas are pending termination"),
    ),
    "steps pending": (
        CANARY,
        {**DONE, "stableRS": "h1"},
        ("Progressing", "waiting for all steps to complete"),
    ),
    "cutover pending": (
        BLUEGREEN,
        {**DONE, "blueGreen": {"activeSelector": "h1"}},
        ("Progressing", "active service cutover pending"),
    ),
    "bluegreen healthy": (
        BLUEGREEN,
        {**DONE, "blueGreen": {"activeSelector": "h2"}},
        ("Healthy", ""),
    ),
}


@pytest.mark.parametrize(("spec", "status", "want"), PHASES.values(), ids=PHASES.keys())
def test_phase(spec: dict[str, Any], status: dict[str, Any], want: tuple[str, str]) -> None:
    got = calculate_phase(RolloutSpec.from_dict(spec), RolloutStatus.from_dict(status))
    assert (str(got[0]), got[1]) == want


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (30, 30),
        ("30s", 30),
        ("1m30s", 90),
        ("1.5h", 5400),
        ("500ms", 0),
        ("30", 30),
        ("abc", None),
        ("1x", None),
    ],
)
def test_duration_seconds(value: int | str, seconds: int | None) -> None:
    assert duration_seconds(value) == seconds


def test_go_duration() -> None:
    assert [go_duration(s) for s in (0, 5, 90, 3600)] == ["0s", "5s", "1m30s", "1h0m0s"]


NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
STARTED = "2026-01-01T11:59:00Z"


def status(**kw: Any) -> RolloutStatus:
    return RolloutStatus.from_dict(kw)


def test_add_pause_sets_controller_pause() -> None:
    ctx = PauseContext(status=status())
    ctx.add.append(PauseReason.CANARY_PAUSE_STEP)
    new = RolloutStatus()
    calculate_pause_status(ctx, new, NOW)
    assert normalize(new) == {
        "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T12:00:00Z"}],
        "controllerPause": True,
    }


def test_resume_clears_controller_pause() -> None:
    ctx = PauseContext(status=status(controllerPause=True))
    assert ctx.completed_pause_step(RolloutPause(), NOW)  # the user cleared our condition
    new = RolloutStatus()
    calculate_pause_status(ctx, new, NOW)
    assert normalize(new) == {}


def test_timed_pause() -> None:
    ctx = PauseContext(
        status=status(
            pauseConditions=[{"reason": "CanaryPauseStep", "startTime": STARTED}],
            controllerPause=True,
        )
    )
    assert not ctx.completed_pause_step(RolloutPause(duration="2m"), NOW)
    assert ctx.pause_remaining(RolloutPause(duration="2m"), NOW) == 60
    assert ctx.completed_pause_step(RolloutPause(duration=30), NOW)
    assert ctx.pause_remaining(RolloutPause(), NOW) is None


def test_abort_wins_and_retry_removes_it() -> None:
    ctx = PauseContext(
        status=status(
            abort=True, pauseConditions=[{"reason": "CanaryPauseStep", "startTime": STARTED}]
        )
    )
    new = RolloutStatus()
    calculate_pause_status(ctx, new, NOW)
    assert new.abort is True and new.pause_conditions is None
    ctx.remove_abort = True
    ctx.clear = True
    calculate_pause_status(ctx, new, NOW)
    assert new.abort is None and new.pause_conditions is None


def test_normalize_follows_omitempty() -> None:
    from rollout_workers.rollout.status import merge_patch

    raw = {
        "replicas": 0,
        "currentStepIndex": 0,
        "abort": False,
        "message": "",
        "canary": {},
        "blueGreen": {"activeSelector": "h"},
        "collisionCount": 0,
        "HPAReplicas": 2,
    }
    assert normalize(raw) == {
        "currentStepIndex": 0,
        "blueGreen": {"activeSelector": "h"},
        "collisionCount": 0,
        "HPAReplicas": 2,
    }
    old = {"a": 1, "b": {"c": 1, "d": 2}, "l": [1]}
    new = {"a": 1, "b": {"c": 1}, "l": [1, 2], "e": 0}
    assert merge_patch(old, new) == {"b": {"d": None}, "l": [1, 2], "e": 0}
    assert merge_patch(new, new) == {}


def test_promote_completes_a_timed_pause_early() -> None:
    ctx = PauseContext(status=status(controllerPause=True))  # a user cleared our condition
    assert ctx.completed_pause_step(RolloutPause(duration="1h"), NOW)


STEP_STRINGS = {
    "setWeight: 20": {"setWeight": 20},
    "pause": {"pause": {}},
    "pause: 1m30s": {"pause": {"duration": "90s"}},
    "experiment": {"experiment": {"templates": []}},
    "analysis": {"analysis": {"templates": []}},
    "plugin: rollout-workers/webhook": {"plugin": {"name": "rollout-workers/webhook"}},
    "setCanaryScale{replicas: 2}": {"setCanaryScale": {"replicas": 2}},
    "invalid": {},
}


@pytest.mark.parametrize(("text", "step"), STEP_STRINGS.items(), ids=list(STEP_STRINGS))
def test_canary_step_string(text: str, step: dict[str, Any]) -> None:
    """As Argo's CanaryStepString, used in the step events' messages."""
    assert canary_step_string(CanaryStep.model_validate(step)) == text
