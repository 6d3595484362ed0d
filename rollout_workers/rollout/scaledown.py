"""Scale-down deadlines: the `scale-down-deadline` annotation on a ReplicaSet that stays up for a
while after it stopped receiving traffic (scaleDownDelaySeconds after a promotion,
abortScaleDownDelaySeconds after an abort). The expiry is a workqueue timer (`ctx.requeue`),
never a sleeping worker. Shared by the blue-green and the canary strategies, with the first
step of every old-ReplicaSet scale-down (`cleanup_unhealthy`).
"""

from __future__ import annotations

import datetime as dt
import logging

from rollout_workers.api.rollout import BlueGreenStrategy, CanaryStrategy
from rollout_workers.objects import Obj
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout import sync
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.timefmt import format_time, parse_time

log = logging.getLogger(__name__)

DEFAULT_SCALE_DOWN_DELAY = 30
DEFAULT_ABORT_SCALE_DOWN_DELAY = 30


def scale_down_delay(strategy: BlueGreenStrategy | CanaryStrategy) -> int:
    """scaleDownDelaySeconds: how long the previous stable stays up after a promotion."""
    value = strategy.scale_down_delay_seconds
    return DEFAULT_SCALE_DOWN_DELAY if value is None else int(value)


def abort_scale_down_delay(strategy: BlueGreenStrategy | CanaryStrategy) -> int | None:
    """abortScaleDownDelaySeconds: how long the new ReplicaSet stays up after an abort; None
    for an explicit 0, which each strategy reads as Argo does (blue-green scales it down at
    once, a traffic-routed canary keeps it)."""
    value = strategy.abort_scale_down_delay_seconds
    seconds = DEFAULT_ABORT_SCALE_DOWN_DELAY if value is None else int(value)
    return seconds or None


def has_deadline(rs: Obj | None) -> bool:
    return rs is not None and ann.SCALE_DOWN_DEADLINE in ann.annotations_of(rs)


def deadline_of(ctx: RolloutContext, rs: Obj) -> dt.datetime | None:
    """The ReplicaSet's scale-down deadline; None when absent or unreadable (logged)."""
    text = ann.annotations_of(rs).get(ann.SCALE_DOWN_DEADLINE)
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        log.warning("%s: unreadable scale-down deadline on %s", ctx.key, rsutil.name(rs))
        return None


def add_scale_down_delay(ctx: RolloutContext, rs: Obj | None, seconds: int) -> None:
    if rs is None:
        return
    deadline = format_time(ctx.now + dt.timedelta(seconds=seconds))
    sync.write_rs(ctx, rs, {"metadata": {"annotations": {ann.SCALE_DOWN_DEADLINE: deadline}}})
    ctx.requeue(seconds)
    log.info("%s: %s scales down at %s", ctx.key, rsutil.name(rs), deadline)


def remove_scale_down_delay(ctx: RolloutContext, rs: Obj) -> None:
    sync.write_rs(ctx, rs, {"metadata": {"annotations": {ann.SCALE_DOWN_DEADLINE: None}}})


def cleanup_unhealthy(ctx: RolloutContext, rss: list[Obj]) -> bool:
    """Scale older ReplicaSets down to their available pods first: their unready pods serve
    nothing, so removing them costs no availability and unblocks the rollout."""
    scaled = False
    for rs in rsutil.by_creation(rss):
        current = ctx.replaced(rs)
        replicas, available = (
            rsutil.spec_replicas(current),
            rsutil.status_count(current, "availableReplicas"),
        )
        if replicas > 0 and replicas != available and available < replicas:
            scaled = sync.scale_rs(ctx, current, available) or scaled
    return scaled
