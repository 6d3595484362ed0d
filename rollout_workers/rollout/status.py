"""The status as it is written: Argo's empty-field rules, and the one merge patch per reconcile.

Argo's status struct omits empty fields (`omitempty`), except the pointer fields
`currentStepIndex`, `collisionCount` and `canary.weights.verified`, and the weights' `weight`,
for which 0 (or false) is a value. Normalising both the old and
the new status the same way means an unchanged status diffs to nothing and no patch is sent.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.kube.patch import merge_patch, prune_empty

__all__ = ["ZERO_KEPT", "merge_patch", "normalize"]

#: Fields whose zero (or false) is meaningful: pointers in Argo's Go types, and the traffic
#: weights (`weight` has no omitempty; `verified` false means "not yet verified").
ZERO_KEPT = frozenset({"currentStepIndex", "collisionCount", "weight", "verified"})


def normalize(status: RolloutStatus | dict[str, Any] | None) -> dict[str, Any]:
    """The status's JSON with Argo's empty fields left out."""
    if status is None:
        return {}
    data = status.to_dict() if isinstance(status, RolloutStatus) else status
    return prune_empty(data, zero_kept=ZERO_KEPT)
