"""Hashes that name things: the pod template hash (ReplicaSet names and the
`rollouts-pod-template-hash` label) and the canary steps hash.

Both are FNV-32a, rendered the way Kubernetes renders them (the decimal digits mapped onto a
consonant-and-digit alphabet, so no word can appear). The template is hashed from its
canonical JSON; a ReplicaSet Argo Rollouts created is found by template equality instead
(see replicasets.find_new), so a different hash function never redeploys pods.
"""

from __future__ import annotations

import json
import struct
from typing import Any

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv32a(data: bytes, state: int = _FNV_OFFSET) -> int:
    for byte in data:
        state = ((state ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return state


def safe_encode(value: str) -> str:
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in value)


def pod_template_hash(template: dict[str, Any], collision_count: int | None) -> str:
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    state = fnv32a(canonical)
    if collision_count is not None:
        state = fnv32a(struct.pack("<I", collision_count & 0xFFFFFFFF), state)
    return safe_encode(str(state))


def steps_hash(steps_json: bytes) -> str:
    """Hash of the canary steps' JSON as Argo serialises it (struct field order, compact)."""
    return safe_encode(str(fnv32a(steps_json)))
