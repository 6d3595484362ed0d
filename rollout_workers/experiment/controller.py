"""The `experiments` task kind's handler: one reconcile of one Experiment.

Reads the experiment and what it owns (ReplicaSets, Services, AnalysisRuns) from the shared
cache, requeues shortly when the cache is behind this controller's own last write, validates
the spec (an invalid one gets an InvalidSpec condition and is left alone until it changes),
reconciles, records the events and writes the status in one fenced merge patch.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import pydantic

from rollout_workers.analysis.templates import TemplateLookup, spec_lookup
from rollout_workers.api.base import ConditionStatus as S
from rollout_workers.api.experiment import (
    Experiment,
    ExperimentConditionType,
    ExperimentStatus,
)
from rollout_workers.cache import Lister
from rollout_workers.cache.written import WrittenVersions
from rollout_workers.experiment import reconcile as rec
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import Conflict, Unavailable
from rollout_workers.kube.eventsink import EventSink
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.writer import KubeWriter, Writer, fenced
from rollout_workers.notifications.outbox import Outbox, make_outbox
from rollout_workers.notifications.recorder import EventRecorder
from rollout_workers.objects import Clock, Obj
from rollout_workers.reconcile.handlers import Handler, Result, SyncRequest, when_cache_synced
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.timefmt import format_time, utcnow

log = logging.getLogger(__name__)

STALE_REQUEUE = 0.5


class ExperimentController:
    def __init__(
        self,
        *,
        experiments: Lister,
        replicasets: Lister,
        services: Lister,
        analysis_runs: Lister,
        templates: Lister,
        cluster_templates: Lister,
        written: WrittenVersions,
        writer: Writer,
        clock: Clock = utcnow,
        outbox: Outbox | None = None,
        events: EventSink | None = None,
    ) -> None:
        self.events = EventRecorder(writer, r.EXPERIMENTS, outbox=outbox, sink=events)
        self.experiments, self.replicasets, self.services = experiments, replicasets, services
        self.analysis_runs = analysis_runs
        self.templates, self.cluster_templates = templates, cluster_templates
        self.written, self.writer, self.clock = written, writer, clock

    def sync(self, request: SyncRequest) -> Result:
        obj = self.experiments.get(request.key)
        if obj is None:
            return Result.gone()
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return Result.done()
        uid = str(meta.get("uid", ""))
        rss = self.replicasets.by_owner(uid)
        runs = self.analysis_runs.by_owner(uid)
        if self._stale(request.key, obj, rss, runs):
            log.info("cache behind our last write for %s; requeueing", request.key)
            return Result.requeue_after(STALE_REQUEUE)
        now = self.clock()
        try:
            ex = Experiment.from_dict(obj)
        except pydantic.ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            self._write_invalid_spec(obj, f"{where}: {first['msg']}", now)
            return Result.done()
        request.lease.check()
        try:
            message = rec.invalid_spec_message(ex)
            if message:
                self._write_invalid_spec(obj, message, now)
                return Result.done()
            ctx = self._context(obj, ex, rss, runs, now)
            status = rec.reconcile(ctx)
            for reason, text, warning in ctx.events:
                self._event(obj, reason, text, warning, now)
            self._persist(obj, status)
        except (Conflict, Unavailable) as err:
            log.info("write failed on %s (%s); retrying", request.key, err.message)
            return Result.retry()
        if ctx.requeue_after is not None:
            return Result.requeue_after(ctx.requeue_after)
        return Result.done()

    def _context(
        self, obj: Obj, ex: Experiment, rss: list[Obj], runs: list[Obj], now: dt.datetime
    ) -> rec.ExperimentContext:
        uid = str(obj["metadata"].get("uid", ""))
        namespace = str(obj["metadata"].get("namespace", ""))
        names = {t.name for t in ex.spec.templates}
        services = self.services.by_owner(uid)
        # ReplicaSets of the namespace by the names this experiment would create, so that a
        # create that finds the name taken can tell its own from someone else's.
        wanted = [f"{namespace}/{obj['metadata']['name']}-{name}" for name in names]
        return rec.ExperimentContext(
            obj=obj,
            ex=ex,
            template_rss=rec.claimed(obj, rss, names, "ReplicaSet"),
            template_services=rec.claimed(obj, services, names, "Service"),
            runs={str(x["metadata"]["name"]): x for x in runs},
            lookup=self._lookup(namespace),
            writer=self.writer,
            now=now,
            replicasets={str(x["metadata"]["name"]): x for x in self.replicasets.get_many(wanted)},
            services={str(x["metadata"]["name"]): x for x in services},
        )

    def _lookup(self, namespace: str) -> TemplateLookup:
        return spec_lookup(self.templates, self.cluster_templates, namespace)

    def _stale(self, key: str, obj: Obj, rss: list[Obj], runs: list[Obj]) -> bool:
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if self.written.stale(r.EXPERIMENTS.plural, {key: rv}):
            return True
        if self.written.stale_objects(r.REPLICASETS.plural, rss):
            return True
        # An AnalysisRun this experiment started and still waits for, not in the cache yet.
        namespace = str(obj["metadata"].get("namespace", ""))
        pending = [
            f"{namespace}/{run['analysisRun']}"
            for run in (obj.get("status") or {}).get("analysisRuns") or []
            if run.get("analysisRun") and run.get("phase") not in rec.COMPLETED
        ]
        cached = {f"{namespace}/{x['metadata']['name']}" for x in runs}
        return bool(self.written.unseen(r.ANALYSISRUNS.plural, pending, cached))

    def _persist(self, obj: Obj, status: ExperimentStatus) -> None:
        patch = merge_patch(obj.get("status") or {}, _without_none(status.to_dict()))
        if not patch:
            return
        meta = obj["metadata"]
        body = fenced({"status": patch}, meta.get("resourceVersion"))
        self.writer.patch(r.EXPERIMENTS, meta["namespace"], meta["name"], body, status=True)

    def _write_invalid_spec(self, obj: Obj, message: str, now: dt.datetime) -> None:
        """InvalidSpec on the raw status (the spec may not even parse); the phase is kept."""
        status = obj.get("status") or {}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "InvalidSpec"]
        previous = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "InvalidSpec"), None
        )
        if previous is not None and previous.get("message") == message:
            return
        condition = rec.new_condition(
            ExperimentConditionType.INVALID_SPEC, S.TRUE, "InvalidSpec", message, format_time(now)
        )
        conditions.append(condition.to_dict())
        log.warning("experiment %s has an invalid spec: %s", obj["metadata"].get("name"), message)
        meta = obj["metadata"]
        body = fenced({"status": {"conditions": conditions}}, meta.get("resourceVersion"))
        self.writer.patch(r.EXPERIMENTS, meta["namespace"], meta["name"], body, status=True)

    def _event(self, obj: Obj, reason: str, message: str, warning: bool, now: dt.datetime) -> None:
        self.events.record(obj, reason=reason, message=message, warning=warning, now=now)


def _without_none(value: Any) -> Any:
    """A status as Go writes it: fields cleared on the model are left out, not written null."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def make_handler(runtime: Runtime) -> Handler:
    """The handler factory named in settings (`reconcile.handlers.experiments`)."""
    settings = runtime.settings
    prefix = settings.redis.key_prefix
    kube = Kube(api_client(settings), settings.kube, counts=runtime.counts)
    written = WrittenVersions(runtime.redis, prefix=prefix)

    def lister(resource: r.Resource) -> Lister:
        return Lister(runtime.redis, prefix=prefix, resource=resource)

    controller = ExperimentController(
        experiments=lister(r.EXPERIMENTS),
        replicasets=lister(r.REPLICASETS),
        services=lister(r.SERVICES),
        analysis_runs=lister(r.ANALYSISRUNS),
        templates=lister(r.ANALYSISTEMPLATES),
        cluster_templates=lister(r.CLUSTERANALYSISTEMPLATES),
        written=written,
        writer=KubeWriter(kube, on_written=written.record),
        outbox=make_outbox(runtime),
        events=runtime.events,
    )
    return when_cache_synced(runtime, controller.sync)
