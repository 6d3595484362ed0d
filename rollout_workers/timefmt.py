"""Times and durations as Kubernetes and Argo write them: RFC 3339 UTC timestamps with second
precision, and Go duration strings ("30s", "1m30s", "1.5h").

Every duration in the project is read by one parser, Go's `time.ParseDuration` to the letter
(`parse_duration`, nanoseconds, Go's error texts), or Argo's `DurationString` over it (a bare
integer is seconds: `parse_duration_string`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

_NANOS: Final = 1_000_000_000
_INT64_MAX: Final = (1 << 63) - 1
_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": _NANOS,
    "m": 60 * _NANOS,
    "h": 3600 * _NANOS,
}


class TimeError(ValueError):
    """A duration or date that does not parse; the message is Go's."""


def quote(text: str) -> str:
    """Go's time.quote: double quotes; non-ASCII and control bytes as \\xNN."""
    out: list[str] = []
    for char in text:
        if ord(char) >= 0x80 or char < " ":
            out.extend(f"\\x{byte:02x}" for byte in char.encode())
        else:
            out.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(out) + '"'


_GO_ATOI = re.compile(r"[+-]?[0-9]+")


def parse_duration_string(text: str) -> int:
    """Argo's DurationString.Duration(), in nanoseconds: a bare integer is seconds, anything
    else Go's time.ParseDuration; raises TimeError with Go's message."""
    if _GO_ATOI.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return int(text) * 1_000_000_000
    return parse_duration(text)


def parse_duration(text: str) -> int:
    """Go's `time.ParseDuration`, in nanoseconds; raises TimeError with Go's message."""
    invalid = TimeError("time: invalid duration " + quote(text))
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if not (rest[0] == "." or "0" <= rest[0] <= "9"):
            raise invalid
        digits = len(rest) - len(rest.lstrip("0123456789"))
        whole_text, rest = rest[:digits], rest[digits:]
        whole = int(whole_text) if whole_text else 0
        if whole > 1 << 63:
            raise invalid
        fraction, scale, has_fraction = 0, 1, False
        if rest[:1] == ".":
            rest = rest[1:]
            digits = len(rest) - len(rest.lstrip("0123456789"))
            fraction_text, rest = rest[:digits], rest[digits:]
            has_fraction = bool(fraction_text)
            for char in fraction_text:
                # Go stops taking digits once more would overflow; the rest only count as read.
                if fraction > ((1 << 63) - 1) // 10:
                    break
                fraction, scale = fraction * 10 + int(char), scale * 10
        if not whole_text and not has_fraction:
            raise invalid
        end = 0
        while end < len(rest) and not (rest[end] == "." or "0" <= rest[end] <= "9"):
            end += 1
        if end == 0:
            raise TimeError("time: missing unit in duration " + quote(text))
        unit_name, rest = rest[:end], rest[end:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise TimeError(f"time: unknown unit {quote(unit_name)} in duration {quote(text)}")
        if whole > (1 << 63) // unit:
            raise invalid
        value = whole * unit
        if fraction:
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                raise invalid
        total += value
        if total > 1 << 63:
            raise invalid
    if negative:
        return -total
    if total > _INT64_MAX:
        raise invalid
    return total


def utcnow() -> dt.datetime:
    """The wall clock, in UTC: the default clock of the controllers."""
    return dt.datetime.now(dt.UTC)


def parse_time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: dt.datetime) -> str:
    """RFC 3339 with microseconds (metav1.MicroTime's format), for a time a few seconds are
    measured from; `parse_time` reads it back."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def duration_seconds(value: int | str) -> int | None:
    """Whole seconds of an int, or of a string as Argo's `DurationString` reads it (a bare
    integer is seconds, else a Go duration); None when it does not read."""
    if isinstance(value, int):
        return value
    try:
        return int(parse_duration_string(value) / _NANOS)
    except TimeError:
        return None


def human_duration(seconds: float) -> str:
    """A short age such as `45s`, `3m20s`, `5h12m`, `3d4h`: apimachinery's `HumanDuration`,
    what `kubectl get` shows as AGE (up to a second in the future reads as `0s`)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{hours // 24 // 365}y"
