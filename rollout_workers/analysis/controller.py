"""The `analysisruns` task kind's handler: one reconcile of one AnalysisRun.

Reads the run from the shared cache, takes the measurements that are due (or resumes the ones
in flight, or terminates them), assesses metrics and the run, trims measurement history, writes
the status in one fenced merge patch, and asks the workqueue to come back when the next
measurement is due. Nothing here sleeps: every wait (interval, initialDelay, error retry, a
job's resume) is a Redis timer. A completed run with a ttlStrategy is deleted once it expires.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
from collections.abc import Callable

import pydantic

from rollout_workers.analysis import run as ar
from rollout_workers.analysis.providers.base import Provider, SecretReader, UnknownProvider
from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRun,
    AnalysisRunStatus,
    Argument,
    Measurement,
    Metric,
    MetricResult,
)
from rollout_workers.cache import Lister
from rollout_workers.cache.written import WrittenVersions
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import Conflict, NotFound, Unavailable
from rollout_workers.kube.eventsink import EventSink
from rollout_workers.kube.patch import merge_patch, prune_empty
from rollout_workers.kube.writer import KubeWriter, Writer, fenced
from rollout_workers.notifications.outbox import Outbox, make_outbox
from rollout_workers.notifications.recorder import EventRecorder
from rollout_workers.objects import Clock, Obj
from rollout_workers.reconcile.handlers import Handler, Result, SyncRequest, when_cache_synced
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.timefmt import (
    TimeError,
    format_time,
    parse_duration_string,
    parse_time,
    quote,
    utcnow,
)

log = logging.getLogger(__name__)


#: Builds the provider a metric names; raises (any exception) with a message when it cannot.
ProviderFactory = Callable[[Metric], Provider]


class AnalysisRunController:
    def __init__(
        self,
        *,
        runs: Lister,
        written: WrittenVersions,
        writer: Writer,
        providers: ProviderFactory,
        secrets: SecretReader,
        clock: Clock = utcnow,
        outbox: Outbox | None = None,
        events: EventSink | None = None,
    ) -> None:
        self.runs, self.written, self.writer = runs, written, writer
        self.providers, self.secrets, self.clock = providers, secrets, clock
        self.events = EventRecorder(writer, r.ANALYSISRUNS, outbox=outbox, sink=events)

    def sync(self, request: SyncRequest) -> Result:
        obj = self.runs.get(request.key)
        if obj is None:
            return Result.gone()
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return Result.done()
        if self.written.stale(
            r.ANALYSISRUNS.plural, {request.key: str(meta.get("resourceVersion", ""))}
        ):
            return Result.requeue_after(0.5)
        now = self.clock()
        try:
            run = AnalysisRun.from_dict(obj)
        except pydantic.ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            self._persist(
                obj,
                {"phase": "Error", "message": f"Analysis spec invalid: {where}: {first['msg']}"},
            )
            return Result.done()
        request.lease.check()
        try:
            if run.status is not None and ar.completed(run.status.phase):
                return self._expire(obj, run, now)
            status, wake = reconcile(run, now=now, providers=self.providers, secrets=self.secrets)
            for reason, message, warning in status.events:
                self._event(obj, reason, message, warning, now)
            new_status = normalize_status(status.status)
            self._persist(obj, new_status)
        except Conflict as err:
            log.info("write race on %s (%s); retrying", request.key, err.message)
            return Result.retry()
        except Unavailable as err:
            log.info("API unavailable while reconciling %s (%s); backing off", request.key, err)
            return Result.retry()
        if wake is not None:
            return Result.requeue_after(max(0.0, (wake - now).total_seconds()))
        if run.spec.ttl_strategy is not None and ar.completed(new_status.get("phase")):
            # The watcher does not queue a run for its own status write, so the reconcile that
            # completes it asks for the one that schedules its deletion (`_expire`).
            return Result.requeue_after(0)
        return Result.done()

    def _expire(self, obj: Obj, run: AnalysisRun, now: dt.datetime) -> Result:
        """ttlStrategy: delete a completed run once its time is up; else wake up then."""
        expiry = ttl_expiry(run)
        if expiry is None:
            return Result.done()
        if now >= expiry:
            log.info("deleting AnalysisRun %s: ttlStrategy expired", obj["metadata"]["name"])
            with contextlib.suppress(NotFound):
                self.writer.delete(
                    r.ANALYSISRUNS, obj["metadata"]["namespace"], obj["metadata"]["name"]
                )
            return Result.done()
        return Result.requeue_after((expiry - now).total_seconds())

    def _persist(self, obj: Obj, new_status: Obj) -> None:
        patch = merge_patch(prune_empty(obj.get("status") or {}), prune_empty(new_status))
        if not patch:
            return
        meta = obj["metadata"]
        body = fenced({"status": patch}, meta.get("resourceVersion"))
        self.writer.patch(r.ANALYSISRUNS, meta["namespace"], meta["name"], body, status=True)

    def _event(self, obj: Obj, reason: str, message: str, warning: bool, now: dt.datetime) -> None:
        self.events.record(obj, reason=reason, message=message, warning=warning, now=now)


class Outcome:
    """The result of one reconcile: the new status and the events to record."""

    def __init__(self, status: AnalysisRunStatus) -> None:
        self.status = status
        self.events: list[tuple[str, str, bool]] = []

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append((reason, message, warning))


def normalize_status(status: AnalysisRunStatus) -> Obj:
    data = status.to_dict()
    # Summaries are written whole (zero counts included), as Argo's structs are.
    for key in ("runSummary", "dryRunSummary"):
        if key in data and data[key] is not None:
            data[key] = {k: v for k, v in data[key].items() if v is not None}
    return data


def ttl_expiry(run: AnalysisRun) -> dt.datetime | None:
    ttl = run.spec.ttl_strategy
    status = run.status
    if ttl is None or status is None or not status.completed_at or not ar.completed(status.phase):
        return None
    seconds: int | None = None
    if ttl.seconds_after_success is not None and status.phase == AnalysisPhase.SUCCESSFUL:
        seconds = ttl.seconds_after_success
    elif ttl.seconds_after_failure is not None and status.phase == AnalysisPhase.FAILED:
        seconds = ttl.seconds_after_failure
    elif ttl.seconds_after_completion is not None:
        seconds = ttl.seconds_after_completion
    if seconds is None:
        return None
    return parse_time(status.completed_at) + dt.timedelta(seconds=seconds)


def _args_without_secrets(args: list[Argument]) -> list[Argument]:
    out = []
    for arg in args:
        if arg.value_from is not None and arg.value_from.secret_key_ref is not None:
            out.append(Argument(name=arg.name, value="temp-for-secret"))
        else:
            out.append(arg)
    return out


def _resolve_secrets(run: AnalysisRun, secrets: SecretReader) -> tuple[list[Argument], list[str]]:
    resolved: list[Argument] = []
    values: list[str] = []
    namespace = run.metadata.namespace or "default"
    for arg in run.spec.args or []:
        ref = arg.value_from.secret_key_ref if arg.value_from else None
        if ref is not None:
            value = secrets.read(namespace, ref.name, ref.key)
            values.append(value)
            resolved.append(Argument(name=arg.name, value=value))
        else:
            resolved.append(arg)
    return resolved, values


def reconcile(
    run: AnalysisRun, *, now: dt.datetime, providers: ProviderFactory, secrets: SecretReader
) -> tuple[Outcome, dt.datetime | None]:
    """One reconcile of a run that is not completed yet (pure but for the providers' I/O)."""
    work = run.model_copy(deep=True)
    status = (work.status or AnalysisRunStatus()).model_copy(deep=True)
    if status.metric_results is None:
        status.metric_results = []
    work.status = status
    outcome = Outcome(status)

    def fail(message: str) -> tuple[Outcome, dt.datetime | None]:
        status.phase = AnalysisPhase.ERROR
        status.message = message
        status.completed_at = format_time(now)
        outcome.event("AnalysisRunError", "Analysis Completed. Result: Error", warning=True)
        return outcome, None

    try:
        metrics = [
            ar.resolve_args(m, _args_without_secrets(run.spec.args or [])) for m in run.spec.metrics
        ]
    except ar.ArgumentError as err:
        return fail(f"Unable to resolve metric arguments: {err}")
    invalid = validate_metrics(metrics)
    if invalid:
        return fail(f"Analysis spec invalid: {invalid}")
    # Argo checks the dryRun rules, then the measurementRetention rules, against the metrics
    # whose arguments are resolved: a rule matching no metric fails the run before measuring.
    for problem in (ar.dry_run_metrics(work, metrics)[1], ar.retention_rules(work, metrics)[1]):
        if problem:
            return fail(f"Analysis spec invalid: {problem}")
    # A provider this controller does not have (or a plugin not enabled) never measures: Argo
    # records its NewProvider error as an Error measurement every 10 s until the metric's
    # consecutiveErrorLimit is exceeded; the run ends the same way here, at once.
    for metric in metrics:
        problem = unavailable_provider(metric, providers)
        if problem:
            return fail(problem)

    tasks = ar.generate_tasks(work, metrics, now)
    if tasks:
        try:
            args, secret_values = _resolve_secrets(run, secrets)
        except Exception as err:
            return fail(f"Unable to resolve metric arguments: {err}")
        dry = ar.dry_run_names(work, metrics)
        terminating = ar.is_terminating(work)
        for task in tasks:
            try:
                metric = ar.resolve_args(task.metric, args)
            except ar.ArgumentError as err:
                return fail(f"Unable to resolve metric arguments: {err}")
            measurement, metadata = _measure(
                run=work,
                metric=metric,
                task=task,
                providers=providers,
                now=now,
                terminating=terminating,
            )
            for secret in secret_values:
                if secret and measurement.message:
                    measurement.message = measurement.message.replace(secret, "*****")
            results = status.metric_results or []
            index = next((i for i, x in enumerate(results) if x.name == metric.name), None)
            current = (
                results[index]
                if index is not None
                else MetricResult(
                    name=metric.name,
                    phase=AnalysisPhase.RUNNING,
                    dry_run=metric.name in dry or None,
                    metadata=metadata or None,
                )
            )
            updated = ar.record(current, measurement, replace_last=task.incomplete is not None)
            if index is None:
                results.append(updated)
            else:
                results[index] = updated
            status.metric_results = results

    before = {x.name: x.phase for x in status.metric_results or []}
    phase, message = ar.assess_run(work, metrics, now)
    for result in status.metric_results or []:
        if result.phase != before.get(result.name) and ar.completed(result.phase):
            bad = result.phase in (AnalysisPhase.ERROR, AnalysisPhase.FAILED)
            outcome.event(
                f"Metric{result.phase}",
                f"Metric '{result.name}' Completed. Result: {result.phase}",
                warning=bad,
            )
    if phase != run_phase(run):
        status.phase = phase
        status.message = message or None
        if ar.completed(phase):
            status.completed_at = format_time(now)
            bad = phase in (AnalysisPhase.ERROR, AnalysisPhase.FAILED)
            outcome.event(
                f"AnalysisRun{phase}", f"Analysis Completed. Result: {phase}", warning=bad
            )

    limits = ar.retention_limits(work, metrics)
    by_name = {m.name: m for m in metrics}
    trimmed = []
    for result in status.metric_results or []:
        limit = limits.get(result.name, ar.DEFAULT_MEASUREMENT_HISTORY_LIMIT)
        if len(result.measurements or []) > limit and result.name in by_name:
            try:
                providers(by_name[result.name]).garbage_collect(work, by_name[result.name], limit)
            except Exception as err:
                log.warning("garbage collection of %s failed: %s", result.name, err)
        trimmed.append(ar.trim(result, limit))
    status.metric_results = trimmed
    wake = None if ar.completed(status.phase) else ar.next_reconcile(work, metrics, now)
    return outcome, wake


def unavailable_provider(metric: Metric, providers: ProviderFactory) -> str:
    """The run's message when no provider can measure `metric` ('' when one can): Argo's
    message for a metric that ended Error ("Metric "m" assessed Error due to ...: "Error
    Message: <the NewProvider error>""). Other errors of making the provider are measured as
    Error measurements, as in Argo."""
    try:
        providers(metric)
    except UnknownProvider as err:
        return (
            f'Metric "{metric.name}" assessed Error due to no provider to measure it: '
            f'"Error Message: {err}"'
        )
    except Exception:
        return ""
    return ""


def run_phase(run: AnalysisRun) -> AnalysisPhase | None:
    return run.status.phase if run.status else None


def _measure(
    *,
    run: AnalysisRun,
    metric: Metric,
    task: ar.Task,
    providers: ProviderFactory,
    now: dt.datetime,
    terminating: bool,
) -> tuple[Measurement, dict[str, str]]:
    metadata: dict[str, str] = {}
    try:
        provider = providers(metric)
    except Exception as err:
        base = (
            task.incomplete.model_copy()
            if task.incomplete
            else Measurement(phase=AnalysisPhase.ERROR, started_at=format_time(now))
        )
        base.phase, base.message = AnalysisPhase.ERROR, str(err)
        measurement = base
    else:
        try:
            metadata = provider.metadata(metric)
            if task.incomplete is None:
                measurement = provider.run(run, metric, now)
            elif terminating:
                measurement = provider.terminate(run, metric, task.incomplete, now)
                if measurement.phase == AnalysisPhase.SUCCESSFUL:
                    measurement.message = "Metric Terminated"
            else:
                measurement = provider.resume(run, metric, task.incomplete, now)
        except Exception as err:  # a provider bug must not stop the run: it is an Error measurement
            log.exception("provider failed for metric %s", metric.name)
            measurement = Measurement(
                phase=AnalysisPhase.ERROR, message=str(err), started_at=format_time(now)
            )
    if ar.completed(measurement.phase) and not measurement.finished_at:
        measurement.finished_at = format_time(now)
    return measurement, metadata


def validate_metrics(metrics: list[Metric]) -> str:
    """Argo's ValidateMetrics/ValidateMetric (utils/analysis): the first problem found, as
    `metrics[i]: <problem>`, or "" when the metrics are valid. The caller reports it as
    "Analysis spec invalid: ...".

    Rules, in Argo's order, plus those of consecutiveSuccessLimit (Argo Rollouts 1.8), under which
    failureLimit -1 disables the failure limit:
    - names are unique;
    - only an explicit count > 0 bounds the limits: count >= failureLimit, inconclusiveLimit and
      consecutiveSuccessLimit (count 3 with failureLimit 3 is valid; an implied count never is
      compared);
    - count > 1 needs an interval;
    - interval and initialDelay read as Argo's DurationString (Go's errors quoted);
    - failureLimit >= -1, inconclusiveLimit >= 0, consecutiveErrorLimit >= 0,
      consecutiveSuccessLimit >= 0, and failureLimit or consecutiveSuccessLimit applies;
    - exactly one provider (each plugin entry counts as one).
    """
    if not metrics:
        return "no metrics specified"
    seen: set[str] = set()
    for i, metric in enumerate(metrics):
        if metric.name in seen:
            # The newest Argo closes the quote; older releases left it open ("'%s").
            return f"metrics[{i}]: duplicate name '{metric.name}'"
        seen.add(metric.name)
        problem = _validate_metric(metric)
        if problem:
            return f"metrics[{i}]: {problem}"
    return ""


def _validate_metric(metric: Metric) -> str:
    """Argo's ValidateMetric for one metric: its first problem, or ""."""
    count = ar.int_value(metric.count, 0)
    failure_limit = ar.int_value(metric.failure_limit, 0)
    inconclusive_limit = ar.int_value(metric.inconclusive_limit, 0)
    success_limit = ar.consecutive_success_limit(metric)
    if count > 0:
        if count < failure_limit:
            return "count must be >= failureLimit"
        if count < inconclusive_limit:
            return "count must be >= inconclusiveLimit"
        if count < success_limit:
            return f"count must be >= consecutiveSuccessLimit ({count} < {success_limit})"
    if count > 1 and not metric.interval:
        return "interval must be specified when count > 1"
    for value, what in ((metric.interval, "interval"), (metric.initial_delay, "startDelay")):
        if not value:
            continue
        err = _go_duration_error(value)
        if err:
            return f"invalid {what} string: {err}"
        if (ar.seconds(value) or 0) < 0:
            # Argo reads a negative duration, and what it then does is not a schedule: a run
            # that fails at once beats one that measures in a loop.
            return f"unsupported {what} string: {quote(value)}"
    if failure_limit < -1:
        return "failureLimit must be >= -1"
    if inconclusive_limit < 0:
        return "inconclusiveLimit must be >= 0"
    if ar.int_value(metric.consecutive_error_limit, 0) < 0:
        return "consecutiveErrorLimit must be >= 0"
    if success_limit < 0:
        return "consecutiveSuccessLimit must be >= 0"
    if failure_limit < 0 and success_limit == 0:
        # Nothing could ever decide the metric but its count (or termination).
        return "either failureLimit (>= 0) or consecutiveSuccessLimit (> 0) must apply"
    provider = metric.provider
    providers = sum(
        value is not None
        for value in (
            provider.prometheus,
            provider.job,
            provider.web,
            provider.wavefront,
            provider.kayenta,
            provider.datadog,
            provider.new_relic,
            provider.cloud_watch,
            provider.graphite,
            provider.influxdb,
            provider.skywalking,
        )
    ) + len(provider.plugin or {})
    if providers == 0:
        return "no provider specified"
    if providers > 1:
        return "multiple providers specified"
    return ""


def _go_duration_error(text: str) -> str:
    """The error of Argo's DurationString.Duration(), or "" when it reads."""
    try:
        parse_duration_string(text)
    except TimeError as err:
        return str(err)
    return ""


def make_handler(runtime: Runtime) -> Handler:
    """The handler factory named in settings (`reconcile.handlers.analysisruns`)."""
    import urllib3

    from rollout_workers.analysis.providers import KubeSecretReader, ProviderDeps, provider_for
    from rollout_workers.analysis.providers.job import CachedJobReader
    from rollout_workers.analysis.providers.plugin import MetricPluginRegistry

    settings = runtime.settings
    prefix = settings.redis.key_prefix
    kube = Kube(api_client(settings), settings.kube, counts=runtime.counts)
    written = WrittenVersions(runtime.redis, prefix=prefix, own=r.ANALYSISRUNS.plural)
    writer = KubeWriter(kube, on_written=written.record)
    deps = ProviderDeps(
        http=urllib3.PoolManager(num_pools=16, maxsize=8),
        secrets=KubeSecretReader(kube),
        writer=writer,
        jobs=CachedJobReader(Lister(runtime.redis, prefix=prefix, resource=r.JOBS)),
        prometheus_address=settings.analysis.prometheus_address,
        namespace=settings.controller_namespace,
        metric_plugins=MetricPluginRegistry(enabled=frozenset(settings.plugins.metric)),
        # Argo's datadog provider reads its credentials from these when it names no Secret.
        environ={
            k: v for k, v in os.environ.items() if k in ("DD_API_KEY", "DD_APP_KEY", "DD_ADDRESS")
        },
    )
    controller = AnalysisRunController(
        runs=Lister(runtime.redis, prefix=prefix, resource=r.ANALYSISRUNS),
        written=written,
        writer=writer,
        providers=lambda metric: provider_for(metric, deps),
        secrets=KubeSecretReader(kube),
        outbox=make_outbox(runtime),
        events=runtime.events,
    )
    return when_cache_synced(runtime, controller.sync)
