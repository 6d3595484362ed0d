"""The phase and message a rollout reports (Healthy, Progressing, Paused, Degraded), computed
from spec and status exactly as Argo Rollouts does, so `kubectl argo rollouts` and Argo CD read
the same verdict from this controller."""

from __future__ import annotations

from rollout_workers.api.rollout import (
    CanaryStep,
    RolloutConditionType,
    RolloutPhase,
    RolloutSpec,
    RolloutStatus,
)
from rollout_workers.rollout import conditions as c
from rollout_workers.timefmt import duration_seconds


def replicas_or_default(spec: RolloutSpec) -> int:
    return 1 if spec.replicas is None else spec.replicas


def is_fully_promoted(status: RolloutStatus) -> bool:
    return (status.stable_rs or "") == (status.current_pod_hash or "")


def calculate_phase(spec: RolloutSpec, status: RolloutStatus) -> tuple[RolloutPhase, str]:
    for cond in status.conditions or []:
        if cond.type == RolloutConditionType.INVALID_SPEC:
            return RolloutPhase.DEGRADED, f"InvalidSpec: {cond.message or ''}"
        if cond.reason in (c.ROLLOUT_ABORTED_REASON, c.TIMED_OUT_REASON):
            return RolloutPhase.DEGRADED, f"{cond.reason}: {cond.message or ''}"
    if spec.paused:
        return RolloutPhase.PAUSED, "manually paused"
    for pause in status.pause_conditions or []:
        return RolloutPhase.PAUSED, str(pause.reason)
    if spec.restart_at and spec.restart_at != status.restarted_at:
        return RolloutPhase.PROGRESSING, "rollout is restarting"
    updated = status.updated_replicas or 0
    if updated < replicas_or_default(spec):
        return RolloutPhase.PROGRESSING, "more replicas need to be updated"
    if (status.available_replicas or 0) < updated:
        return RolloutPhase.PROGRESSING, "updated replicas are still becoming available"
    strategy = spec.strategy
    if strategy is not None and strategy.blue_green is not None:
        active = status.blue_green.active_selector if status.blue_green else None
        if not active or active != status.current_pod_hash:
            return RolloutPhase.PROGRESSING, "active service cutover pending"
        if not status.stable_rs or not is_fully_promoted(status):
            post = (
                status.blue_green.post_promotion_analysis_run_status if status.blue_green else None
            )
            if strategy.blue_green.post_promotion_analysis is not None and (
                post is None or not post.status.completed
            ):
                return RolloutPhase.PROGRESSING, "waiting for analysis to complete"
            return RolloutPhase.PROGRESSING, "waiting for post-promotion verification to complete"
    elif strategy is not None and strategy.canary is not None:
        if strategy.canary.traffic_routing is None and (status.replicas or 0) > updated:
            return RolloutPhase.PROGRESSING, "old replicas are pending termination"
        if not status.stable_rs or not is_fully_promoted(status):
            return RolloutPhase.PROGRESSING, "waiting for all steps to complete"
    return RolloutPhase.HEALTHY, ""


def canary_step_string(step: CanaryStep) -> str:
    if step.set_weight is not None:
        return f"setWeight: {step.set_weight}"
    if step.pause is not None:
        if step.pause.duration is None:
            return "pause"
        seconds = duration_seconds(step.pause.duration)
        return f"pause: {go_duration(seconds) if seconds is not None else step.pause.duration}"
    if step.experiment is not None:
        return "experiment"
    if step.analysis is not None:
        return "analysis"
    if step.plugin is not None:
        return f"plugin: {step.plugin.name}"
    scale = step.set_canary_scale
    if scale is not None:
        if scale.weight is not None:
            return f"setCanaryScale{{weight: {scale.weight}}}"
        if scale.match_traffic_weight:
            return "setCanaryScale{matchTrafficWeight: true}"
        if scale.replicas is not None:
            return f"setCanaryScale{{replicas: {scale.replicas}}}"
    return "invalid"


def go_duration(seconds: int) -> str:
    """Seconds as Go's time.Duration.String() prints them (e.g. 1m30s, 1h0m0s, 0s)."""
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
