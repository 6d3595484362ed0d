"""Rollout, as Argo Rollouts defines it: the spec users write and the status the controller owns.

The pod template is kept as a free-form object: the controller hashes it and copies it into
ReplicaSets but never interprets it, and modelling core/v1 here would only lose fields. Traffic
routers are modelled as far as the controller uses them; the rest pass through unchanged.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRunMetadata,
    DryRun,
    FieldRef,
    MeasurementRetention,
)
from rollout_workers.api.base import (
    ConditionStatus,
    DurationString,
    FreeForm,
    Int32,
    Int64,
    IntOrString,
    KubeModel,
    LabelSelector,
    OpenModel,
    Resource,
    Time,
)
from rollout_workers.api.experiment import TemplateService

# -- constants -------------------------------------------------------------------------------


class RolloutPhase(StrEnum):
    """The summary phase shown by `kubectl get rollout` and Argo CD."""

    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    PAUSED = "Paused"
    DEGRADED = "Degraded"


class RolloutConditionType(StrEnum):
    """The condition types of a Rollout."""

    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    PAUSED = "Paused"
    COMPLETED = "Completed"
    HEALTHY = "Healthy"
    INVALID_SPEC = "InvalidSpec"
    REPLICA_FAILURE = "ReplicaFailure"


class PauseReason(StrEnum):
    """Why the controller paused a rollout; users resume by clearing the pause conditions."""

    CANARY_PAUSE_STEP = "CanaryPauseStep"
    BLUE_GREEN_PAUSE = "BlueGreenPause"
    INCONCLUSIVE_ANALYSIS = "InconclusiveAnalysisRun"
    INCONCLUSIVE_EXPERIMENT = "InconclusiveExperiment"


class ReplicaSetSpecRef(StrEnum):
    """Which ReplicaSet's pod template an experiment step template copies."""

    STABLE = "stable"
    CANARY = "canary"


class ValueFromPodTemplateHash(StrEnum):
    """Which ReplicaSet's pod-template hash a rollout passes as an analysis argument."""

    STABLE = "Stable"
    LATEST = "Latest"


class PingPongType(StrEnum):
    """Which of the ping-pong services currently fronts the stable pods."""

    PING = "ping"
    PONG = "pong"


#: Label added to ReplicaSets and their pods so that two revisions never select each other.
DEFAULT_ROLLOUT_UNIQUE_LABEL_KEY = "rollouts-pod-template-hash"
#: Annotation on an old ReplicaSet: when it may be scaled down.
SCALE_DOWN_DEADLINE_ANNOTATION_KEY = "scale-down-deadline"
#: Label on AnalysisRuns: which part of the rollout created them (Step, Background, ...).
ROLLOUT_TYPE_LABEL = "rollout-type"
ROLLOUT_TYPE_STEP = "Step"
ROLLOUT_TYPE_BACKGROUND = "Background"
ROLLOUT_TYPE_PRE_PROMOTION = "PrePromotion"
ROLLOUT_TYPE_POST_PROMOTION = "PostPromotion"
#: Label on step AnalysisRuns: the index of the step that created them.
ROLLOUT_CANARY_STEP_INDEX_LABEL = "step-index"

# -- shared pieces ---------------------------------------------------------------------------


class PodTemplateMetadata(KubeModel):
    """Labels and annotations added to pods while they play a role (canary, preview, ...)."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class ObjectRef(KubeModel):
    """A workload (e.g. a Deployment) whose pod template the rollout uses."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    scale_down: str | None = None
    """What to do with the referenced workload: never, onsuccess or progressively."""


class PreferredDuringSchedulingIgnoredDuringExecution(KubeModel):
    """Soft anti-affinity between revisions, with a weight from 1 to 100."""

    weight: Int32


class AntiAffinity(KubeModel):
    """Anti-affinity injected into new pods against the previous revision's pods."""

    preferred_during_scheduling_ignored_during_execution: (
        PreferredDuringSchedulingIgnoredDuringExecution | None
    ) = None
    required_during_scheduling_ignored_during_execution: FreeForm | None = None


# -- analysis references ---------------------------------------------------------------------


class RolloutAnalysisTemplate(KubeModel):
    """A template a rollout instantiates an AnalysisRun from."""

    template_name: str | None = None
    cluster_scope: bool | None = None


class ArgumentValueFrom(KubeModel):
    """Where a rollout takes an analysis argument's value from."""

    pod_template_hash_value: ValueFromPodTemplateHash | None = None
    field_ref: FieldRef | None = None


class AnalysisRunArgument(KubeModel):
    """An argument a rollout passes to the AnalysisRuns it creates."""

    name: str
    value: str | None = None
    value_from: ArgumentValueFrom | None = None


class RolloutAnalysis(KubeModel):
    """The AnalysisRun a rollout creates at a step, before or after promotion."""

    templates: list[RolloutAnalysisTemplate] | None = None
    args: list[AnalysisRunArgument] | None = None
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    analysis_run_metadata: AnalysisRunMetadata | None = None


class RolloutAnalysisBackground(RolloutAnalysis):
    """An AnalysisRun that runs alongside the canary steps."""

    starting_step: Int32 | None = None
    """The step index from which the background analysis runs; 0 when unset."""


class AnalysisRunStrategy(KubeModel):
    """How many finished AnalysisRuns and Experiments to keep."""

    successful_run_history_limit: Int32 | None = None
    unsuccessful_run_history_limit: Int32 | None = None


# -- canary steps ----------------------------------------------------------------------------


class RolloutPause(KubeModel):
    """A pause step: for a duration ("30s", 30), or until resumed when no duration is given."""

    duration: IntOrString | None = None


class SetCanaryScale(KubeModel):
    """Scale the canary independently of its traffic weight."""

    weight: Int32 | None = None
    replicas: Int32 | None = None
    match_traffic_weight: bool | None = None


class StringMatch(KubeModel):
    """Exactly one of exact, prefix or regex."""

    exact: str | None = None
    prefix: str | None = None
    regex: str | None = None


class HeaderRoutingMatch(KubeModel):
    """A request header that routes to the canary."""

    header_name: str
    header_value: StringMatch | None = None


class SetHeaderRoute(KubeModel):
    """Route requests matching headers to the canary; no match removes the route."""

    name: str | None = None
    match: list[HeaderRoutingMatch] | None = None


class RouteMatch(KubeModel):
    """Which requests a mirror route copies."""

    method: StringMatch | None = None
    path: StringMatch | None = None
    headers: dict[str, StringMatch] | None = None


class SetMirrorRoute(KubeModel):
    """Mirror matching requests to the canary; no match removes the route."""

    name: str
    match: list[RouteMatch] | None = None
    percentage: Int32 | None = None


class RolloutExperimentTemplate(KubeModel):
    """One ReplicaSet of an experiment step, from the stable or the canary pod template."""

    name: str
    spec_ref: ReplicaSetSpecRef
    replicas: Int32 | None = None
    metadata: PodTemplateMetadata | None = None
    selector: LabelSelector | None = None
    weight: Int32 | None = None
    service: TemplateService | None = None


class RolloutExperimentStepAnalysisTemplateRef(KubeModel):
    """An analysis an experiment step starts next to its ReplicaSets."""

    name: str
    template_name: str
    cluster_scope: bool | None = None
    args: list[AnalysisRunArgument] | None = None
    required_for_completion: bool | None = None


class RolloutExperimentStep(KubeModel):
    """A step that runs an Experiment and waits for it."""

    templates: list[RolloutExperimentTemplate]
    duration: DurationString | None = None
    analyses: list[RolloutExperimentStepAnalysisTemplateRef] | None = None
    dry_run: list[DryRun] | None = None
    analysis_run_metadata: AnalysisRunMetadata | None = None
    scale_down_delay_seconds: Int32 | None = None
    """Passed to the Experiment: how long its ReplicaSets live on once it ends (Argo 1.9)."""


class PluginStep(KubeModel):
    """A step carried out by a step plugin, with its own configuration."""

    name: str
    config: FreeForm | None = None


class CanaryStep(KubeModel):
    """One canary step; exactly one field is set."""

    set_weight: Int32 | None = None
    pause: RolloutPause | None = None
    experiment: RolloutExperimentStep | None = None
    analysis: RolloutAnalysis | None = None
    set_canary_scale: SetCanaryScale | None = None
    set_header_route: SetHeaderRoute | None = None
    set_mirror_route: SetMirrorRoute | None = None
    plugin: PluginStep | None = None


# -- traffic routing -------------------------------------------------------------------------


class NginxTrafficRouting(KubeModel):
    """Canary weights through a second, annotated nginx Ingress."""

    annotation_prefix: str | None = None
    stable_ingress: str | None = None
    stable_ingresses: list[str] | None = None
    additional_ingress_annotations: dict[str, str] | None = None
    canary_ingress_annotations: dict[str, str] | None = None
    """Annotations with full keys (no prefix added) for the canary Ingress."""


class StickinessConfig(KubeModel):
    """ALB target-group stickiness."""

    enabled: bool
    duration_seconds: Int64
    """From 1 to 604800 (7 days) when enabled."""


class ALBTrafficRouting(KubeModel):
    """Canary weights through AWS Load Balancer Controller actions."""

    ingress: str | None = None
    """The Ingress (in the rollout's namespace) whose action annotation carries the weights."""
    ingresses: list[str] | None = None
    """Several Ingresses, instead of `ingress`."""
    service_port: Int32
    """The Services' port the action forwards to."""
    root_service: str | None = None
    """The Service the Ingress routes to, whose action is annotated; by default the stable one."""
    annotation_prefix: str | None = None
    """The AWS Load Balancer Controller's annotation prefix (alb.ingress.kubernetes.io)."""
    stickiness_config: StickinessConfig | None = None
    """Target group stickiness of the forward action."""


class SMITrafficRouting(KubeModel):
    """Canary weights through an SMI TrafficSplit."""

    root_service: str | None = None
    traffic_split_name: str | None = None


class TraefikTrafficRouting(KubeModel):
    """Canary weights through a weighted TraefikService."""

    weighted_traefik_service_name: str
    """The TraefikService whose `spec.weighted.services` list the stable and canary Services."""


class AmbassadorTrafficRouting(KubeModel):
    """Canary weights through Ambassador Mappings: a `<mapping>-canary` copy of each, weighted."""

    mappings: list[str]
    """The Mappings to the stable Service; each gets a canary copy, deleted at weight 0."""


class AppMeshVirtualService(KubeModel):
    """The App Mesh VirtualService whose provider names the VirtualRouter to weight."""

    name: str
    routes: list[str] | None = None
    """The VirtualRouter's routes (by name) to weight; all of them when unset."""


class AppMeshVirtualNodeReference(KubeModel):
    """An App Mesh VirtualNode, by name (in the rollout's namespace)."""

    name: str


class AppMeshVirtualNodeGroup(KubeModel):
    """The VirtualNodes the route targets; their pod selectors follow the pod hashes."""

    canary_virtual_node_ref: AppMeshVirtualNodeReference
    stable_virtual_node_ref: AppMeshVirtualNodeReference


class AppMeshTrafficRouting(KubeModel):
    """Canary weights through AWS App Mesh: a VirtualRouter's weighted targets."""

    virtual_service: AppMeshVirtualService | None = None
    virtual_node_group: AppMeshVirtualNodeGroup | None = None


class ApisixRoute(KubeModel):
    """The ApisixRoute whose HTTP rules split between the stable and canary Services."""

    name: str
    rules: list[str] | None = None
    """The HTTP rules (by name) to weight; by default the one named as the route."""


class ApisixTrafficRouting(KubeModel):
    """Canary weights (and header routes) through an APISIX ingress controller ApisixRoute."""

    route: ApisixRoute | None = None


class TLSRoute(KubeModel):
    """A TLS route of a VirtualService, found by its one port and its SNI hosts."""

    port: Int64 | None = None
    sni_hosts: list[str] | None = None


class TCPRoute(KubeModel):
    """A TCP route of a VirtualService, found by its one port."""

    port: Int64 | None = None


class IstioVirtualService(KubeModel):
    """A VirtualService whose named routes the rollout re-weights."""

    name: str
    routes: list[str] | None = None
    tls_routes: list[TLSRoute] | None = None
    tcp_routes: list[TCPRoute] | None = None


class IstioDestinationRule(KubeModel):
    """A DestinationRule whose subsets the rollout points at the canary and stable hashes."""

    name: str
    canary_subset_name: str
    stable_subset_name: str
    additional_subset_names: list[str] | None = None
    """Subsets (of other rules) whose route destinations keep their weight, out of the stable's."""


class IstioTrafficRouting(KubeModel):
    """Canary weights through Istio."""

    virtual_service: IstioVirtualService | None = None
    virtual_services: list[IstioVirtualService] | None = None
    destination_rule: IstioDestinationRule | None = None


class ManagedRoute(KubeModel):
    """A route the controller owns (header and mirror routes), in precedence order."""

    name: str


class GatewayAPIRoute(KubeModel):
    """One route of the Gateway API router, by name."""

    name: str
    use_header_routes: bool | None = None
    """Header routes (HTTP, gRPC) and mirror routes (HTTP) go on it; always for a single name."""


class GatewayAPITrafficRouting(OpenModel):
    """Canary weights through Gateway API routes: the config of Argo's gatewayAPI plugin
    (argoproj-labs/rollouts-plugin-trafficrouter-gatewayapi), as is. The route selectors are
    modelled so that validation can refuse them (this controller does not discover routes by
    label); other unknown fields are kept, as the plugin's decoder ignores them."""

    http_route: str | None = None
    http_routes: list[GatewayAPIRoute] | None = None
    grpc_route: str | None = None
    grpc_routes: list[GatewayAPIRoute] | None = None
    tcp_route: str | None = None
    tcp_routes: list[GatewayAPIRoute] | None = None
    tls_route: str | None = None
    tls_routes: list[GatewayAPIRoute] | None = None
    namespace: str | None = None
    """Where the routes live; the rollout's namespace when unset."""
    config_map: str | None = None
    """Where plugin versions before 0.13 kept their rule record; ignored, as the plugin now does."""
    mirror_mode: str | None = None
    """`rule`: a mirror route is a rule of its own; else a filter on the weighted rules."""
    http_route_selector: LabelSelector | None = None
    """The plugin's discovery of HTTPRoutes by label: refused by validation (not supported)."""
    grpc_route_selector: LabelSelector | None = None
    """The plugin's discovery of GRPCRoutes by label: refused by validation (not supported)."""
    tcp_route_selector: LabelSelector | None = None
    """The plugin's discovery of TCPRoutes by label: refused by validation (not supported)."""
    tls_route_selector: LabelSelector | None = None
    """The plugin's discovery of TLSRoutes by label: refused by validation (not supported)."""
    disable_in_progress_label: bool | None = None
    """Leave the routes' labels alone: no in-progress label while the canary has weight."""
    in_progress_label_key: str | None = None
    """Set on each route at a weight above 0, removed at 0; default the plugin's key."""
    in_progress_label_value: str | None = None
    """The in-progress label's value (default `in-progress`)."""


class RolloutTrafficRouting(OpenModel):
    """The traffic router(s) a canary uses; unknown fields are kept as given."""

    nginx: NginxTrafficRouting | None = None
    alb: ALBTrafficRouting | None = None
    smi: SMITrafficRouting | None = None
    istio: IstioTrafficRouting | None = None
    traefik: TraefikTrafficRouting | None = None
    ambassador: AmbassadorTrafficRouting | None = None
    app_mesh: AppMeshTrafficRouting | None = None
    apisix: ApisixTrafficRouting | None = None
    gateway_api: GatewayAPITrafficRouting | None = Field(default=None, alias="gatewayAPI")
    """The Gateway API router, configured as Argo's gatewayAPI plugin is."""
    managed_routes: list[ManagedRoute] | None = None
    max_traffic_weight: Int32 | None = None
    plugins: FreeForm | None = None
    """Configuration of traffic-router plugins, by plugin name."""


# -- strategies ------------------------------------------------------------------------------


class ProgressType(StrEnum):
    """How a replica progress threshold counts: a percentage of the desired pods, or pods."""

    PERCENT = "Percent"
    PODS = "Pods"


class ReplicaProgressThreshold(KubeModel):
    """How many of the new ReplicaSet's desired pods must be available before the canary moves
    on or is promoted (Argo 1.9); all of them when unset."""

    type: ProgressType
    value: Int32


class PingPongSpec(KubeModel):
    """Two services that swap the stable and canary roles on each promotion."""

    ping_service: str
    pong_service: str


class BlueGreenStrategy(KubeModel):
    """Run the new revision beside the old one and switch the active Service at promotion."""

    active_service: str
    preview_service: str | None = None
    preview_replica_count: Int32 | None = None
    auto_promotion_enabled: bool | None = None
    """Promote without a pause; true when unset."""
    auto_promotion_seconds: Int32 | None = None
    max_unavailable: IntOrString | None = None
    scale_down_delay_seconds: Int32 | None = None
    scale_down_delay_revision_limit: Int32 | None = None
    abort_scale_down_delay_seconds: Int32 | None = None
    pre_promotion_analysis: RolloutAnalysis | None = None
    post_promotion_analysis: RolloutAnalysis | None = None
    anti_affinity: AntiAffinity | None = None
    active_metadata: PodTemplateMetadata | None = None
    preview_metadata: PodTemplateMetadata | None = None


class CanaryStrategy(KubeModel):
    """Shift replicas, or traffic through a router, to the new revision step by step."""

    canary_service: str | None = None
    stable_service: str | None = None
    steps: list[CanaryStep] | None = None
    traffic_routing: RolloutTrafficRouting | None = None
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None
    analysis: RolloutAnalysisBackground | None = None
    anti_affinity: AntiAffinity | None = None
    canary_metadata: PodTemplateMetadata | None = None
    stable_metadata: PodTemplateMetadata | None = None
    scale_down_delay_seconds: Int32 | None = None
    scale_down_delay_revision_limit: Int32 | None = None
    abort_scale_down_delay_seconds: Int32 | None = None
    dynamic_stable_scale: bool | None = None
    ping_pong: PingPongSpec | None = None
    min_pods_per_replica_set: Int32 | None = None
    replica_progress_threshold: ReplicaProgressThreshold | None = None


class RolloutStrategy(KubeModel):
    """Exactly one of blueGreen or canary."""

    blue_green: BlueGreenStrategy | None = None
    canary: CanaryStrategy | None = None


class RollbackWindowSpec(KubeModel):
    """Rolling back to one of this many recent revisions skips steps and analysis."""

    revisions: Int32 | None = None


class RolloutSpec(KubeModel):
    """The desired state of a Rollout."""

    replicas: Int32 | None = None
    selector: LabelSelector | None = None
    template: FreeForm | None = None
    """A `corev1.PodTemplateSpec`, passed through as is."""
    workload_ref: ObjectRef | None = None
    min_ready_seconds: Int32 | None = None
    revision_history_limit: Int32 | None = None
    paused: bool | None = None
    progress_deadline_seconds: Int32 | None = None
    progress_deadline_abort: bool | None = None
    restart_at: Time | None = None
    rollback_window: RollbackWindowSpec | None = None
    strategy: RolloutStrategy | None = None
    analysis: AnalysisRunStrategy | None = None


# -- status ----------------------------------------------------------------------------------


class PauseCondition(KubeModel):
    """Why, and since when, the controller has paused the rollout."""

    reason: PauseReason
    start_time: Time


class RolloutCondition(KubeModel):
    """One condition of a Rollout."""

    type: RolloutConditionType
    status: ConditionStatus
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class RolloutAnalysisRunStatus(KubeModel):
    """The name and phase of an AnalysisRun the rollout is waiting on."""

    name: str
    status: AnalysisPhase
    message: str | None = None


class WeightDestination(KubeModel):
    """The traffic weight sent to one ReplicaSet."""

    weight: Int32
    service_name: str | None = None
    pod_template_hash: str | None = None


class TrafficWeights(KubeModel):
    """The weights last set on the traffic router."""

    canary: WeightDestination
    stable: WeightDestination
    additional: list[WeightDestination] | None = None
    verified: bool | None = None


class StepPluginStatus(KubeModel):
    """What a step plugin reported for one operation (Run, Terminate, Abort) of one step
    (Argo 1.8); written by rollout/stepplugins/statemachine.py."""

    index: Int32
    name: str
    operation: str
    phase: str | None = None
    message: str | None = None
    started_at: Time | None = None
    updated_at: Time | None = None
    finished_at: Time | None = None
    backoff: DurationString | None = None
    executions: Int32 | None = None
    disabled: bool | None = None
    status: FreeForm | None = None
    """The plugin's own state, kept as it is."""


class CanaryStatus(KubeModel):
    """Status that only a canary rollout has."""

    current_step_analysis_run_status: RolloutAnalysisRunStatus | None = None
    current_background_analysis_run_status: RolloutAnalysisRunStatus | None = None
    current_experiment: str | None = None
    weights: TrafficWeights | None = None
    stable_ping_pong: PingPongType | None = None
    step_plugin_statuses: list[StepPluginStatus] | None = None


class BlueGreenStatus(KubeModel):
    """Status that only a blue-green rollout has."""

    preview_selector: str | None = None
    active_selector: str | None = None
    scale_up_preview_check_point: bool | None = None
    pre_promotion_analysis_run_status: RolloutAnalysisRunStatus | None = None
    post_promotion_analysis_run_status: RolloutAnalysisRunStatus | None = None


class AwsResourceRef(KubeModel):
    """An AWS load balancer or target group."""

    name: str | None = None
    arn: str | None = None
    full_name: str | None = None


class ALBStatus(KubeModel):
    """The load balancer and target groups behind an ALB-routed canary."""

    load_balancer: AwsResourceRef | None = None
    canary_target_group: AwsResourceRef | None = None
    stable_target_group: AwsResourceRef | None = None
    ingress: str | None = None


class RolloutStatus(KubeModel):
    """The observed state of a Rollout, written only by the controller (and by users who abort,
    resume or promote through the status fields)."""

    abort: bool | None = None
    pause_conditions: list[PauseCondition] | None = None
    controller_pause: bool | None = None
    """Set when the controller paused; stays true after a user clears the pause conditions."""
    aborted_at: Time | None = None
    current_pod_hash: str | None = None
    current_step_hash: str | None = None
    replicas: Int32 | None = None
    updated_replicas: Int32 | None = None
    ready_replicas: Int32 | None = None
    available_replicas: Int32 | None = None
    current_step_index: Int32 | None = None
    collision_count: Int32 | None = None
    observed_generation: str | None = Field(default=None, coerce_numbers_to_str=True)
    """A string in Argo's API; numbers written by other tools are read as their string."""
    conditions: list[RolloutCondition] | None = None
    canary: CanaryStatus | None = None
    blue_green: BlueGreenStatus | None = None
    hpa_replicas: Int32 | None = Field(default=None, alias="HPAReplicas")
    """Pods receiving active traffic: what a HorizontalPodAutoscaler scales on."""
    selector: str | None = None
    """The label selector, as a string, of the pods receiving active traffic."""
    stable_rs: str | None = Field(default=None, alias="stableRS")
    restarted_at: Time | None = None
    promote_full: bool | None = None
    phase: RolloutPhase | None = None
    message: str | None = None
    workload_observed_generation: str | None = Field(default=None, coerce_numbers_to_str=True)
    alb: ALBStatus | None = None
    albs: list[ALBStatus] | None = None


class Rollout(Resource):
    """A Deployment replacement with blue-green and canary strategies."""

    kind: str = "Rollout"
    spec: RolloutSpec
    status: RolloutStatus | None = None
