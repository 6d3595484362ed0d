"""Times and durations as Kubernetes and Argo write them: RFC 3339 UTC timestamps with second
precision, and Go duration strings ("30s", "1m30s", "1.5h")."""

from __future__ import annotations

import datetime as dt
import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
