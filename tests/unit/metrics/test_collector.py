# ruff: noqa: E501  (exposition lines are compared whole)
"""The collector's rendering: Argo's names, labels and types, from a hand-made snapshot."""

from __future__ import annotations

import re
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rollout_workers.metrics.collector import (
    PoolCollector,
    Snapshot,
    calculate_dry_run,
    calculate_metric_type,
    calculate_rollout_phase,
    calculate_strategy,
    exposition,
    render_families,
)


def rollout(
    name: str, strategy: dict[str, Any], status: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"strategy": strategy, **spec},
        "status": status,
    }


def cond(type_: str, reason: str) -> dict[str, str]:
    return {"type": type_, "status": "True", "reason": reason}


CANARY = rollout(
    "web",
    {"canary": {"trafficRouting": {"istio": {}}}},
    {
        "replicas": 5,
        "availableReplicas": 4,
        "updatedReplicas": 2,
        "conditions": [cond("Progressing", "RolloutPaused")],
    },
    replicas=5,
)
BLUEGREEN = rollout(
    "api",
    {"blueGreen": {"activeService": "api"}},
    {
        "replicas": 1,
        "availableReplicas": 1,
        "conditions": [cond("Progressing", "NewReplicaSetAvailable")],
    },
)
RUN = {
    "metadata": {"namespace": "ns", "name": "web-1"},
    "spec": {
        "metrics": [
            {"name": "success", "provider": {"prometheus": {"query": "x"}}},
            {"name": "errors", "provider": {"web": {"url": "http://x"}}},
        ],
        "dryRun": [{"metricName": "err.*"}],
    },
    "status": {"phase": "Running", "metricResults": [{"name": "success", "phase": "Successful"}]},
}
EXPERIMENT = {"metadata": {"namespace": "ns", "name": "exp"}, "status": {"phase": "Running"}}


def snapshot() -> Snapshot:
    return Snapshot(
        now_ms=10_000,
        objects={
            "rollouts": [CANARY, BLUEGREEN],
            "analysisruns": [RUN],
            "experiments": [EXPERIMENT],
        },
        reconcile={
            "rollouts": {
                "ns/web|b0": 3,
                "ns/web|b2": 1,
                "ns/web|b5": 1,
                "ns/web|sum": 2_500_000,
                "ns/web|err": 2,
                "ns/gone|b0": 7,  # no longer in the cache: not reported
            },
            "analysisruns": {"ns/web-1|b1": 1, "ns/web-1|sum": 100_000},
            "experiments": {},
        },
        workqueue={
            "rollouts": {
                "adds": 12,
                "retries": 2,
                "queue|b6": 5,
                "queue|sum": 40_000,
                "work|b8": 5,
                "work|sum": 2_500_000,
            },
            "analysisruns": {},
            "experiments": {},
        },
        depth={"rollouts": 3, "analysisruns": 0, "experiments": 0},
        started={"rollouts": [7_000, 9_500], "analysisruns": [], "experiments": []},
        k8s_requests={"rollouts|ns|web|Patch|200": 4, "events|ns|N/A|Create|201": 2},
        events={"ns|web|Normal|RolloutPaused": 2},
        events_dropped={"queue_full": 1, "spam": 4},
        notifications={
            "ok|ns|web|Normal|RolloutPaused": 3,
            "err|ns|web|Warning|RolloutAborted": 1,
            "send|ns/web|b1": 2,
            "send|ns/web|b5": 1,
            "send|ns/web|sum": 1_600_000,
        },
    )


class Fixed(PoolCollector):
    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def collect(self) -> Any:
        return render_families(self.snap)


@pytest.fixture
def text() -> str:
    return exposition([Fixed(snapshot())]).decode()


def types(text: str) -> dict[str, str]:
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def test_names_and_types_are_argos(text: str) -> None:
    assert types(text) == {
        "rollout_info": "gauge",
        "rollout_info_replicas_available": "gauge",
        "rollout_info_replicas_unavailable": "gauge",
        "rollout_info_replicas_desired": "gauge",
        "rollout_info_replicas_updated": "gauge",
        "rollout_phase": "gauge",
        "analysis_run_info": "gauge",
        "analysis_run_phase": "gauge",
        "analysis_run_metric_type": "gauge",
        "analysis_run_metric_phase": "gauge",
        "experiment_info": "gauge",
        "experiment_phase": "gauge",
        "rollout_reconcile": "histogram",
        "rollout_reconcile_error": "counter",
        "analysis_run_reconcile": "histogram",
        "analysis_run_reconcile_error": "counter",
        "experiment_reconcile": "histogram",
        "experiment_reconcile_error": "counter",
        "controller_clientset_k8s_request_total": "counter",
        "rollout_events_total": "counter",
        "rollout_events_dropped_total": "counter",  # ours: events never written
        "notification_send_success": "counter",
        "notification_send_error": "counter",
        "notification_send": "histogram",
        "workqueue_depth": "gauge",
        "workqueue_adds_total": "counter",
        "workqueue_queue_duration_seconds": "histogram",
        "workqueue_work_duration_seconds": "histogram",
        "workqueue_unfinished_work_seconds": "gauge",
        "workqueue_longest_running_processor_seconds": "gauge",
        "workqueue_retries_total": "counter",
    }


def test_the_text_parses_as_prometheus_exposition(text: str) -> None:
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert "rollout_info" in families
    assert families["rollout_reconcile"].type == "histogram"


@pytest.mark.parametrize(
    "line",
    [
        'rollout_info{name="web",namespace="ns",phase="Paused",strategy="canary",traffic_router="Istio"} 1',
        'rollout_info{name="api",namespace="ns",phase="Completed",strategy="blueGreen",traffic_router=""} 1',
        'rollout_info_replicas_available{name="web",namespace="ns"} 4',
        'rollout_info_replicas_unavailable{name="web",namespace="ns"} 1',
        'rollout_info_replicas_desired{name="web",namespace="ns"} 5',
        'rollout_info_replicas_desired{name="api",namespace="ns"} 1',
        'rollout_info_replicas_updated{name="web",namespace="ns"} 2',
        'rollout_phase{name="web",namespace="ns",phase="Paused",strategy="canary"} 1',
        'rollout_phase{name="web",namespace="ns",phase="Completed",strategy="canary"} 0',
        'analysis_run_info{name="web-1",namespace="ns",phase="Running"} 1',
        'analysis_run_phase{name="web-1",namespace="ns",phase="Running"} 1',
        'analysis_run_metric_type{metric="success",name="web-1",namespace="ns",type="Prometheus"} 1',
        'analysis_run_metric_type{metric="errors",name="web-1",namespace="ns",type="Web"} 1',
        'analysis_run_metric_phase{dry_run="false",metric="success",name="web-1",namespace="ns",phase="Successful",type="Prometheus"} 1',
        'analysis_run_metric_phase{dry_run="true",metric="errors",name="web-1",namespace="ns",phase="Pending",type="Web"} 1',
        'experiment_info{name="exp",namespace="ns",phase="Running"} 1',
        'experiment_phase{name="exp",namespace="ns",phase="Running"} 1',
        'rollout_reconcile_bucket{le="0.01",name="web",namespace="ns"} 3',
        'rollout_reconcile_bucket{le="0.15",name="web",namespace="ns"} 3',
        'rollout_reconcile_bucket{le="0.25",name="web",namespace="ns"} 4',
        'rollout_reconcile_bucket{le="1",name="web",namespace="ns"} 4',
        'rollout_reconcile_bucket{le="+Inf",name="web",namespace="ns"} 5',
        'rollout_reconcile_count{name="web",namespace="ns"} 5',
        'rollout_reconcile_sum{name="web",namespace="ns"} 2.5',
        'rollout_reconcile_error{name="web",namespace="ns"} 2',
        'analysis_run_reconcile_count{name="web-1",namespace="ns"} 1',
        'controller_clientset_k8s_request_total{kind="rollouts",name="web",namespace="ns",status_code="200",verb="Patch"} 4',
        'controller_clientset_k8s_request_total{kind="events",name="N/A",namespace="ns",status_code="201",verb="Create"} 2',
        'rollout_events_total{name="web",namespace="ns",reason="RolloutPaused",type="Normal"} 2',
        'rollout_events_dropped_total{cause="queue_full"} 1',
        'rollout_events_dropped_total{cause="spam"} 4',
        'notification_send_success{name="web",namespace="ns",reason="RolloutPaused",type="Normal"} 3',
        'notification_send_error{name="web",namespace="ns",reason="RolloutAborted",type="Warning"} 1',
        'notification_send_bucket{le="0.01",name="web",namespace="ns"} 0',
        'notification_send_bucket{le="0.15",name="web",namespace="ns"} 2',
        'notification_send_bucket{le="+Inf",name="web",namespace="ns"} 3',
        'notification_send_sum{name="web",namespace="ns"} 1.6',
        'workqueue_depth{name="Rollouts"} 3',
        'workqueue_depth{name="AnalysisRuns"} 0',
        'workqueue_adds_total{name="Rollouts"} 12',
        'workqueue_retries_total{name="Rollouts"} 2',
        'workqueue_queue_duration_seconds_bucket{le="0.001",name="Rollouts"} 0',
        'workqueue_queue_duration_seconds_bucket{le="0.01",name="Rollouts"} 5',
        'workqueue_queue_duration_seconds_bucket{le="9.999999999999999e-06",name="Rollouts"} 0',
        'workqueue_queue_duration_seconds_sum{name="Rollouts"} 0.04',
        'workqueue_work_duration_seconds_count{name="Rollouts"} 5',
        'workqueue_unfinished_work_seconds{name="Rollouts"} 3.5',
        'workqueue_longest_running_processor_seconds{name="Rollouts"} 3',
    ],
)  # fmt: skip
def test_series(text: str, line: str) -> None:
    assert line in text.splitlines()


def test_objects_gone_from_the_cache_are_not_reported(text: str) -> None:
    assert 'name="gone"' not in text


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [
        pytest.param([], "Progressing", id="no condition"),
        pytest.param([cond("Progressing", "ReplicaSetUpdated")], "Progressing", id="progressing"),
        pytest.param([cond("Progressing", "NewReplicaSetAvailable")], "Completed", id="completed"),
        pytest.param([cond("Progressing", "RolloutPaused")], "Paused", id="paused"),
        pytest.param([cond("Progressing", "ProgressDeadlineExceeded")], "Timeout", id="timeout"),
        pytest.param([cond("Progressing", "ReplicaSetCreateError")], "Error", id="error"),
        pytest.param([cond("Progressing", "RolloutAborted")], "Abort", id="aborted"),
        pytest.param(
            [cond("Progressing", "RolloutAborted"), cond("InvalidSpec", "InvalidSpec")],
            "InvalidSpec",
            id="invalid spec wins",
        ),
    ],
)
def test_rollout_phase_as_argo(conditions: list[dict[str, str]], phase: str) -> None:
    assert calculate_rollout_phase({"status": {"conditions": conditions}}) == phase


@pytest.mark.parametrize(
    ("strategy", "labels"),
    [
        pytest.param({"blueGreen": {}}, ("blueGreen", ""), id="blue-green"),
        pytest.param({"canary": {}}, ("canary", ""), id="canary"),
        pytest.param({"canary": {"trafficRouting": {"nginx": {}}}}, ("canary", "Nginx"), id="nginx"),
        pytest.param({"canary": {"trafficRouting": {"alb": {}, "smi": {}}}}, ("canary", "SMI"), id="last wins"),
        pytest.param({}, ("none", ""), id="none"),
    ],
)  # fmt: skip
def test_strategy_as_argo(strategy: dict[str, Any], labels: tuple[str, str]) -> None:
    assert calculate_strategy({"spec": {"strategy": strategy}}) == labels


def test_metric_types_and_dry_run() -> None:
    assert calculate_metric_type({"provider": {"job": {}}}) == "Job"
    assert (
        calculate_metric_type({"provider": {"plugin": {"argoproj-labs/x": {}}}})
        == "argoproj-labs/x"
    )
    assert calculate_metric_type({"provider": {}}) == "Unknown Provider"
    run = {"spec": {"metrics": [{"name": "a"}, {"name": "b"}], "dryRun": [{"metricName": "*"}]}}
    assert calculate_dry_run(run) == {"a": True, "b": True}


def test_label_values_are_escaped() -> None:
    odd = {"metadata": {"namespace": "ns", "name": "x"}, "status": {"phase": 'a"b\\c\nd'}}
    snap = snapshot()
    snap.objects["experiments"] = [odd]
    text = exposition([Fixed(snap)]).decode()
    assert 'experiment_info{name="x",namespace="ns",phase="a\\"b\\\\c\\nd"} 1' in text.splitlines()
    list(text_string_to_metric_families(text))
