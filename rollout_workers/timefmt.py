"""Times and durations as Kubernetes and Argo write them: RFC 3339 UTC timestamps with second
precision, and Go duration strings ("30s", "1m30s", "1.5h")."""

from __future__ import annotations

import datetime as dt
import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


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
    """Whole seconds of an int or a digits-only string (seconds), or of a Go duration string;
    None when unreadable."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.isdigit():  # a pause's `duration: "30"`: seconds, as Argo reads an IntOrString
        return int(text)
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return int(sum(float(n) * _UNITS[u] for n, u in parts))


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
