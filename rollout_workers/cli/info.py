"""What `get rollout` and `get experiment` show, as data computed from API objects.

The Argo Rollouts kubectl plugin and this CLI must show the same thing for the same objects, so
the rules here follow the plugin's `info` package: which ReplicaSet is stable, canary, active or
preview, the pod status strings, the status icons. Everything is pure: objects in, dataclasses
out; tree.py draws them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rollout_workers.cli.fields import (
    annotations_of,
    created_at,
    parse_time,
    revision_number,
    to_int,
    value_at,
)
from rollout_workers.cli.phase import (
    blue_green_of,
    calculate_rollout_phase,
    canary_of,
    current_canary_step,
    current_set_weight,
    desired_replicas,
    step_text,
)
from rollout_workers.kube.resources import POD_TEMPLATE_HASH_LABEL
from rollout_workers.objects import Obj

ICON_WAITING = "◷"
ICON_PROGRESSING = "◌"
ICON_WARNING = "⚠"
ICON_UNKNOWN = "?"
ICON_OK = "✔"
ICON_BAD = "✖"
ICON_PAUSED = "॥"
ICON_NEUTRAL = "•"

EXPERIMENT_TEMPLATE_ANNOTATION = "experiment.argoproj.io/template-name"
SCALE_DOWN_DEADLINE_ANNOTATION = "scale-down-deadline"
JOB_NAME_KEY = "job-name"


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


def _owned_by(obj: Obj, uids: Iterable[str]) -> str | None:
    """The uid among `uids` that owns `obj`, if any (any owner reference, as the plugin)."""
    wanted = set(uids)
    for ref in value_at(obj, "metadata", "ownerReferences") or []:
        uid = ref.get("uid") if isinstance(ref, dict) else None
        if uid in wanted:
            return str(uid)
    return None


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


def replica_set_health(rs: Obj) -> str:
    spec_replicas = value_at(rs, "spec", "replicas")
    available = to_int(value_at(rs, "status", "availableReplicas"))
    generation = to_int(value_at(rs, "metadata", "generation"))
    if generation > to_int(value_at(rs, "status", "observedGeneration")):
        return "Progressing"
    for cond in value_at(rs, "status", "conditions") or []:
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
            return "ReplicaFailure"
    if spec_replicas is not None and available < to_int(spec_replicas):
        return "Progressing"
    if spec_replicas is not None and to_int(spec_replicas) == 0:
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
    if to_int(state.get("signal")):
        return f"{prefix}Signal:{to_int(state.get('signal'))}"
    return f"{prefix}ExitCode:{to_int(state.get('exitCode'))}"


def pod_info(pod: Obj) -> PodInfo:
    """A pod's status string (as `kubectl get pods` prints it), readiness and restarts."""
    spec = value_at(pod, "spec") or {}
    status = value_at(pod, "status") or {}
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or [])
    ready = 0
    restarts = 0
    reason = str(status.get("reason") or status.get("phase") or "")

    initializing = False
    for i, container in enumerate(status.get("initContainerStatuses") or []):
        restarts += to_int(container.get("restartCount"))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and to_int(terminated.get("exitCode")) == 0:
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
            restarts += to_int(container.get("restartCount"))
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

    if value_at(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"

    return PodInfo(
        name=str(value_at(pod, "metadata", "name") or ""),
        status=reason,
        icon=pod_icon(reason),
        ready=f"{ready}/{total}",
        restarts=restarts,
        created=created_at(pod),
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
    status = value_at(ro, "status") or {}
    canary = canary_of(ro) if ro is not None else None
    blue_green = blue_green_of(ro) if ro is not None else None
    ping_pong = canary is not None and canary.get("pingPong") is not None
    stable_is_ping = value_at(status, "canary", "stablePingPong") == "ping"
    infos: list[ReplicaSetInfo] = []
    for rs in replica_sets:
        if _owned_by(rs, [owner_uid]) is None:
            continue
        health = replica_set_health(rs)
        annotations = annotations_of(rs)
        template_spec = value_at(rs, "spec", "template", "spec") or {}
        info = ReplicaSetInfo(
            name=str(value_at(rs, "metadata", "name") or ""),
            uid=str(value_at(rs, "metadata", "uid") or ""),
            revision=revision_number(rs),
            status=health,
            icon=_replica_set_icon(health),
            replicas=to_int(value_at(rs, "status", "replicas")),
            available=to_int(value_at(rs, "status", "availableReplicas")),
            created=created_at(rs),
            images=[str(c.get("image", "")) for c in template_spec.get("containers") or []],
            template=annotations.get(EXPERIMENT_TEMPLATE_ANNOTATION, ""),
            scale_down_deadline=annotations.get(SCALE_DOWN_DEADLINE_ANNOTATION, ""),
        )
        pod_hash = (value_at(rs, "metadata", "labels") or {}).get(POD_TEMPLATE_HASH_LABEL, "")
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
            if value_at(status, "blueGreen", "activeSelector") == pod_hash:
                info.active = True
            elif value_at(status, "blueGreen", "previewSelector") == pod_hash:
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
        phase = str(value_at(run, "status", "phase") or "")
        info = AnalysisRunInfo(
            name=str(value_at(run, "metadata", "name") or ""),
            revision=revision_number(run),
            status=phase,
            icon=analysis_icon(phase),
            created=created_at(run),
        )
        for result in value_at(run, "status", "metricResults") or []:
            info.successful += to_int(result.get("successful"))
            info.failed += to_int(result.get("failed"))
            info.inconclusive += to_int(result.get("inconclusive"))
            info.error += to_int(result.get("error"))
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
    uid = str(value_at(exp, "metadata", "uid") or "")
    phase = str(value_at(exp, "status", "phase") or "")
    return ExperimentInfo(
        name=str(value_at(exp, "metadata", "name") or ""),
        namespace=str(value_at(exp, "metadata", "namespace") or ""),
        revision=revision_number(exp),
        status=phase,
        icon=analysis_icon(phase),
        message=str(value_at(exp, "status", "message") or ""),
        created=created_at(exp),
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
    if canary_of(ro) is not None:
        return "Canary"
    if blue_green_of(ro) is not None:
        return "BlueGreen"
    return ""


def workload_ref_text(ro: Obj) -> str:
    """`Deployment/web (scaleDown: onsuccess)`: what spec.workloadRef names ('' without one).
    The plugin has no such line; it is shown here in its `Label: value` style."""
    ref = value_at(ro, "spec", "workloadRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return ""
    text = f"{ref.get('kind', '')}/{ref['name']}"
    generation = value_at(ro, "status", "workloadObservedGeneration")
    details = [f"scaleDown: {ref.get('scaleDown') or 'never'}"]
    if generation:
        details.append(f"observed generation {generation}")
    return f"{text} ({', '.join(details)})"


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
    uid = str(value_at(ro, "metadata", "uid") or "")
    status = value_at(ro, "status") or {}
    rs_infos = replica_set_infos(uid, ro, replica_sets, pods)
    phase, message = calculate_rollout_phase(ro)
    info = RolloutInfo(
        name=str(value_at(ro, "metadata", "name") or ""),
        namespace=str(value_at(ro, "metadata", "namespace") or ""),
        created=created_at(ro),
        status=phase,
        message=message,
        icon=rollout_icon(phase),
        strategy=strategy_name(ro),
        step="",
        set_weight="",
        actual_weight="",
        desired=desired_replicas(ro),
        current=to_int(status.get("replicas")),
        updated=to_int(status.get("updatedReplicas")),
        ready=to_int(status.get("readyReplicas")),
        available=to_int(status.get("availableReplicas")),
        replica_sets=rs_infos,
        experiments=experiment_infos(
            uid, experiments, replica_sets=replica_sets, pods=pods, analysis_runs=analysis_runs
        ),
        analysis_runs=analysis_run_infos(uid, analysis_runs),
        workload_ref=workload_ref_text(ro),
    )
    canary = canary_of(ro)
    if canary is not None:
        info.step = step_text(ro)
        info.set_weight = str(current_set_weight(ro))
        info.actual_weight = "0"
        step, _ = current_canary_step(ro)
        if step is None:
            # All of maxTrafficWeight (100 unless the router sets another total).
            max_weight = value_at(canary, "trafficRouting", "maxTrafficWeight")
            info.actual_weight = str(to_int(max_weight, 100))
        elif info.available > 0:
            if canary.get("trafficRouting") is None:
                for rs in rs_infos:
                    if rs.canary:
                        info.actual_weight = str(rs.available * 100 // info.available)
            else:
                weight = value_at(status, "canary", "weights", "canary", "weight")
                info.actual_weight = info.set_weight if weight is None else str(to_int(weight))
    return info
