"""The builtin functions of the condition language, and the signatures of those taking a
predicate.

`FUNCTIONS` holds the builtins over already-evaluated arguments: expr-lang's own (`len`, `abs`,
`int`, `float`, `string`, `max`, `min`, `mean`, `keys`, ..., and `now`, `duration`, `date` from
`time`) plus the helpers Argo Rollouts binds for metric conditions (`asInt`, `asFloat`, `isNaN`,
`isInf`, `isNil`, `default`). Each one charges the evaluation's step and allocation budgets
(`budget.Budget`) for the work it does, so a builtin over a large value is bounded like
everything else. `PREDICATE_BUILTINS` names the builtins whose second argument is a predicate
(`all`, `map`, `filter`, ...): the parser reads their argument kinds from it, and the evaluator
runs them, since a predicate is evaluated in the evaluator's frames.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final, TypeAlias

from rollout_workers.expr.budget import Budget
from rollout_workers.expr.nodes import Call
from rollout_workers.expr.time import TIME_FUNCTIONS
from rollout_workers.expr.values import (
    INT64_MAX,
    INT64_MIN,
    Value,
    count_items,
    format_float,
    go_string,
    is_number,
    type_name,
    wrap,
)

__all__ = ["EXPR", "FUNCTIONS", "PREDICATE", "PREDICATE_BUILTINS", "sum_numbers"]

_Builtin: TypeAlias = Callable[[Budget, Call, list[Value]], Value]
_DECIMAL_INT = re.compile(r"[+-]?[0-9]{1,19}\Z")
_DECIMAL_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\Z",
    re.IGNORECASE,
)


def _number_arg(ev: Budget, node: Call, value: Value) -> int | float:
    if not is_number(value):
        ev.fail(node, f"invalid argument for {node.name} (type {type_name(value)})")
    assert isinstance(value, int | float)
    return value


def _parse_int(ev: Budget, node: Call, text: str) -> int:
    if _DECIMAL_INT.match(text) is None or not INT64_MIN <= int(text) <= INT64_MAX:
        ev.fail(node, f'{node.name}: invalid syntax for an integer: "{text[:64]}"')
    return int(text)


def _parse_float(ev: Budget, node: Call, text: str) -> float:
    if len(text) > 400 or _DECIMAL_FLOAT.match(text) is None:
        ev.fail(node, f'{node.name}: invalid syntax for a float: "{text[:64]}"')
    return float(text)


def _float_to_int(ev: Budget, node: Call, value: float) -> int:
    if not math.isfinite(value):
        ev.fail(node, f"{node.name}: cannot convert {format_float(value)} to int")
    return wrap(int(value))


def _len(ev: Budget, node: Call, args: list[Value]) -> Value:
    value = args[0]
    if not isinstance(value, str | list | dict):
        ev.fail(node, f"invalid argument for len (type {type_name(value)})")
    return len(value)


def _abs(ev: Budget, node: Call, args: list[Value]) -> Value:
    value = _number_arg(ev, node, args[0])
    return wrap(abs(value)) if isinstance(value, int) else abs(value)


def _int(ev: Budget, node: Call, args: list[Value]) -> Value:
    """int() and Argo's asInt(): truncate floats, parse base-10 strings."""
    value = args[0]
    if isinstance(value, str):
        return _parse_int(ev, node, value)
    number = _number_arg(ev, node, value)
    return number if isinstance(number, int) else _float_to_int(ev, node, number)


def _float(ev: Budget, node: Call, args: list[Value]) -> Value:
    """float() and Argo's asFloat()."""
    value = args[0]
    if isinstance(value, str):
        return _parse_float(ev, node, value)
    return float(_number_arg(ev, node, value))


def _string(ev: Budget, node: Call, args: list[Value]) -> Value:
    ev.charge(node, count_items(args[0]))
    text = go_string(args[0])
    ev.allocate(node, len(text), string=True)
    return text


def _extreme(ev: Budget, node: Call, args: list[Value]) -> Value:
    numbers: list[int | float] = []
    pending = list(reversed(args))
    while pending:
        value = pending.pop()
        ev.charge(node, 1)
        if isinstance(value, list):
            pending.extend(reversed(value))
        else:
            numbers.append(_number_arg(ev, node, value))
    if not numbers:
        ev.fail(node, f"not enough arguments to call {node.name}")
    best = numbers[0]
    for number in numbers[1:]:
        if (float(number) > float(best)) if node.name == "max" else (float(number) < float(best)):
            best = number
    return best


def sum_numbers(ev: Budget, node: Call, items: list[Value]) -> Value:
    ev.charge(node, len(items))
    numbers = [_number_arg(ev, node, item) for item in items]
    if all(isinstance(number, int) for number in numbers):
        return wrap(sum(int(number) for number in numbers))
    total = 0.0  # left to right like Go, so inf/-inf give NaN instead of raising
    for number in numbers:
        total += float(number)
    return total


def _mean(ev: Budget, node: Call, args: list[Value]) -> Value:
    items = ev.iterable(node, args[0])
    if not items:
        return 0.0
    total = sum_numbers(ev, node, items)
    assert isinstance(total, int | float)
    return float(total) / len(items)


def _float_check(check: Callable[[float], bool]) -> _Builtin:
    def function(ev: Budget, node: Call, args: list[Value]) -> Value:
        return check(float(_number_arg(ev, node, args[0])))

    return function


def _default(ev: Budget, node: Call, args: list[Value]) -> Value:
    return args[1] if args[0] is None else args[0]


def _is_nil(ev: Budget, node: Call, args: list[Value]) -> Value:
    return args[0] is None


def _map_part(part: str) -> _Builtin:
    def function(ev: Budget, node: Call, args: list[Value]) -> Value:
        value = args[0]
        if not isinstance(value, dict):
            ev.fail(node, f"invalid argument for {node.name} (type {type_name(value)})")
        ev.charge(node, len(value))
        ev.allocate(node, len(value))
        return list(value.keys()) if part == "keys" else list(value.values())

    return function


def _end(last: bool) -> _Builtin:
    def function(ev: Budget, node: Call, args: list[Value]) -> Value:
        items = ev.iterable(node, args[0])
        if not items:
            return None
        return items[-1] if last else items[0]

    return function


def _string_method(method: Callable[[str], str]) -> _Builtin:
    def function(ev: Budget, node: Call, args: list[Value]) -> Value:
        value = args[0]
        if not isinstance(value, str):
            ev.fail(node, f"invalid argument for {node.name} (type {type_name(value)})")
        ev.charge(node, 1 + len(value) // 64)
        out = method(value)
        ev.allocate(node, len(out), string=True)
        return out

    return function


def _rounding(mode: str) -> _Builtin:
    def function(ev: Budget, node: Call, args: list[Value]) -> Value:
        value = float(_number_arg(ev, node, args[0]))
        if not math.isfinite(value):
            return value
        if mode == "floor":
            return float(math.floor(value))
        if mode == "ceil":
            return float(math.ceil(value))
        truncated = float(math.trunc(value))  # Go's math.Round: half away from zero
        if abs(value - truncated) >= 0.5:
            truncated += math.copysign(1.0, value)
        return truncated

    return function


def _type(ev: Budget, node: Call, args: list[Value]) -> Value:
    return type_name(args[0])


def _get(ev: Budget, node: Call, args: list[Value]) -> Value:
    container, key = args
    if isinstance(container, dict):
        return container.get(key) if isinstance(key, str) else None
    if isinstance(container, list) and is_number(key):
        index = ev.to_index(node, key)
        index = index + len(container) if index < 0 else index
        return container[index] if 0 <= index < len(container) else None
    return None


# name -> (minimum arguments, maximum arguments or None, implementation)
FUNCTIONS: Final[dict[str, tuple[int, int | None, _Builtin]]] = {
    "len": (1, 1, _len),
    "abs": (1, 1, _abs),
    "int": (1, 1, _int),
    "float": (1, 1, _float),
    "string": (1, 1, _string),
    "max": (1, None, _extreme),
    "min": (1, None, _extreme),
    "mean": (1, 1, _mean),
    "isNaN": (1, 1, _float_check(math.isnan)),
    "isInf": (1, 1, _float_check(math.isinf)),
    "isNil": (1, 1, _is_nil),
    "asInt": (1, 1, _int),
    "asFloat": (1, 1, _float),
    "default": (2, 2, _default),
    "keys": (1, 1, _map_part("keys")),
    "values": (1, 1, _map_part("values")),
    "first": (1, 1, _end(last=False)),
    "last": (1, 1, _end(last=True)),
    "lower": (1, 1, _string_method(str.lower)),
    "upper": (1, 1, _string_method(str.upper)),
    "trim": (1, 1, _string_method(lambda text: text.strip(" \t\n\r\v\f"))),
    "type": (1, 1, _type),
    "round": (1, 1, _rounding("round")),
    "floor": (1, 1, _rounding("floor")),
    "ceil": (1, 1, _rounding("ceil")),
    "get": (2, 2, _get),
    **TIME_FUNCTIONS,
}

# Builtins whose second argument is a predicate: (argument kinds, optional-from index).
EXPR, PREDICATE = "expr", "predicate"
PREDICATE_BUILTINS: Final[dict[str, tuple[tuple[str, ...], int]]] = {
    "all": ((EXPR, PREDICATE), 2),
    "none": ((EXPR, PREDICATE), 2),
    "any": ((EXPR, PREDICATE), 2),
    "one": ((EXPR, PREDICATE), 2),
    "filter": ((EXPR, PREDICATE), 2),
    "map": ((EXPR, PREDICATE), 2),
    "count": ((EXPR, PREDICATE), 1),
    "sum": ((EXPR, PREDICATE), 1),
    "find": ((EXPR, PREDICATE), 2),
    "findIndex": ((EXPR, PREDICATE), 2),
    "findLast": ((EXPR, PREDICATE), 2),
    "findLastIndex": ((EXPR, PREDICATE), 2),
    "reduce": ((EXPR, PREDICATE, EXPR), 2),
}
