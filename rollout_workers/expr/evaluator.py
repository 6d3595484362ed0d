"""The evaluator of the expr-lang condition language: a syntax tree and variables to a value.

A tree walker over plain JSON-like values only (`values.Value`): member access reads dict keys
and list items, never attributes, so `result.__class__` is simply a missing key (nil). Every node
visit and every element an operator or builtin touches costs a step, and every produced string
and collection counts against the allocation budget, so an evaluation is bounded
deterministically rather than by a wall clock. Here live the operators' semantics (Go's integer
arithmetic, expr-lang's equality and ordering, `in`, `matches` on RE2, ranges and slices) and the
builtins that take a predicate; the builtins over evaluated arguments are in `builtins` and
`time`. Separate from the parser: both depend on `nodes`, neither on the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final, NoReturn

from rollout_workers.expr.builtins import FUNCTIONS, PREDICATE_BUILTINS, sum_numbers
from rollout_workers.expr.nodes import (
    Array,
    Binary,
    Call,
    Chain,
    Conditional,
    Const,
    Ident,
    Map,
    Member,
    Node,
    Pointer,
    Predicate,
    Slice,
    Unary,
)
from rollout_workers.expr.regex import RegexError, RegexProgram, compile_regex
from rollout_workers.expr.time import arithmetic as time_arithmetic
from rollout_workers.expr.time import compare as time_compare
from rollout_workers.expr.values import (
    ExpressionError,
    GoDuration,
    GoTime,
    Limits,
    Value,
    go_divide,
    go_pow,
    go_string,
    is_number,
    type_name,
    wrap,
)

__all__ = ["Evaluator", "NilChain"]


class NilChain(Exception):
    """An optional member (`?.`) met nil: the enclosing chain evaluates to nil."""


class Evaluator:
    """One evaluation of a syntax tree over `env`, within the budgets of `limits`; it is the
    `budget.Budget` the builtins charge. `regex_cache` is the parsed expression's, so compiled
    `matches` patterns outlive one evaluation."""

    def __init__(
        self,
        *,
        source: str,
        limits: Limits,
        regex_cache: dict[str, RegexProgram],
        env: dict[str, Value],
        now: GoTime | None = None,
    ) -> None:
        self.source = source
        self.limits = limits
        self.regex_cache = regex_cache
        self.env = env
        self.now = now
        self.steps = self.limits.max_steps
        self.allocation = self.limits.max_allocation
        self.frames: list[tuple[Value, int, Value]] = []

    def fail(self, node: Node, message: str) -> NoReturn:
        raise ExpressionError(message, source=self.source, position=node.pos)

    def eval(self, node: Node) -> Value:
        self.steps -= 1
        if self.steps < 0:
            self.fail(node, f"evaluation exceeded {self.limits.max_steps} steps")
        return _VISIT[type(node)](self, node)

    # --- one method a node class, which `eval` finds in _VISIT ---

    def visit_const(self, node: Const) -> Value:
        return node.value

    def visit_ident(self, node: Ident) -> Value:
        if node.name not in self.env:
            self.fail(node, f"unknown name {node.name}")
        return self.env[node.name]

    def visit_pointer(self, node: Pointer) -> Value:
        if not self.frames:
            self.fail(node, "cannot use pointer accessor outside predicate")
        item, index, acc = self.frames[-1]
        if node.name == "index":
            return index
        return acc if node.name == "acc" else item

    def visit_unary(self, node: Unary) -> Value:
        value = self.eval(node.operand)
        if node.op in ("!", "not"):
            if not isinstance(value, bool):
                self.fail(node, f"invalid operation: {node.op} {type_name(value)}")
            return not value
        if not is_number(value):
            self.fail(node, f"invalid operation: {node.op} {type_name(value)}")
        assert isinstance(value, int | float)
        if node.op == "+":
            return value
        return wrap(-value) if isinstance(value, int) else -value

    def visit_binary(self, node: Binary) -> Value:
        op = node.op
        if op in ("||", "or", "&&", "and"):
            stop_on = op in ("||", "or")
            left = self.eval(node.left)
            if not isinstance(left, bool):
                self.fail(node, f"invalid operation: {type_name(left)} {op} (bool expected)")
            if left is stop_on:
                return left
            right = self.eval(node.right)
            if not isinstance(right, bool):
                self.fail(node, f"invalid operation: {op} {type_name(right)} (bool expected)")
            return right
        if op == "??":
            left = self.eval(node.left)
            return left if left is not None else self.eval(node.right)
        return self.binary(node, op, self.eval(node.left), self.eval(node.right))

    def visit_member(self, node: Member) -> Value:
        obj = self.eval(node.obj)
        if obj is None and node.optional:
            raise NilChain
        return self.fetch(node, obj, self.eval(node.prop))

    def visit_chain(self, node: Chain) -> Value:
        try:
            return self.eval(node.inner)
        except NilChain:
            return None

    def visit_slice(self, node: Slice) -> Value:
        obj = self.eval(node.obj)
        start = None if node.start is None else self.eval(node.start)
        end = None if node.end is None else self.eval(node.end)
        if not isinstance(obj, list | str):
            self.fail(node, f"cannot slice {type_name(obj)}")
        length = len(obj)
        low = 0 if start is None else self.to_index(node, start)
        high = length if end is None else self.to_index(node, end)
        low = max(0, low + length if low < 0 else low)
        high = min(length, max(0, high + length if high < 0 else high))
        low = min(low, high)
        self.allocate(node, high - low)
        return obj[low:high]

    def visit_conditional(self, node: Conditional) -> Value:
        cond = self.eval(node.cond)
        if not isinstance(cond, bool):
            self.fail(node, f"non-bool expression (type {type_name(cond)}) used as condition")
        return self.eval(node.then if cond else node.other)

    def visit_array(self, node: Array) -> Value:
        self.allocate(node, len(node.items))
        return [self.eval(item) for item in node.items]

    def visit_map(self, node: Map) -> Value:
        self.allocate(node, len(node.pairs))
        out: dict[str, Value] = {}
        for key_node, value_node in node.pairs:
            key = self.eval(key_node)
            if not isinstance(key, str):
                self.fail(key_node, f"map keys must be strings, got {type_name(key)}")
            out[key] = self.eval(value_node)
        return out

    def visit_predicate(self, node: Predicate) -> Value:
        self.fail(node, "a predicate can only be an argument of a builtin")

    def visit_call(self, node: Call) -> Value:
        if node.name in PREDICATE_BUILTINS:
            return self.predicate_builtin(node)
        _, _, function = FUNCTIONS[node.name]
        return function(self, node, [self.eval(arg) for arg in node.args])

    # --- budgets, indexes and operators ---

    def charge(self, node: Node, steps: int) -> None:
        self.steps -= steps
        if self.steps < 0:
            self.fail(node, f"evaluation exceeded {self.limits.max_steps} steps")

    def allocate(self, node: Node, size: int, *, string: bool = False) -> None:
        cap = self.limits.max_string_length if string else self.limits.max_collection_length
        if size > cap:
            what = "string longer than" if string else "collection larger than"
            self.fail(node, f"{what} {cap}")
        self.allocation -= size
        if self.allocation < 0:
            self.fail(node, f"evaluation allocated more than {self.limits.max_allocation} items")

    def to_index(self, node: Node, value: Value) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(node, f"invalid operation: int({type_name(value)})")
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(node, f"invalid index {value}")
            return int(value)
        return value

    def fetch(self, node: Node, obj: Value, key: Value) -> Value:
        if isinstance(obj, dict):
            if not isinstance(key, str):
                self.fail(node, f"cannot use {type_name(key)} as key of map")
            return obj.get(key)
        if isinstance(obj, list | str):
            if isinstance(key, str):
                self.fail(node, f"cannot fetch {key} from {type_name(obj)}")
            index = self.to_index(node, key)
            length = len(obj)
            if index < 0:
                index += length
            if not 0 <= index < length:
                self.fail(node, f"index out of range: {index} (array length is {length})")
            return obj[index]
        self.fail(node, f"cannot fetch {go_string(key)} from {type_name(obj)}")

    # Equality is structural and numeric-aware (1 == 1.0), like expr-lang's runtime.Equal.
    def equal(self, node: Node, a: Value, b: Value) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if isinstance(a, GoTime | GoDuration) or isinstance(b, GoTime | GoDuration):
            return time_compare("==", a, b) is True
        if isinstance(a, bool) or isinstance(b, bool):
            return isinstance(a, bool) and isinstance(b, bool) and a == b
        if isinstance(a, int | float) and isinstance(b, int | float):
            if isinstance(a, int) and isinstance(b, int):
                return a == b
            return float(a) == float(b)
        if isinstance(a, str) and isinstance(b, str):
            self.charge(node, min(len(a), len(b)) // 256)
            return a == b
        if isinstance(a, list) and isinstance(b, list):
            self.charge(node, len(a))
            return len(a) == len(b) and all(
                self.equal(node, x, y) for x, y in zip(a, b, strict=True)
            )
        if isinstance(a, dict) and isinstance(b, dict):
            self.charge(node, len(a))
            return a.keys() == b.keys() and all(self.equal(node, a[k], b[k]) for k in a)
        return False

    def less(self, node: Node, op: str, a: Value, b: Value) -> bool:
        ordered = time_compare(op, a, b)
        if ordered is not None:
            return ordered
        if is_number(a) and is_number(b):
            assert isinstance(a, int | float) and isinstance(b, int | float)
            if not (isinstance(a, int) and isinstance(b, int)):
                a, b = float(a), float(b)
            if op == "<":
                return a < b
            if op == ">":
                return a > b
            return a <= b if op == "<=" else a >= b
        if isinstance(a, str) and isinstance(b, str):
            self.charge(node, min(len(a), len(b)) // 256)
            if op == "<":
                return a < b
            if op == ">":
                return a > b
            return a <= b if op == "<=" else a >= b
        self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")

    def binary(self, node: Node, op: str, a: Value, b: Value) -> Value:
        if op == "==":
            return self.equal(node, a, b)
        if op == "!=":
            return not self.equal(node, a, b)
        if op in ("<", ">", "<=", ">="):
            return self.less(node, op, a, b)
        if op == "in":
            return self.contains_item(node, a, b)
        if op in ("contains", "startsWith", "endsWith", "matches"):
            if not isinstance(a, str) or not isinstance(b, str):
                self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
            self.charge(node, 1 + len(a) // 64)
            if op == "contains":
                return b in a
            if op == "startsWith":
                return a.startswith(b)
            if op == "endsWith":
                return a.endswith(b)
            return self.matches(node, a, b)
        if op == "..":
            if (
                not (isinstance(a, int) and isinstance(b, int))
                or isinstance(a, bool)
                or isinstance(b, bool)
            ):
                self.fail(node, f"invalid operation: {type_name(a)} .. {type_name(b)}")
            size = max(0, b - a + 1)
            self.allocate(node, size)
            self.charge(node, size)
            return list(range(a, b + 1))
        if op == "+" and isinstance(a, str) and isinstance(b, str):
            self.allocate(node, len(a) + len(b), string=True)
            return a + b
        if isinstance(a, GoTime | GoDuration) or isinstance(b, GoTime | GoDuration):
            outcome = time_arithmetic(op, a, b)
            if outcome is None:
                self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
            return outcome
        if not (is_number(a) and is_number(b)):
            self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
        assert isinstance(a, int | float) and isinstance(b, int | float)
        return self.arithmetic(node, op, a, b)

    def arithmetic(self, node: Node, op: str, a: int | float, b: int | float) -> Value:
        both_int = isinstance(a, int) and isinstance(b, int)
        if op in ("+", "-", "*"):
            if both_int:
                assert isinstance(a, int) and isinstance(b, int)
                result = a + b if op == "+" else a - b if op == "-" else a * b
                return wrap(result)
            fa, fb = float(a), float(b)
            return fa + fb if op == "+" else fa - fb if op == "-" else fa * fb
        if op == "/":
            return go_divide(float(a), float(b))
        if op == "%":
            if not both_int:
                self.fail(node, f"invalid operation: {type_name(a)} % {type_name(b)}")
            assert isinstance(a, int) and isinstance(b, int)
            if b == 0:
                self.fail(node, "integer divide by zero")
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return wrap(a - b * quotient)
        return go_pow(float(a), float(b))  # "**" and "^"

    def contains_item(self, node: Node, item: Value, container: Value) -> bool:
        if container is None:
            return False
        if isinstance(container, list):
            for element in container:
                self.charge(node, 1)
                if self.equal(node, element, item):
                    return True
            return False
        if isinstance(container, dict):
            if item is None:
                return False
            if not isinstance(item, str):
                self.fail(node, f"cannot use {type_name(item)} as key of map")
            return item in container
        self.fail(node, f'operator "in" not defined on {type_name(container)}')

    def matches(self, node: Node, subject: str, pattern: str) -> bool:
        self.charge(node, len(pattern))
        cache = self.regex_cache
        program = cache.get(pattern)
        if program is None:
            try:
                program = compile_regex(
                    pattern,
                    max_length=self.limits.max_regex_length,
                    max_states=self.limits.max_regex_states,
                )
            except RegexError as exc:
                self.fail(node, f"invalid regular expression: {exc}")
            if len(cache) < 32:
                cache[pattern] = program
        return program.search(subject, lambda steps: self.charge(node, steps))

    # --- builtins taking a predicate ---

    def iterable(self, node: Node, value: Value) -> list[Value]:
        if not isinstance(value, list):
            self.fail(node, f"cannot iterate over {type_name(value)}")
        return value

    def apply(self, predicate: Node, item: Value, index: int, acc: Value = None) -> Value:
        self.charge(predicate, 1)
        self.frames.append((item, index, acc))
        try:
            return self.eval(predicate.body if isinstance(predicate, Predicate) else predicate)
        finally:
            self.frames.pop()

    def test(self, node: Call, predicate: Node, item: Value, index: int) -> bool:
        outcome = self.apply(predicate, item, index)
        if not isinstance(outcome, bool):
            self.fail(node, f"predicate of {node.name} returned {type_name(outcome)}, not bool")
        return outcome

    def predicate_builtin(self, node: Call) -> Value:
        name = node.name
        items = self.iterable(node, self.eval(node.args[0]))
        predicate = node.args[1] if len(node.args) > 1 else None
        if predicate is None:  # count(xs) and sum(xs)
            if name == "sum":
                return sum_numbers(self, node, items)
            self.charge(node, len(items))
            if not all(isinstance(item, bool) for item in items):
                self.fail(node, "count without a predicate needs an array of bools")
            return sum(1 for item in items if item is True)
        if name in ("all", "none"):
            want = name == "all"
            return all(self.test(node, predicate, x, i) is want for i, x in enumerate(items))
        if name == "any":
            return any(self.test(node, predicate, x, i) for i, x in enumerate(items))
        if name in ("one", "count"):
            hits = sum(1 for i, x in enumerate(items) if self.test(node, predicate, x, i))
            return hits == 1 if name == "one" else hits
        if name == "filter":
            kept = [x for i, x in enumerate(items) if self.test(node, predicate, x, i)]
            self.allocate(node, len(kept))
            return kept
        if name in ("map", "sum"):
            self.allocate(node, len(items))
            mapped = [self.apply(predicate, x, i) for i, x in enumerate(items)]
            return sum_numbers(self, node, mapped) if name == "sum" else mapped
        if name in ("find", "findIndex"):
            for i, x in enumerate(items):
                if self.test(node, predicate, x, i):
                    return x if name == "find" else i
            return None if name == "find" else -1
        if name in ("findLast", "findLastIndex"):
            for i in range(len(items) - 1, -1, -1):
                if self.test(node, predicate, items[i], i):
                    return items[i] if name == "findLast" else i
            return None if name == "findLast" else -1
        # reduce(xs, predicate[, initial])
        if len(node.args) > 2:
            acc, start = self.eval(node.args[2]), 0
        elif items:
            acc, start = items[0], 1
        else:
            self.fail(node, "reduce of empty array with no initial value")
        for i in range(start, len(items)):
            acc = self.apply(predicate, items[i], i, acc)
        return acc


#: The method that evaluates each node class, by exact type (node classes are not subclassed).
_VISIT: Final[dict[type[Node], Callable[[Evaluator, Any], Value]]] = {
    Const: Evaluator.visit_const,
    Ident: Evaluator.visit_ident,
    Pointer: Evaluator.visit_pointer,
    Unary: Evaluator.visit_unary,
    Binary: Evaluator.visit_binary,
    Member: Evaluator.visit_member,
    Chain: Evaluator.visit_chain,
    Slice: Evaluator.visit_slice,
    Conditional: Evaluator.visit_conditional,
    Array: Evaluator.visit_array,
    Map: Evaluator.visit_map,
    Predicate: Evaluator.visit_predicate,
    Call: Evaluator.visit_call,
}
