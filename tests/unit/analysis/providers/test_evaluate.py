"""The phase decision table of Argo's utils/evaluate (evaluate_test.go), with a stub evaluator."""

from __future__ import annotations

import pytest

from rollout_workers.analysis.providers.evaluate import Verdict, calculate_phase
from rollout_workers.api.analysis import AnalysisPhase as P
from tests.unit.analysis.providers.stubs import metric, stub_evaluator

CASES = [
    # name, successCondition, failureCondition, phase
    ("success holds, failure does not", "true", "false", P.SUCCESSFUL),
    ("both hold: failure wins", "true", "true", P.FAILED),
    ("neither holds", "false", "false", P.INCONCLUSIVE),
    ("only failure, not holding", "", "false", P.SUCCESSFUL),
    ("only failure, holding", "", "true", P.FAILED),
    ("only success, not holding", "false", "", P.FAILED),
    ("only success, holding", "true", "", P.SUCCESSFUL),
    ("no conditions", "", "", P.SUCCESSFUL),
    ("failure holds, success does not", "false", "true", P.FAILED),
]


@pytest.mark.parametrize(
    ("success", "failure", "phase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_decision_table(success: str, failure: str, phase: P) -> None:
    m = metric(successCondition=success, failureCondition=failure)
    assert calculate_phase(m, True, evaluator=stub_evaluator) == Verdict(phase)


ERRORS = [
    ("error in success condition", "a == true", "true", "unknown name a == true"),
    ("error in failure condition", "true", "a == true", "unknown name a == true"),
    ("error in failure even when success alone would decide", "false", "bad", "unknown name bad"),
    ("non-boolean condition", "1", "", "expected bool, but got int"),
]


@pytest.mark.parametrize(
    ("success", "failure", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_condition_errors_are_error_phase(success: str, failure: str, message: str) -> None:
    m = metric(successCondition=success, failureCondition=failure)
    assert calculate_phase(m, True, evaluator=stub_evaluator) == Verdict(P.ERROR, message)


def test_the_result_reaches_the_evaluator() -> None:
    seen: list[tuple[str, object]] = []

    def spy(expression: str, result: object) -> bool:
        seen.append((expression, result))
        return True

    calculate_phase(metric(successCondition="s", failureCondition="f"), [1.0, 2.0], evaluator=spy)
    assert seen == [("s", [1.0, 2.0]), ("f", [1.0, 2.0])]


def test_no_conditions_never_needs_an_evaluator() -> None:
    def boom(expression: str, result: object) -> bool:
        raise AssertionError("called")

    assert calculate_phase(metric(), {"x": 1}, evaluator=boom).phase == P.SUCCESSFUL
