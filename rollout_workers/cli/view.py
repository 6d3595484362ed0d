"""What `rollouts get rollout` and `rollouts list rollouts` show, computed from API objects.

The Argo Rollouts kubectl plugin and this CLI must show the same thing for the same objects, so
the rules here follow the plugin's `info` package: the phase and message (the controller's
`status.phase`/`status.message` once it has observed the spec, else the client-side fallback),
which ReplicaSet is stable, canary, active or preview, the pod status strings, the tree layout
and the icons. Everything is pure: objects in, dataclasses and text out; the clock is a
parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rollout_workers.kube.resources import POD_TEMPLATE_HASH_LABEL
from rollout_workers.objects import Obj
from rollout_workers.rollout.annotations import REVISION
from rollout_workers.rollout.conditions import ROLLOUT_ABORTED_REASON, TIMED_OUT_REASON
from rollout_workers.timefmt import duration_seconds, human_duration

ICON_WAITING = "◷"
ICON_PROGRESSING = "◌"
ICON_WARNING = "⚠"
ICON_UNKNOWN = "?"
ICON_OK = "✔"
ICON_BAD = "✖"
ICON_PAUSED = "॥"
ICON_NEUTRAL = "•"

ICON_ROLLOUT = "⟳"
ICON_REVISION = "#"
ICON_REPLICASET = "⧉"
ICON_POD = "□"
ICON_JOB = "⊞"
ICON_EXPERIMENT = "Σ"
ICON_ANALYSIS = "\u03b1"  # Greek alpha, as the plugin

TAG_CANARY = "canary"
TAG_STABLE = "stable"
TAG_ACTIVE = "active"
TAG_PREVIEW = "preview"
TAG_PING = "ping"
TAG_PONG = "pong"

EXPERIMENT_TEMPLATE_ANNOTATION = "experiment.argoproj.io/template-name"
SCALE_DOWN_DEADLINE_ANNOTATION = "scale-down-deadline"
WORKLOAD_GENERATION_ANNOTATION = "rollout.argoproj.io/workload-generation"
JOB_NAME_KEY = "job-name"

#: Phases after which `get rollout --watch --timeout` stops waiting.
FINAL_PHASES = frozenset({"Healthy", "Degraded"})

_GREEN, _RED, _YELLOW, _HIBLUE = 32, 31, 33, 94
_COLORS: dict[str, int] = {
    ICON_WAITING: _YELLOW,
    ICON_PROGRESSING: _HIBLUE,
    ICON_WARNING: _RED,
    ICON_UNKNOWN: _YELLOW,
    ICON_OK: _GREEN,
    ICON_BAD: _RED,
    TAG_CANARY: _YELLOW,
    TAG_STABLE: _GREEN,
    TAG_ACTIVE: _GREEN,
    TAG_PREVIEW: _HIBLUE,
    TAG_PING: _HIBLUE,
    TAG_PONG: _HIBLUE,
    "Pending": _HIBLUE,
    "Running": _HIBLUE,
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# -- small readers over JSON objects ------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(_get(obj, "metadata", "annotations") or {})


def _revision(obj: Obj) -> int:
    return _int(_annotations(obj).get(REVISION), 0)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (`2024-05-01T10:00:00Z`), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _created(obj: Obj) -> datetime | None:
    return parse_time(_get(obj, "metadata", "creationTimestamp"))


def _owned_by(obj: Obj, uids: Iterable[str]) -> str | None:
    """The uid among `uids` that owns `obj`, if any (any owner reference, as the plugin)."""
    wanted = set(uids)
    for ref in _get(obj, "metadata", "ownerReferences") or []:
        uid = ref.get("uid") if isinstance(ref, dict) else None
        if uid in wanted:
            return str(uid)
    return None


def age(created: datetime | None, now: datetime) -> str:
    if created is None:
        return ""
    return human_duration((now - created).total_seconds())


# -- rollout phase -----------------------------------------------------------------------------


def _canary(ro: Obj) -> Obj | None:
    value = _get(ro, "spec", "strategy", "canary")
    return value if isinstance(value, dict) else None


def _blue_green(ro: Obj) -> Obj | None:
    value = _get(ro, "spec", "strategy", "blueGreen")
    return value if isinstance(value, dict) else None


def desired_replicas(ro: Obj) -> int:
    replicas = _get(ro, "spec", "replicas")
    return 1 if replicas is None else _int(replicas, 1)


def current_canary_step(ro: Obj) -> tuple[Obj | None, int | None]:
    """The step the rollout is at and its index; no step past the last one, and no index
    without steps."""
    steps = (_canary(ro) or {}).get("steps") or []
    if not steps:
        return None, None
    index = _int(_get(ro, "status", "currentStepIndex"), 0)
    if index >= len(steps):
        return None, index
    step = steps[index]
    return (step if isinstance(step, dict) else {}), index


def current_set_weight(ro: Obj) -> int:
    """The weight of the last setWeight step at or before the current one (desired, not
    actual): 0 when aborted or before any setWeight, 100 past the last step."""
    if _get(ro, "status", "abort"):
        return 0
    step, index = current_canary_step(ro)
    if step is None or index is None:
        return 100
    steps = (_canary(ro) or {}).get("steps") or []
    for i in range(index, -1, -1):
        weight = _get(steps[i], "setWeight")
        if weight is not None:
            return _int(weight)
    return 0


def _generation_observed(ro: Obj) -> bool:
    observed = _get(ro, "status", "observedGeneration")
    try:
        observed_int = int(observed)
    except (TypeError, ValueError):
        return True  # absent, or an old-style hash: nothing to compare
    return observed_int >= _int(_get(ro, "metadata", "generation"), 0)


def _workload_generation_observed(ro: Obj) -> bool:
    wanted = _annotations(ro).get(WORKLOAD_GENERATION_ANNOTATION)
    observed = _get(ro, "status", "workloadObservedGeneration")
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
    status = _get(ro, "status") or {}
    if not _generation_observed(ro):
        return "Progressing", "waiting for rollout spec update to be observed"
    if status.get("controllerPause") and not status.get("pauseConditions"):
        return "Progressing", "waiting for rollout to unpause"
    if _get(ro, "spec", "templateResolvedFromRef") and not _workload_generation_observed(ro):
        return (
            "Progressing",
            "waiting for rollout spec update to be observed for the reference workload",
        )
    if status.get("phase"):
        return str(status["phase"]), str(status.get("message") or "")
    return calculate_phase_from_status(ro)


def calculate_phase_from_status(ro: Obj) -> tuple[str, str]:
    """The client-side phase of rollouts whose controller does not write `status.phase`."""
    spec = _get(ro, "spec") or {}
    status = _get(ro, "status") or {}
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
    updated = _int(status.get("updatedReplicas"))
    available = _int(status.get("availableReplicas"))
    if updated < desired_replicas(ro):
        return "Progressing", "more replicas need to be updated"
    if available < updated:
        return "Progressing", "updated replicas are still becoming available"
    fully_promoted = status.get("stableRS", "") == status.get("currentPodHash", "")
    blue_green, canary = _blue_green(ro), _canary(ro)
    if blue_green is not None:
        active = _get(status, "blueGreen", "activeSelector") or ""
        if not active or active != status.get("currentPodHash", ""):
            return "Progressing", "active service cutover pending"
        if not status.get("stableRS") or not fully_promoted:
            post = _get(status, "blueGreen", "postPromotionAnalysisRunStatus", "status")
            if blue_green.get("postPromotionAnalysis") is not None and not _analysis_completed(
                post
            ):
                return "Progressing", "waiting for analysis to complete"
            return "Progressing", "waiting for post-promotion verification to complete"
    elif canary is not None:
        if canary.get("trafficRouting") is None and _int(status.get("replicas")) > updated:
            return "Progressing", "old replicas are pending termination"
        if not status.get("stableRS") or not fully_promoted:
            return "Progressing", "waiting for all steps to complete"
    return "Healthy", ""


def rollout_icon(phase: str) -> str:
    return {
        "Progressing": ICON_PROGRESSING,
        "Error": ICON_WARNING,
        "InvalidSpec": ICON_WARNING,
        "Paused": ICON_PAUSED,
        "Healthy": ICON_OK,
        "Degraded": ICON_BAD,
        "Unknown": ICON_UNKNOWN,
        "ScaledDown": ICON_NEUTRAL,
    }.get(phase, " ")


def analysis_icon(phase: str) -> str:
    return {
        "Successful": ICON_OK,
        "Inconclusive": ICON_UNKNOWN,
        "Failed": ICON_BAD,
        "Error": ICON_WARNING,
        "Running": ICON_PROGRESSING,
        "Pending": ICON_WAITING,
    }.get(phase, " ")


# -- the objects of the tree -------------------------------------------------------------------


@dataclass(frozen=True)
class PodInfo:
    name: str
    status: str
    icon: str
    ready: str
    restarts: int
    created: datetime | None


@dataclass
class ReplicaSetInfo:
    name: str
    uid: str
    revision: int
    status: str
    icon: str
    replicas: int
    available: int
    created: datetime | None
    images: list[str]
    template: str = ""
    scale_down_deadline: str = ""
    stable: bool = False
    canary: bool = False
    active: bool = False
    preview: bool = False
    ping: bool = False
    pong: bool = False
    pods: list[PodInfo] = field(default_factory=list)


@dataclass(frozen=True)
class JobInfo:
    name: str
    status: str
    icon: str
    created: datetime | None


@dataclass
class AnalysisRunInfo:
    name: str
    revision: int
    status: str
    icon: str
    created: datetime | None
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    error: int = 0
    jobs: list[JobInfo] = field(default_factory=list)


@dataclass
class ExperimentInfo:
    name: str
    revision: int
    status: str
    icon: str
    message: str
    created: datetime | None
    replica_sets: list[ReplicaSetInfo]
    analysis_runs: list[AnalysisRunInfo]
    namespace: str = ""


@dataclass
class RolloutInfo:
    name: str
    namespace: str
    created: datetime | None
    status: str
    message: str
    icon: str
    strategy: str
    step: str
    set_weight: str
    actual_weight: str
    desired: int
    current: int
    updated: int
    ready: int
    available: int
    replica_sets: list[ReplicaSetInfo]
    experiments: list[ExperimentInfo]
    analysis_runs: list[AnalysisRunInfo]
    workload_ref: str = ""  # `Kind/name` of spec.workloadRef, with its scaleDown mode


def replica_set_health(rs: Obj) -> str:
    spec_replicas = _get(rs, "spec", "replicas")
    available = _int(_get(rs, "status", "availableReplicas"))
    generation = _int(_get(rs, "metadata", "generation"))
    if generation > _int(_get(rs, "status", "observedGeneration")):
        return "Progressing"
    for cond in _get(rs, "status", "conditions") or []:
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
            return "ReplicaFailure"
    if spec_replicas is not None and available < _int(spec_replicas):
        return "Progressing"
    if spec_replicas is not None and _int(spec_replicas) == 0:
        return "ScaledDown"
    return "Healthy"


def _replica_set_icon(status: str) -> str:
    return {
        "Progressing": ICON_PROGRESSING,
        "Healthy": ICON_OK,
        "ReplicaFailure": ICON_BAD,
        "ScaledDown": ICON_NEUTRAL,
    }.get(status, " ")


def _terminated_reason(state: Obj, prefix: str) -> str:
    if state.get("reason"):
        return prefix + str(state["reason"])
    if _int(state.get("signal")):
        return f"{prefix}Signal:{_int(state.get('signal'))}"
    return f"{prefix}ExitCode:{_int(state.get('exitCode'))}"


def pod_info(pod: Obj) -> PodInfo:
    """A pod's status string (as `kubectl get pods` prints it), readiness and restarts."""
    spec = _get(pod, "spec") or {}
    status = _get(pod, "status") or {}
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or [])
    ready = 0
    restarts = 0
    reason = str(status.get("reason") or status.get("phase") or "")

    initializing = False
    for i, container in enumerate(status.get("initContainerStatuses") or []):
        restarts += _int(container.get("restartCount"))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and _int(terminated.get("exitCode")) == 0:
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
            initializing = True
        elif container.get("name") in sidecars and container.get("started"):
            if container.get("ready"):
                continue
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
            initializing = True
        else:
            reason = f"Init:{i}/{len(init_specs)}"
            initializing = True
        break

    if not initializing:
        restarts = 0
        running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += _int(container.get("restartCount"))
            state = container.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None:
                reason = _terminated_reason(terminated, "")
            elif container.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running"

    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"

    return PodInfo(
        name=str(_get(pod, "metadata", "name") or ""),
        status=reason,
        icon=pod_icon(reason),
        ready=f"{ready}/{total}",
        restarts=restarts,
        created=_created(pod),
    )


def pod_icon(status: str) -> str:
    if status.startswith("Init:"):
        return ICON_PROGRESSING
    if status.startswith(("Signal:", "ExitCode:")):
        return ICON_BAD
    if status.endswith("Error") or status.startswith("Err"):
        return ICON_WARNING
    return {
        "Pending": ICON_PROGRESSING,
        "Terminating": ICON_PROGRESSING,
        "ContainerCreating": ICON_PROGRESSING,
        "Running": ICON_OK,
        "Completed": ICON_OK,
        "Failed": ICON_BAD,
        "InvalidImageName": ICON_BAD,
        "CrashLoopBackOff": ICON_BAD,
        "ImagePullBackOff": ICON_WARNING,
        "RegistryUnavailable": ICON_WARNING,
        "Unknown": ICON_UNKNOWN,
    }.get(status, " ")


def replica_set_infos(
    owner_uid: str, ro: Obj | None, replica_sets: Sequence[Obj], pods: Sequence[Obj]
) -> list[ReplicaSetInfo]:
    """The ReplicaSets `owner_uid` owns, newest revision first, each with its pods; with the
    rollout, tagged stable/canary (canary) or stable/active/preview (blue-green)."""
    status = _get(ro, "status") or {}
    canary = _canary(ro) if ro is not None else None
    blue_green = _blue_green(ro) if ro is not None else None
    ping_pong = canary is not None and canary.get("pingPong") is not None
    stable_is_ping = _get(status, "canary", "stablePingPong") == "ping"
    infos: list[ReplicaSetInfo] = []
    for rs in replica_sets:
        if _owned_by(rs, [owner_uid]) is None:
            continue
        health = replica_set_health(rs)
        annotations = _annotations(rs)
        template_spec = _get(rs, "spec", "template", "spec") or {}
        info = ReplicaSetInfo(
            name=str(_get(rs, "metadata", "name") or ""),
            uid=str(_get(rs, "metadata", "uid") or ""),
            revision=_revision(rs),
            status=health,
            icon=_replica_set_icon(health),
            replicas=_int(_get(rs, "status", "replicas")),
            available=_int(_get(rs, "status", "availableReplicas")),
            created=_created(rs),
            images=[str(c.get("image", "")) for c in template_spec.get("containers") or []],
            template=annotations.get(EXPERIMENT_TEMPLATE_ANNOTATION, ""),
            scale_down_deadline=annotations.get(SCALE_DOWN_DEADLINE_ANNOTATION, ""),
        )
        pod_hash = (_get(rs, "metadata", "labels") or {}).get(POD_TEMPLATE_HASH_LABEL, "")
        if canary is not None:
            if status.get("stableRS") == pod_hash:
                info.stable = True
                if ping_pong:
                    info.ping, info.pong = stable_is_ping, not stable_is_ping
            elif status.get("currentPodHash") == pod_hash:
                info.canary = True
                if ping_pong:
                    info.ping, info.pong = not stable_is_ping, stable_is_ping
        if blue_green is not None:
            if status.get("stableRS") == pod_hash:
                info.stable = True
            if _get(status, "blueGreen", "activeSelector") == pod_hash:
                info.active = True
            elif _get(status, "blueGreen", "previewSelector") == pod_hash:
                info.preview = True
        infos.append(info)
    infos.sort(key=lambda i: (-i.revision, i.name))

    by_uid = {info.uid: info for info in infos}
    for pod in pods:
        owner = _owned_by(pod, by_uid)
        if owner is not None:
            by_uid[owner].pods.append(pod_info(pod))
    far_past = datetime.min.replace(tzinfo=UTC)
    for info in infos:
        info.pods.sort(key=lambda p: (p.created or far_past, p.name))
    return infos


def analysis_run_infos(owner_uid: str, runs: Sequence[Obj]) -> list[AnalysisRunInfo]:
    infos: list[AnalysisRunInfo] = []
    for run in runs:
        if _owned_by(run, [owner_uid]) is None:
            continue
        phase = str(_get(run, "status", "phase") or "")
        info = AnalysisRunInfo(
            name=str(_get(run, "metadata", "name") or ""),
            revision=_revision(run),
            status=phase,
            icon=analysis_icon(phase),
            created=_created(run),
        )
        for result in _get(run, "status", "metricResults") or []:
            info.successful += _int(result.get("successful"))
            info.failed += _int(result.get("failed"))
            info.inconclusive += _int(result.get("inconclusive"))
            info.error += _int(result.get("error"))
            for measurement in result.get("measurements") or []:
                job = (measurement.get("metadata") or {}).get(JOB_NAME_KEY)
                if job:
                    measured = str(measurement.get("phase") or "")
                    info.jobs.append(
                        JobInfo(
                            name=str(job),
                            status=measured,
                            icon=analysis_icon(measured),
                            created=parse_time(measurement.get("startedAt")),
                        )
                    )
        infos.append(info)
    far_past = datetime.min.replace(tzinfo=UTC)
    # Newest revision first; within one, oldest first, then by name (descending).
    infos.sort(key=lambda i: i.name, reverse=True)
    infos.sort(key=lambda i: (-i.revision, i.created or far_past))
    return infos


def experiment_info(
    exp: Obj, *, replica_sets: Sequence[Obj], pods: Sequence[Obj], analysis_runs: Sequence[Obj]
) -> ExperimentInfo:
    """An experiment with the ReplicaSets (and their pods) and AnalysisRuns it owns."""
    uid = str(_get(exp, "metadata", "uid") or "")
    phase = str(_get(exp, "status", "phase") or "")
    return ExperimentInfo(
        name=str(_get(exp, "metadata", "name") or ""),
        namespace=str(_get(exp, "metadata", "namespace") or ""),
        revision=_revision(exp),
        status=phase,
        icon=analysis_icon(phase),
        message=str(_get(exp, "status", "message") or ""),
        created=_created(exp),
        replica_sets=replica_set_infos(uid, None, replica_sets, pods),
        analysis_runs=analysis_run_infos(uid, analysis_runs),
    )


def experiment_infos(
    owner_uid: str,
    experiments: Sequence[Obj],
    *,
    replica_sets: Sequence[Obj],
    pods: Sequence[Obj],
    analysis_runs: Sequence[Obj],
) -> list[ExperimentInfo]:
    infos = [
        experiment_info(exp, replica_sets=replica_sets, pods=pods, analysis_runs=analysis_runs)
        for exp in experiments
        if _owned_by(exp, [owner_uid]) is not None
    ]
    far_past = datetime.min.replace(tzinfo=UTC)
    infos.sort(key=lambda i: (-i.revision, i.created or far_past))
    return infos


def strategy_name(ro: Obj) -> str:
    if _canary(ro) is not None:
        return "Canary"
    if _blue_green(ro) is not None:
        return "BlueGreen"
    return ""


def step_text(ro: Obj) -> str:
    """`index/steps` of a canary with steps and a current step index, else empty."""
    steps = (_canary(ro) or {}).get("steps") or []
    index = _get(ro, "status", "currentStepIndex")
    if index is None or not steps:
        return ""
    return f"{_int(index)}/{len(steps)}"


def calculate_rollout_info(
    ro: Obj,
    *,
    replica_sets: Sequence[Obj] = (),
    pods: Sequence[Obj] = (),
    analysis_runs: Sequence[Obj] = (),
    experiments: Sequence[Obj] = (),
) -> RolloutInfo:
    """Everything `get rollout` shows, from the rollout and the objects of its namespace (the
    ones it does not own are ignored)."""
    uid = str(_get(ro, "metadata", "uid") or "")
    status = _get(ro, "status") or {}
    rs_infos = replica_set_infos(uid, ro, replica_sets, pods)
    phase, message = calculate_rollout_phase(ro)
    info = RolloutInfo(
        name=str(_get(ro, "metadata", "name") or ""),
        namespace=str(_get(ro, "metadata", "namespace") or ""),
        created=_created(ro),
        status=phase,
        message=message,
        icon=rollout_icon(phase),
        strategy=strategy_name(ro),
        step="",
        set_weight="",
        actual_weight="",
        desired=desired_replicas(ro),
        current=_int(status.get("replicas")),
        updated=_int(status.get("updatedReplicas")),
        ready=_int(status.get("readyReplicas")),
        available=_int(status.get("availableReplicas")),
        replica_sets=rs_infos,
        experiments=experiment_infos(
            uid, experiments, replica_sets=replica_sets, pods=pods, analysis_runs=analysis_runs
        ),
        analysis_runs=analysis_run_infos(uid, analysis_runs),
        workload_ref=workload_ref_text(ro),
    )
    canary = _canary(ro)
    if canary is not None:
        info.step = step_text(ro)
        info.set_weight = str(current_set_weight(ro))
        info.actual_weight = "0"
        step, _ = current_canary_step(ro)
        if step is None:
            # All of maxTrafficWeight (100 unless the router sets another total).
            max_weight = _get(canary, "trafficRouting", "maxTrafficWeight")
            info.actual_weight = str(_int(max_weight, 100))
        elif info.available > 0:
            if canary.get("trafficRouting") is None:
                for rs in rs_infos:
                    if rs.canary:
                        info.actual_weight = str(rs.available * 100 // info.available)
            else:
                weight = _get(status, "canary", "weights", "canary", "weight")
                info.actual_weight = info.set_weight if weight is None else str(_int(weight))
    return info


def _merge_image(found: dict[str, list[str]], image: str, tags: list[str]) -> None:
    if image in found:
        found[image] = sorted(set(found[image]) | set(tags))
    else:
        found[image] = tags


def _experiment_images(found: dict[str, list[str]], exp: ExperimentInfo) -> None:
    for rs in exp.replica_sets:
        if rs.replicas > 0:
            for image in rs.images:
                _merge_image(found, image, [f"Σ:{rs.template}"] if rs.template else [])


def images(info: RolloutInfo) -> list[tuple[str, list[str]]]:
    """The images of the ReplicaSets that have pods, with the stacks they run in, by name."""
    found: dict[str, list[str]] = {}
    for rs in info.replica_sets:
        if rs.replicas <= 0:
            continue
        flags = (
            (rs.canary, TAG_CANARY),
            (rs.stable, TAG_STABLE),
            (rs.active, TAG_ACTIVE),
            (rs.preview, TAG_PREVIEW),
            (rs.ping, TAG_PING),
            (rs.pong, TAG_PONG),
        )
        for image in rs.images:
            _merge_image(found, image, [tag for on, tag in flags if on])
    for exp in info.experiments:
        _experiment_images(found, exp)
    return sorted(found.items())


def experiment_images(info: ExperimentInfo) -> list[tuple[str, list[str]]]:
    """The images of an experiment's ReplicaSets that have pods, tagged `Σ:<template>`."""
    found: dict[str, list[str]] = {}
    _experiment_images(found, info)
    return sorted(found.items())


def revisions(info: RolloutInfo) -> list[int]:
    found = {rs.revision for rs in info.replica_sets}
    found |= {exp.revision for exp in info.experiments}
    found |= {run.revision for run in info.analysis_runs}
    return sorted(found, reverse=True)


# -- text --------------------------------------------------------------------------------------


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def align(rows: Sequence[Sequence[str]], *, padding: int = 2) -> list[str]:
    """Columns padded to their widest cell plus `padding`; the last cell of a row is not
    padded (Go's tabwriter, which the plugin prints its tables with)."""
    columns = max((len(r) for r in rows), default=0)
    widths = [0] * columns
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], visible_len(cell) + padding)
    lines = []
    for row in rows:
        cells = [cell + " " * (widths[i] - visible_len(cell)) for i, cell in enumerate(row[:-1])]
        lines.append(("".join(cells) + (row[-1] if row else "")).rstrip())
    return lines


class Painter:
    """ANSI colours for icons, tags and analysis phases; a no-op when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, key: str | None = None) -> str:
        code = _COLORS.get(text if key is None else key)
        if not self.color or code is None:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"


def _prefixes(is_last: bool, sub: str) -> tuple[str, str]:
    if is_last:
        return sub + "└──", sub + "   "
    return sub + "├──", sub + "│  "


def _delay(deadline: str, now: datetime) -> str:
    when = parse_time(deadline)
    if when is None:
        return ""
    if when < now:
        return "passed"
    return human_duration((when - now).total_seconds())


def _replica_set_rows(
    rs: ReplicaSetInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    tags: list[str] = []
    name = rs.name
    if rs.stable:
        tags.append(p.paint(TAG_STABLE))
        name = p.paint(name, TAG_STABLE)
    if rs.canary:
        tags.append(p.paint(TAG_CANARY))
        name = p.paint(name, TAG_CANARY)
    elif rs.active:
        tags.append(p.paint(TAG_ACTIVE))
        name = p.paint(name, TAG_ACTIVE)
    elif rs.preview:
        tags.append(p.paint(TAG_PREVIEW))
        name = p.paint(name, TAG_PREVIEW)
    if rs.ping:
        tags.append(p.paint(TAG_PING))
    if rs.pong:
        tags.append(p.paint(TAG_PONG))
    if rs.scale_down_deadline:
        tags.append(f"delay:{_delay(rs.scale_down_deadline, now)}")
    rows = [
        [
            f"{prefix}{ICON_REPLICASET} {name}",
            "ReplicaSet",
            f"{p.paint(rs.icon)} {rs.status}",
            age(rs.created, now),
            ",".join(tags),
        ]
    ]
    for i, pod in enumerate(rs.pods):
        pod_prefix, _ = _prefixes(i == len(rs.pods) - 1, sub)
        details = [f"ready:{pod.ready}"]
        if pod.restarts > 0:
            details.append(f"restarts:{pod.restarts}")
        rows.append(
            [
                f"{pod_prefix}{ICON_POD} {pod.name}",
                "Pod",
                f"{p.paint(pod.icon)} {pod.status}",
                age(pod.created, now),
                ",".join(details),
            ]
        )
    return rows


def _analysis_run_rows(
    run: AnalysisRunInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    counts = [
        (ICON_OK, run.successful),
        (ICON_BAD, run.failed),
        (ICON_UNKNOWN, run.inconclusive),
        (ICON_WARNING, run.error),
    ]
    details = ",".join(f"{p.paint(icon)} {n}" for icon, n in counts if n > 0)
    rows = [
        [
            f"{prefix}{ICON_ANALYSIS} {p.paint(run.name, run.status)}",
            "AnalysisRun",
            f"{p.paint(run.icon)} {run.status}",
            age(run.created, now),
            details,
        ]
    ]
    for i, job in enumerate(run.jobs):
        job_prefix, _ = _prefixes(i == len(run.jobs) - 1, sub)
        rows.append(
            [
                f"{job_prefix}{ICON_JOB} {p.paint(job.name, job.status)}",
                "Job",
                f"{p.paint(job.icon)} {job.status}",
                age(job.created, now),
                "",
            ]
        )
    return rows


def _experiment_rows(
    exp: ExperimentInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    rows = [
        [
            f"{prefix}{ICON_EXPERIMENT} {p.paint(exp.name, exp.status)}",
            "Experiment",
            f"{p.paint(exp.icon)} {exp.status}",
            age(exp.created, now),
            "",
        ]
    ]
    total = len(exp.replica_sets) + len(exp.analysis_runs)
    for i, rs in enumerate(exp.replica_sets):
        child, child_sub = _prefixes(i == total - 1, sub)
        rows += _replica_set_rows(rs, child, child_sub, now, p)
    for j, run in enumerate(exp.analysis_runs, start=len(exp.replica_sets)):
        child, child_sub = _prefixes(j == total - 1, sub)
        rows += _analysis_run_rows(run, child, child_sub, now, p)
    return rows


def render_tree(info: RolloutInfo, *, now: datetime, color: bool = False) -> list[str]:
    """The NAME/KIND/STATUS/AGE/INFO tree: rollout, revisions, then per revision its
    ReplicaSets (with pods), experiments and analysis runs."""
    p = Painter(color)
    rows: list[list[str]] = [
        ["NAME", "KIND", "STATUS", "AGE", "INFO"],
        [
            f"{ICON_ROLLOUT} {info.name}",
            "Rollout",
            f"{p.paint(info.icon)} {info.status}",
            age(info.created, now),
            "",
        ],
    ]
    all_revisions = revisions(info)
    for n, rev in enumerate(all_revisions):
        prefix, sub = _prefixes(n == len(all_revisions) - 1, "")
        rows.append([f"{prefix}{ICON_REVISION} revision:{rev}", "", " ", "", ""])
        children: list[tuple[str, Any]] = [
            *(("rs", rs) for rs in info.replica_sets if rs.revision == rev),
            *(("exp", exp) for exp in info.experiments if exp.revision == rev),
            *(("run", run) for run in info.analysis_runs if run.revision == rev),
        ]
        for i, (kind, child) in enumerate(children):
            child_prefix, child_sub = _prefixes(i == len(children) - 1, sub)
            if kind == "rs":
                rows += _replica_set_rows(child, child_prefix, child_sub, now, p)
            elif kind == "exp":
                rows += _experiment_rows(child, child_prefix, child_sub, now, p)
            else:
                rows += _analysis_run_rows(child, child_prefix, child_sub, now, p)
    return align(rows)


def _field(label: str, value: object) -> str:
    return f"{label:<17}{value}".rstrip()


def workload_ref_text(ro: Obj) -> str:
    """`Deployment/web (scaleDown: onsuccess)`: what spec.workloadRef names ('' without one).
    The plugin has no such line; it is shown here in its `Label: value` style."""
    ref = _get(ro, "spec", "workloadRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return ""
    text = f"{ref.get('kind', '')}/{ref['name']}"
    generation = _get(ro, "status", "workloadObservedGeneration")
    details = [f"scaleDown: {ref.get('scaleDown') or 'never'}"]
    if generation:
        details.append(f"observed generation {generation}")
    return f"{text} ({', '.join(details)})"


def render_rollout(info: RolloutInfo, *, now: datetime, color: bool = False) -> str:
    """The whole `get rollout` screen: the summary, a blank line, the tree."""
    p = Painter(color)
    lines = [
        _field("Name:", info.name),
        _field("Namespace:", info.namespace),
        _field("Status:", f"{p.paint(info.icon)} {info.status}"),
    ]
    if info.message:
        lines.append(_field("Message:", info.message))
    if info.workload_ref:
        lines.append(_field("WorkloadRef:", info.workload_ref))
    lines.append(_field("Strategy:", info.strategy))
    if info.strategy == "Canary":
        lines += [
            _field("  Step:", info.step),
            _field("  SetWeight:", info.set_weight),
            _field("  ActualWeight:", info.actual_weight),
        ]
    for n, (image, tags) in enumerate(images(info)):
        text = f"{image} ({', '.join(p.paint(t) for t in tags)})" if tags else image
        lines.append(_field("Images:" if n == 0 else "", text))
    lines += [
        "Replicas:",
        _field("  Desired:", info.desired),
        _field("  Current:", info.current),
        _field("  Updated:", info.updated),
        _field("  Ready:", info.ready),
        _field("  Available:", info.available),
        "",
        *render_tree(info, now=now, color=color),
    ]
    return "\n".join(lines) + "\n"


def render_experiment(info: ExperimentInfo, *, now: datetime, color: bool = False) -> str:
    """The whole `get experiment` screen: the summary, a blank line, the tree."""
    p = Painter(color)
    lines = [
        _field("Name:", info.name),
        _field("Namespace:", info.namespace),
        _field("Status:", f"{p.paint(info.icon)} {info.status}"),
    ]
    if info.message:
        lines.append(_field("Message:", info.message))
    for n, (image, tags) in enumerate(experiment_images(info)):
        text = f"{image} ({', '.join(p.paint(t) for t in tags)})" if tags else image
        lines.append(_field("Images:" if n == 0 else "", text))
    rows = [["NAME", "KIND", "STATUS", "AGE", "INFO"], *_experiment_rows(info, "", "", now, p)]
    lines += ["", *align(rows)]
    return "\n".join(lines) + "\n"


# -- list rollouts -----------------------------------------------------------------------------

LIST_HEADER = (
    "NAME",
    "STRATEGY",
    "STATUS",
    "STEP",
    "SET-WEIGHT",
    "READY",
    "DESIRED",
    "UP-TO-DATE",
    "AVAILABLE",
)


def list_row(ro: Obj, *, with_namespace: bool = False) -> list[str]:
    """One `list rollouts` row (cells padded like the plugin's, for a similar look)."""
    status = _get(ro, "status") or {}
    strategy, step, weight = "unknown", "-", "-"
    if _canary(ro) is not None:
        strategy = "Canary"
        step = step_text(ro) or "-"
        weight = str(current_set_weight(ro))
    elif _blue_green(ro) is not None:
        strategy = "BlueGreen"
    phase, _ = calculate_rollout_phase(ro)
    ready = f"{_int(status.get('readyReplicas'))}/{_int(status.get('replicas'))}"
    row = [
        f"{_get(ro, 'metadata', 'name') or '':<10}",
        f"{strategy:<9}",
        f"{phase:<12}",
        f"{step:<4}",
        f"{weight:<10}",
        f"{ready:<5}",
        f"{desired_replicas(ro):<7}",
        f"{_int(status.get('updatedReplicas')):<10}",
        f"{_int(status.get('availableReplicas')):<9}",
    ]
    if with_namespace:
        row.insert(0, f"{_get(ro, 'metadata', 'namespace') or '':<9}")
    return row


def render_list(rollouts: Sequence[Obj], *, all_namespaces: bool = False) -> str:
    header = ["NAMESPACE", *LIST_HEADER] if all_namespaces else list(LIST_HEADER)
    rows = [header] + [list_row(ro, with_namespace=all_namespaces) for ro in rollouts]
    return "\n".join(align(rows)) + "\n"


# -- list experiments --------------------------------------------------------------------------

EXPERIMENT_LIST_HEADER = ("NAME", "STATUS", "DURATION", "REMAINING", "AGE")
COMPLETED_EXPERIMENT_PHASES = frozenset({"Successful", "Failed", "Error", "Inconclusive"})


def experiment_list_row(exp: Obj, *, now: datetime, with_namespace: bool = False) -> list[str]:
    """One `list experiments` row: the duration of a timed experiment, and while it runs
    after becoming available, the time it has left."""
    phase = str(_get(exp, "status", "phase") or "")
    duration, remaining = "-", "-"
    spec_duration = _get(exp, "spec", "duration")
    seconds = duration_seconds(str(spec_duration)) if spec_duration else None
    if seconds is not None:
        duration = human_duration(seconds)
        available_at = parse_time(_get(exp, "status", "availableAt"))
        if phase not in COMPLETED_EXPERIMENT_PHASES and available_at is not None:
            left = (available_at - now).total_seconds() + seconds
            if left > 0:
                remaining = human_duration(left)
    row = [
        f"{_get(exp, 'metadata', 'name') or '':<10}",
        f"{phase:<6}",
        f"{duration:<8}",
        f"{remaining:<9}",
        f"{age(_created(exp), now):<3}",
    ]
    if with_namespace:
        row.insert(0, f"{_get(exp, 'metadata', 'namespace') or '':<9}")
    return row


def render_experiment_list(
    experiments: Sequence[Obj], *, now: datetime, all_namespaces: bool = False
) -> str:
    header = list(EXPERIMENT_LIST_HEADER)
    if all_namespaces:
        header.insert(0, "NAMESPACE")
    rows = [header] + [
        experiment_list_row(exp, now=now, with_namespace=all_namespaces) for exp in experiments
    ]
    return "\n".join(align(rows)) + "\n"
