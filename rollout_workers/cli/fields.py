"""Small readers over API objects as decoded JSON, for what `get`, `list` and `status` show.

A missing or mistyped field reads as None or 0, never as an error: the plugin shows what it can
of any object, and so do these commands.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rollout_workers.objects import Obj
from rollout_workers.rollout.annotations import REVISION
from rollout_workers.timefmt import human_duration


def value_at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def to_int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict(value_at(obj, "metadata", "annotations") or {})


def revision_number(obj: Obj) -> int:
    return to_int(annotations_of(obj).get(REVISION), 0)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (`2024-05-01T10:00:00Z`), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def created_at(obj: Obj) -> datetime | None:
    return parse_time(value_at(obj, "metadata", "creationTimestamp"))


def age(created: datetime | None, now: datetime) -> str:
    if created is None:
        return ""
    return human_duration((now - created).total_seconds())
