"""The steps every strategy shares: the desired ReplicaSet and its revision, scaling with
events, paused conditions, the base status and conditions, and the one status patch.

Mirrors argo-rollouts' rollout/sync.go. Where Argo writes a condition to the status at once
(a new or found ReplicaSet, a pause noticed), this sets it on the context's working status and
it goes out with the single patch at the end of the reconcile.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from rollout_workers.api.base import ConditionStatus as S
from rollout_workers.api.rollout import RolloutConditionType as T
from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import antiaffinity, podmetadata
from rollout_workers.rollout import conditions as c
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.hashing import pod_template_hash
from rollout_workers.rollout.pause import calculate_pause_status
from rollout_workers.rollout.phase import calculate_phase
from rollout_workers.rollout.status import merge_patch, normalize
from rollout_workers.timefmt import parse_time

log = logging.getLogger(__name__)


DEFAULT_PROGRESS_DEADLINE = 600
DEFAULT_REVISION_HISTORY_LIMIT = 10


class HashCollision(RuntimeError):
    """The desired ReplicaSet's name is taken by another template; collisionCount was bumped."""


def _cond(ctx: RolloutContext, t: T, s: S, reason: str, message: str) -> Any:
    return c.new_condition(t, s, reason, message, now=ctx.now_text())


# -- revision and the desired ReplicaSet ------------------------------------------------------


def sync_revision(ctx: RolloutContext) -> None:
    """Bring the new ReplicaSet's annotations and the rollout's revision up to date."""
    new = ctx.new_rs
    if new is None:
        return
    new_revision = rsutil.max_revision(ctx.older_rss) + 1
    current = ann.annotations_of(new)
    wanted = ann.calculate_new_rs_annotations(
        rollout_annotations=ann.annotations_of(ctx.obj),
        rs_annotations=current,
        new_revision=new_revision,
        exists=True,
        desired=ctx.replicas,
    )
    min_ready = ctx.rollout.spec.min_ready_seconds or 0
    live_affinity = (((new.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "affinity"
    )
    anti_affinity = antiaffinity.anti_affinity_of(ctx.obj)
    # Hashing the template is only needed when there is a term to keep current.
    affinity_stale = anti_affinity is not None and antiaffinity.needs_update(
        live_affinity,
        anti_affinity,
        stable_hash=ctx.status.stable_rs,
        current_hash=current_pod_hash(ctx),
    )
    if (
        wanted != current
        or int((new.get("spec") or {}).get("minReadySeconds") or 0) != min_ready
        or affinity_stale
    ):
        patch: Obj = {
            "metadata": {
                "annotations": {**{k: None for k in current if k not in wanted}, **wanted}
            },
            "spec": {"minReadySeconds": min_ready},
        }
        if affinity_stale:
            # A merge patch replaces the term lists whole: the new stable's hash goes in.
            patch["spec"]["template"] = {"spec": {"affinity": desired_affinity(ctx)}}
        written = write_rs(ctx, new, patch)
        log.info("synced revision on ReplicaSet %s to %s", rsutil.name(written), new_revision)
        return
    set_rollout_revision(ctx, current.get(ann.REVISION, ""))
    if c.get_condition(ctx.status, T.PROGRESSING) is None:
        message = c.FOUND_NEW_RS_MESSAGE.format(rsutil.name(new))
        c.set_condition(
            ctx.status, _cond(ctx, T.PROGRESSING, S.TRUE, c.FOUND_NEW_RS_REASON, message)
        )


def set_rollout_revision(ctx: RolloutContext, revision: str) -> None:
    if not revision or ann.annotations_of(ctx.obj).get(ann.REVISION) == revision:
        return
    annotations = {ann.REVISION: revision}
    message = c.ROLLOUT_UPDATED_MESSAGE.format(revision)
    # Once the revision lands nothing records the event again: its notifications go first.
    meta = ctx.obj["metadata"]
    ahead = {**meta, "annotations": {**(meta.get("annotations") or {}), **annotations}}
    ctx.notify_ahead({**ctx.obj, "metadata": ahead}, c.ROLLOUT_UPDATED_REASON, message)
    patch = fenced({"metadata": {"annotations": annotations}}, meta.get("resourceVersion"))
    written = ctx.writer.patch(r.ROLLOUTS, ctx.namespace, ctx.name, patch)
    ctx.replaced_rollout(written)
    ctx.event(c.ROLLOUT_UPDATED_REASON, message, notified=True)


def current_pod_hash(ctx: RolloutContext) -> str:
    """The pod-template hash of the rollout's template (with its collision count)."""
    return pod_template_hash(
        dict(ctx.obj["spec"].get("template") or {}), ctx.status.collision_count
    )


def desired_affinity(ctx: RolloutContext) -> Obj | None:
    """The affinity of the current template's ReplicaSet: the template's, plus anti-affinity
    to the stable pods while updating."""
    template = ctx.obj["spec"].get("template") or {}
    return antiaffinity.calculate_affinity(
        affinity=(template.get("spec") or {}).get("affinity"),
        anti_affinity=antiaffinity.anti_affinity_of(ctx.obj),
        stable_hash=ctx.status.stable_rs,
        current_hash=current_pod_hash(ctx),
        namespace=ctx.namespace,
    )


def create_desired_rs(ctx: RolloutContext) -> Obj:
    """Create the ReplicaSet of the current template (at 0 replicas; scaling comes after),
    with anti-affinity to the stable and its role's ephemeral metadata."""
    spec = ctx.rollout.spec
    template: Obj = dict(ctx.obj["spec"].get("template") or {})
    collisions = ctx.status.collision_count
    pod_hash = pod_template_hash(template, collisions)
    labels = {**((template.get("metadata") or {}).get("labels") or {})}
    labels[r.POD_TEMPLATE_HASH_LABEL] = pod_hash
    selector: Obj = dict(ctx.obj["spec"].get("selector") or {})
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        r.POD_TEMPLATE_HASH_LABEL: pod_hash,
    }
    new_revision = rsutil.max_revision(ctx.older_rss) + 1
    name = f"{ctx.name}-{pod_hash}"
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": ctx.namespace,
            "labels": labels,
            "annotations": ann.calculate_new_rs_annotations(
                rollout_annotations=ann.annotations_of(ctx.obj),
                rs_annotations={},
                new_revision=new_revision,
                exists=False,
                desired=ctx.replicas,
            ),
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Rollout",
                    "name": ctx.name,
                    "uid": ctx.obj["metadata"].get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": spec.min_ready_seconds or 0,
            "selector": selector,
            "template": {
                **template,
                "metadata": {**(template.get("metadata") or {}), "labels": labels},
            },
        },
    }
    affinity = desired_affinity(ctx)
    if affinity is not None:
        pod_spec = body["spec"]["template"].get("spec") or {}
        body["spec"]["template"]["spec"] = {**pod_spec, "affinity": affinity}
    new_role, stable_role = podmetadata.role_metadata(spec.strategy)
    body = podmetadata.apply_to_new_rs(body, new_role if ctx.stable_rs is not None else stable_role)
    try:
        created = ctx.writer.create(r.REPLICASETS, ctx.namespace, body)
    except AlreadyExists:
        existing = next((rs for rs in ctx.all_rss if rsutil.name(rs) == name), None)
        owner = ((existing or {}).get("metadata") or {}).get("ownerReferences") or []
        ours = any(
            o.get("controller") and o.get("uid") == ctx.obj["metadata"].get("uid") for o in owner
        )
        if (
            existing is not None
            and ours
            and rsutil.template_equal_ignoring_hash(
                rsutil.comparable_template(existing, ctx.obj), template
            )
        ):
            ctx.new_rs = existing
            return existing
        bumped = (collisions or 0) + 1
        patch = fenced(
            {"status": {"collisionCount": bumped}}, ctx.obj["metadata"].get("resourceVersion")
        )
        ctx.writer.patch(r.ROLLOUTS, ctx.namespace, ctx.name, patch, status=True)
        log.warning("hash collision for %s: collisionCount %s -> %s", ctx.key, collisions, bumped)
        raise HashCollision(f"ReplicaSet {name} exists with another template") from None
    ctx.new_rs = created
    ctx.replaced_rs(None, created)
    set_rollout_revision(ctx, str(new_revision))
    ctx.event(c.NEW_REPLICASET_REASON, c.NEW_REPLICASET_DETAILED_MESSAGE.format(name, new_revision))
    message = c.NEW_REPLICASET_MESSAGE.format(name)
    c.set_condition(ctx.status, _cond(ctx, T.PROGRESSING, S.TRUE, c.NEW_REPLICASET_REASON, message))
    return created


def ensure_new_rs(ctx: RolloutContext, *, create: bool) -> None:
    """getAllReplicaSetsAndSyncRevision: sync the new ReplicaSet, creating it if asked."""
    sync_revision(ctx)
    if ctx.new_rs is None and create:
        create_desired_rs(ctx)


# -- scaling ------------------------------------------------------------------------------------


def write_rs(ctx: RolloutContext, rs: Obj, patch: Obj) -> Obj:
    written = rsutil.patch(ctx.writer, ctx.namespace, rs, patch)
    ctx.replaced_rs(rs, written)
    return written


def scale_rs(ctx: RolloutContext, rs: Obj, new_scale: int, *, keep_deadline: bool = False) -> bool:
    """Scale a ReplicaSet (and refresh its desired-replicas annotation); True if it scaled.

    A full scale-down drops the scale-down deadline (its window is over) unless `keep_deadline`:
    the aborted new ReplicaSet keeps it, as the record that its abort window has run out.
    """
    old_scale = rsutil.spec_replicas(rs)
    size_changed = old_scale != new_scale
    if not size_changed and not ann.replicas_annotation_needs_update(rs, ctx.replicas):
        return False
    annotations: Obj = {ann.DESIRED_REPLICAS: str(ctx.replicas)}
    if new_scale == 0 and not keep_deadline and ann.SCALE_DOWN_DEADLINE in ann.annotations_of(rs):
        annotations[ann.SCALE_DOWN_DEADLINE] = None
    written = write_rs(
        ctx, rs, {"metadata": {"annotations": annotations}, "spec": {"replicas": new_scale}}
    )
    if size_changed:
        direction = "up" if new_scale > old_scale else "down"
        ctx.event(
            c.SCALING_REPLICASET_REASON,
            c.SCALING_REPLICASET_MESSAGE.format(
                direction, rsutil.name(written), ann.revision(written), old_scale, new_scale
            ),
        )
    return size_changed


def is_scaling_event(ctx: RolloutContext) -> bool:
    """The rollout's replicas changed: some active ReplicaSet records another desired count."""
    for rs in ctx.all_rss:
        if rsutil.spec_replicas(rs) <= 0:
            continue
        desired = ann.desired_replicas(rs)
        if desired is not None and desired != ctx.replicas:
            return True
    return False


def cleanup_old_rss(ctx: RolloutContext, old: list[Obj]) -> None:
    """Delete old ReplicaSets beyond revisionHistoryLimit (only fully scaled-down ones)."""
    limit = ctx.rollout.spec.revision_history_limit
    limit = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else limit
    alive = [rs for rs in old if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    excess = len(alive) - limit
    for rs in rsutil.by_creation(alive)[: max(0, excess)]:
        meta = rs.get("metadata") or {}
        observed = int((rs.get("status") or {}).get("observedGeneration") or 0)
        if (
            rsutil.status_count(rs, "replicas") != 0
            or rsutil.spec_replicas(rs) != 0
            or int(meta.get("generation") or 0) > observed
        ):
            continue
        log.info(
            "deleting old ReplicaSet %s of %s (revisionHistoryLimit %d)",
            meta["name"],
            ctx.key,
            limit,
        )
        ctx.writer.delete(r.REPLICASETS, ctx.namespace, str(meta["name"]))


# -- conditions and status ----------------------------------------------------------------------


def check_paused_conditions(ctx: RolloutContext) -> None:
    """Keep the Progressing and Paused conditions in step with pauses and aborts."""
    status = ctx.rollout.status or RolloutStatus()
    progressing = c.get_condition(status, T.PROGRESSING)
    progressing_paused = progressing is not None and progressing.reason == c.ROLLOUT_PAUSED_REASON
    paused = bool(status.pause_conditions) or bool(ctx.rollout.spec.paused)
    updates = []
    if paused and not progressing_paused:
        updates.append(
            _cond(ctx, T.PROGRESSING, S.UNKNOWN, c.ROLLOUT_PAUSED_REASON, c.ROLLOUT_PAUSED_MESSAGE)
        )
    elif not paused and progressing_paused:
        updates.append(
            _cond(
                ctx, T.PROGRESSING, S.UNKNOWN, c.ROLLOUT_RESUMED_REASON, c.ROLLOUT_RESUMED_MESSAGE
            )
        )
    aborted_condition = progressing is not None and progressing.reason == c.ROLLOUT_ABORTED_REASON
    if not status.abort and aborted_condition:
        updates.append(
            _cond(ctx, T.PROGRESSING, S.UNKNOWN, c.ROLLOUT_RETRY_REASON, c.ROLLOUT_RETRY_MESSAGE)
        )
    pause_cond = c.get_condition(status, T.PAUSED)
    pause_true = pause_cond is not None and pause_cond.status == S.TRUE
    if paused != pause_true and not aborted_condition:
        updates.append(
            _cond(
                ctx,
                T.PAUSED,
                S.TRUE if paused else S.FALSE,
                c.ROLLOUT_PAUSED_REASON,
                c.ROLLOUT_PAUSED_MESSAGE,
            )
        )
    for condition in updates:
        c.set_condition(ctx.status, condition)


def calculate_base_status(ctx: RolloutContext) -> RolloutStatus:
    new = ctx.new_status.model_copy(deep=True)
    if ctx.new_rs is not None:
        new.current_pod_hash = rsutil.pod_hash(ctx.new_rs)
    else:
        new.current_pod_hash = current_pod_hash(ctx)
    all_rss: list[Obj | None] = list(ctx.all_rss)
    new.replicas = rsutil.total(all_rss, "replicas")
    new.updated_replicas = rsutil.total([ctx.new_rs], "replicas")
    new.ready_replicas = rsutil.total(all_rss, "readyReplicas")
    new.collision_count = ctx.status.collision_count
    new.conditions = [cond.model_copy() for cond in ctx.status.conditions or []]
    new.restarted_at = ctx.new_status.restarted_at or ctx.status.restarted_at
    new.stable_rs = ctx.status.stable_rs
    new.promote_full = (
        (new.current_pod_hash != new.stable_rs) and bool(ctx.status.promote_full)
    ) or None
    return new


def rollout_healthy(ctx: RolloutContext, new: RolloutStatus) -> bool:
    replicas = ctx.replicas
    completed = True
    bluegreen, canary = ctx.blue_green, ctx.canary
    if bluegreen is not None:
        bg = new.blue_green
        active_done = bg is not None and bg.active_selector == new.current_pod_hash
        preview_done = not bluegreen.preview_service or (
            bg is not None and bg.preview_selector == new.current_pod_hash
        )
        completed = active_done and preview_done
    if canary is not None:
        steps = len(ctx.steps)
        all_steps = steps == 0 or new.current_step_index is None or new.current_step_index == steps
        stable_current = bool(new.stable_rs) and new.stable_rs == new.current_pod_hash
        completed = all_steps and stable_current and (new.replicas or 0) == replicas
    observed = (ctx.rollout.status.observed_generation if ctx.rollout.status else None) == str(
        ctx.obj["metadata"].get("generation", 0)
    )
    return (
        (new.updated_replicas or 0) == replicas
        and (new.available_replicas or 0) == replicas
        and observed
        and completed
    )


def rollout_progressing(ctx: RolloutContext, new: RolloutStatus) -> bool:
    old = ctx.rollout.status or RolloutStatus()
    specific = False
    if ctx.blue_green is not None:
        old_bg, new_bg = old.blue_green, new.blue_green
        specific = (old_bg.active_selector if old_bg else None) != (
            new_bg.active_selector if new_bg else None
        ) or (old_bg.preview_selector if old_bg else None) != (
            new_bg.preview_selector if new_bg else None
        )
    if ctx.canary is not None:
        index_changed = (
            new.current_step_index is not None
            and old.current_step_index is not None
            and new.current_step_index != old.current_step_index
        )
        specific = (
            (new.stable_rs or "") != (old.stable_rs or "")
            or index_changed
            or (new.current_step_hash or "") != (old.current_step_hash or "")
        )
    old_old = (old.replicas or 0) - (old.updated_replicas or 0)
    new_old = (new.replicas or 0) - (new.updated_replicas or 0)
    return (
        (new.updated_replicas or 0) != (old.updated_replicas or 0)
        or new_old < old_old
        or (new.ready_replicas or 0) > (old.ready_replicas or 0)
        or (new.available_replicas or 0) > (old.available_replicas or 0)
        or specific
    )


def _indefinite_step(ctx: RolloutContext) -> bool:
    step, _ = ctx.current_step()
    return step is not None and (
        step.experiment is not None or step.analysis is not None or step.pause is not None
    )


def progress_deadline(ctx: RolloutContext) -> int:
    value = ctx.rollout.spec.progress_deadline_seconds
    return DEFAULT_PROGRESS_DEADLINE if value is None else value


def rollout_timed_out(ctx: RolloutContext, new: RolloutStatus) -> bool:
    condition = c.get_condition(new, T.PROGRESSING)
    if condition is None or condition.reason == c.ROLLOUT_ABORTED_REASON:
        return False
    if condition.reason == c.TIMED_OUT_REASON:
        return True
    if not condition.last_update_time:
        return False
    deadline = parse_time(condition.last_update_time) + dt.timedelta(seconds=progress_deadline(ctx))
    return deadline < ctx.now


def calculate_conditions(ctx: RolloutContext, new: RolloutStatus) -> RolloutStatus:
    status = ctx.rollout.status or RolloutStatus()
    paused = bool(status.pause_conditions) or bool(ctx.rollout.spec.paused)
    aborted = ctx.pause.is_aborted()

    became_unhealthy = False
    healthy_before = c.get_condition(status, T.HEALTHY)
    if not paused and rollout_healthy(ctx, new):
        c.set_condition(
            new, _cond(ctx, T.HEALTHY, S.TRUE, c.ROLLOUT_HEALTHY_REASON, c.ROLLOUT_HEALTHY_MESSAGE)
        )
    elif healthy_before is not None:
        became_unhealthy = c.set_condition(
            new,
            _cond(ctx, T.HEALTHY, S.FALSE, c.ROLLOUT_HEALTHY_REASON, c.ROLLOUT_NOT_HEALTHY_MESSAGE),
        )

    revision = ann.revision(ctx.obj)
    if aborted:
        message = c.ROLLOUT_ABORTED_MESSAGE.format(revision)
        if ctx.pause.abort_message:
            message = f"{message}: {ctx.pause.abort_message}"
        if c.set_condition(
            new, _cond(ctx, T.PROGRESSING, S.FALSE, c.ROLLOUT_ABORTED_REASON, message)
        ):
            ctx.event(c.ROLLOUT_ABORTED_REASON, message, warning=True)

    current = c.get_condition(status, T.PROGRESSING)
    if not aborted:
        rs_name = rsutil.name(ctx.new_rs) if ctx.new_rs else ""
        if rollout_healthy(ctx, new):
            message = c.REPLICASET_COMPLETED_MESSAGE.format(rs_name)
            c.set_condition(
                new, _cond(ctx, T.PROGRESSING, S.TRUE, c.NEW_RS_AVAILABLE_REASON, message)
            )
        elif rollout_progressing(ctx, new) or became_unhealthy:
            message = (
                c.REPLICASET_PROGRESSING_MESSAGE.format(rs_name)
                if ctx.new_rs
                else c.ROLLOUT_PROGRESSING_MESSAGE.format(ctx.name)
            )
            reason = c.REPLICASET_UPDATED_REASON
            if new.stable_rs == new.current_pod_hash and became_unhealthy:
                reason, message = c.REPLICASET_NOT_AVAILABLE_REASON, c.NOT_AVAILABLE_MESSAGE
            condition = _cond(ctx, T.PROGRESSING, S.TRUE, reason, message)
            # Progress refreshes lastUpdateTime even with the same reason (the deadline restarts).
            if current is not None:
                if current.status == S.TRUE:
                    condition.last_transition_time = current.last_transition_time
                c.remove_condition(new, T.PROGRESSING)
            c.set_condition(new, condition)
        elif not _indefinite_step(ctx) and rollout_timed_out(ctx, new):
            message = (
                c.REPLICASET_TIMED_OUT_MESSAGE.format(rs_name)
                if ctx.new_rs
                else c.ROLLOUT_TIMED_OUT_MESSAGE.format(ctx.name)
            )
            changed = c.set_condition(
                new, _cond(ctx, T.PROGRESSING, S.FALSE, c.TIMED_OUT_REASON, message)
            )
            if ctx.rollout.spec.progress_deadline_abort and (changed or not ctx.pause.is_aborted()):
                ctx.pause.add_abort = True
                ctx.pause.abort_message = message
                ctx.event(c.ROLLOUT_ABORTED_REASON, message, warning=True)

    active_hash = new.blue_green.active_selector if new.blue_green else None
    active_rs = next(
        (rs for rs in ctx.all_rss if active_hash and rsutil.pod_hash(rs) == active_hash), None
    )
    available = (
        ctx.blue_green is not None and ann.is_saturated(rollout_replicas=ctx.replicas, rs=active_rs)
    ) or (
        ctx.canary is not None
        and rsutil.total(list(ctx.all_rss), "availableReplicas") >= ctx.replicas
    )
    if available:
        c.set_condition(
            new, _cond(ctx, T.AVAILABLE, S.TRUE, c.AVAILABLE_REASON, c.AVAILABLE_MESSAGE)
        )
    else:
        c.set_condition(
            new, _cond(ctx, T.AVAILABLE, S.FALSE, c.AVAILABLE_REASON, c.NOT_AVAILABLE_MESSAGE)
        )

    failure = replica_failure(ctx)
    if failure is not None:
        c.set_condition(new, failure)
    else:
        c.remove_condition(new, T.REPLICA_FAILURE)

    if new.stable_rs and new.stable_rs == new.current_pod_hash:
        c.set_condition(
            new,
            _cond(ctx, T.COMPLETED, S.TRUE, c.ROLLOUT_COMPLETED_REASON, c.ROLLOUT_COMPLETED_REASON),
        )
    elif c.set_condition(
        new,
        _cond(ctx, T.COMPLETED, S.FALSE, c.ROLLOUT_COMPLETED_REASON, c.ROLLOUT_COMPLETED_REASON),
    ):
        ctx.event(
            c.ROLLOUT_NOT_COMPLETED_REASON,
            c.ROLLOUT_NOT_COMPLETED_MESSAGE.format(revision + 1, new.current_pod_hash),
        )
    return new


def replica_failure(ctx: RolloutContext) -> Any:
    """A ReplicaFailure condition of the new ReplicaSet (or any), promoted onto the rollout."""
    for rs in [ctx.new_rs, *ctx.all_rss]:
        for cond in ((rs or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
                when = cond.get("lastTransitionTime") or ctx.now_text()
                return c.new_condition(
                    T.REPLICA_FAILURE,
                    S.TRUE,
                    str(cond.get("reason", "")),
                    str(cond.get("message", "")),
                    now=when,
                )
    return None


#: Status fields that describe what was observed and decide nothing a later reconcile does
#: differently: a status patch of only these is settled (the reconcile its watch event would
#: bring finds nothing to do), and its event does not queue the rollout again. Every other
#: field (step index, pause and abort state, stable and current hashes, analysis and experiment
#: references, observedGeneration, selectors) takes the next step on that reconcile, as in Argo.
SETTLED_STATUS = frozenset(
    {
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "HPAReplicas",
        "conditions",
        "phase",
        "message",
    }
)


def persist_status(ctx: RolloutContext, new: RolloutStatus) -> None:
    """Send the one status patch of this reconcile (nothing when nothing changed)."""
    previous = ctx.rollout.status or RolloutStatus()
    calculate_pause_status(ctx.pause, new, ctx.now)
    new.observed_generation = str(ctx.obj["metadata"].get("generation", 0))
    # Argo: the generation of the referenced workload this status describes ("" without one).
    resolved = ctx.workload_ref
    new.workload_observed_generation = resolved.generation if resolved is not None else None
    phase, message = calculate_phase(ctx.rollout.spec, new)
    new.phase, new.message = phase, message or None
    ctx.persisted = new
    old_json, new_json = normalize(previous), normalize(new)
    patch = merge_patch(old_json, new_json)
    # The progress deadline's check does not rest on the watch event of a write (Argo's does).
    requeue_stuck_rollout(ctx, new)
    if not patch:
        return
    body = fenced({"status": patch}, ctx.obj["metadata"].get("resourceVersion"))
    written = ctx.writer.patch(r.ROLLOUTS, ctx.namespace, ctx.name, body, status=True)
    ctx.replaced_rollout(written, settled=set(patch) <= SETTLED_STATUS)
    log.info("patched status of %s: %s", ctx.key, patch)
    was_paused, now_paused = bool(previous.pause_conditions), bool(new.pause_conditions)
    if was_paused != now_paused:
        if now_paused:
            reason = new.pause_conditions[0].reason if new.pause_conditions else ""
            ctx.event(c.ROLLOUT_PAUSED_REASON, f"{c.ROLLOUT_PAUSED_MESSAGE} ({reason})")
        elif not new.abort:
            ctx.event(c.ROLLOUT_RESUMED_REASON, c.ROLLOUT_RESUMED_MESSAGE)


def requeue_stuck_rollout(ctx: RolloutContext, status: RolloutStatus) -> None:
    """Come back when the progress deadline of the status being persisted would pass."""
    current = c.get_condition(status, T.PROGRESSING)
    if current is None or not current.last_update_time:
        return
    paused = bool(status.pause_conditions) or bool(ctx.rollout.spec.paused)
    if (
        rollout_healthy(ctx, status)
        or current.reason == c.TIMED_OUT_REASON
        or paused
        or status.abort
        or _indefinite_step(ctx)
    ):
        return
    deadline = parse_time(current.last_update_time) + dt.timedelta(seconds=progress_deadline(ctx))
    ctx.requeue(max(1.0, (deadline - ctx.now).total_seconds()))
