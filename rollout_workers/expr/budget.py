"""What a builtin function may ask of the evaluation that calls it: the `Budget` protocol.

Every builtin charges the steps and allocations it causes to the evaluation's budget, so a call
over a large value is bounded like any other node, and fails at its call's position. Builtins
(`builtins`, `time`) are typed against this protocol rather than the evaluator's class, so they
need not import the evaluator that imports them; the evaluator (`evaluator.Evaluator`) satisfies
it structurally.
"""

from __future__ import annotations

from typing import NoReturn, Protocol

from rollout_workers.expr.nodes import Node
from rollout_workers.expr.values import GoTime, Value

__all__ = ["Budget"]


class Budget(Protocol):
    @property
    def now(self) -> GoTime | None:
        """The time `now()` returns; None in a metric condition, where `now()` is an error."""

    def fail(self, node: Node, message: str) -> NoReturn:
        """Raise ExpressionError at `node`'s position."""

    def charge(self, node: Node, steps: int) -> None:
        """Spend `steps` evaluation steps; fails once the step budget is exhausted."""

    def allocate(self, node: Node, size: int, *, string: bool = False) -> None:
        """Account for a new string or collection of `size`; fails past the size limits."""

    def iterable(self, node: Node, value: Value) -> list[Value]:
        """`value` as an array; fails when it is not one."""

    def to_index(self, node: Node, value: Value) -> int:
        """`value` as an index (floats truncate); fails for non-numbers and non-finite floats."""
