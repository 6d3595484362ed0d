"""The public face of the condition language: parse a condition once, evaluate it many times.

`parse` runs the lexer and the parser and returns an `Expression`, which evaluates over a set of
variables (`Expression.evaluate`): analysis parses a metric's conditions once per AnalysisRun and
evaluates them per measurement. The rest are Argo's entry points built on the two:

- `evaluate_condition` is Argo's `EvalCondition` (utils/evaluate/evaluate.go): it binds
  `result` (the helpers `asInt`, `asFloat`, `isNaN`, `isInf`, `isNil` and `default` are
  builtins), and treats a non-bool outcome as an error ("expected bool, but got ...");
- `evaluate_time` is Argo's `EvalTime`, which evaluates a prometheus range query's start and end
  to a time: it binds `now()` to the measurement's time; in a condition, `now()` is an error (no
  wall clock is read);
- `check` is admission's: syntax, limits, and only known variables.

Separate from the parser and the evaluator because it is the one module that uses both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Final

from rollout_workers.expr.evaluator import Evaluator, NilChain
from rollout_workers.expr.lexer import Lexer
from rollout_workers.expr.nodes import Node
from rollout_workers.expr.parser import Parser
from rollout_workers.expr.regex import RegexProgram
from rollout_workers.expr.time import go_time
from rollout_workers.expr.values import (
    DEFAULT_LIMITS,
    ExpressionError,
    GoTime,
    Limits,
    Value,
    import_value,
    type_name,
)

__all__ = ["Expression", "check", "evaluate_condition", "evaluate_time", "parse"]


class Expression:
    """A parsed condition: parse once per AnalysisRun, evaluate per measurement."""

    __slots__ = ("_root", "identifiers", "limits", "regex_cache", "source")

    def __init__(
        self, source: str, root: Node, identifiers: list[tuple[str, int]], limits: Limits
    ) -> None:
        self.source = source
        self._root = root
        self.identifiers = tuple(identifiers)
        self.limits = limits
        self.regex_cache: dict[str, RegexProgram] = {}

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def evaluate(self, env: Mapping[str, object], *, now: GoTime | None = None) -> Value:
        """Evaluate over `env` (variable name -> JSON-like value), `now()` being `now`; raises
        ExpressionError."""
        values: dict[str, Value] = {}
        for name, value in env.items():
            if not isinstance(name, str):
                raise ExpressionError("variable names must be strings")
            values[name] = import_value(value, self.limits)
        evaluator = Evaluator(
            source=self.source,
            limits=self.limits,
            regex_cache=self.regex_cache,
            env=values,
            now=now,
        )
        try:
            return evaluator.eval(self._root)
        except NilChain:
            return None
        except RecursionError:  # backstop only: the depth limits are meant to trigger first
            raise ExpressionError("evaluation nested too deeply") from None

    def evaluate_condition(self, result: object) -> bool:
        """Argo's EvalCondition: bind `result`, demand a bool outcome."""
        outcome = self.evaluate({"result": result})
        if not isinstance(outcome, bool):
            raise ExpressionError(f"expected bool, but got {type_name(outcome)}")
        return outcome


def parse(expression: str, *, limits: Limits = DEFAULT_LIMITS) -> Expression:
    """Parse `expression`; raises ExpressionError naming the offending position."""
    if not isinstance(expression, str):
        raise ExpressionError("expression must be a string")
    if len(expression) > limits.max_expression_length:
        raise ExpressionError(f"expression longer than {limits.max_expression_length} characters")
    tokens = Lexer(expression).run()
    parser = Parser(expression, tokens, limits)
    try:
        root = parser.parse()
    except RecursionError:  # backstop only: nesting is limited explicitly
        raise ExpressionError("expression nested too deeply") from None
    return Expression(expression, root, parser.identifiers, limits)


def check(
    expression: str,
    *,
    variables: frozenset[str] = frozenset({"result"}),
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Validate a condition at admission time: syntax, limits, and only known variables."""
    parsed = parse(expression, limits=limits)
    for name, position in parsed.identifiers:
        if name not in variables:
            raise ExpressionError(f"unknown name {name}", source=expression, position=position)


def evaluate_condition(expression: str, result: object, *, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Parse and evaluate one condition over `result`, as Argo's EvalCondition does."""
    return parse(expression, limits=limits).evaluate_condition(result)


#: Go's `%T` of the values an expression can produce, for EvalTime's error message.
_GO_TYPES: Final = {
    "nil": "<nil>",
    "float": "float64",
    "array": "[]interface {}",
    "map": "map[string]interface {}",
}


def evaluate_time(expression: str, *, now: dt.datetime, limits: Limits = DEFAULT_LIMITS) -> GoTime:
    """Argo's `evaluate.EvalTime`: `expression` must evaluate to a time (`now()` is `now`);
    raises ExpressionError ("expected time.Time, but got int" for any other outcome). As in
    Argo, only the builtins are in scope: `result` and other variables are unknown names."""
    outcome = parse(expression, limits=limits).evaluate({}, now=go_time(now))
    if not isinstance(outcome, GoTime):
        name = type_name(outcome)
        raise ExpressionError(f"expected time.Time, but got {_GO_TYPES.get(name, name)}")
    return outcome
