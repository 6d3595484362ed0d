"""Values, limits and errors shared by the expr-lang condition evaluator (see the package).

The evaluator only ever handles the JSON-like `Value`s defined here; `import_value` is the one
door through which outside data (a provider's measurement) enters, and it copies that data into
exact built-in types so no Python object, subclass or overridden method is reachable later. The
`go_*` helpers reproduce Go's arithmetic and `%v` formatting, since expr-lang runs on Go.

Two more kinds of value exist only as the results of builtins, never from outside: `GoTime` and
`GoDuration`, expr-lang's `time.Time` and `time.Duration` (`now()`, `date()`, `duration()`), which
a prometheus range query's `start` and `end` are written with (see `time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, TypeAlias

__all__ = [
    "DEFAULT_LIMITS",
    "INT64_MAX",
    "INT64_MIN",
    "ExpressionError",
    "GoDuration",
    "GoTime",
    "Limits",
    "Value",
    "count_items",
    "format_float",
    "go_divide",
    "go_pow",
    "go_string",
    "import_value",
    "is_number",
    "type_name",
    "wrap",
]

Value: TypeAlias = (
    "bool | int | float | str | GoTime | GoDuration | list[Value] | dict[str, Value] | None"
)

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
_INT64_MASK: Final = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class GoTime:
    """A Go `time.Time`: an instant in nanoseconds since the Unix epoch, shown at a fixed UTC
    offset named `zone`. Two times are the same instant whatever their zones (Go's `Equal`)."""

    unix_nanos: int
    offset: int = 0
    """Seconds east of UTC."""
    zone: str = "UTC"

    def __str__(self) -> str:
        """Go's `Time.String()`: `2023-08-13 23:00:00 +0000 UTC`."""
        seconds, nanos = divmod(self.unix_nanos + self.offset * 1_000_000_000, 1_000_000_000)
        days, rest = divmod(seconds, 86400)
        ordinal = 719163 + days  # 1970-01-01 is day 719163 of the proleptic calendar
        if not 1 <= ordinal <= 3652059:
            return f"<time {self.unix_nanos}ns>"
        day = _date_from_ordinal(ordinal)
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        sign = "-" if self.offset < 0 else "+"
        hours, minutes = divmod(abs(self.offset) // 60, 60)
        clock = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}{fraction}"
        return f"{day} {clock} {sign}{hours:02d}{minutes:02d} {self.zone}"


@dataclass(frozen=True, slots=True)
class GoDuration:
    """A Go `time.Duration`: signed nanoseconds, at most an int64."""

    nanos: int

    def __str__(self) -> str:
        """Go's `Duration.String()`: `1h0m0s`, `1.5s`, `500ms`, `0s`."""
        nanos = abs(self.nanos)
        sign = "-" if self.nanos < 0 else ""
        if nanos == 0:
            return "0s"
        if nanos < 1_000_000_000:
            for unit, size in (("ms", 1_000_000), ("\u00b5s", 1_000), ("ns", 1)):
                if nanos >= size:
                    return sign + _decimal(nanos, size) + unit
        seconds = _decimal(nanos % 60_000_000_000, 1_000_000_000) + "s"
        minutes_total = nanos // 60_000_000_000
        if minutes_total == 0:
            return sign + seconds
        hours, minutes = divmod(minutes_total, 60)
        return sign + (f"{hours}h" if hours else "") + f"{minutes}m" + seconds


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    digits = len(str(unit)) - 1
    text = f"{fraction:0{digits}d}".rstrip("0") if fraction else ""
    return f"{whole}.{text}" if text else str(whole)


def _date_from_ordinal(ordinal: int) -> str:
    import datetime as _dt  # only for the calendar arithmetic of printing a time

    return _dt.date.fromordinal(ordinal).isoformat()


class ExpressionError(Exception):
    """A condition failed to parse or to evaluate; the message names the position."""

    def __init__(
        self, message: str, *, source: str | None = None, position: int | None = None
    ) -> None:
        self.message = message
        self.position = position
        super().__init__(_format_error(message, source, position))


def _format_error(message: str, source: str | None, position: int | None) -> str:
    """expr-lang's file.Error layout: `message (line:column)` and a caret under the source."""
    if source is None or position is None:
        return message
    position = max(0, min(position, len(source)))
    line_no = source.count("\n", 0, position) + 1
    line_start = source.rfind("\n", 0, position) + 1
    line_end = source.find("\n", position)
    line = source[line_start : line_end if line_end != -1 else len(source)]
    column = position - line_start
    if len(line) > 120:  # keep tenant-visible messages readable
        window = max(0, column - 60)
        line, column = line[window : window + 120], column - window
    return f"{message} ({line_no}:{column + 1})\n | {line}\n | {'.' * column}^"


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one condition: its source, its AST, and each evaluation of it."""

    max_expression_length: int = 4096
    """Characters of source text."""
    max_nodes: int = 1000
    """AST nodes produced by the parser."""
    max_depth: int = 50
    """Nesting of the source (parentheses, operators) and depth of the AST."""
    max_steps: int = 100_000
    """Evaluation steps: node visits plus elements touched by builtins and `matches`."""
    max_string_length: int = 65_536
    """Characters in any string an evaluation produces."""
    max_collection_length: int = 10_000
    """Elements in any list or map an evaluation produces (literals, ranges, map/filter)."""
    max_allocation: int = 1_000_000
    """Total characters plus elements produced over one evaluation."""
    max_value_items: int = 100_000
    """Scalars and containers in the values bound to variables (`result`)."""
    max_value_depth: int = 50
    """Nesting of the values bound to variables."""
    max_regex_length: int = 512
    """Characters in a `matches` pattern."""
    max_regex_states: int = 10_000
    """RE2 program instructions a `matches` pattern may compile to (counted repeats expand:
    `[a-z]{1,1000}` is about 2000)."""

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be positive")


DEFAULT_LIMITS: Final = Limits()


def type_name(value: object) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, GoTime):
        return "time.Time"
    if isinstance(value, GoDuration):
        return "time.Duration"
    return type(value).__name__


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def wrap(value: int) -> int:
    """Go int64 overflow: wrap around instead of growing a Python bignum."""
    return ((value - INT64_MIN) & _INT64_MASK) + INT64_MIN


# --- importing bound values --------------------------------------------------------------------


def import_value(obj: object, limits: Limits) -> Value:
    """Copy `obj` into plain JSON-like values, rejecting anything else.

    Subclasses are copied into their exact base type so no overridden method can run later.
    """
    budget = [limits.max_value_items]

    def walk(item: object, depth: int) -> Value:
        budget[0] -= 1
        if budget[0] < 0:
            raise ExpressionError(f"value has more than {limits.max_value_items} items")
        if depth > limits.max_value_depth:
            raise ExpressionError(f"value nested deeper than {limits.max_value_depth}")
        if item is None:
            return None
        if isinstance(item, bool):
            return item is True
        if isinstance(item, int):
            number = int.__index__(item)
            return number if INT64_MIN <= number <= INT64_MAX else float(number)
        if isinstance(item, float):
            return float.__float__(item)
        if isinstance(item, str):
            return str.__str__(item)
        if isinstance(item, list):
            return [walk(element, depth + 1) for element in list.__iter__(item)]
        if isinstance(item, tuple):
            return [walk(element, depth + 1) for element in tuple.__iter__(item)]
        if isinstance(item, dict):
            copied: dict[str, Value] = {}
            for key, element in dict.items(item):
                if not isinstance(key, str):
                    raise ExpressionError(f"map keys must be strings, got {type_name(key)}")
                copied[str.__str__(key)] = walk(element, depth + 1)
            return copied
        raise ExpressionError(f"unsupported value of type {type(item).__name__}")

    return walk(obj, 0)


def go_divide(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def go_pow(a: float, b: float) -> float:
    """Go's math.Pow: IEEE results instead of Python's exceptions and complex numbers."""
    try:
        return math.pow(a, b)
    except OverflowError:
        odd = b == math.floor(b) and math.fmod(b, 2.0) != 0
        return -math.inf if a < 0 and odd else math.inf
    except ValueError:
        if a == 0.0 and b < 0:
            odd = b == math.floor(b) and math.fmod(b, 2.0) != 0
            return math.copysign(math.inf, a) if odd else math.inf
        return math.nan


def format_float(value: float) -> str:
    """Go's %v for float64 (strconv 'g' with the shortest precision)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0.0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # digits[:point] is the integer part
    digits = digits.rstrip("0") or "0"
    decimal_exponent = point - 1
    prefix = "-" if sign else ""
    if decimal_exponent < -4 or decimal_exponent >= 6:  # shortest precision: eprec 6
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp_sign = "+" if decimal_exponent >= 0 else "-"
        return f"{prefix}{mantissa}e{exp_sign}{abs(decimal_exponent):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def go_string(value: Value) -> str:
    """Go's fmt %v of a value (used by string() and in messages); callers bound its size."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, GoTime | GoDuration):
        return str(value)
    if isinstance(value, list):
        return "[" + " ".join(go_string(item) for item in value) + "]"
    pairs = (f"{key}:{go_string(value[key])}" for key in sorted(value))
    return "map[" + " ".join(pairs) + "]"


def count_items(value: Value) -> int:
    if isinstance(value, list):
        return 1 + sum(count_items(item) for item in value)
    if isinstance(value, dict):
        return 1 + sum(count_items(item) for item in value.values())
    return 1 + (len(value) // 16 if isinstance(value, str) else 0)
