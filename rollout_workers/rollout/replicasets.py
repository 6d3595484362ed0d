"""Which ReplicaSets of a rollout are new, stable, old; and their counts. Pure functions over
ReplicaSet objects as the API server sent them (dicts)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.resources import POD_TEMPLATE_HASH_LABEL
from rollout_workers.kube.writer import Writer, patch_fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import antiaffinity
from rollout_workers.rollout.hashing import pod_template_hash
from rollout_workers.rollout.podmetadata import strip_injected
from rollout_workers.timefmt import parse_time

#: Pod template fields an API server fills in when they are absent (apps/v1 defaulting). A
#: ReplicaSet template may carry them while the rollout's template (a CRD, not defaulted) does
#: not; they do not make the templates different.
SERVER_DEFAULTED = frozenset(
    {
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "restartPolicy",
        "dnsPolicy",
        "schedulerName",
        "securityContext",
        "terminationGracePeriodSeconds",
        "creationTimestamp",
        "resources",
        "protocol",
        "enableServiceLinks",
        "preemptionPolicy",
        "priority",
    }
)


def name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def pod_hash(rs: Obj) -> str | None:
    labels = (rs.get("metadata") or {}).get("labels") or {}
    value = labels.get(POD_TEMPLATE_HASH_LABEL)
    return str(value) if value else None


def spec_replicas(rs: Obj | None) -> int:
    if rs is None:
        return 0
    value = (rs.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def status_count(rs: Obj | None, field: str) -> int:
    return int(((rs or {}).get("status") or {}).get(field) or 0)


#: The status counts a reconcile decides by (availability, scaling): a ReplicaSet whose counts
#: moved on is another ReplicaSet to it.
STATUS_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
_DECIDED_METADATA = ("labels", "annotations", "ownerReferences", "deletionTimestamp", "generation")


def only_bookkeeping_moved(base: Obj, newest: Obj) -> bool:
    """Whether `newest` is `base` for every decision a reconcile makes on a ReplicaSet: the
    same spec, labels, annotations and owners, and the same status counts. What may differ
    is what the ReplicaSet controller stamps without changing them (observedGeneration,
    conditions). A write fenced by base's version can then go with newest's."""
    if (base.get("spec") or {}) != (newest.get("spec") or {}):
        return False
    meta, newest_meta = base.get("metadata") or {}, newest.get("metadata") or {}
    if any(meta.get(k) != newest_meta.get(k) for k in _DECIDED_METADATA):
        return False
    return all(status_count(base, f) == status_count(newest, f) for f in STATUS_COUNTS)


def patch(writer: Writer, namespace: str, rs: Obj, body: Obj) -> Obj:
    """A patch of `rs`, fenced by its version; sent again over the ReplicaSet controller's
    bookkeeping (see only_bookkeeping_moved)."""
    return patch_fenced(
        writer, r.REPLICASETS, namespace, rs, body, unchanged=only_bookkeeping_moved
    )


def _without_hash_label(template: Obj) -> Obj:
    result = copy.deepcopy(template)
    labels = (result.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return result


def _matches(actual: Any, desired: Any) -> bool:
    if isinstance(actual, dict) and isinstance(desired, dict):
        for key in set(actual) | set(desired):
            if key not in desired:
                if key in SERVER_DEFAULTED or actual[key] in (None, {}, []):
                    continue
                return False
            if key not in actual:
                if desired[key] in (None, {}, [], ""):
                    continue
                return False
            if not _matches(actual[key], desired[key]):
                return False
        return True
    if isinstance(actual, list) and isinstance(desired, list):
        return len(actual) == len(desired) and all(map(_matches, actual, desired))
    return bool(actual == desired)


def template_equal_ignoring_hash(rs_template: Obj, desired: Obj) -> bool:
    """Semantically equal pod templates, the hash label and server defaults aside."""
    return _matches(_without_hash_label(rs_template), _without_hash_label(desired))


def _alive(rs: Obj) -> bool:
    return not (rs.get("metadata") or {}).get("deletionTimestamp")


def by_creation(rss: list[Obj]) -> list[Obj]:
    return sorted(
        rss,
        key=lambda rs: (str((rs.get("metadata") or {}).get("creationTimestamp", "")), name(rs)),
    )


def find_new(rollout: Obj, rss: list[Obj]) -> Obj | None:
    """The ReplicaSet of the rollout's current template: by name first, then by template."""
    template = (rollout.get("spec") or {}).get("template") or {}
    collisions = (rollout.get("status") or {}).get("collisionCount")
    expected = f"{name(rollout)}-{pod_template_hash(template, collisions)}"
    alive = by_creation([rs for rs in rss if _alive(rs)])
    for rs in alive:
        if name(rs) == expected:
            return rs
    for rs in alive:
        if template_equal_ignoring_hash(comparable_template(rs, rollout), template):
            return rs
    return None


def comparable_template(rs: Obj, rollout: Obj) -> Obj:
    """The ReplicaSet's pod template without what the rollout injected into it (ephemeral
    metadata, anti-affinity), to compare with the rollout's template."""
    return antiaffinity.comparable_template(
        strip_injected(rs), antiaffinity.anti_affinity_of(rollout)
    )


def find_old(rss: list[Obj], new: Obj | None) -> list[Obj]:
    new_name = name(new) if new else None
    return by_creation([rs for rs in rss if name(rs) != new_name])


def find_stable(stable_hash: str | None, new: Obj | None, old: list[Obj]) -> Obj | None:
    if not stable_hash:
        return None
    if new is not None and pod_hash(new) == stable_hash:
        return new
    return next((rs for rs in old if pod_hash(rs) == stable_hash), None)


def max_revision(rss: list[Obj]) -> int:
    return max((ann.revision(rs) for rs in rss), default=0)


def total(rss: Sequence[Obj | None], field: str) -> int:
    """Sum of a status count (replicas, readyReplicas, availableReplicas) over ReplicaSets."""
    return sum(status_count(rs, field) for rs in rss if rs is not None)


def total_spec_replicas(rss: Sequence[Obj | None]) -> int:
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


#: On an experiment's ReplicaSets: the experiment that owns them.
EXPERIMENT_NAME_ANNOTATION = "experiment.argoproj.io/name"


def _created(rs: Obj) -> Any:
    text = (rs.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(str(text)) if text else None
    except ValueError:
        return None


def is_rollback_within_window(
    *, new: Obj | None, stable: Obj | None, all_rss: Sequence[Obj], revisions: int | None
) -> bool:
    """The new ReplicaSet predates the stable one, and fewer than `revisions` ReplicaSets were
    created between the two (Argo's isRollbackWithinWindow). Experiment ReplicaSets are not
    revisions; timestamps are compared as the API gives them, to the second."""
    if new is None or stable is None or not revisions or revisions <= 0:
        return False
    new_at, stable_at = _created(new), _created(stable)
    if new_at is None or stable_at is None or not new_at < stable_at:
        return False
    between = 0
    for rs in all_rss:
        if ann.annotations_of(rs).get(EXPERIMENT_NAME_ANNOTATION):
            continue
        at = _created(rs)
        if at is not None and new_at < at < stable_at:
            between += 1
    return between < revisions
