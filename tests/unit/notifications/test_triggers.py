"""Triggers: Argo Rollouts' translateReasonToTrigger (utils/record/record.go) and
notifications-engine's triggers.Service.Run (pkg/triggers/service_test.go) with a stub
evaluator standing in for expr-lang."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from rollout_workers.notifications.config import Condition
from rollout_workers.notifications.triggers import (
    condition_key,
    run_conditions,
    trigger_for_reason,
)

REASONS = [
    ("RolloutStepCompleted", "on-rollout-step-completed"),
    ("AnalysisRunFailed", "on-analysis-run-failed"),
    ("AnalysisRunError", "on-analysis-run-error"),
    ("AnalysisRunRunning", "on-analysis-run-running"),
    ("RolloutAborted", "on-rollout-aborted"),
    ("RolloutCompleted", "on-rollout-completed"),
    ("RolloutPaused", "on-rollout-paused"),
    ("RolloutUpdated", "on-rollout-updated"),
    ("ScalingReplicaSet", "on-scaling-replica-set"),  # the catalog's trigger name
    ("HTTPError", "on-http-error"),
    ("RolloutAbortedV2", "on-rollout-aborted-v2"),
]


@pytest.mark.parametrize(("reason", "trigger"), REASONS, ids=[r for r, _ in REASONS])
def test_trigger_for_reason(reason: str, trigger: str) -> None:
    assert trigger_for_reason(reason) == trigger


class Stub:
    """Evaluates a few fixed expressions; anything else is a run error."""

    def evaluate(self, expression: str, env: Mapping[str, Any]) -> Any:
        table: dict[str, Any] = {
            "false": False,
            "true": True,
            "phase == 'Running'": env.get("phase") == "Running",
            "revision": env.get("revision"),
            "one": 1,
        }
        if expression not in table:
            raise ValueError(f"unknown expression {expression!r}")
        return table[expression]


def test_condition_key() -> None:
    # sha1("") = da39a3ee..., base64 URL-safe without padding
    assert condition_key(0, "") == "[0].2jmj7l5rSw0yVb_vlWAYkK_YBwk"


RUN_CASES: list[tuple[str, Condition, dict[str, Any], bool, str, bool]] = [
    (
        "TestRun triggered",
        Condition(when="phase == 'Running'", send=("t",)),
        {"phase": "Running"},
        True,
        "",
        False,
    ),
    (
        "TestRun not triggered",
        Condition(when="phase == 'Running'"),
        {"phase": "x"},
        False,
        "",
        False,
    ),
    ("empty when is false", Condition(), {}, False, "", False),
    (
        "oncePer evaluated when triggered",
        Condition(when="true", once_per="revision"),
        {"revision": "abc"},
        True,
        "abc",
        False,
    ),
    ("oncePer printed with %v", Condition(when="true", once_per="one"), {}, True, "1", False),
    (
        "oncePer not evaluated when not triggered",
        Condition(when="false", once_per="revision"),
        {"revision": "abc"},
        False,
        "",
        False,
    ),
    (
        "a non-bool result does not trigger",
        Condition(when="revision"),
        {"revision": "x"},
        False,
        "",
        False,
    ),
    ("a failing when does not trigger", Condition(when="boom"), {}, False, "", True),
]


@pytest.mark.parametrize(
    ("cond", "env", "triggered", "once_per", "failed"),
    [c[1:] for c in RUN_CASES],
    ids=[c[0] for c in RUN_CASES],
)
def test_run_conditions(
    cond: Condition, env: dict[str, Any], triggered: bool, once_per: str, failed: bool
) -> None:
    [result] = run_conditions((cond,), env, Stub())
    assert (result.triggered, result.once_per, bool(result.error)) == (triggered, once_per, failed)
    assert result.key == condition_key(0, cond.when)
    assert result.templates == cond.send
