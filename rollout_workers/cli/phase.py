"""A rollout's phase and message as the plugin shows them, and where a canary is in its steps.

`status`, `list`, `get` and `promote` all read these, so they live apart from any one command.
The rules follow the plugin's `info` package: the controller's `status.phase`/`status.message`
once it has observed the spec, else the client-side fallback computed from the status fields.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.cli.fields import annotations_of, parse_time, to_int, value_at
from rollout_workers.objects import Obj
from rollout_workers.rollout.conditions import ROLLOUT_ABORTED_REASON, TIMED_OUT_REASON

WORKLOAD_GENERATION_ANNOTATION = "rollout.argoproj.io/workload-generation"

#: Phases after which `status --watch` and `get rollout --watch --timeout` stop waiting.
FINAL_PHASES = frozenset({"Healthy", "Degraded"})


def canary_of(ro: Obj) -> Obj | None:
    value = value_at(ro, "spec", "strategy", "canary")
    return value if isinstance(value, dict) else None


def blue_green_of(ro: Obj) -> Obj | None:
    value = value_at(ro, "spec", "strategy", "blueGreen")
    return value if isinstance(value, dict) else None


def desired_replicas(ro: Obj) -> int:
    replicas = value_at(ro, "spec", "replicas")
    return 1 if replicas is None else to_int(replicas, 1)


def current_canary_step(ro: Obj) -> tuple[Obj | None, int | None]:
    """The step the rollout is at and its index; no step past the last one, and no index
    without steps."""
    steps = (canary_of(ro) or {}).get("steps") or []
    if not steps:
        return None, None
    index = to_int(value_at(ro, "status", "currentStepIndex"), 0)
    if index >= len(steps):
        return None, index
    step = steps[index]
    return (step if isinstance(step, dict) else {}), index


def current_set_weight(ro: Obj) -> int:
    """The weight of the last setWeight step at or before the current one (desired, not
    actual): 0 when aborted or before any setWeight, 100 past the last step."""
    if value_at(ro, "status", "abort"):
        return 0
    step, index = current_canary_step(ro)
    if step is None or index is None:
        return 100
    steps = (canary_of(ro) or {}).get("steps") or []
    for i in range(index, -1, -1):
        weight = value_at(steps[i], "setWeight")
        if weight is not None:
            return to_int(weight)
    return 0


def step_text(ro: Obj) -> str:
    """`index/steps` of a canary with steps and a current step index, else empty."""
    steps = (canary_of(ro) or {}).get("steps") or []
    index = value_at(ro, "status", "currentStepIndex")
    if index is None or not steps:
        return ""
    return f"{to_int(index)}/{len(steps)}"


def _generation_observed(ro: Obj) -> bool:
    observed = value_at(ro, "status", "observedGeneration")
    try:
        observed_int = int(observed)
    except (TypeError, ValueError):
        return True  # absent, or an old-style hash: nothing to compare
    return observed_int >= to_int(value_at(ro, "metadata", "generation"), 0)


def _workload_generation_observed(ro: Obj) -> bool:
    wanted = annotations_of(ro).get(WORKLOAD_GENERATION_ANNOTATION)
    observed = value_at(ro, "status", "workloadObservedGeneration")
    try:
        return int(str(observed)) == int(str(wanted))
    except ValueError:
        return True


def _analysis_completed(phase: Any) -> bool:
    return phase in ("Successful", "Failed", "Error", "Inconclusive")


def calculate_rollout_phase(ro: Obj) -> tuple[str, str]:
    """Phase and message to show: the controller's, once it has seen the current spec and any
    unpause; before that `Progressing` with what it waits for; without a phase in the status
    (an old controller), computed from the status fields."""
    status = value_at(ro, "status") or {}
    if not _generation_observed(ro):
        return "Progressing", "waiting for rollout spec update to be observed"
    if status.get("controllerPause") and not status.get("pauseConditions"):
        return "Progressing", "waiting for rollout to unpause"
    if value_at(ro, "spec", "templateResolvedFromRef") and not _workload_generation_observed(ro):
        return (
            "Progressing",
            "waiting for rollout spec update to be observed for the reference workload",
        )
    if status.get("phase"):
        return str(status["phase"]), str(status.get("message") or "")
    return calculate_phase_from_status(ro)


def calculate_phase_from_status(ro: Obj) -> tuple[str, str]:
    """The client-side phase of rollouts whose controller does not write `status.phase`."""
    spec = value_at(ro, "spec") or {}
    status = value_at(ro, "status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "InvalidSpec":
            return "Degraded", f"InvalidSpec: {cond.get('message', '')}"
        if cond.get("reason") in (ROLLOUT_ABORTED_REASON, TIMED_OUT_REASON):
            return "Degraded", f"{cond['reason']}: {cond.get('message', '')}"
    if spec.get("paused"):
        return "Paused", "manually paused"
    for pause in status.get("pauseConditions") or []:
        return "Paused", str(pause.get("reason", ""))
    restart_at = parse_time(spec.get("restartAt"))
    if restart_at is not None and restart_at != parse_time(status.get("restartedAt")):
        return "Progressing", "rollout is restarting"
    updated = to_int(status.get("updatedReplicas"))
    available = to_int(status.get("availableReplicas"))
    if updated < desired_replicas(ro):
        return "Progressing", "more replicas need to be updated"
    if available < updated:
        return "Progressing", "updated replicas are still becoming available"
    fully_promoted = status.get("stableRS", "") == status.get("currentPodHash", "")
    blue_green, canary = blue_green_of(ro), canary_of(ro)
    if blue_green is not None:
        active = value_at(status, "blueGreen", "activeSelector") or ""
        if not active or active != status.get("currentPodHash", ""):
            return "Progressing", "active service cutover pending"
        if not status.get("stableRS") or not fully_promoted:
            post = value_at(status, "blueGreen", "postPromotionAnalysisRunStatus", "status")
            if blue_green.get("postPromotionAnalysis") is not None and not _analysis_completed(
                post
            ):
                return "Progressing", "waiting for analysis to complete"
            return "Progressing", "waiting for post-promotion verification to complete"
    elif canary is not None:
        if canary.get("trafficRouting") is None and to_int(status.get("replicas")) > updated:
            return "Progressing", "old replicas are pending termination"
        if not status.get("stableRS") or not fully_promoted:
            return "Progressing", "waiting for all steps to complete"
    return "Healthy", ""
