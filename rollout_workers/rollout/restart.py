"""The pod restarter: `spec.restartAt` (what `kubectl argo rollouts restart` sets).

Mirrors argo-rollouts' rollout/restart.go (`RolloutPodRestarter.Reconcile`):

- restartAt unset, or in the future: nothing to restart. A future restartAt asks for a look again
  at that time (Argo's `checkEnqueueRollout`; Argo only enqueues when it falls before the next
  resync, we always ask, the earliest requeue wins anyway).
- Needs a restart when `now` is after restartAt and status.restartedAt is not the same instant
  (`replicaset.NeedsRestart`).
- The rollout's pods (those owned by its ReplicaSets) are listed from the API: pods are not in the
  shared cache. Every pod created before restartAt needs a restart. How many may go at once is
  Argo's availability budget:

      concurrent    = max(maxUnavailable, 1)        # maxUnavailable 0 must still make progress
      minAvailable  = max(spec.replicas, sum of ReplicaSet spec.replicas) - concurrent
      canRestart    = available pods - minAvailable

  where a pod is available when Ready (for minReadySeconds) and not being deleted. Old pods are
  deleted while canRestart > 0; an old pod already being deleted is skipped but still counts as
  needing a restart.
- If any old pod is left (not deleted by this pass), look again in 30 seconds
  (`restartPodCheckTime`: deleting pods does not always change a ReplicaSet's counts, so no watch
  event is guaranteed to bring the rollout back). Otherwise status.restartedAt = spec.restartAt.

Argo sends no event for restarts; neither does this module.

Differences from Argo, because of how this project works:
- Pods are deleted (`Writer.delete`), not evicted: PodDisruptionBudgets are not consulted.
- Pods are listed per ReplicaSet (its selector, then its controller ownerReference), in Argo's
  priority order (stable, new, then older by creation), so old pods are deleted in that order.
  Argo lists once by the rollout's selector, so its order is the API's.
- ReplicaSets scaled to zero are not listed: their pods are on their way out.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from rollout_workers.kube.resources import PODS
from rollout_workers.objects import Obj
from rollout_workers.rollout import replicas as rmath
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.pods import PodReader, replicaset_pods
from rollout_workers.timefmt import format_time, parse_time

log = logging.getLogger(__name__)


#: Seconds before looking again while old pods remain (Argo's `restartPodCheckTime`).
RESTART_POD_CHECK_SECONDS = 30.0


@dataclass(frozen=True)
class RestartBudget:
    """The numbers Argo logs when it reconciles pod restarts."""

    replicas: int
    total_replicas: int
    available: int
    max_unavailable: int
    min_available: int
    concurrent: int
    can_restart: int


# -- time --------------------------------------------------------------------------------------


def _time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = parse_time(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def restart_at(ctx: RolloutContext) -> dt.datetime | None:
    """spec.restartAt as a time (None when unset or unreadable)."""
    return _time(ctx.rollout.spec.restart_at)


def needs_restart(ctx: RolloutContext) -> bool:
    """restartAt has passed and status.restartedAt is not the same instant (`NeedsRestart`)."""
    at = restart_at(ctx)
    if at is None:
        return False
    restarted = _time(ctx.rollout.status.restarted_at if ctx.rollout.status else None)
    if restarted is not None and restarted == at:
        return False
    return ctx.now > at


def set_restarted_at(ctx: RolloutContext) -> None:
    """status.restartedAt = spec.restartAt, verbatim (Argo's `SetRestartedAt`)."""
    ctx.new_status.restarted_at = ctx.rollout.spec.restart_at


# -- ReplicaSets and pods ----------------------------------------------------------------------


def by_priority(ctx: RolloutContext) -> list[Obj]:
    """The rollout's ReplicaSets: stable, then new, then the rest oldest first
    (`SortReplicaSetsByPriority`)."""
    stable = rsutil.name(ctx.stable_rs) if ctx.stable_rs is not None else None
    new = rsutil.name(ctx.new_rs) if ctx.new_rs is not None else None

    def rank(rs: Obj) -> int:
        name = rsutil.name(rs)
        return 0 if name == stable else 1 if name == new else 2

    return sorted(rsutil.by_creation(ctx.all_rss), key=rank)


def rollout_pods(ctx: RolloutContext, pods: PodReader) -> list[Obj]:
    """The pods of the rollout's ReplicaSets that have replicas, in ReplicaSet priority order."""
    found: list[Obj] = []
    seen: set[str] = set()
    for rs in by_priority(ctx):
        if rsutil.spec_replicas(rs) <= 0:
            continue
        for pod in replicaset_pods(rs, pods, namespace=ctx.namespace):
            pod_name = str((pod.get("metadata") or {}).get("name", ""))
            if pod_name in seen:
                continue
            seen.add(pod_name)
            found.append(pod)
    return found


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_available(pod: Obj, min_ready_seconds: int, now: dt.datetime) -> bool:
    """Ready, for longer than minReadySeconds (`podutil.IsPodAvailable`)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return False
    if min_ready_seconds == 0:
        return True
    since = _time(ready.get("lastTransitionTime"))
    return since is not None and since + dt.timedelta(seconds=min_ready_seconds) < now


def available_pods(pods: list[Obj], min_ready_seconds: int, now: dt.datetime) -> int:
    """Available pods not being deleted (`getAvailablePodCount`)."""
    return sum(
        1 for pod in pods if pod_available(pod, min_ready_seconds, now) and not _terminating(pod)
    )


def created_before(pod: Obj, at: dt.datetime) -> bool:
    """Created strictly before `at` (a pod without a creationTimestamp counts as old)."""
    created = _time((pod.get("metadata") or {}).get("creationTimestamp"))
    return created is None or created < at


# -- the budget --------------------------------------------------------------------------------


def max_unavailable(ctx: RolloutContext) -> int:
    """The strategy's maxUnavailable in pods (`replicaset.MaxUnavailable`); 0 when unparsable."""
    canary, blue_green = ctx.canary, ctx.blue_green
    try:
        return rmath.calculate_max_unavailable(
            rollout_replicas=ctx.replicas,
            max_surge=canary.max_surge if canary is not None else None,
            max_unavailable=(
                canary.max_unavailable
                if canary is not None
                else blue_green.max_unavailable
                if blue_green is not None
                else None
            ),
            blue_green=canary is None,
        )
    except (TypeError, ValueError):  # Argo ignores the error: validation rejects such specs
        return 0


def restart_budget(ctx: RolloutContext, pods: list[Obj]) -> RestartBudget:
    replicas = ctx.replicas
    total = rsutil.total_spec_replicas(ctx.all_rss)
    available = available_pods(pods, ctx.rollout.spec.min_ready_seconds or 0, ctx.now)
    unavailable = max_unavailable(ctx)
    concurrent = max(unavailable, 1)
    # The larger of the two: a canary weight that does not divide spec.replicas runs more pods.
    min_available = max(replicas, total) - concurrent
    return RestartBudget(
        replicas=replicas,
        total_replicas=total,
        available=available,
        max_unavailable=unavailable,
        min_available=min_available,
        concurrent=concurrent,
        can_restart=available - min_available,
    )


# -- the reconcile -----------------------------------------------------------------------------


def reconcile_restart(ctx: RolloutContext, pods: PodReader | None = None) -> int:
    """Restart the pods created before spec.restartAt, within the availability budget.

    `pods` defaults to the context's reader; without one (a recording writer in another
    script's unit test) the restart is left for later. Returns how many pods
    were deleted. Sets `ctx.new_status.restarted_at` once no old pod is left; requeues at
    restartAt while it is in the future, and 30 seconds after a pass that leaves old pods.
    Errors listing or deleting pods propagate (the reconcile fails and is retried).
    """
    at = restart_at(ctx)
    if at is not None and ctx.now <= at:
        remaining = (at - ctx.now).total_seconds()
        log.info("%s: enqueueing rollout in %.0fs for restart", ctx.key, remaining)
        ctx.requeue(remaining)
    if at is None or not needs_restart(ctx):
        return 0
    pods = pods or ctx.pods
    if pods is None:
        log.warning("%s: restart due but no pod reader: pods not restarted", ctx.key)
        return 0

    found = rollout_pods(ctx, pods)
    budget = restart_budget(ctx, found)
    log.info(
        "%s: reconcile pod restart (replicas:%d, totalReplicas:%d, available:%d, "
        "maxUnavailable:%d, effectiveMinAvailable:%d, concurrentRestart:%d, canRestart:%d)",
        ctx.key,
        budget.replicas,
        budget.total_replicas,
        budget.available,
        budget.max_unavailable,
        budget.min_available,
        budget.concurrent,
        budget.can_restart,
    )

    can_restart = budget.can_restart
    needs, restarted = 0, 0
    for pod in found:
        if not created_before(pod, at):
            continue
        needs += 1
        if can_restart <= 0 or _terminating(pod):
            continue
        meta = pod.get("metadata") or {}
        log.info(
            "%s: restarting pod %s created at %s, before restartAt %s",
            ctx.key,
            meta.get("name"),
            meta.get("creationTimestamp"),
            format_time(at),
        )
        ctx.writer.delete(PODS, str(meta.get("namespace") or ctx.namespace), str(meta["name"]))
        can_restart -= 1
        restarted += 1

    if needs - restarted:
        log.info(
            "%s: %d/%d pods require restart, restarted %d, retrying in %.0fs",
            ctx.key,
            needs,
            len(found),
            restarted,
            RESTART_POD_CHECK_SECONDS,
        )
        ctx.requeue(RESTART_POD_CHECK_SECONDS)
    else:
        log.info("%s: all %d pods are current, setting restartedAt", ctx.key, len(found))
        set_restarted_at(ctx)
    return restarted
