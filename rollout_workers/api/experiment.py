"""Experiment, as Argo Rollouts defines it.

An Experiment runs one ReplicaSet per template for a while, optionally with AnalysisRuns beside
them; canary steps create them, and people create them directly to compare two versions.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRunMetadata,
    Argument,
    DryRun,
    MeasurementRetention,
)
from rollout_workers.api.base import (
    ConditionStatus,
    DurationString,
    FreeForm,
    Int32,
    KubeModel,
    LabelSelector,
    Resource,
    Time,
)


class TemplateStatusCode(StrEnum):
    """The state of one template's ReplicaSet."""

    PROGRESSING = "Progressing"
    RUNNING = "Running"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    ERROR = "Error"


class ExperimentConditionType(StrEnum):
    """The condition types of an Experiment."""

    INVALID_SPEC = "InvalidSpec"
    COMPLETED = "Completed"
    PROGRESSING = "Progressing"
    RUNNING = "Running"
    REPLICA_FAILURE = "ReplicaFailure"


class TemplateService(KubeModel):
    """The Service an experiment creates for a template."""

    name: str | None = None


class TemplateSpec(KubeModel):
    """One ReplicaSet the experiment runs."""

    name: str
    replicas: Int32 | None = None
    min_ready_seconds: Int32 | None = None
    selector: LabelSelector | None = None
    template: FreeForm | None = None
    """A `corev1.PodTemplateSpec`, passed through as is."""
    service: TemplateService | None = None
    """When set, a Service selecting this template's pods is created."""


class ExperimentAnalysisTemplateRef(KubeModel):
    """An AnalysisRun the experiment starts from a template."""

    name: str
    template_name: str
    cluster_scope: bool | None = None
    args: list[Argument] | None = None
    required_for_completion: bool | None = None
    """The experiment does not finish before this analysis does."""


class ExperimentSpec(KubeModel):
    """What an experiment runs and for how long."""

    templates: list[TemplateSpec]
    duration: DurationString | None = None
    """How long to run once every template is available; forever when unset."""
    progress_deadline_seconds: Int32 | None = None
    terminate: bool | None = None
    analyses: list[ExperimentAnalysisTemplateRef] | None = None
    scale_down_delay_seconds: Int32 | None = None
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    analysis_run_metadata: AnalysisRunMetadata | None = None


def _empty_is_none(value: object) -> object:
    return None if value == "" else value


#: A phase that Go writes as "" while there is none (the field has no omitempty): read as None.
PhaseOrEmpty = Annotated[AnalysisPhase | None, BeforeValidator(_empty_is_none)]


def _with_go_zero_values(
    data: dict[str, Any], info: SerializationInfo, zeros: dict[str, tuple[str, object]]
) -> dict[str, Any]:
    """`data` with the fields Go never omits filled with Go's zero value when unset or None.

    Argo's CRD lists them as required, so an object written without them is rejected (422) on a
    cluster with Argo's CRDs. `zeros` maps the JSON name to (Python name, zero value).
    """
    for alias, (name, zero) in zeros.items():
        key = alias if info.by_alias is not False else name
        if data.get(key) is None:
            data[key] = zero
    return data


class TemplateStatus(KubeModel):
    """The observed state of one template's ReplicaSet."""

    name: str
    replicas: Int32 | None = None
    updated_replicas: Int32 | None = None
    ready_replicas: Int32 | None = None
    available_replicas: Int32 | None = None
    collision_count: Int32 | None = None
    status: TemplateStatusCode | None = None
    message: str | None = None
    last_transition_time: Time | None = None
    service_name: str | None = None
    pod_template_hash: str | None = None

    @model_serializer(mode="wrap")
    def _serialize(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        zeros: dict[str, tuple[str, object]] = {
            "replicas": ("replicas", 0),
            "updatedReplicas": ("updated_replicas", 0),
            "readyReplicas": ("ready_replicas", 0),
            "availableReplicas": ("available_replicas", 0),
        }
        return _with_go_zero_values(handler(self), info, zeros)


class ExperimentCondition(KubeModel):
    """One condition of an Experiment."""

    type: ExperimentConditionType
    status: ConditionStatus
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ExperimentAnalysisRunStatus(KubeModel):
    """The state of one AnalysisRun the experiment started (or is about to start).

    Before the run exists Argo writes `analysisRun: ""` and `phase: ""`; so does this model.
    """

    name: str
    analysis_run: str | None = None
    phase: PhaseOrEmpty = None
    message: str | None = None

    @model_serializer(mode="wrap")
    def _serialize(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        zeros: dict[str, tuple[str, object]] = {
            "analysisRun": ("analysis_run", ""),
            "phase": ("phase", ""),
        }
        return _with_go_zero_values(handler(self), info, zeros)


class ExperimentStatus(KubeModel):
    """What the experiment reconcile has observed."""

    phase: AnalysisPhase | None = None
    message: str | None = None
    template_statuses: list[TemplateStatus] | None = None
    available_at: Time | None = None
    conditions: list[ExperimentCondition] | None = None
    analysis_runs: list[ExperimentAnalysisRunStatus] | None = None


class Experiment(Resource):
    """A time-boxed run of ReplicaSets with optional analysis."""

    kind: str = "Experiment"
    spec: ExperimentSpec
    status: ExperimentStatus | None = None
