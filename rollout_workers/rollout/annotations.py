"""The annotations a rollout keeps on its ReplicaSets: revision, revision history, desired
replicas. Pure functions over annotation maps; they return new maps and never modify input."""

from __future__ import annotations

from typing import Any

REVISION = "rollout.argoproj.io/revision"
REVISION_HISTORY = "rollout.argoproj.io/revision-history"
DESIRED_REPLICAS = "rollout.argoproj.io/desired-replicas"
SCALE_DOWN_DEADLINE = "scale-down-deadline"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

#: Rollout annotations never copied onto its ReplicaSets.
NOT_COPIED = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS})


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def int_annotation(obj: dict[str, Any], key: str) -> int | None:
    try:
        return int(annotations_of(obj)[key])
    except (KeyError, ValueError):
        return None


def revision(obj: dict[str, Any]) -> int:
    """The object's revision annotation (0 when missing or not a number)."""
    return int_annotation(obj, REVISION) or 0


def desired_replicas(rs: dict[str, Any]) -> int | None:
    return int_annotation(rs, DESIRED_REPLICAS)


def replicas_annotation_needs_update(rs: dict[str, Any], desired: int) -> bool:
    return annotations_of(rs).get(DESIRED_REPLICAS) != str(desired)


def calculate_new_rs_annotations(
    *,
    rollout_annotations: dict[str, str],
    rs_annotations: dict[str, str],
    new_revision: int,
    exists: bool,
    desired: int,
) -> dict[str, str]:
    """The new ReplicaSet's annotations: the rollout's (but the skipped ones), its revision
    raised to `new_revision` (keeping the revisions it served before in the history, as a
    rollback does), and for a ReplicaSet about to be created, the desired replicas."""
    result = dict(rs_annotations)
    for key, value in rollout_annotations.items():
        if key not in NOT_COPIED:
            result[key] = value
    old = rs_annotations.get(REVISION)
    try:
        old_revision = int(old) if old else 0
    except ValueError:
        return result  # not a number: leave the revision alone, as Argo does
    if old_revision < new_revision:
        result[REVISION] = str(new_revision)
        if old is not None:
            history = rs_annotations.get(REVISION_HISTORY, "")
            result[REVISION_HISTORY] = f"{history},{old}" if history else old
    if not exists:
        result[DESIRED_REPLICAS] = str(desired)
    return result


def is_saturated(*, rollout_replicas: int, rs: dict[str, Any] | None) -> bool:
    """The ReplicaSet owns all the rollout's replicas, and all of them are available."""
    if rs is None:
        return False
    spec_replicas = int((rs.get("spec") or {}).get("replicas") or 0)
    available = int((rs.get("status") or {}).get("availableReplicas") or 0)
    return (
        spec_replicas == rollout_replicas
        and desired_replicas(rs) == rollout_replicas
        and available == rollout_replicas
    )
