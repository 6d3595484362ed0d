"""One settings tree for every process, read from `ROLLOUTS_*` environment variables.

Sections nest with a single underscore after the section name, so `ROLLOUTS_REDIS_URL` sets
`redis.url` and `ROLLOUTS_QUEUE_LEASE_TTL` sets `queue.lease_ttl`. The tree is built once at a
process's entry point (the CLI) and passed down explicitly; nothing below reads the environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

#: The task kinds and the Celery queue each one is served from.
KINDS: dict[str, str] = {
    "rollouts": "rollouts",
    "analysisruns": "analysis",
    "experiments": "analysis",
    "notifications": "notifications",
}

#: The kinds whose keys name an object (`namespace/name`); a notifications key names a send.
OBJECT_KINDS: frozenset[str] = frozenset({"rollouts", "analysisruns", "experiments"})

#: The controllers a watcher can serve, and the task kind each one queues.
CONTROLLERS: dict[str, str] = {
    "rollouts": "rollouts",
    "analysis": "analysisruns",
    "experiments": "experiments",
}


def _names(value: Any) -> Any:
    """A list from the environment as `a,b` (what the CLI's -Q and --controllers take) or JSON."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


#: A list of names that the environment gives comma-separated.
Names = Annotated[list[str], NoDecode, BeforeValidator(_names)]


class RedisSettings(BaseModel):
    url: str | None = Field(
        default=None,
        description="Redis URL: redis://[:password@]host:port/db, or Sentinels as "
        "sentinel://host:26379;sentinel://host2:26379/db (kombu's spelling, ';' between "
        "Sentinels); when unset, the embedded Redis recorded in the state dir is used.",
    )
    password: SecretStr | None = Field(
        default=None,
        description="Password of the Redis server (under Sentinel: of the master and its "
        "replicas); overrides a password in the URL.",
    )
    sentinel_master: str = Field(
        default="mymaster",
        min_length=1,
        description="Name of the master the Sentinels monitor (used when the URL is sentinel://).",
    )
    sentinel_password: SecretStr | None = Field(
        default=None,
        description="Password of the Sentinels themselves (their requirepass); unset when "
        "they have none.",
    )
    key_prefix: str = Field(
        default="rw", description="Prefix of every Redis key this project writes."
    )
    socket_timeout: float = Field(
        default=10.0, description="Seconds a Redis command may take before it fails."
    )
    claim_replicas: int | None = Field(
        default=None,
        ge=0,
        description="Replicas a workqueue claim must reach (Redis WAIT) before its reconcile "
        "starts, so a failover cannot lose it and let a second worker claim the key; default 1 "
        "under Sentinel, else 0.",
    )
    claim_replicas_timeout: float = Field(
        default=0.2,
        gt=0,
        description="Seconds a claim waits for its replicas; past it the reconcile starts anyway.",
    )

    def replicas_to_wait(self) -> int:
        """`claim_replicas`, or its default for the URL (1 under Sentinel)."""
        if self.claim_replicas is not None:
            return self.claim_replicas
        return 1 if (self.url or "").strip().lower().startswith("sentinel:") else 0


class QueueSettings(BaseModel):
    rollouts: str = Field(default="rollouts", description="Celery queue of rollout reconciles.")
    analysis: str = Field(
        default="analysis", description="Celery queue of analysis run and experiment reconciles."
    )
    notifications: str = Field(
        default="notifications", description="Celery queue of notification sends."
    )
    system: str = Field(default="system", description="Celery queue of timer and resync tasks.")
    lease_ttl: float = Field(
        default=15.0,
        gt=0,
        description="Seconds a claim on a key lives without a heartbeat before it is requeued "
        "(extended every lease_ttl/3, or host_lapse/2 if shorter, while the reconcile runs).",
    )
    host_heartbeat: float = Field(
        default=1.0,
        gt=0,
        description="Seconds between a worker host's heartbeats in Redis.",
    )
    host_lapse: float = Field(
        default=5.0,
        gt=0,
        description="Seconds without a heartbeat after which a worker host counts as dead: the "
        "messages it had reserved or was publishing are sent again, and the keys it held whose "
        "leases were not extended for as long are queued again.",
    )
    backoff_base: float = Field(
        default=0.005, gt=0, description="Seconds of the first retry delay after a failure."
    )
    backoff_max: float = Field(
        default=300.0, gt=0, description="Upper bound, in seconds, of the per-key retry delay."
    )
    lost_after: float = Field(
        default=2.0,
        gt=0,
        description="Seconds a queued key may wait with no message for it on the broker or in a "
        "host's hands (a host killed between popping a message and recording it) before its "
        "message is sent again.",
    )
    stale_after: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a queued key may wait unclaimed before its message is sent again.",
    )
    tick_batch: int = Field(
        default=1000, gt=0, description="Most keys one timer tick moves per kind and per source."
    )
    fairness: str = Field(
        default="namespace",
        pattern=r"^(namespace|off|label:[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?)$",
        description="Tenant of a key for fair claiming: 'namespace', 'label:<name>' (a label "
        "on the object, else its namespace), or 'off' (plain FIFO, no priority classes).",
    )

    @property
    def tenant_label(self) -> str | None:
        """The label naming an object's tenant, when fairness is keyed by one."""
        return self.fairness.removeprefix("label:") if self.fairness.startswith("label:") else None

    @property
    def fair_mode(self) -> str:
        """The fairness as the workqueue's scripts name it: off, namespace or label."""
        return self.fairness.split(":", 1)[0]

    def for_kind(self, kind: str) -> str:
        """The Celery queue that serves a task kind."""
        queue: str = getattr(self, KINDS[kind])
        return queue


class ReconcileSettings(BaseModel):
    handlers: dict[str, str] = Field(
        default_factory=lambda: {
            "rollouts": "rollout_workers.rollout.controller:make_handler",
            "analysisruns": "rollout_workers.analysis.controller:make_handler",
            "experiments": "rollout_workers.experiment.controller:make_handler",
            "notifications": "rollout_workers.notifications.delivery:make_handler",
        },
        description="Handler factory per task kind, as 'module:function'.",
    )
    resync_period: float = Field(
        default=900.0, gt=0, description="Seconds between resyncs that add every known key."
    )


class BeatSettings(BaseModel):
    tick_interval: float = Field(
        default=1.0, gt=0, description="Seconds between timer ticks (due timers, expired leases)."
    )
    timer_resolution: float = Field(
        default=0.1,
        gt=0,
        description="Seconds between the lock holder's timer passes, which queue the due "
        "timers between ticks: the most a requeue-after or a pause waits past its due time.",
    )
    lock_timeout: int = Field(
        default=10,
        gt=0,
        description="Seconds the beat lock lives unrefreshed; a standby beat takes over after it.",
    )
    max_loop_interval: float = Field(
        default=1.0, gt=0, description="Most seconds the beat loop sleeps between checks."
    )


#: Reconcile threads of a `threads` worker host when none are set: Argo's --rollout-threads.
DEFAULT_WORKER_THREADS = 10


class WorkerSettings(BaseModel):
    pool: Literal["threads", "prefork", "solo"] = Field(
        default="threads",
        description="How a worker host runs reconciles: `threads` in its one process (a "
        "reconcile mostly waits on the API server and Redis, so threads overlap the waits; "
        "run a host per core), `prefork` in child processes, `solo` one at a time.",
    )
    concurrency: int | None = Field(
        default=None,
        gt=0,
        description="Reconciles a worker host runs at once: its threads (pool threads, default "
        f"{DEFAULT_WORKER_THREADS}) or child processes (pool prefork, default one per CPU).",
    )
    shutdown_grace: float = Field(
        default=25.0,
        gt=0,
        description="Seconds a SIGTERMed worker host lets reconciles in hand finish before it "
        "hands their keys back and exits; keep it below terminationGracePeriodSeconds.",
    )
    queues: Names = Field(
        default_factory=lambda: ["rollouts", "analysis", "notifications", "system"],
        description="Queues a worker consumes.",
    )
    task_events: bool = Field(
        default=False,
        description="Send Celery task events from the start. Off, a worker sends them once a "
        "monitor asks (Flower does, every 5 s): three publishes a task that nobody reads "
        "otherwise.",
    )

    @property
    def celery_pool_args(self) -> list[str]:
        """`celery worker`'s pool options for these settings."""
        args = [f"--pool={self.pool}"]
        if self.pool == "threads":
            args.append(f"--concurrency={self.concurrency or DEFAULT_WORKER_THREADS}")
        elif self.pool == "prefork" and self.concurrency:
            args.append(f"--concurrency={self.concurrency}")
        return args


class FlowerSettings(BaseModel):
    address: str = Field(default="127.0.0.1", description="Address Flower listens on.")
    port: int = Field(default=5555, description="Port Flower listens on.")
    basic_auth: SecretStr | None = Field(
        default=None,
        description="'user:password' for Flower; required unless it listens on loopback.",
    )


class KubeSettings(BaseModel):
    context: str | None = Field(default=None, description="Kubeconfig context to use.")
    namespace: str = Field(
        default="", description="Only watch this namespace; empty watches all namespaces."
    )
    instance_id: str = Field(
        default="",
        description="controller-instance-id label value to own; empty owns unlabelled objects.",
    )
    qps: float = Field(default=40.0, gt=0, description="Sustained API requests per second.")
    burst: int = Field(default=80, gt=0, description="API requests allowed in a burst.")
    page_size: int = Field(default=500, gt=0, description="Objects per LIST page.")
    watch_timeout_min: int = Field(
        default=300, gt=0, description="Shortest server-side watch timeout, seconds."
    )
    watch_timeout_max: int = Field(
        default=600, gt=0, description="Longest server-side watch timeout, seconds."
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds a non-watch API request may take."
    )
    discovery_ttl: float = Field(
        default=300.0,
        gt=0,
        description="Seconds the served subresources of a type (from discovery) are trusted.",
    )
    event_queue: int = Field(
        default=1000,
        gt=0,
        description="Events a process holds waiting to be written; more are dropped and counted.",
    )
    event_writers: int | None = Field(
        default=None,
        gt=0,
        description="Threads of a process that write its Events, each those of its share of the "
        "objects, in order (default: 4 in a threads worker host, where one falls behind ten "
        "reconcile threads; 1 in a process that reconciles one key at a time).",
    )


class WatcherSettings(BaseModel):
    lease_ttl: float = Field(
        default=10.0, gt=0, description="Seconds the leader lease lives without renewal."
    )
    backoff_max: float = Field(
        default=30.0, gt=0, description="Longest wait between retries after API errors."
    )
    event_batch_seconds: float = Field(
        default=0.03,
        ge=0,
        le=1,
        description="Seconds a batch of watch events of one type may gather, to be written to "
        "Redis and queued in one call: it closes once no event came for a sixth of that (a lone "
        "event waits that sixth); 0 writes what has already arrived.",
    )
    event_batch_max: int = Field(
        default=100, gt=0, le=1000, description="Watch events written to Redis in one call at most."
    )
    controllers: Names = Field(
        default_factory=lambda: list(CONTROLLERS),
        description="Controllers served (rollouts, analysis, experiments): the types watched "
        "and the keys queued.",
    )

    @field_validator("controllers")
    @classmethod
    def _known_controllers(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(CONTROLLERS))
        if unknown or not value:
            raise ValueError(f"unknown controllers {unknown}; choose from {', '.join(CONTROLLERS)}")
        return value


class MetricsSettings(BaseModel):
    port: int = Field(
        default=8090,
        ge=0,
        le=65535,
        description="Port of the watcher's Prometheus /metrics (Argo's 8090); 0 turns it off.",
    )
    address: str = Field(default="0.0.0.0", description="Address the /metrics endpoint binds.")


class HealthSettings(BaseModel):
    port: int = Field(
        default=8080,
        ge=0,
        le=65535,
        description="Port of /healthz and /readyz of the watcher, worker and beat; 0 turns it off.",
    )
    address: str = Field(default="0.0.0.0", description="Address the health endpoints listen on.")
    stall_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a process loop may make no progress before liveness fails.",
    )
    watch_failing: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a watch may keep failing before the leading watcher is not ready.",
    )


class AnalysisSettings(BaseModel):
    prometheus_address: str | None = Field(
        default=None,
        description="Prometheus URL for metrics that name no address (Argo's "
        "ARGO_ROLLOUTS_PROMETHEUS_ADDRESS).",
    )


class AwsSettings(BaseModel):
    verify_target_group: bool = Field(
        default=False,
        description="Verify ALB target groups (weights, and the pod IPs registered) before an "
        "update progresses (Argo's --aws-verify-target-group); needs ELBv2 Describe* rights.",
    )
    target_group_binding_api_version: str = Field(
        default="elbv2.k8s.aws/v1beta1",
        description="apiVersion of the TargetGroupBindings read (Argo's "
        "--aws-target-group-binding-api-version).",
    )
    alb_tag_key_resource_id: str = Field(
        default="ingress.k8s.aws/resource",
        description="Target group tag naming its Ingress, Service and port (Argo's "
        "--alb-tag-key-resource-id).",
    )


class PluginSettings(BaseModel):
    step: Names = Field(
        default_factory=list,
        description="Enabled step plugins, by name (Argo's argo-rollouts-config stepPlugins): "
        "entry points of the rollout_workers.step_plugins group.",
    )
    metric: Names = Field(
        default_factory=list,
        description="Enabled metric provider plugins, by name (Argo's argo-rollouts-config "
        "metricProviderPlugins; a metric's provider.plugin): entry points of the "
        "rollout_workers.metric_providers group.",
    )
    traffic: Names = Field(
        default_factory=list,
        description="Enabled traffic router plugins, by name (Argo's argo-rollouts-config "
        "trafficRouterPlugins; a rollout's trafficRouting.plugins): entry points of the "
        "rollout_workers.traffic_routers group. argoproj-labs/gatewayAPI is built in.",
    )
    step_requeue_min: float = Field(
        default=10.0,
        ge=0,
        description="Seconds a Running step plugin's requested requeue must exceed to be used.",
    )
    step_requeue_default: float = Field(
        default=30.0,
        gt=0,
        description="Seconds before a Running step plugin is called again when it asks for less.",
    )
    step_error_backoff: float = Field(
        default=30.0, gt=0, description="Seconds before a step plugin that errored is retried."
    )
    step_backoff_delay: float = Field(
        default=5.0,
        ge=0,
        description="Seconds added to a step plugin's backoff before the rollout is requeued.",
    )


class NotificationSettings(BaseModel):
    namespace: str = Field(
        default="",
        description="Namespace of argo-rollouts-notification-configmap and -secret; default "
        "$POD_NAMESPACE (Argo's), else the one namespace served, else argo-rollouts.",
    )
    self_service: bool = Field(
        default=False,
        description="Also read the two in each rollout's own namespace (Argo's "
        "--self-service-notification-enabled).",
    )
    timeout: float = Field(
        default=10.0, gt=0, description="Seconds one request to a notification service may take."
    )
    remember: float = Field(
        default=86400.0,
        gt=0,
        description="Seconds a queued notification is remembered, so the same event recorded "
        "again (a retried reconcile) is not sent twice.",
    )


class LogSettings(BaseModel):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level of every process."
    )
    format: Literal["text", "json"] = Field(default="text", description="Log line format.")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ROLLOUTS_",
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="ignore",
    )

    state_dir: Path = Field(
        default=Path(".rollouts"),
        description="Directory of local state: the embedded Redis and API records, logs.",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description="Kubeconfig of the cluster; else the embedded API, else KUBECONFIG.",
    )
    redis: RedisSettings = Field(default_factory=RedisSettings, description="Redis connection.")
    kube: KubeSettings = Field(default_factory=KubeSettings, description="Kubernetes API.")
    watcher: WatcherSettings = Field(
        default_factory=WatcherSettings, description="The watcher process."
    )
    queue: QueueSettings = Field(default_factory=QueueSettings, description="Work queues.")
    reconcile: ReconcileSettings = Field(
        default_factory=ReconcileSettings, description="Reconcile handlers and resync."
    )
    beat: BeatSettings = Field(default_factory=BeatSettings, description="The beat process.")
    analysis: AnalysisSettings = Field(
        default_factory=AnalysisSettings, description="Analysis providers."
    )
    metrics: MetricsSettings = Field(
        default_factory=MetricsSettings, description="Controller metrics (Prometheus)."
    )
    worker: WorkerSettings = Field(default_factory=WorkerSettings, description="Worker hosts.")
    flower: FlowerSettings = Field(default_factory=FlowerSettings, description="Flower UI.")
    health: HealthSettings = Field(
        default_factory=HealthSettings, description="Liveness and readiness endpoints."
    )
    plugins: PluginSettings = Field(
        default_factory=PluginSettings,
        description="Plugins (step plugins, metric providers, traffic routers).",
    )
    aws: AwsSettings = Field(
        default_factory=AwsSettings, description="AWS load balancer verification."
    )
    notifications: NotificationSettings = Field(
        default_factory=NotificationSettings, description="Notifications."
    )
    log: LogSettings = Field(default_factory=LogSettings, description="Logging.")
    _controller_namespace: str = PrivateAttr(default="argo-rollouts")

    @model_validator(mode="after")
    def _resolve_controller_namespace(self) -> Settings:
        # Argo's defaults.Namespace(): the pod's namespace from the downward API, else its own
        # default; a namespaced install keeps to its namespace. Resolved on every validation
        # (CLI options are applied by validating again), never stored in a field.
        self._controller_namespace = (
            os.environ.get("POD_NAMESPACE") or self.kube.namespace or "argo-rollouts"
        )
        return self

    @property
    def controller_namespace(self) -> str:
        """The controller's own namespace (Argo's `defaults.Namespace()`): $POD_NAMESPACE, else
        the one namespace served, else argo-rollouts. Where the metric providers' Secrets
        (datadog, newrelic, wavefront-api-tokens, influxdb) are read."""
        return self._controller_namespace

    @property
    def event_writers(self) -> int:
        """`kube.event_writers`, or its default for this process' worker pool: 4 in a threads
        host, 1 where one key is reconciled at a time."""
        return self.kube.event_writers or (4 if self.worker.pool == "threads" else 1)

    @property
    def notifications_namespace(self) -> str:
        """Where argo-rollouts-notification-configmap and -secret are read."""
        return self.notifications.namespace or self._controller_namespace

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, with secrets masked."""
        data: dict[str, Any] = self.model_dump(mode="json")
        if self.redis.url:
            data["redis"]["url"] = mask_url(self.redis.url)
        if self.flower.basic_auth is not None:
            data["flower"]["basic_auth"] = "**********"
        data["state_dir"] = str(self.state_dir)
        data["kubeconfig"] = str(self.kubeconfig) if self.kubeconfig else None
        return data


def mask_url(url: str) -> str:
    """Hide the password of a URL such as redis://:secret@host:6379/0, and of each URL of a
    list such as sentinel://:secret@host:26379;sentinel://host2:26379/0."""
    if ";" in url:
        return ";".join(mask_url(part) for part in url.split(";"))
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:****@{host}"))
