"""Times and durations in the expr-lang evaluator: `now()`, `duration()`, `date()` and their
arithmetic, as expr-lang v1.15 (the version Argo Rollouts 1.9 builds with) defines them.

Why this exists: a prometheus metric's `rangeQuery.start` and `rangeQuery.end` are expr-lang
expressions such as `now() - duration("1h")` or
`date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC")`, which Argo evaluates with
`evaluate.EvalTime` (utils/evaluate/evaluate.go) and which must yield a `time.Time`. The sandboxed
evaluator gains these builtins here (`builtins` lists them with the others):

- `now()`: the time the evaluation is given (the measurement's `now`); without one (a metric
  condition) it is an error rather than a read of the wall clock;
- `duration(s)`: Go's `time.ParseDuration` (`1h30m`, `1.5s`, `-2m`), with Go's error texts
  (`time: invalid duration "??"`);
- `date(s)` tries Go's layouts `2006-01-02`, `15:04:05`, `2006-01-02 15:04:05`, RFC 3339,
  RFC 822, RFC 850 and RFC 1123 (else `invalid date s`); `date(s, layout)` parses with a Go
  reference layout; `date(s, layout, zone)` in an IANA zone;
- arithmetic (expr-lang's runtime): time ± duration is a time, time - time a duration,
  duration ± duration a duration, an integer times a duration a duration; times and durations
  compare with `<`, `>`, `<=`, `>=`, `==` (times by instant, as Go's `Equal`).

Go layouts are supported for the elements used in practice: years `2006` `06`, months `01` `1`
`Jan` `January`, days `02` `2` `_2`, weekdays `Mon` `Monday`, hours `15` `03` `3`, minutes `04`
`4`, seconds `05` `5`, fractions `.000` `.999` (and the `,` forms), `PM` `pm`, zones `MST`
`Z07:00` `Z0700` `Z07` `-07:00` `-0700` `-07`. A zone abbreviation other than UTC/GMT reads as
UTC offset 0 under that name, as Go does for abbreviations it does not know.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from typing import Final

from rollout_workers.expr.budget import Budget
from rollout_workers.expr.nodes import Call
from rollout_workers.expr.values import (
    INT64_MAX,
    INT64_MIN,
    GoDuration,
    GoTime,
    Value,
    type_name,
    wrap,
)
from rollout_workers.timefmt import TimeError, parse_duration, quote

__all__ = ["TIME_FUNCTIONS", "arithmetic", "compare", "go_time"]

_NANOS: Final = 1_000_000_000


def go_time(moment: dt.datetime) -> GoTime:
    """A timezone-aware datetime as a Go time (UTC)."""
    delta = moment.astimezone(dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    nanos = (delta.days * 86400 + delta.seconds) * _NANOS + delta.microseconds * 1000
    return GoTime(nanos)


# -- Go reference layouts ------------------------------------------------------------------------

# Longest first, so that `January` wins over `Jan` and `2006` over `2`.
_LAYOUT_TOKENS: Final = (
    "January", "Monday", "Z07:00", "-07:00", "Z0700", "-0700", "2006", "Jan", "Mon", "MST",
    "Z07", "-07", "_2", "01", "02", "03", "04", "05", "06", "15", "PM", "pm", "1", "2", "3",
    "4", "5",
)  # fmt: skip
_MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FRACTION: Final = re.compile(r"[.,](0+|9+)")
_DEFAULT_LAYOUTS: Final = (
    "2006-01-02",
    "15:04:05",
    "2006-01-02 15:04:05",
    "2006-01-02T15:04:05Z07:00",  # RFC3339
    "02 Jan 06 15:04 MST",  # RFC822
    "Monday, 02-Jan-06 15:04:05 MST",  # RFC850
    "Mon, 02 Jan 2006 15:04:05 MST",  # RFC1123
)
_NUMERIC: Final = {
    "2006": r"\d{4}",
    "06": r"\d{2}",
    "01": r"\d{2}",
    "1": r"\d{1,2}",
    "02": r"\d{2}",
    "2": r"\d{1,2}",
    "_2": r" ?\d{1,2}",
    "15": r"\d{1,2}",
    "03": r"\d{2}",
    "3": r"\d{1,2}",
    "04": r"\d{2}",
    "4": r"\d{1,2}",
    "05": r"\d{2}",
    "5": r"\d{1,2}",
}


def _layout_pattern(layout: str) -> tuple[re.Pattern[str], list[str]]:
    """A regular expression reading `layout`, and the token each group captures."""
    parts: list[str] = []
    tokens: list[str] = []
    i = 0
    while i < len(layout):
        fraction = _FRACTION.match(layout, i)
        if fraction and not layout[fraction.end() : fraction.end() + 1].isdigit():
            exact = fraction.group(1)[0] == "0"
            digits = len(fraction.group(1))
            parts.append(rf"([.,]\d{{{digits}}})" if exact else r"((?:[.,]\d+)?)")
            tokens.append("fraction")
            i = fraction.end()
            continue
        token = next((t for t in _LAYOUT_TOKENS if layout.startswith(t, i)), None)
        if token is None:
            parts.append(re.escape(layout[i]))
            i += 1
            continue
        if token in _NUMERIC:
            parts.append(f"({_NUMERIC[token]})")
        elif token in ("January", "Jan"):
            names = _MONTHS if token == "January" else tuple(m[:3] for m in _MONTHS)
            parts.append("(" + "|".join(names) + ")")
        elif token in ("Monday", "Mon"):
            names = _DAYS if token == "Monday" else tuple(d[:3] for d in _DAYS)
            parts.append("(" + "|".join(names) + ")")
        elif token in ("PM", "pm"):
            parts.append("(AM|PM)" if token == "PM" else "(am|pm)")
        elif token == "MST":
            parts.append(r"([A-Z]{3,5}|[+-]\d+)")
        else:  # numeric zones; the Z forms also accept a literal Z for UTC
            shape = {
                "07:00": r"[+-]\d{2}:\d{2}",
                "0700": r"[+-]\d{4}",
                "07": r"[+-]\d{2}",
            }[token.lstrip("Z-")]
            parts.append(f"(Z|{shape})" if token.startswith("Z") else f"({shape})")
        tokens.append(token)
        i += len(token)
    return re.compile("".join(parts) + r"\Z", re.IGNORECASE), tokens


def parse_layout(value: str, layout: str, zone: dt.tzinfo | None = None) -> GoTime:
    """Go's `time.Parse(layout, value)` (`ParseInLocation` with `zone`); raises TimeError."""
    pattern, tokens = _layout_pattern(layout)
    match = pattern.match(value)
    if match is None:
        raise TimeError(f"parsing time {quote(value)} as {quote(layout)}: cannot parse")
    year, month, day, hour, minute, second, nanos = 0, 1, 1, 0, 0, 0, 0
    pm: bool | None = None
    offset: int | None = None
    zone_name = ""
    for token, text in zip(tokens, match.groups(), strict=True):
        if token == "2006":
            year = int(text)
        elif token == "06":
            year = int(text) + (1900 if int(text) >= 69 else 2000)
        elif token in ("01", "1"):
            month = int(text)
        elif token in ("January", "Jan"):
            month = next(i for i, m in enumerate(_MONTHS, 1) if m.lower().startswith(text.lower()))
        elif token in ("02", "2", "_2"):
            day = int(text)
        elif token in ("15", "03", "3"):
            hour = int(text)
        elif token in ("04", "4"):
            minute = int(text)
        elif token in ("05", "5"):
            second = int(text)
        elif token == "fraction":
            digits = text[1:]
            nanos = int((digits + "000000000")[:9]) if digits else 0
        elif token in ("PM", "pm"):
            pm = text.upper() == "PM"
        elif token == "MST":
            zone_name = text
            offset = 0 if text.isalpha() else int(text) * 3600
        elif token not in ("Monday", "Mon"):
            offset = _offset(text)
    if pm is not None and hour <= 12:
        hour = hour % 12 + (12 if pm else 0)
    try:
        naive = dt.datetime(year or 1, month, day, hour, minute, second)
    except ValueError as err:
        raise TimeError(f"parsing time {quote(value)}: {err}") from None
    if offset is None:
        aware = naive.replace(tzinfo=zone or dt.UTC)
        offset = int((aware.utcoffset() or dt.timedelta()).total_seconds())
        zone_name = aware.tzname() or "UTC"
    moment = go_time(naive.replace(tzinfo=dt.timezone(dt.timedelta(seconds=offset))))
    return GoTime(moment.unix_nanos + nanos, offset, zone_name or _zone_text(offset))


def _offset(text: str) -> int:
    if text.upper() == "Z":
        return 0
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)


def _zone_text(offset: int) -> str:
    """Go names a fixed zone read from a numeric offset by the offset itself, `+0200`."""
    if offset == 0:
        return "UTC"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{'-' if offset < 0 else '+'}{hours:02d}{minutes:02d}"


# -- builtins ------------------------------------------------------------------------------------


def _string_arg(ev: Budget, node: Call, value: Value) -> str:
    if not isinstance(value, str):
        ev.fail(node, f"invalid argument for {node.name} (type {type_name(value)})")
    if len(value) > 256:
        ev.fail(node, f"{node.name}: argument longer than 256 characters")
    return value


def _now(ev: Budget, node: Call, args: list[Value]) -> Value:
    if ev.now is None:
        ev.fail(node, "now() is only available in a range query's start and end")
    return ev.now


def _duration(ev: Budget, node: Call, args: list[Value]) -> Value:
    try:
        return GoDuration(parse_duration(_string_arg(ev, node, args[0])))
    except TimeError as err:
        ev.fail(node, str(err))


def _date(ev: Budget, node: Call, args: list[Value]) -> Value:
    text = _string_arg(ev, node, args[0])
    try:
        if len(args) == 1:
            for layout in _DEFAULT_LAYOUTS:
                try:
                    return parse_layout(text, layout)
                except TimeError:
                    continue
            raise TimeError(f"invalid date {text}")
        layout = _string_arg(ev, node, args[1])
        zone: dt.tzinfo | None = None
        if len(args) == 3:
            name = _string_arg(ev, node, args[2])
            try:
                zone = dt.UTC if name in ("", "UTC") else zoneinfo.ZoneInfo(name)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise TimeError(f"unknown time zone {name}") from None
        return parse_layout(text, layout, zone)
    except TimeError as err:
        ev.fail(node, str(err))


TIME_FUNCTIONS: Final = {
    "now": (0, 0, _now),
    "duration": (1, 1, _duration),
    "date": (1, 3, _date),
}


# -- operators -----------------------------------------------------------------------------------


def arithmetic(op: str, a: Value, b: Value) -> Value | None:
    """`a op b` when a time or a duration is involved (expr-lang's runtime Add, Subtract,
    Multiply); None when the operands are not a combination it defines."""
    if op == "+":
        if isinstance(a, GoTime) and isinstance(b, GoDuration):
            return GoTime(a.unix_nanos + b.nanos, a.offset, a.zone)
        if isinstance(a, GoDuration) and isinstance(b, GoTime):
            return GoTime(b.unix_nanos + a.nanos, b.offset, b.zone)
        if isinstance(a, GoDuration) and isinstance(b, GoDuration):
            return GoDuration(wrap(a.nanos + b.nanos))
    elif op == "-":
        if isinstance(a, GoTime) and isinstance(b, GoDuration):
            return GoTime(a.unix_nanos - b.nanos, a.offset, a.zone)
        if isinstance(a, GoTime) and isinstance(b, GoTime):
            return GoDuration(max(INT64_MIN, min(INT64_MAX, a.unix_nanos - b.unix_nanos)))
        if isinstance(a, GoDuration) and isinstance(b, GoDuration):
            return GoDuration(wrap(a.nanos - b.nanos))
    elif op == "*":
        if isinstance(a, GoDuration) and _is_int(b):
            assert isinstance(b, int)
            return GoDuration(wrap(a.nanos * b))
        if isinstance(b, GoDuration) and _is_int(a):
            assert isinstance(a, int)
            return GoDuration(wrap(a * b.nanos))
        if isinstance(a, GoDuration) and isinstance(b, GoDuration):
            return GoDuration(wrap(a.nanos * b.nanos))
    return None


def compare(op: str, a: Value, b: Value) -> bool | None:
    """`a op b` for two times or two durations (`==`, `!=`, `<`, `>`, `<=`, `>=`); None when
    the operands are not both times or both durations."""
    if isinstance(a, GoTime) and isinstance(b, GoTime):
        x, y = a.unix_nanos, b.unix_nanos
    elif isinstance(a, GoDuration) and isinstance(b, GoDuration):
        x, y = a.nanos, b.nanos
    else:
        return None
    return {
        "==": x == y,
        "!=": x != y,
        "<": x < y,
        ">": x > y,
        "<=": x <= y,
        ">=": x >= y,
    }[op]


def _is_int(value: Value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
