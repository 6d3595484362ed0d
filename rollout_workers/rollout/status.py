"""The status as it is written: Argo's empty-field rules, and the one merge patch per reconcile.

Argo's status struct omits empty fields (`omitempty`), except the pointer fields
`currentStepIndex`, `collisionCount` and `canary.weights.verified`, and the weights' `weight`,
for which 0 (or false) is a value, and the ALB status, whose structs are written whole.
Normalising both the old and the new status the same way means an unchanged status diffs to
nothing and no patch is sent.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.kube.patch import merge_patch, prune_empty

__all__ = ["ZERO_KEPT", "merge_patch", "normalize"]

#: Fields whose zero (or false) is meaningful: pointers in Argo's Go types, and the traffic
#: weights (`weight` has no omitempty; `verified` false means "not yet verified").
ZERO_KEPT = frozenset({"currentStepIndex", "collisionCount", "weight", "verified"})


#: Written whole, as Argo's Go structs are (no omitempty inside; "" for what is not known):
#: the ALB router's load balancer and target groups. Left out only when unset (or no entries).
WHOLE = ("alb", "albs")
ALB_REFS = ("loadBalancer", "canaryTargetGroup", "stableTargetGroup")
ALB_REF_FIELDS = ("name", "arn", "fullName")


def normalize(status: RolloutStatus | dict[str, Any] | None) -> dict[str, Any]:
    """The status's JSON with Argo's empty fields left out."""
    if status is None:
        return {}
    data = status.to_dict() if isinstance(status, RolloutStatus) else status
    normalized = prune_empty(data, zero_kept=ZERO_KEPT)
    if data.get("alb") is not None:
        normalized["alb"] = calculate_whole_alb(data["alb"])
    if data.get("albs"):
        normalized["albs"] = [calculate_whole_alb(alb or {}) for alb in data["albs"]]
    return normalized


def calculate_whole_alb(alb: dict[str, Any]) -> dict[str, Any]:
    """An ALBStatus as Go marshals it: each reference present with its name, ARN and full name
    ("" when unknown), the ingress only when set."""
    whole = {k: v for k, v in alb.items() if v is not None and v != ""}
    for key in ALB_REFS:
        ref = {k: v for k, v in (alb.get(key) or {}).items() if v is not None}
        whole[key] = {**{name: "" for name in ALB_REF_FIELDS}, **ref}
    return whole
