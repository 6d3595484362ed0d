"""The phase of a measurement from its value and the metric's conditions.

Follows Argo Rollouts' `utils/evaluate.EvaluateResult`:

| successCondition | failureCondition | phase                                                 |
|------------------|------------------|-------------------------------------------------------|
| empty            | empty            | Successful (the value is only recorded)               |
| set              | empty            | Successful if it holds, else Failed                   |
| empty            | set              | Failed if it holds, else Successful                   |
| set              | set              | Failed if failure holds; else Successful if success   |
|                  |                  | holds; else Inconclusive                              |

A condition that cannot be evaluated (syntax error, unknown name, non-boolean result, a failed
conversion) makes the measurement an Error with the evaluator's message. Both conditions are
evaluated before deciding, so an error in either is reported even when the other one decides.

The evaluator is a parameter so that this module can be tested without the real one,
`rollout_workers.expr.expression.evaluate_condition` (sandboxed: never `eval`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rollout_workers.api.analysis import AnalysisPhase, Metric
from rollout_workers.expr.expression import evaluate_condition

#: `(expression, result) -> bool`, raising on an expression it cannot evaluate.
Evaluator = Callable[[str, object], bool]


@dataclass(frozen=True)
class Verdict:
    phase: AnalysisPhase
    error: str | None = None
    """The evaluator's message when `phase` is Error."""


def calculate_phase(
    metric: Metric, result: object, *, evaluator: Evaluator | None = None
) -> Verdict:
    """Judge `result` (the measured value, decoded) by the metric's conditions."""
    success_expr = metric.success_condition or ""
    failure_expr = metric.failure_condition or ""
    if not success_expr and not failure_expr:
        return Verdict(AnalysisPhase.SUCCESSFUL)
    evaluate = evaluator or evaluate_condition
    success = failure = False
    try:
        if success_expr:
            success = _as_bool(evaluate(success_expr, result))
        if failure_expr:
            failure = _as_bool(evaluate(failure_expr, result))
    except Exception as err:  # any evaluator failure is the measurement's Error, not ours
        # The bare message, without the source line and caret, as Argo records it.
        message = getattr(err, "message", None) or str(err) or type(err).__name__
        return Verdict(AnalysisPhase.ERROR, str(message))
    if not failure_expr:
        failure = not success
    elif not success_expr:
        success = not failure
    if failure:
        return Verdict(AnalysisPhase.FAILED)
    if not success:
        return Verdict(AnalysisPhase.INCONCLUSIVE)
    return Verdict(AnalysisPhase.SUCCESSFUL)


def _as_bool(value: object) -> bool:
    # Argo: "expected bool, but got int" when a condition is not boolean.
    if not isinstance(value, bool):
        raise TypeError(f"expected bool, but got {type(value).__name__}")
    return value
