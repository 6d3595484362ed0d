"""AnalysisTemplate, ClusterAnalysisTemplate and AnalysisRun, as Argo Rollouts defines them.

An AnalysisRun is what the analysis reconcile measures and judges; templates are what rollouts
and experiments instantiate runs from. Every metric provider Argo Rollouts ships is modelled
(providers/: web, prometheus, job, kayenta, datadog, wavefront, newRelic, cloudWatch, graphite,
influxdb, skywalking); `plugin` is carried as a free-form object so that a template written for
Argo Rollouts survives being read and written back here.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from rollout_workers.api.base import (
    DurationString,
    FreeForm,
    Int32,
    Int64,
    IntOrString,
    KubeModel,
    OpenModel,
    Resource,
    Time,
)


class AnalysisPhase(StrEnum):
    """The phase of an AnalysisRun, of one of its metrics, of one measurement, or of an
    Experiment."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    ERROR = "Error"
    INCONCLUSIVE = "Inconclusive"

    @property
    def completed(self) -> bool:
        """Whether no further measurement will change this phase."""
        return self not in (AnalysisPhase.PENDING, AnalysisPhase.RUNNING)


class WebMetricMethod(StrEnum):
    """The HTTP methods a web metric may use."""

    GET = "GET"
    POST = "POST"
    PUT = "PUT"


# -- arguments -------------------------------------------------------------------------------


class SecretKeyRef(KubeModel):
    """A key of a Secret in the run's namespace."""

    name: str
    key: str


class FieldRef(KubeModel):
    """A path into the owning object, such as `metadata.labels['app']`."""

    field_path: str


class ValueFrom(KubeModel):
    """Where a template argument's value comes from when it is not given inline."""

    secret_key_ref: SecretKeyRef | None = None
    field_ref: FieldRef | None = None


class Argument(KubeModel):
    """A named argument of a template or run, substituted into `{{args.NAME}}`."""

    name: str
    value: str | None = None
    value_from: ValueFrom | None = None


class DryRun(KubeModel):
    """A metric whose result is recorded but does not decide the run; `*` means all."""

    metric_name: str


class MeasurementRetention(KubeModel):
    """How many measurements of a metric to keep in the run's status."""

    metric_name: str
    limit: Int32


class AnalysisTemplateRef(KubeModel):
    """A template whose metrics and arguments are merged into this one."""

    template_name: str | None = None
    cluster_scope: bool | None = None


class AnalysisRunMetadata(KubeModel):
    """Labels and annotations added to the AnalysisRuns an owner creates."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class TTLStrategy(KubeModel):
    """How long a finished AnalysisRun is kept before it is deleted."""

    seconds_after_completion: Int32 | None = None
    seconds_after_failure: Int32 | None = None
    seconds_after_success: Int32 | None = None


# -- providers -------------------------------------------------------------------------------


class Sigv4Config(KubeModel):
    """AWS SigV4 signing of prometheus queries to Amazon Managed Prometheus."""

    region: str | None = None
    profile: str | None = None
    """A profile of the shared AWS credentials and config files."""
    role_arn: str | None = None
    """An IAM role assumed (through STS) with the credentials found."""


class OAuth2Config(KubeModel):
    """An OAuth2 client-credentials grant whose access token is sent as a bearer token."""

    token_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    scopes: list[str] | None = None


class BasicAuthConfig(KubeModel):
    """HTTP basic authentication (prometheus as in Argo Rollouts after 1.9, and web metrics)."""

    username: str | None = None
    password: str | None = None


class Authentication(KubeModel):
    """How a prometheus or web metric's requests authenticate."""

    sigv4: Sigv4Config | None = None
    oauth2: OAuth2Config | None = None
    basic_auth: BasicAuthConfig | None = None


class WebMetricHeader(KubeModel):
    """One HTTP request header."""

    key: str
    value: str | None = None


class WebMetric(KubeModel):
    """An HTTP request whose JSON response, narrowed by `jsonPath`, is the measured value."""

    method: WebMetricMethod | None = None
    url: str
    headers: list[WebMetricHeader] | None = None
    body: str | None = None
    timeout_seconds: Int64 | None = None
    json_path: str | None = None
    insecure: bool | None = None
    json_body: FreeForm | None = None
    """A JSON request body, as an alternative to `body`."""
    authentication: Authentication | None = None


class PrometheusRangeQueryArgs(KubeModel):
    """A range query's window, as expressions such as `now() - duration("1h")` (Argo 1.8)."""

    start: str | None = None
    end: str | None = None
    step: DurationString | None = None


class PrometheusMetric(KubeModel):
    """A PromQL query whose result vector is the measured value."""

    address: str | None = None
    query: str | None = None
    authentication: Authentication | None = None
    timeout: Int64 | None = None
    insecure: bool | None = None
    headers: list[WebMetricHeader] | None = None
    range_query: PrometheusRangeQueryArgs | None = None
    """Run `/api/v1/query_range` over this window instead of an instant query."""


class JobMetric(KubeModel):
    """A Kubernetes Job whose success or failure is the measurement."""

    metadata: FreeForm | None = None
    spec: FreeForm
    """A `batchv1.JobSpec`, passed through as is."""


class DatadogSecretRef(KubeModel):
    """The Secret holding a datadog metric's `address`, `api-key` and `app-key`."""

    name: str | None = None
    namespaced: bool | None = None
    """Read it from the run's namespace instead of the controller's."""


class DatadogMetric(KubeModel):
    """A Datadog query (API v1) or queries and formula (API v2) over the last `interval`."""

    interval: DurationString | None = None
    """The query window (default 5m), not the polling interval."""
    query: str | None = None
    queries: dict[str, str] | None = None
    """v2: named queries, combined by `formula`."""
    formula: str | None = None
    api_version: str | None = None
    """v1 (the default) or v2."""
    aggregator: str | None = None
    """v2: avg, min, max, sum, last (the default), percentile, mean, l2norm or area."""
    secret_ref: DatadogSecretRef | None = None


class WavefrontMetric(KubeModel):
    """A Wavefront query through the chart API of `address` (a host name)."""

    address: str | None = None
    query: str | None = None


class NewRelicMetric(KubeModel):
    """An NRQL query through NerdGraph."""

    profile: str | None = None
    """The Secret with the account settings (default `newrelic`)."""
    query: str | None = None
    """Required by Argo's CRD; optional here so that a run without it is still read."""
    timeout: Int64 | None = None
    """NRQL timeout in seconds (default 5)."""


class GraphiteMetric(KubeModel):
    """A Graphite render query (`target=...&from=...`)."""

    address: str | None = None
    query: str | None = None


class KayentaThreshold(KubeModel):
    """The scores that pass a Kayenta judgement, and below which it fails."""

    pass_: Int64 | None = Field(default=None, alias="pass")
    """A score at least this is Successful."""
    marginal: Int64 | None = None
    """A score at least this (and below `pass`) is Inconclusive; below it, Failed."""


class KayentaScopeDetail(KubeModel):
    """Which metrics one side of a Kayenta comparison reads, and over which window."""

    scope: str | None = None
    region: str | None = None
    """Sent to Kayenta as the scope's `location`."""
    step: Int64 | None = None
    start: str | None = None
    """RFC 3339; empty: one metric interval before the measurement (`lookback`: the run's start)."""
    end: str | None = None
    """RFC 3339; empty: the measurement's time."""


class KayentaScope(KubeModel):
    name: str | None = None
    control_scope: KayentaScopeDetail | None = None
    experiment_scope: KayentaScopeDetail | None = None


class KayentaMetric(KubeModel):
    """A Kayenta canary judgement (started by one request, polled by later reconciles).

    Argo's CRD requires most of these fields; as Go's decoding, the model does not, so that a
    spec missing one is read (with empty values) rather than failing the whole object."""

    address: str | None = None
    application: str | None = None
    canary_config_name: str | None = None
    metrics_account_name: str | None = None
    configuration_account_name: str | None = None
    storage_account_name: str | None = None
    threshold: KayentaThreshold | None = None
    scopes: list[KayentaScope] | None = None
    lookback: bool | None = None
    """Scopes without a start begin at the run's start instead of one interval ago."""


class CloudWatchDimension(KubeModel):
    name: str | None = None
    value: str | None = None


class CloudWatchMetricStatMetric(KubeModel):
    dimensions: list[CloudWatchDimension] | None = None
    metric_name: str | None = None
    namespace: str | None = None


class CloudWatchMetricStat(KubeModel):
    metric: CloudWatchMetricStatMetric | None = None
    period: IntOrString | None = None
    stat: str | None = None
    unit: str | None = None


class CloudWatchMetricDataQuery(KubeModel):
    """One `MetricDataQuery` of CloudWatch's GetMetricData."""

    id: str | None = None
    expression: str | None = None
    label: str | None = None
    metric_stat: CloudWatchMetricStat | None = None
    period: IntOrString | None = None
    return_data: bool | None = None


class CloudWatchMetric(KubeModel):
    """A CloudWatch GetMetricData request over the last `interval`."""

    interval: DurationString | None = None
    """How far back the data is read (default 5m)."""
    metric_data_queries: list[CloudWatchMetricDataQuery] | None = None


class InfluxdbMetric(KubeModel):
    """A Flux query to InfluxDB (v2 API)."""

    profile: str | None = None
    """The Secret in the controller's namespace with address, authToken, org (or `influxdb`)."""
    query: str | None = None


class SkyWalkingMetric(KubeModel):
    """A GraphQL query to Apache SkyWalking's OAP server, given `$duration`."""

    address: str | None = None
    query: str | None = None
    interval: DurationString | None = None
    """How far back `$duration` starts (minute steps)."""


class MetricProvider(OpenModel):
    """The system a metric is measured with; exactly one field is set. Providers this project
    does not implement are kept as free-form objects."""

    prometheus: PrometheusMetric | None = None
    web: WebMetric | None = None
    job: JobMetric | None = None
    kayenta: KayentaMetric | None = None
    datadog: DatadogMetric | None = None
    wavefront: WavefrontMetric | None = None
    new_relic: NewRelicMetric | None = None
    cloud_watch: CloudWatchMetric | None = None
    graphite: GraphiteMetric | None = None
    influxdb: InfluxdbMetric | None = None
    skywalking: SkyWalkingMetric | None = None
    plugin: FreeForm | None = None


class Metric(KubeModel):
    """One measurement to take, how often, and how to judge its value."""

    name: str
    interval: DurationString | None = None
    """Time between measurements; without it, a single measurement is taken."""
    initial_delay: DurationString | None = None
    count: IntOrString | None = None
    """Number of measurements; may be an `{{args.X}}` reference."""
    success_condition: str | None = None
    failure_condition: str | None = None
    failure_limit: IntOrString | None = None
    """Failed measurements tolerated before the metric fails (default 0); -1 disables it."""
    inconclusive_limit: IntOrString | None = None
    consecutive_error_limit: IntOrString | None = None
    consecutive_success_limit: IntOrString | None = None
    """Successes in a row that make the metric Successful; 0 (the default) disables it."""
    provider: MetricProvider


# -- templates -------------------------------------------------------------------------------


class AnalysisTemplateSpec(KubeModel):
    """The metrics and arguments of a template."""

    metrics: list[Metric] | None = None
    args: list[Argument] | None = None
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    templates: list[AnalysisTemplateRef] | None = None


class AnalysisTemplate(Resource):
    """A namespaced analysis template."""

    kind: str = "AnalysisTemplate"
    spec: AnalysisTemplateSpec


class ClusterAnalysisTemplate(Resource):
    """A cluster-scoped analysis template, usable from every namespace."""

    kind: str = "ClusterAnalysisTemplate"
    spec: AnalysisTemplateSpec


# -- runs ------------------------------------------------------------------------------------


class AnalysisRunSpec(KubeModel):
    """The resolved metrics and arguments of one run."""

    metrics: list[Metric]
    args: list[Argument] | None = None
    terminate: bool | None = None
    """Set by the owner to stop the run early (e.g. the rollout finished)."""
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    ttl_strategy: TTLStrategy | None = None


class Measurement(KubeModel):
    """One measurement of a metric."""

    phase: AnalysisPhase
    message: str | None = None
    started_at: Time | None = None
    finished_at: Time | None = None
    value: str | None = None
    metadata: dict[str, str] | None = None
    """Provider state, such as the name of the Job a job metric created."""
    resume_at: Time | None = None
    """When to look at this measurement again (e.g. a Job still running)."""


class MetricResult(KubeModel):
    """The recent measurements of one metric and the counters that judge it."""

    name: str
    phase: AnalysisPhase
    measurements: list[Measurement] | None = None
    message: str | None = None
    count: Int32 | None = None
    successful: Int32 | None = None
    failed: Int32 | None = None
    inconclusive: Int32 | None = None
    error: Int32 | None = None
    consecutive_error: Int32 | None = None
    consecutive_success: Int32 | None = None
    """Successful measurements in a row; any other completed measurement resets it."""
    dry_run: bool | None = None
    metadata: dict[str, str] | None = None
    """Provider state kept across measurements, such as the resolved query."""


class RunSummary(KubeModel):
    """Counts of metrics by outcome."""

    count: Int32 | None = None
    successful: Int32 | None = None
    failed: Int32 | None = None
    inconclusive: Int32 | None = None
    error: Int32 | None = None


class AnalysisRunStatus(KubeModel):
    """What the analysis reconcile has measured and concluded."""

    phase: AnalysisPhase | None = None
    message: str | None = None
    metric_results: list[MetricResult] | None = None
    started_at: Time | None = None
    completed_at: Time | None = None
    run_summary: RunSummary | None = None
    dry_run_summary: RunSummary | None = None


class AnalysisRun(Resource):
    """One execution of analysis templates."""

    kind: str = "AnalysisRun"
    spec: AnalysisRunSpec
    status: AnalysisRunStatus | None = None
