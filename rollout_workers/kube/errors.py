"""Typed API errors, from the server's Status objects."""

from __future__ import annotations

import json
from typing import Any


class KubeError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


class NotFound(KubeError):
    pass


class AlreadyExists(KubeError):
    pass


class Conflict(KubeError):
    """A stale resourceVersion: the normal outcome of a lost race; requeue and read again."""


class Gone(KubeError):
    """The requested resourceVersion is too old (410): relist."""


class Invalid(KubeError):
    pass


class Unavailable(KubeError):
    """Connection failures and 5xx: retry with backoff."""


def from_status(status: int, body: bytes | str | None) -> KubeError:
    reason, message = "", ""
    try:
        data: Any = json.loads(body or b"{}")
        if isinstance(data, dict):
            reason, message = str(data.get("reason", "")), str(data.get("message", ""))
    except ValueError:
        message = (body.decode(errors="replace") if isinstance(body, bytes) else str(body))[:200]
    if status == 404:
        return NotFound(status, reason or "NotFound", message)
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
        return cls(status, reason or "Conflict", message)
    if status == 410:
        return Gone(status, reason or "Gone", message)
    if status == 422:
        return Invalid(status, reason or "Invalid", message)
    if status >= 500 or status in {429, 0}:
        return Unavailable(status, reason or "Unavailable", message)
    return KubeError(status, reason or "Error", message)
