"""The writes a `workloadRef` rollout makes besides its own reconcile: the workload-generation
annotation, and scaling the referenced Deployment down (`workloadRef.scaleDown`).

`scaleDown` (Argo's `docs/features/specification.md`, `rollout/scale_utils.go`): `never` (the
default) leaves the Deployment alone; `onsuccess` scales it to 0 once the Rollout is Healthy;
`progressively` scales it to `spec.replicas - status.readyReplicas` as the Rollout's pods become
ready. Both act only on the Rollout's first revision (a migration from the Deployment happens
once; Argo's `revision == 1`), and `progressively` stops once the Rollout has been Healthy
(Argo's `isProgressiveMigrationComplete`), so an autoscaler resizing the Rollout afterwards does
not resize the Deployment. Argo updates only `spec.replicas` of the Deployment; so does this,
with a merge patch fenced by the cached resourceVersion.
"""

from __future__ import annotations

import logging

from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import fenced
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.templateref import WORKLOAD_GENERATION

log = logging.getLogger(__name__)

NEVER, ON_SUCCESS, PROGRESSIVELY = "never", "onsuccess", "progressively"
HEALTHY = "Healthy"


def persist_workload_generation(ctx: RolloutContext) -> None:
    """Write the workload's generation to the rollout's annotation when it moved (Argo's
    `updateRolloutsReferenceAnnotation`)."""
    resolved = ctx.workload_ref
    if resolved is None or resolved.stored_generation == resolved.generation:
        return
    generation = resolved.generation
    patch = fenced(
        {"metadata": {"annotations": {WORKLOAD_GENERATION: generation}}},
        ctx.obj["metadata"].get("resourceVersion"),
    )
    written = ctx.writer.patch(r.ROLLOUTS, ctx.namespace, ctx.name, patch)
    ctx.replaced_rollout(written)


def calculate_deployment_replicas(ctx: RolloutContext, new: RolloutStatus) -> int | None:
    """The replicas the referenced Deployment should have now (None: leave it alone)."""
    ref = ctx.rollout.spec.workload_ref
    if ref is None or ref.kind != "Deployment" or ctx.workload is None:
        return None
    mode = (ref.scale_down or NEVER).lower()
    previous = ctx.rollout.status.phase if ctx.rollout.status else None
    if mode == ON_SUCCESS:
        if ann.annotations_of(ctx.obj).get(ann.REVISION) != "1" or new.phase != HEALTHY:
            return None
        return 0
    if mode == PROGRESSIVELY:
        new_rs = ctx.new_rs
        if new_rs is None or ann.annotations_of(new_rs).get(ann.REVISION) != "1":
            return None
        if previous == HEALTHY:  # the migration is complete
            return None
        ready = new.ready_replicas or 0
        if ready <= 0:  # nothing of the rollout's is ready yet (or any more)
            return None
        return max(0, ctx.replicas - ready)
    return None


def reconcile_workload_scale_down(ctx: RolloutContext) -> None:
    new = ctx.persisted
    if new is None or ctx.workload is None:
        return
    target = calculate_deployment_replicas(ctx, new)
    if target is None:
        return
    meta = ctx.workload.get("metadata") or {}
    current = (ctx.workload.get("spec") or {}).get("replicas", 1)
    if current == target:
        return
    body = fenced({"spec": {"replicas": target}}, meta.get("resourceVersion"))
    written = ctx.writer.patch(r.DEPLOYMENTS, ctx.namespace, str(meta.get("name", "")), body)
    ctx.workload = written
    log.info("scaled deployment %s/%s to %d replicas", ctx.namespace, meta.get("name"), target)
