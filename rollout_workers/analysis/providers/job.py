"""Job metrics: a Kubernetes Job whose success or failure is the measurement.

Behaviour of Argo Rollouts' `metricproviders/job`:

- `run` creates a batch/v1 Job from the metric's `job.spec` (and `job.metadata` labels and
  annotations), named `<run uid>.<metric name>.<n>` where n is the number of measurements taken
  so far (count + error) plus one; labelled `analysisrun.argoproj.io/uid=<run uid>`, annotated
  with the run's name (`analysisrun.argoproj.io/name`) and the metric's
  (`analysisrun.argoproj.io/metric-name`), controlled by the AnalysisRun (ownerReference with
  `controller: true`). It returns a Running measurement whose metadata names the Job (`job-name`).
  Creating a Job that already exists and is this run's is not an error (a retried reconcile,
  whose predecessor died after creating it): the Job is read as `resume` reads it, so a Job that
  finished meanwhile finishes the measurement at once.
- `resume` reads the Job: a `Complete` condition makes the measurement Successful, `Failed`
  makes it Failed; otherwise it stays Running. A missing Job is an Error.
- `terminate` deletes the Job and marks the measurement Successful (the reconcile adds
  "Metric Terminated").
- `garbage_collect` deletes the oldest Jobs of the metric beyond `limit` (by creation time).
  Argo counts every Job of the run here, whatever its metric; counting the metric's own keeps
  one metric's retention from deleting another metric's Jobs.

Deviation: Argo deletes with `propagationPolicy: Foreground` so that the Job's pods go too; the
`Writer.delete` interface takes no options, so on a real cluster pods of a deleted Job are
orphaned (Jobs default to Orphan) until the Writer grows a propagation option.

Reads go through a `JobReader` (the Redis cache in the workers); writes through the `Writer`.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
from typing import Any

from rollout_workers.analysis.providers.base import (
    JobReader,
    ProviderDeps,
    format_time,
    mark_error,
    started,
)
from rollout_workers.api.analysis import AnalysisPhase, AnalysisRun, Measurement, Metric
from rollout_workers.cache.store import Lister
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import AlreadyExists, KubeError, NotFound
from rollout_workers.kube.writer import Writer
from rollout_workers.objects import Obj

PROVIDER_TYPE = "Job"
#: The measurement's metadata key naming its Job.
JOB_NAME_KEY = "job-name"
RUN_NAME_ANNOTATION = "analysisrun.argoproj.io/name"
METRIC_NAME_ANNOTATION = "analysisrun.argoproj.io/metric-name"
RUN_UID_LABEL = r.ANALYSIS_RUN_UID_LABEL  # "analysisrun.argoproj.io/uid"


def calculate_job_name(run: AnalysisRun, metric: Metric) -> str:
    """`<uid>.<metric>.<n>`: n is one more than the measurements taken so far, so a retried
    create after a lost status write reuses the name instead of starting a second Job."""
    taken = 0
    for result in (run.status.metric_results or []) if run.status else []:
        if result.name == metric.name:
            taken = (result.count or 0) + (result.error or 0)
    return f"{run.metadata.uid}.{metric.name}.{taken + 1}"


def calculate_job(run: AnalysisRun, metric: Metric) -> Obj:
    """The Job to create for the next measurement of `metric`."""
    spec = metric.provider.job
    assert spec is not None, "the factory only builds a job provider for job metrics"
    template_meta: dict[str, Any] = spec.metadata or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    labels[RUN_UID_LABEL] = str(run.metadata.uid)
    annotations[RUN_NAME_ANNOTATION] = str(run.metadata.name)
    annotations[METRIC_NAME_ANNOTATION] = metric.name
    return {
        "apiVersion": r.JOBS.api_version,
        "kind": r.JOBS.kind,
        "metadata": {
            "name": calculate_job_name(run, metric),
            "namespace": run.metadata.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_ref(run)],
        },
        "spec": copy.deepcopy(spec.spec),
    }


def controller_ref(run: AnalysisRun) -> Obj:
    return {
        "apiVersion": run.api_version,
        "kind": run.kind,
        "name": run.metadata.name,
        "uid": run.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def calculate_job_phase(job: Obj) -> AnalysisPhase | None:
    """Successful or Failed once the Job has finished, None while it runs. As Argo, the last
    Complete or Failed condition decides and the conditions' status is not looked at (the Job
    controller only ever adds them as True)."""
    phase: AnalysisPhase | None = None
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Complete":
            phase = AnalysisPhase.SUCCESSFUL
        elif condition.get("type") == "Failed":
            phase = AnalysisPhase.FAILED
    return phase


class JobProvider:
    def __init__(self, *, writer: Writer, jobs: JobReader) -> None:
        self.writer = writer
        self.jobs = jobs

    @classmethod
    def from_deps(cls, deps: ProviderDeps) -> JobProvider:
        if deps.writer is None or deps.jobs is None:
            raise ValueError("the job provider needs ProviderDeps.writer and ProviderDeps.jobs")
        return cls(writer=deps.writer, jobs=deps.jobs)

    def type(self) -> str:
        return PROVIDER_TYPE

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        job = calculate_job(run, metric)
        name = job["metadata"]["name"]
        namespace = str(run.metadata.namespace)
        try:
            self.writer.create(r.JOBS, namespace, job)
        except AlreadyExists as err:
            existing = self.jobs.get(namespace, name)
            # The name holds the run's uid, so a clash means a retried create of our own Job;
            # the owner check guards against a hand-made Job of that name. A cache that has not
            # seen the Job yet cannot tell: the name is taken as ours.
            if existing is not None and not _controlled_by(existing, str(run.metadata.uid)):
                return mark_error(measurement, err.message or str(err), now)
            running = measurement.model_copy(update={"metadata": {JOB_NAME_KEY: name}})
            if existing is not None:
                # Our Job from a reconcile that died before recording it may have finished
                # already: no later Job event will come to wake the run (its last one came
                # while the dead worker held the run), so it is measured now.
                return self.resume(run, metric, running, now)
            return running
        except KubeError as err:
            return mark_error(measurement, err.message or str(err), now)
        return measurement.model_copy(update={"metadata": {JOB_NAME_KEY: name}})

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        name = (measurement.metadata or {}).get(JOB_NAME_KEY)
        if not name:
            return mark_error(measurement, "job metadata reference missing", now)
        job = self.jobs.get(str(run.metadata.namespace), name)
        if job is None:
            return mark_error(measurement, f'job.batch "{name}" not found', now)
        phase = calculate_job_phase(job)
        if phase is None:
            return measurement
        return measurement.model_copy(update={"phase": phase, "finished_at": format_time(now)})

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        name = (measurement.metadata or {}).get(JOB_NAME_KEY)
        if not name:
            return mark_error(measurement, "job metadata reference missing", now)
        try:
            # Foreground, as Argo: the Job's pods go with it (a Job alone orphans them).
            self.writer.delete(r.JOBS, str(run.metadata.namespace), name, propagation="Foreground")
        except NotFound:
            pass
        except KubeError as err:
            return mark_error(measurement, err.message or str(err), now)
        return measurement.model_copy(
            update={"phase": AnalysisPhase.SUCCESSFUL, "finished_at": format_time(now)}
        )

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        """Delete all but the newest `limit` Jobs of the metric; a failed delete raises
        `KubeError` (the reconcile logs it and carries on, as Argo's)."""
        namespace = str(run.metadata.namespace)
        mine = [
            job
            for job in self.jobs.list_for_run(namespace, str(run.metadata.uid))
            if (job["metadata"].get("annotations") or {}).get(METRIC_NAME_ANNOTATION) == metric.name
        ]
        mine.sort(key=lambda j: (j["metadata"].get("creationTimestamp") or "", _ordinal(j)))
        for job in mine[: max(0, len(mine) - max(0, limit))]:
            with contextlib.suppress(NotFound):
                self.writer.delete(
                    r.JOBS, namespace, job["metadata"]["name"], propagation="Foreground"
                )


def _controlled_by(job: Obj, uid: str) -> bool:
    refs = job.get("metadata", {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == uid for ref in refs)


def _ordinal(job: Obj) -> int:
    """The measurement number at the end of a Job's name: orders Jobs created within the same
    second (creationTimestamp has whole seconds)."""
    _, _, tail = str(job["metadata"].get("name", "")).rpartition(".")
    return int(tail) if tail.isdigit() else 0


# -- readers --------------------------------------------------------------------------------


class CachedJobReader:
    """Jobs from the Redis cache the watcher fills (it mirrors Jobs with the run uid label)."""

    def __init__(self, lister: Lister) -> None:
        self.lister = lister

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.lister.get(f"{namespace}/{name}")

    def list_for_run(self, namespace: str, run_uid: str) -> list[Obj]:
        return [
            job
            for job in self.lister.list(namespace)
            if (job["metadata"].get("labels") or {}).get(RUN_UID_LABEL) == run_uid
        ]


class KubeJobReader:
    """Jobs read from the API server."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def get(self, namespace: str, name: str) -> Obj | None:
        try:
            return self.kube.get(r.JOBS, namespace, name)
        except NotFound:
            return None

    def list_for_run(self, namespace: str, run_uid: str) -> list[Obj]:
        items, _ = self.kube.list(
            r.JOBS, namespace=namespace, label_selector=f"{RUN_UID_LABEL}={run_uid}"
        )
        return items
