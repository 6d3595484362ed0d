"""The job provider against a RecordingWriter: names, labels, ownership, status mapping, GC
(cases from Argo's job_test.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.analysis.providers.base import Obj
from rollout_workers.analysis.providers.job import (
    JOB_NAME_KEY,
    JobProvider,
    calculate_job_phase,
)
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import KubeError
from rollout_workers.kube.writer import RecordingWriter
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run

JOB_METRIC: dict[str, Any] = {
    "name": "dummymetric",
    "provider": {
        "job": {
            "metadata": {"labels": {"foo-label": "bar"}, "annotations": {"foo-annotation": "bar"}},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "containers": [{"name": "dummy", "image": "x", "command": ["dosomething"]}],
                        "restartPolicy": "Never",
                    }
                },
            },
        }
    },
}


class RecordedJobs:
    """A JobReader over the RecordingWriter's objects (what the cache would hold)."""

    def __init__(self, writer: RecordingWriter) -> None:
        self.writer = writer

    def get(self, namespace: str, name: str) -> Obj | None:
        obj = self.writer.objects.get(("jobs", namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def list_for_run(self, namespace: str, run_uid: str) -> list[Obj]:
        return [
            copy.deepcopy(obj)
            for (plural, ns, _), obj in self.writer.objects.items()
            if plural == "jobs"
            and ns == namespace
            and obj["metadata"].get("labels", {}).get("analysisrun.argoproj.io/uid") == run_uid
        ]


def setup(status: dict[str, Any] | None = None) -> tuple[JobProvider, RecordingWriter, AnalysisRun]:
    writer = RecordingWriter()
    return (
        JobProvider(writer=writer, jobs=RecordedJobs(writer)),
        writer,
        analysis_run(JOB_METRIC, status=status),
    )


def running(name: str | None) -> Measurement:
    return Measurement.from_dict(
        {
            "phase": "Running",
            "startedAt": NOW_TEXT,
            **({"metadata": {JOB_NAME_KEY: name}} if name else {}),
        }
    )


def test_run_creates_the_job_as_argo_does() -> None:
    provider, writer, run = setup()
    measurement = provider.run(run, run.spec.metrics[0], NOW)
    assert measurement.to_dict() == {
        "phase": "Running",
        "startedAt": NOW_TEXT,
        "metadata": {"job-name": "uid-1.dummymetric.1"},
    }
    assert writer.verbs() == ["create jobs"]
    body = writer.actions[0].body
    assert writer.actions[0].namespace == "ns"
    assert body["apiVersion"] == "batch/v1" and body["kind"] == "Job"
    assert body["metadata"] == {
        "name": "uid-1.dummymetric.1",
        "namespace": "ns",
        "labels": {"foo-label": "bar", "analysisrun.argoproj.io/uid": "uid-1"},
        "annotations": {
            "foo-annotation": "bar",
            "analysisrun.argoproj.io/name": "run1",
            "analysisrun.argoproj.io/metric-name": "dummymetric",
        },
        "ownerReferences": [
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "AnalysisRun",
                "name": "run1",
                "uid": "uid-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert body["spec"] == JOB_METRIC["provider"]["job"]["spec"]


def test_the_job_number_counts_measurements_and_errors() -> None:
    provider, _, run = setup(
        {"metricResults": [{"name": "dummymetric", "phase": "Running", "count": 1, "error": 2}]}
    )
    assert provider.run(run, run.spec.metrics[0], NOW).metadata == {
        JOB_NAME_KEY: "uid-1.dummymetric.4"
    }


def test_create_collision_with_our_own_job_is_running() -> None:
    provider, writer, run = setup()
    provider.run(run, run.spec.metrics[0], NOW)
    again = provider.run(run, run.spec.metrics[0], NOW)
    assert (again.phase, again.finished_at) == (P.RUNNING, None)
    assert writer.verbs() == ["create jobs", "create jobs"]


@pytest.mark.parametrize(("condition", "phase"), [("Complete", P.SUCCESSFUL), ("Failed", P.FAILED)])
def test_create_collision_with_our_own_finished_job_finishes_the_measurement(
    condition: str, phase: P
) -> None:
    """A reconcile killed after creating its Job and before recording the measurement: the
    Job finished while the run's key was held by the dead worker, so no Job event will wake
    the run again. The retried create reads the Job and finishes (the e2e stall of an
    experiment's analysis under kill -9)."""
    provider, writer, run = setup()
    name = provider.run(run, run.spec.metrics[0], NOW).metadata[JOB_NAME_KEY]  # type: ignore[index]
    writer.patch(r.JOBS, "ns", name, job_with(condition), status=True)
    again = provider.run(run, run.spec.metrics[0], NOW)
    assert (again.phase, again.finished_at, again.metadata) == (
        phase,
        NOW_TEXT,
        {JOB_NAME_KEY: name},
    )


def test_create_collision_with_a_foreign_job_is_an_error() -> None:
    provider, writer, run = setup()
    writer.seed(
        r.JOBS,
        {"metadata": {"name": "uid-1.dummymetric.1", "namespace": "ns", "ownerReferences": []}},
    )
    measurement = provider.run(run, run.spec.metrics[0], NOW)
    assert measurement.phase == P.ERROR
    assert measurement.finished_at == NOW_TEXT
    assert "exists" in (measurement.message or "")


class FailingWriter(RecordingWriter):
    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
        raise KubeError(500, "InternalError", "random create failure")

    def delete(
        self, resource: r.Resource, namespace: str, name: str, *, propagation: str | None = None
    ) -> None:
        raise KubeError(500, "InternalError", "random delete error")


def test_create_failure_is_an_error() -> None:
    writer = FailingWriter()
    provider = JobProvider(writer=writer, jobs=RecordedJobs(writer))
    run = analysis_run(JOB_METRIC)
    measurement = provider.run(run, run.spec.metrics[0], NOW)
    assert measurement.to_dict() == {
        "phase": "Error",
        "message": "random create failure",
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
    }


def job_with(*conditions: str) -> Obj:
    return {"status": {"conditions": [{"type": c, "status": "True"} for c in conditions]}}


STATUS = [
    ("no status", {}, None),
    ("running", {"status": {"active": 1}}, None),
    ("complete", job_with("Complete"), P.SUCCESSFUL),
    ("failed", job_with("Failed"), P.FAILED),
    (
        "success criteria met, then complete (k8s 1.31)",
        job_with("SuccessCriteriaMet", "Complete"),
        P.SUCCESSFUL,
    ),
    ("failure target, then failed", job_with("FailureTarget", "Failed"), P.FAILED),
    ("suspended", job_with("Suspended"), None),
]


@pytest.mark.parametrize(("job", "phase"), [c[1:] for c in STATUS], ids=[c[0] for c in STATUS])
def test_job_status_mapping(job: Obj, phase: P | None) -> None:
    assert calculate_job_phase(job) == phase


@pytest.mark.parametrize(("condition", "phase"), [("Complete", P.SUCCESSFUL), ("Failed", P.FAILED)])
def test_resume_finishes_with_the_job(condition: str, phase: P) -> None:
    provider, writer, run = setup()
    name = provider.run(run, run.spec.metrics[0], NOW).metadata[JOB_NAME_KEY]  # type: ignore[index]
    assert provider.resume(run, run.spec.metrics[0], running(name), NOW).phase == P.RUNNING
    writer.patch(r.JOBS, "ns", name, job_with(condition), status=True)
    measurement = provider.resume(run, run.spec.metrics[0], running(name), NOW)
    assert (measurement.phase, measurement.finished_at) == (phase, NOW_TEXT)


def test_resume_of_a_missing_job_is_an_error() -> None:
    provider, _, run = setup()
    measurement = provider.resume(
        run, run.spec.metrics[0], running("job-which-does-not-exist"), NOW
    )
    assert (measurement.phase, measurement.message, measurement.finished_at) == (
        P.ERROR,
        'job.batch "job-which-does-not-exist" not found',
        NOW_TEXT,
    )


@pytest.mark.parametrize("method", ["resume", "terminate"])
def test_measurement_without_job_name_is_an_error(method: str) -> None:
    provider, _, run = setup()
    measurement = getattr(provider, method)(run, run.spec.metrics[0], running(None), NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, "job metadata reference missing")


def test_terminate_deletes_the_job() -> None:
    provider, writer, run = setup()
    name = provider.run(run, run.spec.metrics[0], NOW).metadata[JOB_NAME_KEY]  # type: ignore[index]
    measurement = provider.terminate(run, run.spec.metrics[0], running(name), NOW)
    assert (measurement.phase, measurement.finished_at) == (P.SUCCESSFUL, NOW_TEXT)
    assert writer.verbs() == ["create jobs", "delete jobs"]
    assert ("jobs", "ns", name) not in writer.objects


def test_terminate_failure_is_an_error() -> None:
    writer = FailingWriter()
    provider = JobProvider(writer=writer, jobs=RecordedJobs(writer))
    run = analysis_run(JOB_METRIC)
    measurement = provider.terminate(run, run.spec.metrics[0], running("doesnt-matter"), NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, "random delete error")


def seed_job(
    writer: RecordingWriter, name: str, metric: str, created: str, uid: str = "uid-1"
) -> None:
    writer.seed(
        r.JOBS,
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "creationTimestamp": created,
                "labels": {"analysisrun.argoproj.io/uid": uid},
                "annotations": {"analysisrun.argoproj.io/metric-name": metric},
            }
        },
    )


def test_garbage_collect_keeps_the_newest_jobs_of_the_metric() -> None:
    provider, writer, run = setup()
    for i in range(12):
        seed_job(writer, f"uid-1.dummymetric.{i + 1}", "dummymetric", f"2024-05-01T12:00:{i:02d}Z")
    seed_job(writer, "uid-1.other.1", "other", "2024-05-01T11:00:00Z")
    seed_job(writer, "uid-2.dummymetric.1", "dummymetric", "2024-05-01T11:00:00Z", uid="uid-2")
    provider.garbage_collect(run, run.spec.metrics[0], 10)
    assert [a.name for a in writer.actions] == ["uid-1.dummymetric.1", "uid-1.dummymetric.2"]
    assert writer.verbs() == ["delete jobs", "delete jobs"]


def test_garbage_collect_orders_jobs_of_the_same_second_by_number() -> None:
    provider, writer, run = setup()
    for i in (10, 9, 11):  # seeded out of order, all created in the same second
        seed_job(writer, f"uid-1.dummymetric.{i}", "dummymetric", "2024-05-01T12:00:00Z")
    provider.garbage_collect(run, run.spec.metrics[0], 1)
    assert [a.name for a in writer.actions] == ["uid-1.dummymetric.9", "uid-1.dummymetric.10"]


def test_garbage_collect_under_the_limit_deletes_nothing() -> None:
    provider, writer, run = setup()
    seed_job(writer, "uid-1.dummymetric.1", "dummymetric", "2024-05-01T12:00:00Z")
    provider.garbage_collect(run, run.spec.metrics[0], 10)
    assert writer.actions == []
    assert provider.type() == "Job" and provider.metadata(run.spec.metrics[0]) == {}
