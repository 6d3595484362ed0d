"""Triggers: which trigger an event fires, and running a trigger's conditions.

Argo Rollouts sends notifications for the events it records: ``translateReasonToTrigger``
(utils/record/record.go) turns the event's reason into a trigger name, ``RolloutStepCompleted``
into ``on-rollout-step-completed``. notifications-engine's ``triggers.Service.Run``
(``pkg/triggers/service.go``) then evaluates each of the trigger's conditions: ``when`` (an
empty one is ``false``) and, when it holds, ``oncePer``, printed with Go's ``%v``; the condition's
key, ``[<index>].<base64url(sha1(when))>``, is what the notified-state remembers.

Conditions are expr-lang expressions, evaluated by the sandboxed evaluator analysis uses
(:mod:`rollout_workers.expr`): :class:`ExprEvaluator`. ``run_conditions`` takes any
:class:`ExpressionEvaluator`, so tests can count calls.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rollout_workers.expr.expression import parse as parse_expression
from rollout_workers.notifications.config import Condition
from rollout_workers.notifications.gotemplate.gofmt import sprint_value

_FIRST_CAP = re.compile(r"(.)([A-Z][a-z]+)")
_ALL_CAP = re.compile(r"([a-z0-9])([A-Z])")


def trigger_for_reason(reason: str) -> str:
    """Argo's ``translateReasonToTrigger``: ``AnalysisRunFailed`` -> ``on-analysis-run-failed``,
    ``ScalingReplicaSet`` -> ``on-scaling-replica-set``, ``HTTPError`` -> ``on-http-error``."""
    trigger = _FIRST_CAP.sub(r"\1-\2", reason)
    trigger = _ALL_CAP.sub(r"\1-\2", trigger)
    return "on-" + trigger.lower()


class ExpressionEvaluator(Protocol):
    """Evaluates an expr-lang expression against the template variables (``rollout``,
    ``time``...); raises on a compile or run error."""

    def evaluate(self, expression: str, env: Mapping[str, Any]) -> Any: ...


class ExprEvaluator:
    """Trigger conditions on the sandboxed expr-lang evaluator analysis uses. The ``time``
    variable holds Go functions for templates; expr has no method calls, so it is left out."""

    def evaluate(self, expression: str, env: Mapping[str, Any]) -> object:
        return parse_expression(expression).evaluate({k: v for k, v in env.items() if k != "time"})


@dataclass(frozen=True)
class ConditionResult:
    """One condition's outcome (the engine's ``ConditionResult``)."""

    key: str
    triggered: bool
    templates: tuple[str, ...]
    once_per: str = ""
    error: str = ""  # the engine logs a failed when/oncePer; it is kept here for the caller


def condition_key(index: int, when: str) -> str:
    """``[<index>].<sha1(when), base64 URL-safe, unpadded>``, the engine's condition key."""
    digest = hashlib.sha1(when.encode(), usedforsecurity=False).digest()
    return f"[{index}].{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"


def run_conditions(
    conditions: tuple[Condition, ...], env: Mapping[str, Any], evaluator: ExpressionEvaluator
) -> list[ConditionResult]:
    """Evaluate a trigger's conditions as the engine's ``Run`` does."""
    results: list[ConditionResult] = []
    for i, cond in enumerate(conditions):
        triggered = False
        once_per = ""
        error = ""
        try:
            value = evaluator.evaluate(cond.when or "false", env)
            triggered = value is True
        except Exception as e:  # the engine logs it and the condition does not fire
            error = f"failed to execute when condition: {e}"
        if triggered and cond.once_per:
            try:
                once_per = sprint_value(evaluator.evaluate(cond.once_per, env))
            except Exception as e:
                error = f"failed to execute oncePer condition: {e}"
        results.append(
            ConditionResult(
                key=condition_key(i, cond.when),
                triggered=triggered,
                templates=cond.send,
                once_per=once_per,
                error=error,
            )
        )
    return results
