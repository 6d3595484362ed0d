"""Experiment, as Argo Rollouts defines it.

An Experiment runs one ReplicaSet per template for a while, optionally with AnalysisRuns beside
them; canary steps create them, and people create them directly to compare two versions.
"""

from __future__ import annotations

from enum import StrEnum

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


class ExperimentCondition(KubeModel):
    """One condition of an Experiment."""

    type: ExperimentConditionType
    status: ConditionStatus
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ExperimentAnalysisRunStatus(KubeModel):
    """The state of one AnalysisRun the experiment started."""

    name: str
    analysis_run: str | None = None
    phase: AnalysisPhase | None = None
    message: str | None = None


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
