"""The status as it is written: Argo's empty-field rules, and the one merge patch per reconcile.

Argo's status struct omits empty fields (`omitempty`), except the two pointer fields
`currentStepIndex` and `collisionCount`, for which 0 is a value. Normalising both the old and
the new status the same way means an unchanged status diffs to nothing and no patch is sent.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.api.rollout import RolloutStatus

#: Fields whose zero is meaningful (pointers in Argo's Go types).
ZERO_KEPT = frozenset({"currentStepIndex", "collisionCount"})


def _prune(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v, k) for k, v in value.items()}
        return {k: v for k, v in out.items() if not _empty(v, k)}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _empty(value: Any, key: str) -> bool:
    if value is None or value is False or value in ("", [], {}):
        return True
    return value == 0 and not isinstance(value, bool) and key not in ZERO_KEPT


def normalize(status: RolloutStatus | dict[str, Any] | None) -> dict[str, Any]:
    """The status's JSON with Argo's empty fields left out."""
    if status is None:
        return {}
    data = status.to_dict() if isinstance(status, RolloutStatus) else status
    result: dict[str, Any] = _prune(data)
    return result


def merge_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch that turns `old` into `new` (empty when they are equal).
    Lists are replaced whole, as merge patch does."""
    patch: dict[str, Any] = {}
    for key in old.keys() - new.keys():
        patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            inner = merge_patch(before, value)
            if inner:
                patch[key] = inner
        elif value != before or key not in old:
            patch[key] = value
    return patch
