"""Pod metadata a rollout injects into ReplicaSets and pods, as pure functions over objects as
the API server sent them (dicts): ephemeral role metadata (see ephemeralmetadata.py).

What was injected is recorded on the ReplicaSet as JSON in the
`rollout.argoproj.io/ephemeral-metadata` annotation, and only keys recorded there are ever
removed, so labels other controllers add (a sidecar injector's) are left alone.
"""

from __future__ import annotations

import json
import logging

from rollout_workers.api.rollout import PodTemplateMetadata, RolloutStrategy
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann

log = logging.getLogger(__name__)


#: On a ReplicaSet: the metadata injected into its pod template, as JSON.
EPHEMERAL_METADATA_ANNOTATION = "rollout.argoproj.io/ephemeral-metadata"


def as_maps(metadata: PodTemplateMetadata | None) -> Obj | None:
    """The metadata as `{"labels": ..., "annotations": ...}` (None when unset)."""
    if metadata is None:
        return None
    return {"labels": dict(metadata.labels or {}), "annotations": dict(metadata.annotations or {})}


def calculate_injected(rs: Obj) -> Obj | None:
    """The metadata recorded as injected on a ReplicaSet; None when none is recorded or the
    record is unreadable (Argo's ParseExistingPodMetadata, which only warns)."""
    text = ann.annotations_of(rs).get(EPHEMERAL_METADATA_ANNOTATION)
    if text is None:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        log.warning(
            "unreadable %s on %s: %s",
            EPHEMERAL_METADATA_ANNOTATION,
            (rs.get("metadata") or {}).get("name"),
            text,
        )
        return None
    if not isinstance(parsed, dict):
        return None
    return {
        "labels": {str(k): str(v) for k, v in (parsed.get("labels") or {}).items()},
        "annotations": {str(k): str(v) for k, v in (parsed.get("annotations") or {}).items()},
    }


def calculate_metadata_patch(meta: Obj, *, injected: Obj | None, desired: Obj | None) -> Obj:
    """The merge patch that gives object metadata `meta` the desired role metadata and drops
    what was injected before and is no longer desired; `{}` when nothing changes (Argo's
    SyncEphemeralPodMetadata)."""
    patch: Obj = {}
    for kind in ("annotations", "labels"):
        current = meta.get(kind) or {}
        wanted = (desired or {}).get(kind) or {}
        changes: dict[str, str | None] = {k: v for k, v in wanted.items() if current.get(k) != v}
        for key in (injected or {}).get(kind) or {}:
            if key not in wanted and key in current:
                changes[key] = None
        if changes:
            patch[kind] = changes
    return patch


def record(desired: Obj) -> str:
    """The annotation value recording `desired`, as Go's json.Marshal writes the struct
    (labels, then annotations, empty maps left out)."""
    out = {k: dict(sorted(desired[k].items())) for k in ("labels", "annotations") if desired[k]}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


def calculate_rs_patch(rs: Obj, desired: Obj | None, *, pods_follow: bool = False) -> Obj:
    """The ReplicaSet patch that injects `desired` into its pod template and records it, or
    removes everything injected when `desired` is None; `{}` when nothing changes (Argo's
    SyncReplicaSetEphemeralPodMetadata).

    With `pods_follow` (the ReplicaSet's live pods are patched after it), the record keeps the
    keys being removed: a reconcile killed between the two writes must still know, next time,
    which keys to take off the pods. `settled_record_patch` shrinks the record once they are
    clean.
    """
    template_meta = ((rs.get("spec") or {}).get("template") or {}).get("metadata") or {}
    injected = calculate_injected(rs)
    changes = calculate_metadata_patch(template_meta, injected=injected, desired=desired)
    if not changes:
        return {}
    recorded = desired
    if pods_follow and injected is not None and _removes_keys(injected, desired):
        recorded = {
            kind: {**injected[kind], **((desired or {}).get(kind) or {})}
            for kind in ("labels", "annotations")
        }
    value = record(recorded) if recorded is not None else None
    return {
        "metadata": {"annotations": {EPHEMERAL_METADATA_ANNOTATION: value}},
        "spec": {"template": {"metadata": changes}},
    }


def settled_record_patch(rs: Obj, desired: Obj | None) -> Obj:
    """The patch that shrinks a ReplicaSet's record to `desired` once its pods are clean; `{}`
    when the record names no key that `desired` lacks."""
    injected = calculate_injected(rs)
    if injected is None or not _removes_keys(injected, desired):
        return {}
    value = record(desired) if desired is not None else None
    return {"metadata": {"annotations": {EPHEMERAL_METADATA_ANNOTATION: value}}}


def _removes_keys(injected: Obj, desired: Obj | None) -> bool:
    return any(
        key not in ((desired or {}).get(kind) or {})
        for kind in ("labels", "annotations")
        for key in injected[kind]
    )


def apply_to_new_rs(body: Obj, desired: Obj | None) -> Obj:
    """A ReplicaSet about to be created, with the role metadata in its template and recorded."""
    if desired is None:
        return body
    template = body["spec"]["template"]
    meta = dict(template.get("metadata") or {})
    for kind in ("labels", "annotations"):
        if desired[kind]:
            meta[kind] = {**(meta.get(kind) or {}), **desired[kind]}
    annotations = {**(body["metadata"].get("annotations") or {})}
    annotations[EPHEMERAL_METADATA_ANNOTATION] = record(desired)
    return {
        **body,
        "metadata": {**body["metadata"], "annotations": annotations},
        "spec": {**body["spec"], "template": {**template, "metadata": meta}},
    }


def strip_injected(rs: Obj) -> Obj:
    """The ReplicaSet's pod template without the metadata it records as injected (to compare
    it with the rollout's template)."""
    template = ((rs.get("spec") or {}).get("template")) or {}
    injected = calculate_injected(rs)
    if injected is None:
        return template
    meta = dict(template.get("metadata") or {})
    for kind in ("labels", "annotations"):
        if kind in meta:
            meta[kind] = {k: v for k, v in meta[kind].items() if k not in injected[kind]}
    return {**template, "metadata": meta}


def role_metadata(strategy: RolloutStrategy | None) -> tuple[Obj | None, Obj | None]:
    """(the new revision's role metadata, the stable revision's): canary and stable, or
    preview and active."""
    if strategy is not None and strategy.canary is not None:
        return as_maps(strategy.canary.canary_metadata), as_maps(strategy.canary.stable_metadata)
    if strategy is not None and strategy.blue_green is not None:
        bg = strategy.blue_green
        return as_maps(bg.preview_metadata), as_maps(bg.active_metadata)
    return None, None
