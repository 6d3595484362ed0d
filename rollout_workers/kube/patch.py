"""Building merge patches: Go's `omitempty` rules and the RFC 7386 diff of two objects.

Kubernetes objects written by Go controllers leave empty fields out; normalising both sides
the same way means an unchanged object diffs to nothing, so no patch is sent.
"""

from __future__ import annotations

from typing import Any


def prune_empty(data: dict[str, Any], *, zero_kept: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`data` without None, False, "", [], {} and 0 values (0 and False stay for `zero_kept`
    keys)."""
    result: dict[str, Any] = _prune(data, "", zero_kept)
    return result


def _prune(value: Any, key: str, zero_kept: frozenset[str]) -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v, k, zero_kept) for k, v in value.items()}
        return {k: v for k, v in out.items() if not _empty(v, k, zero_kept)}
    if isinstance(value, list):
        return [_prune(v, "", zero_kept) for v in value]
    return value


def _empty(value: Any, key: str, zero_kept: frozenset[str]) -> bool:
    if value is None or value in ("", [], {}):
        return True
    return value == 0 and key not in zero_kept


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
