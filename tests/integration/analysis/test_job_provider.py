"""The job provider against the embedded Kubernetes API: a KubeWriter, the real client, and the
devcluster's job runner (a Job succeeds after a short delay, or fails on `exit N`)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.analysis.providers import (
    KubeSecretReader,
    ProviderDeps,
    SecretError,
    provider_for,
)
from rollout_workers.analysis.providers.base import Provider
from rollout_workers.analysis.providers.job import JOB_NAME_KEY, KubeJobReader
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import SECRETS
from rollout_workers.kube.writer import KubeWriter
from rollout_workers.settings import Settings
from tests.unit.analysis.providers.stubs import NOW

NS = "default"


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[Kube]:
    cluster: DevClusterThread = run_in_thread(ready_delay=0.1, job_duration=0.2)
    try:
        settings = Settings(kubeconfig=cluster.write_kubeconfig(tmp_path / "kubeconfig"))
        yield Kube(api_client(settings), settings.kube)
    finally:
        cluster.stop()


def job_metric(name: str, command: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "provider": {
            "job": {
                "metadata": {"labels": {"team": "qa"}},
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "check", "image": "busybox", "command": command}
                            ],
                            "restartPolicy": "Never",
                        }
                    },
                },
            }
        },
    }


def create_run(kube: Kube, *metrics: dict[str, Any]) -> AnalysisRun:
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": "run1"},
        "spec": {"metrics": list(metrics)},
    }
    return AnalysisRun.from_dict(kube.create(r.ANALYSISRUNS, NS, body))


def deps(kube: Kube) -> ProviderDeps:
    return ProviderDeps(
        writer=KubeWriter(kube), jobs=KubeJobReader(kube), secrets=KubeSecretReader(kube)
    )


def resume_until_done(
    provider: Provider,
    run: AnalysisRun,
    metric: Metric,
    measurement: Measurement,
    timeout: float = 20,
) -> Measurement:
    """What later reconciles do: resume until the measurement completes (polling, deadline)."""
    deadline = time.monotonic() + timeout
    while not measurement.phase.completed:
        assert time.monotonic() < deadline, f"still {measurement.phase} after {timeout}s"
        time.sleep(0.05)
        measurement = provider.resume(run, metric, measurement, NOW)
    return measurement


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("command", "phase"),
    [(["sh", "-c", "exit 0"], P.SUCCESSFUL), (["sh", "-c", "exit 3"], P.FAILED)],
    ids=["job succeeds", "job fails"],
)
def test_run_then_resume_until_the_job_finishes(kube: Kube, command: list[str], phase: P) -> None:
    run = create_run(kube, job_metric("check", command))
    metric = run.spec.metrics[0]
    provider = provider_for(metric, deps(kube))
    measurement = provider.run(run, metric, NOW)
    assert measurement.phase == P.RUNNING
    name = f"{run.metadata.uid}.check.1"
    assert measurement.metadata == {JOB_NAME_KEY: name}

    job = kube.get(r.JOBS, NS, name)
    assert job["metadata"]["labels"] == {
        "team": "qa",
        "analysisrun.argoproj.io/uid": run.metadata.uid,
    }
    assert job["metadata"]["annotations"]["analysisrun.argoproj.io/metric-name"] == "check"
    assert job["metadata"]["ownerReferences"][0]["uid"] == run.metadata.uid

    done = resume_until_done(provider, run, metric, measurement)
    assert done.phase == phase
    assert done.finished_at is not None


def test_run_twice_for_the_same_measurement_is_not_an_error(kube: Kube) -> None:
    run = create_run(kube, job_metric("check", ["true"]))
    metric = run.spec.metrics[0]
    provider = provider_for(metric, deps(kube))
    first = provider.run(run, metric, NOW)
    again = provider.run(run, metric, NOW)  # e.g. the status write after the first one was lost
    assert (again.phase, again.metadata) == (P.RUNNING, first.metadata)


def test_terminate_deletes_the_job(kube: Kube) -> None:
    run = create_run(kube, job_metric("check", ["sleep", "60"]))
    metric = run.spec.metrics[0]
    provider = provider_for(metric, deps(kube))
    measurement = provider.run(run, metric, NOW)
    name = (measurement.metadata or {})[JOB_NAME_KEY]
    terminated = provider.terminate(run, metric, measurement, NOW)
    assert terminated.phase == P.SUCCESSFUL

    def gone() -> bool:
        try:
            kube.get(r.JOBS, NS, name)
        except NotFound:
            return True
        return False

    wait_for(gone)
    again = provider.terminate(run, metric, measurement, NOW)  # already gone: still fine
    assert again.phase == P.SUCCESSFUL


def test_garbage_collect_keeps_the_newest(kube: Kube) -> None:
    run = create_run(kube, job_metric("check", ["true"]), job_metric("other", ["true"]))
    check, other = run.spec.metrics
    provider = provider_for(check, deps(kube))
    provider.run(run, other, NOW)
    for count in range(3):  # measurements 1..3 of "check", as the reconcile would number them
        run = AnalysisRun.from_dict(
            {
                **run.to_dict(),
                "status": {
                    "metricResults": [{"name": "check", "phase": "Running", "count": count}]
                },
            }
        )
        provider.run(run, check, NOW)
    provider.garbage_collect(run, check, 1)

    def remaining() -> list[str]:
        items, _ = kube.list(r.JOBS, namespace=NS)
        return sorted(
            j["metadata"]["name"] for j in items if not j["metadata"].get("deletionTimestamp")
        )

    uid = run.metadata.uid
    wait_for(lambda: remaining() == sorted([f"{uid}.check.3", f"{uid}.other.1"]))


def test_secrets_are_read_through_the_api(kube: Kube) -> None:
    kube.create(
        SECRETS,
        NS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "data": {"token": base64.b64encode(b"s3cret").decode()},
        },
    )
    reader = KubeSecretReader(kube)
    assert reader.read(NS, "creds", "token") == "s3cret"
    with pytest.raises(SecretError, match="key 'nope' does not exist in secret 'creds'"):
        reader.read(NS, "creds", "nope")
    with pytest.raises(NotFound):
        reader.read(NS, "missing", "token")
