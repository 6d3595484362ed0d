"""The worker's side of notifications: send a queued job to each of its destinations, once.

A job (outbox.py) is an event about an object, as the object stood when the event was recorded.
Its key is claimed from the ``notifications`` workqueue like any reconcile key, so one worker at
a time handles it, and a worker killed mid-job has its lease expire and the job handled again.
For each config that applies (the controller's namespace, and the object's own with
self-service) and each destination subscribed to the trigger, the trigger's conditions run over
the job's object; each condition that sends (Argo's rule, state.should_send) renders its
templates and makes one attempt through the service's sender.

What each (config, trigger, condition, service, recipient) came to is a field of the job's hash:
``attempt:<n>`` once attempt ``n`` has started, ``sent``, or ``failed``. It is written before
and after each attempt, so a job handled again skips what was sent and failed. A send that
was started and never recorded (the worker died during the request) is tried again: the one
case that can deliver twice, and only if the service got the request and the worker died
before its answer was recorded.

Retries: a sender error that is not final (connection, timeout, 429, 5xx) is tried again after
the service's policy's wait (a Redis timer: the key is requeued after it, no worker sleeps),
until the policy's attempts are spent. A final error (4xx, a template that does not render, a
service that is not configured or not supported) is not retried. Every failure that ends a
destination is counted (``notification_send_error``), logged, and recorded as a Warning event
``NotificationFailed`` on the object; that event notifies nobody (it would loop).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from rollout_workers.cache import Lister
from rollout_workers.counters import PendingCounts
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.events import event_body
from rollout_workers.kube.eventsink import WriterSink
from rollout_workers.kube.writer import KubeWriter
from rollout_workers.notifications.config import Config
from rollout_workers.notifications.outbox import REVISION_ANNOTATION, Job, job_hash_key
from rollout_workers.notifications.render import RenderError, notification_vars, render
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.registry import retry_policy, send
from rollout_workers.notifications.source import ConfigCache, config_cache
from rollout_workers.notifications.state import should_send, state_item_key
from rollout_workers.notifications.subscriptions import Destination, destinations
from rollout_workers.notifications.triggers import ExprEvaluator, run_conditions
from rollout_workers.objects import Obj
from rollout_workers.reconcile.handlers import Handler, Result, SyncRequest
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.timefmt import format_time, utcnow

log = logging.getLogger(__name__)


FAILED_REASON = "NotificationFailed"
SENT, FAILED, ATTEMPT = "sent", "failed", "attempt:"


def analysis_runs_of(rollout: Mapping[str, Any], runs: list[Obj]) -> list[Obj] | None:
    """Argo's ``analysisRuns`` template variable: the runs of the rollout's current pod hash and
    revision, newest first; None when there are none."""
    status = rollout.get("status") or {}
    pod_hash = status.get("currentPodHash", "")
    revision = ((rollout.get("metadata") or {}).get("annotations") or {}).get(
        REVISION_ANNOTATION, ""
    )

    def matches(run: Obj) -> bool:
        meta = run.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        return bool(
            labels.get(r.POD_TEMPLATE_HASH_LABEL) == pod_hash
            and annotations.get(REVISION_ANNOTATION, "") == revision
        )

    found = [run for run in runs if matches(run)]
    if not found:
        return None
    found.sort(key=lambda run: str((run.get("metadata") or {}).get("creationTimestamp", "")))
    return found[::-1]


class Metrics:
    """Where a delivery counts its sends (the pool's PendingCounts, or nothing)."""

    def send(self, job: Job, *, ok: bool) -> None: ...

    def duration(self, job: Job, seconds: float) -> None: ...


@dataclass(frozen=True)
class Target:
    """One send of a job: a destination and the templates of one condition (None: the
    trigger is not configured), with its state's field in the job's hash."""

    job: Job
    hash_key: str
    field: str
    config: Config
    dest: Destination
    templates: tuple[str, ...] | None
    vars: Mapping[str, Any]


class Delivery:
    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str,
        configs: ConfigCache,
        analysis_runs: Callable[[str], list[Obj]],
        record_event: Callable[[Obj, str, str], None],
        context: SendContext,
        metrics: Metrics | None = None,
        evaluator: ExprEvaluator | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis, self._prefix = client, prefix
        self._configs = configs
        self._analysis_runs = analysis_runs
        self._record_event = record_event
        self._context = context
        self._metrics = metrics or Metrics()
        self._evaluator = evaluator or ExprEvaluator()
        self._clock = clock

    def sync(self, request: SyncRequest) -> Result:
        hash_key = job_hash_key(self._prefix, request.key)
        fields = {_text(k): _text(v) for k, v in self._redis.hgetall(hash_key).items()}
        payload = fields.pop("payload", None)
        if payload is None:
            return Result.gone()  # delivered and forgotten, or never written
        try:
            job = Job.loads(payload)
        except ValueError as err:
            log.error("notification job %s is malformed, dropped: %s", request.key, err)
            self._redis.delete(hash_key)
            return Result.gone()
        started = self._clock()
        waits: list[float] = []
        targets = list(self._targets(job, hash_key))
        for target in targets:
            state = fields.get(target.field)
            if state in (SENT, FAILED):
                continue
            request.lease.check()
            wait = self._attempt(target, state)
            if wait is not None:
                waits.append(wait)
        if any(fields.get(t.field) not in (SENT, FAILED) for t in targets):
            self._metrics.duration(job, self._clock() - started)
        if waits:
            return Result.requeue_after(min(waits))
        return Result.gone()

    def _targets(self, job: Job, hash_key: str) -> Iterator[Target]:
        """Each (config, destination, condition that sends) of the job."""
        analysis_runs = self._runs_for(job)
        for scoped in self._configs.for_object(job.namespace):
            config = scoped.config
            own = scoped.namespace != self._configs.controller_namespace
            for dest in destinations(config, job.object, job.trigger):
                base = notification_vars(job.object, dest.service, dest.recipient, analysis_runs)
                conditions = config.triggers.get(job.trigger)
                if conditions is None:  # nothing to run: reported as a failure of each
                    field = f"{scoped.namespace}|{job.trigger}||{dest.service}|{dest.recipient}"
                    yield Target(job, hash_key, field, config, dest, None, base)
                    continue
                for result in run_conditions(conditions, base, self._evaluator):
                    if result.error:
                        log.warning(
                            "%s/%s: %s: %s", job.namespace, job.name, job.trigger, result.error
                        )
                    if should_send(result):
                        key = state_item_key(
                            job.trigger, result, dest, scoped.namespace if own else None
                        )
                        field = f"{scoped.namespace}|{key}"
                        yield Target(job, hash_key, field, config, dest, result.templates, base)

    def _runs_for(self, job: Job) -> list[Obj] | None:
        if job.object.get("kind") != "Rollout":
            return None
        return analysis_runs_of(job.object, self._analysis_runs(job.namespace))

    def _attempt(self, target: Target, state: str | None) -> float | None:
        """One attempt at one target; the seconds to wait before the next, or None."""
        job, dest = target.job, target.dest
        if target.templates is None:
            self._fail(target, f"trigger '{job.trigger}' is not configured")
            return None
        service = target.config.services.get(dest.service)
        if service is None:
            self._fail(target, f"notification service '{dest.service}' is not configured")
            return None
        done = int(state[len(ATTEMPT) :]) if state and state.startswith(ATTEMPT) else 0
        policy = retry_policy(service)
        if done >= policy.attempts:
            self._fail(target, f"gave up after {done} attempts")
            return None
        try:
            notification = render(target.config, target.templates, target.vars)
        except RenderError as err:
            self._fail(target, str(err))
            return None
        if done:
            log.info("%s to %s: attempt %d", job.trigger, dest_text(dest), done + 1)
        self._redis.hset(target.hash_key, target.field, f"{ATTEMPT}{done + 1}")
        try:
            send(service, notification, dest.recipient, self._context)
        except SendError as err:
            if err.final or done + 1 >= policy.attempts:
                self._fail(target, str(err))
                return None
            log.warning(
                "%s to %s failed (attempt %d of %d), retrying: %s",
                job.trigger, dest_text(dest), done + 1, policy.attempts, err,
            )  # fmt: skip
            wait = policy.wait(done + 1)
            return wait if err.retry_after is None else max(wait, err.retry_after)
        except Exception as err:  # a bug in a sender: final, reported like any failure
            log.exception("%s to %s: sender error", job.trigger, dest_text(dest))
            self._fail(target, f"{type(err).__name__}: {err}")
            return None
        self._redis.hset(target.hash_key, target.field, SENT)
        self._metrics.send(job, ok=True)
        log.info(
            "notification %s sent to %s for %s/%s",
            job.trigger, dest_text(dest), job.namespace, job.name,
        )  # fmt: skip
        return None

    def _fail(self, target: Target, error: str) -> None:
        job = target.job
        self._redis.hset(target.hash_key, target.field, FAILED)
        self._metrics.send(job, ok=False)
        message = f"Failed to send notification {job.trigger} to {dest_text(target.dest)}: {error}"
        log.error("%s/%s: %s", job.namespace, job.name, message)
        try:
            self._record_event(job.object, FAILED_REASON, message)
        except Exception as err:  # informational: the failure is logged and counted
            log.warning("could not record event %s: %s", FAILED_REASON, err)


def dest_text(dest: Destination) -> str:
    return f"{dest.service}:{dest.recipient}" if dest.recipient else dest.service


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class PoolMetrics(Metrics):
    """Argo's notification metrics, counted in the pool's pending counts (counters.py)."""

    def __init__(self, counts: PendingCounts) -> None:
        self._counts = counts

    def send(self, job: Job, *, ok: bool) -> None:
        self._counts.notification(
            namespace=job.namespace, name=job.name, type=job.type, reason=job.reason, ok=ok
        )

    def duration(self, job: Job, seconds: float) -> None:
        self._counts.notification_duration(namespace=job.namespace, name=job.name, seconds=seconds)


def make_handler(runtime: Runtime) -> Handler:
    """The handler factory named in settings (`reconcile.handlers.notifications`)."""
    settings = runtime.settings
    prefix = settings.redis.key_prefix
    kube = Kube(api_client(settings), settings.kube, counts=runtime.counts)
    events = runtime.events or WriterSink(KubeWriter(kube), runtime.counts)
    runs = Lister(runtime.redis, prefix=prefix, resource=r.ANALYSISRUNS)

    def record_event(obj: Obj, reason: str, message: str) -> None:
        body = event_body(
            obj, reason=reason, message=message, warning=True, now=format_time(utcnow())
        )
        events.emit(body)

    delivery = Delivery(
        runtime.redis,
        prefix=prefix,
        configs=config_cache(runtime.redis, settings),
        analysis_runs=runs.list,
        record_event=record_event,
        context=SendContext(timeout=settings.notifications.timeout),
        metrics=PoolMetrics(runtime.counts) if runtime.counts is not None else None,
    )
    return delivery.sync
