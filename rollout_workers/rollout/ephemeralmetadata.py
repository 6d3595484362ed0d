"""Ephemeral metadata: the labels and annotations a pod carries while it plays a role.

`canary.canaryMetadata` / `stableMetadata` and `blueGreen.previewMetadata` / `activeMetadata`
(Argo's rollout/ephemeralmetadata.go). A Service may select `role: canary`, so a pod that lacks
the label it should carry leaves that Service without endpoints.

- The role's metadata goes on the ReplicaSet's pod template, so pods it creates carry it, and
  on its live pods. The ReplicaSet is written first, then its pods: a pod created in between
  already has the new metadata.
- What was injected is recorded on the ReplicaSet as JSON in the
  `rollout.argoproj.io/ephemeral-metadata` annotation. Only keys recorded there are ever
  removed, so labels other controllers add (a sidecar injector's) are left alone. While live
  pods still carry keys being removed, the record keeps them too, so a reconcile killed
  between the ReplicaSet's write and its pods' still removes them next time.
- Roles follow the rollout: fully rolled out (no stable yet, or the new ReplicaSet is the
  stable), the new ReplicaSet has the stable role; during an update it is the canary (preview)
  and the stable ReplicaSet keeps the stable (active) role. Every other ReplicaSet has its
  injected metadata removed.
- Pods are listed from the API (the watcher does not cache pods), only for ReplicaSets that
  have replicas, and only while some metadata is configured or some ReplicaSet still records
  injected metadata; a pass that finds nothing to change writes nothing. A pod is patched
  with merge semantics on exactly the keys that change, so no precondition is needed, and a
  pod gone meanwhile is skipped.
"""

from __future__ import annotations

import logging

from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import PODS
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.podmetadata import (
    EPHEMERAL_METADATA_ANNOTATION,
    calculate_injected,
    calculate_metadata_patch,
    calculate_rs_patch,
    role_metadata,
    settled_record_patch,
)
from rollout_workers.rollout.pods import PodReader, replicaset_pods
from rollout_workers.rollout.sync import write_rs

log = logging.getLogger(__name__)


# -- the step -----------------------------------------------------------------------------------


def reconcile_ephemeral_metadata(ctx: RolloutContext) -> None:
    """Bring every ReplicaSet of the rollout, and its live pods, to its role's metadata.

    Without a pod reader on the context only the ReplicaSets are synced. Errors propagate:
    the reconcile fails and is retried.
    """
    new_metadata, stable_metadata = role_metadata(ctx.rollout.spec.strategy)
    configured = new_metadata is not None or stable_metadata is not None
    if not configured and not any(
        EPHEMERAL_METADATA_ANNOTATION in ann.annotations_of(rs) for rs in ctx.all_rss
    ):
        return
    status = ctx.rollout.status
    stable_hash = status.stable_rs if status else None
    new_hash = rsutil.pod_hash(ctx.new_rs) if ctx.new_rs is not None else None
    roles: list[tuple[Obj | None, Obj | None]] = []
    if not stable_hash or stable_hash == new_hash:
        roles.append((ctx.new_rs, stable_metadata))
    else:
        roles.append((ctx.new_rs, new_metadata))
        roles.append((ctx.stable_rs, stable_metadata))
    roles.extend((rs, None) for rs in ctx.other_rss)
    for rs, desired in roles:
        if rs is not None:
            _sync(ctx, rs, desired, ctx.pods)


def _sync(ctx: RolloutContext, rs: Obj, desired: Obj | None, pods: PodReader | None) -> None:
    injected = calculate_injected(rs)
    pods_follow = pods is not None and rsutil.spec_replicas(rs) > 0
    patch = calculate_rs_patch(rs, desired, pods_follow=pods_follow)
    if patch:
        rs = write_rs(ctx, rs, patch)
        log.info(
            "%s: synced ephemeral metadata %s to ReplicaSet %s", ctx.key, desired, rsutil.name(rs)
        )
    if pods is None or not pods_follow:
        return
    for pod in replicaset_pods(rs, pods, namespace=ctx.namespace):
        meta = pod.get("metadata") or {}
        changes = calculate_metadata_patch(meta, injected=injected, desired=desired)
        if not changes:
            continue
        try:
            ctx.writer.patch(PODS, ctx.namespace, str(meta.get("name", "")), {"metadata": changes})
        except NotFound:
            log.info("%s: pod %s is gone: ephemeral metadata skipped", ctx.key, meta.get("name"))
            continue
        log.info("%s: synced ephemeral metadata %s to pod %s", ctx.key, desired, meta.get("name"))
    settled = settled_record_patch(rs, desired)
    if settled:
        write_rs(ctx, rs, settled)
