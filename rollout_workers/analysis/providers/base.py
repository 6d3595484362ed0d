"""The one interface every metric provider implements, and what providers are given to work with.

A provider takes one measurement of one metric of an AnalysisRun, as Argo Rollouts'
`metric.Provider` does (Run, Resume, Terminate, GarbageCollect, Type, GetMetadata). The differences
are only those of this project's design:

- Time is passed in (`now`) or read from the injected clock; nothing here calls `datetime.now`.
- Nothing blocks beyond one bounded request. A provider that measures asynchronously (the job
  provider) returns a Running measurement from `run`; later reconciles call `resume` until the
  measurement completes. No provider sleeps or polls.
- Arguments are already substituted. As in Argo's AnalysisRun controller (`resolveArgs`, which
  also reads `valueFrom.secretKeyRef` arguments from Secrets before calling the provider), the
  caller resolves `{{args.NAME}}` in the metric before handing it over; providers never see a
  template reference.
- Failures of the measured system become an Error measurement with a message (Argo's
  `MarkMeasurementError`), never an exception, so the run's error counters judge them.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import urllib3

from rollout_workers.analysis.providers.auth import AwsClients, AwsCredentials, cloudwatch_clients
from rollout_workers.analysis.providers.plugin import MetricPluginRegistry
from rollout_workers.api.analysis import AnalysisPhase, AnalysisRun, Measurement, Metric
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.writer import Writer
from rollout_workers.objects import Clock, Obj

#: Returns the current time, timezone-aware (UTC).


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def format_time(value: dt.datetime) -> str:
    """A `metav1.Time` as the API server writes it (RFC 3339, whole seconds, UTC)."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Provider(Protocol):
    """Takes measurements of one kind of metric (Argo's `metric.Provider`)."""

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        """Start a measurement: a completed one, or a Running one to `resume` later."""
        ...

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        """Look at a Running measurement again; returns it unchanged while still running."""
        ...

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        """Stop a Running measurement because the run is terminating."""
        ...

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        """Delete what older measurements left behind, keeping the newest `limit`."""
        ...

    def type(self) -> str:
        """Argo's provider type name ("Web", "Prometheus", "Job")."""
        ...

    def metadata(self, metric: Metric) -> dict[str, str]:
        """What to store in the metric result's metadata when it is first created."""
        ...


class SecretReader(Protocol):
    def read(self, namespace: str, name: str, key: str) -> str:
        """The decoded value of `key` in Secret `namespace/name`; raises `SecretError` or a
        `KubeError` (NotFound) when it cannot."""
        ...


class SecretError(Exception):
    """A Secret exists but does not hold the wanted key, or holds undecodable data."""


class SecretKeyMissing(SecretError):
    """The Secret exists but does not hold the wanted key."""


class KubeSecretReader:
    """Reads Secrets straight from the API server (they are not mirrored into the cache)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def read(self, namespace: str, name: str, key: str) -> str:
        secret = self.kube.get(r.SECRETS, namespace, name)
        data: dict[str, str] = secret.get("data") or {}
        if key not in data:
            # Argo's wording (analysis controller, resolveArgs).
            raise SecretKeyMissing(f"key '{key}' does not exist in secret '{name}'")
        try:
            return base64.b64decode(data[key], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as err:
            raise SecretError(f"key '{key}' of secret '{name}' is not valid: {err}") from None


class JobReader(Protocol):
    """Where the job provider reads its Jobs: the Redis cache (`cache.Lister`) in the workers,
    the API server elsewhere (see `job.CachedJobReader` and `job.KubeJobReader`)."""

    def get(self, namespace: str, name: str) -> Obj | None: ...

    def list_for_run(self, namespace: str, run_uid: str) -> list[Obj]:
        """The Jobs labelled with the run's uid (`analysisrun.argoproj.io/uid`)."""
        ...


@dataclass(frozen=True)
class ProviderDeps:
    """What providers need from the outside world; built once per worker and passed down."""

    http: urllib3.PoolManager = field(default_factory=urllib3.PoolManager)
    """Shared connection pools for web and prometheus metrics."""
    secrets: SecretReader | None = None
    """For web metric headers with `valueFrom.secretKeyRef` (an extension; see web.py)."""
    writer: Writer | None = None
    """Creates and deletes the job provider's Jobs."""
    jobs: JobReader | None = None
    """Reads the job provider's Jobs."""
    clock: Clock = utcnow
    prometheus_address: str | None = None
    """Used when a prometheus metric names no address (Argo's `ARGO_ROLLOUTS_PROMETHEUS_ADDRESS`
    environment variable; the caller reads it from its settings)."""
    aws: AwsCredentials = field(default_factory=AwsCredentials)
    """AWS credentials for prometheus `authentication.sigv4`, resolved once per few minutes."""
    namespace: str = "argo-rollouts"
    """The controller's namespace (Argo's `defaults.Namespace()`, `Settings.controller_namespace`),
    where provider Secrets are read (datadog, newRelic, wavefront, influxdb)."""
    environ: Mapping[str, str] = field(default_factory=dict)
    """The controller's environment variables providers may read (Argo's datadog provider
    takes `DD_API_KEY`, `DD_APP_KEY` and `DD_ADDRESS` from it)."""
    cloudwatch: AwsClients = field(default_factory=cloudwatch_clients)
    """CloudWatch clients, kept a few minutes (building one loads the service model)."""
    metric_plugins: MetricPluginRegistry = field(default_factory=MetricPluginRegistry)
    """The metric provider plugins enabled in settings (`plugins.metric`), loaded on first use."""


class BaseProvider:
    """The parts of `Provider` that most providers share: the deps, `type` from the class's
    `provider_type`, no metadata, and nothing to stop on `terminate` (a started measurement is
    left to finish on its own, as Argo's providers do) or to delete on `garbage_collect`.
    Subclasses implement `run` and `resume`, and `metadata` when they have some."""

    provider_type: ClassVar[str]
    """Argo's provider type name, which `type` returns."""

    def __init__(self, deps: ProviderDeps) -> None:
        self.deps = deps

    def type(self) -> str:
        return self.provider_type

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        return None


class UnknownProvider(Exception):
    """The metric names no provider, one this project does not implement, or a plugin that is
    not enabled. The analysis reconcile puts the run into Error with this message as soon as it
    sees the metric, before measuring anything."""


def mark_error(measurement: Measurement, message: str, now: dt.datetime) -> Measurement:
    """The measurement in Error with `message` (Argo's `MarkMeasurementError`): finished now
    unless it had already finished."""
    update: dict[str, Any] = {"phase": AnalysisPhase.ERROR, "message": message}
    if measurement.finished_at is None:
        update["finished_at"] = format_time(now)
    return measurement.model_copy(update=update)


def started(now: dt.datetime, phase: AnalysisPhase = AnalysisPhase.RUNNING) -> Measurement:
    """A new measurement started at `now`."""
    return Measurement(phase=phase, started_at=format_time(now))
