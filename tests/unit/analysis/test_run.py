"""AnalysisRun bookkeeping: tasks, assessment, timing, retention (tables of named cases)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.analysis import run as ar
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric, MetricResult

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - dt.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def metric(**kw: Any) -> dict[str, Any]:
    return {"name": "m", "provider": {"web": {"url": "http://x"}}, **kw}


def run(
    metrics: list[dict[str, Any]], results: list[dict[str, Any]] | None = None, **spec: Any
) -> AnalysisRun:
    status: dict[str, Any] = {"startedAt": ts(100)}
    if results is not None:
        status["metricResults"] = results
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {"metrics": metrics, **spec},
            "status": status,
        }
    )


def measurement(phase: str, finished_ago: float | None = 30, **kw: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"phase": phase, "startedAt": ts((finished_ago or 0) + 1)}
    if finished_ago is not None:
        m["finishedAt"] = ts(finished_ago)
    return {**m, **kw}


def result(
    phase: str = "Running", measurements: list[dict[str, Any]] | None = None, **counts: Any
) -> dict[str, Any]:
    return {"name": "m", "phase": phase, "measurements": measurements or [], **counts}


TASKS = {
    "never measured": ([metric()], None, 1, False),
    "initial delay pending": ([metric(initialDelay="5m")], None, 0, False),
    "initial delay over": ([metric(initialDelay="30s")], None, 1, False),
    "in flight is resumed": (
        [metric(interval="1m")],
        [result(measurements=[measurement("Running", None)])],
        1,
        True,
    ),
    "resume not yet due": (
        [metric(interval="1m")],
        [result(measurements=[measurement("Running", None, resumeAt=ts(-60))])],
        0,
        True,
    ),
    "interval not elapsed": (
        [metric(interval="1m")],
        [result(measurements=[measurement("Successful")], count=1)],
        0,
        False,
    ),
    "interval elapsed": (
        [metric(interval="20s")],
        [result(measurements=[measurement("Successful")], count=1)],
        1,
        False,
    ),
    "count reached": (
        [metric(interval="1s", count=1)],
        [result(measurements=[measurement("Successful")], count=1)],
        0,
        False,
    ),
    "error retried after 10s": (
        [metric(interval="1h")],
        [result(measurements=[measurement("Error", 11)], error=1)],
        1,
        False,
    ),
    "completed metric": (
        [metric(interval="1s")],
        [result("Successful", [measurement("Successful")], count=1)],
        0,
        False,
    ),
}


@pytest.mark.parametrize(("metrics", "results", "n", "resume"), TASKS.values(), ids=TASKS.keys())
def test_generate_tasks(
    metrics: list[Any], results: list[Any] | None, n: int, resume: bool
) -> None:
    r = run(metrics, results)
    tasks = ar.generate_tasks(r, r.spec.metrics, NOW)
    assert len(tasks) == n
    if n:
        assert (tasks[0].incomplete is not None) is resume


def test_terminating_run_only_resumes() -> None:
    fresh = run([metric()], None, terminate=True)
    assert ar.generate_tasks(fresh, fresh.spec.metrics, NOW) == []
    inflight = run(
        [metric()], [result(measurements=[measurement("Running", None)])], terminate=True
    )
    assert len(ar.generate_tasks(inflight, inflight.spec.metrics, NOW)) == 1


ASSESS = {
    "no measurement": (metric(), result(), False, P.PENDING),
    "no measurement, terminating": (metric(), result(), True, P.SUCCESSFUL),
    "in flight": (metric(), result(measurements=[measurement("Running", None)]), False, P.RUNNING),
    "failure over limit": (
        metric(interval="1s"),
        result(measurements=[measurement("Failed")], failed=1, count=1),
        False,
        P.FAILED,
    ),
    "failure within limit": (
        metric(interval="1s", failureLimit=1),
        result(measurements=[measurement("Failed")], failed=1, count=1),
        False,
        P.RUNNING,
    ),
    "failure limit -1 disables": (
        metric(interval="1s", failureLimit=-1),
        result(measurements=[measurement("Failed")], failed=3, count=3),
        False,
        P.RUNNING,
    ),
    "inconclusive": (
        metric(interval="1s"),
        result(measurements=[measurement("Inconclusive")], inconclusive=1, count=1),
        False,
        P.INCONCLUSIVE,
    ),
    "errors over the default limit of 4": (
        metric(interval="1s"),
        result(measurements=[measurement("Error")], error=5, consecutiveError=5),
        False,
        P.ERROR,
    ),
    "errors within the limit": (
        metric(interval="1s"),
        result(measurements=[measurement("Error")], error=4, consecutiveError=4),
        False,
        P.RUNNING,
    ),
    "count reached": (
        metric(interval="1s", count=2),
        result(measurements=[measurement("Successful")], count=2, successful=2),
        False,
        P.SUCCESSFUL,
    ),
    "single measurement": (
        metric(),
        result(measurements=[measurement("Successful")], count=1, successful=1),
        False,
        P.SUCCESSFUL,
    ),
    "indefinite, terminating": (
        metric(interval="1s"),
        result(measurements=[measurement("Successful")], count=5),
        True,
        P.SUCCESSFUL,
    ),
}


@pytest.mark.parametrize(("m", "res", "terminating", "want"), ASSESS.values(), ids=ASSESS.keys())
def test_assess_metric(m: dict[str, Any], res: dict[str, Any], terminating: bool, want: P) -> None:
    assert ar.assess_metric(Metric.from_dict(m), MetricResult.from_dict(res), terminating) == want


def test_assess_run_worst_wins_and_dry_run_is_ignored() -> None:
    metrics = [metric(name="a"), metric(name="b"), metric(name="c")]
    results = [
        {**result("Running", [measurement("Successful")], count=1, successful=1), "name": "a"},
        {
            **result("Running", [measurement("Failed", message="boom")], count=1, failed=1),
            "name": "b",
        },
        {
            **result("Running", [measurement("Failed")], count=1, failed=1),
            "name": "c",
            "dryRun": True,
        },
    ]
    r = run(metrics, results, dryRun=[{"metricName": "c"}])
    phase, message = ar.assess_run(r, r.spec.metrics, NOW)
    assert phase == P.FAILED
    assert (
        message
        == 'Metric "b" assessed Failed due to failed (1) > failureLimit (0): "Error Message: boom"'
    )
    assert r.status is not None and r.status.run_summary is not None
    assert r.status.run_summary.to_dict() == {
        "count": 2,
        "successful": 1,
        "failed": 1,
        "inconclusive": 0,
        "error": 0,
    }
    assert r.status.dry_run_summary is not None and r.status.dry_run_summary.failed == 1


def test_record_counts() -> None:
    base = MetricResult.from_dict(result())
    after = ar.record(base, Measurement.from_dict(measurement("Error")), replace_last=False)
    after = ar.record(after, Measurement.from_dict(measurement("Successful")), replace_last=False)
    assert (after.error, after.consecutive_error, after.count, after.successful) == (1, 0, 1, 1)
    resumed = ar.record(after, Measurement.from_dict(measurement("Failed")), replace_last=True)
    assert len(resumed.measurements or []) == 2 and resumed.failed == 1


def test_next_reconcile() -> None:
    r = run(
        [
            metric(name="a", interval="30s"),
            metric(name="b", interval="1h"),
            metric(name="c", initialDelay="5m"),
        ],
        [
            {**result(measurements=[measurement("Successful", 10)], count=1), "name": "a"},
            {**result(measurements=[measurement("Error", 5)], error=1), "name": "b"},
        ],
    )
    assert ar.next_reconcile(r, r.spec.metrics, NOW) == NOW + dt.timedelta(
        seconds=5
    )  # b's error retry


def test_resolve_args() -> None:
    m = Metric.from_dict(
        metric(provider={"web": {"url": "http://svc/{{ args.path }}?q={{args.q}}"}})
    )
    from rollout_workers.api.analysis import Argument

    resolved = ar.resolve_args(
        m, [Argument(name="path", value="a b"), Argument(name="q", value='x"y')]
    )
    assert resolved.provider.web is not None
    assert resolved.provider.web.url == 'http://svc/a b?q=x"y'
    with pytest.raises(ar.ArgumentError, match=r"failed to resolve \{\{args.q\}\}"):
        ar.resolve_args(m, [Argument(name="path", value="a")])


def test_retention() -> None:
    metrics = [metric(name="a"), metric(name="b")]
    r = run(metrics, None, measurementRetention=[{"metricName": "b", "limit": 3}])
    assert ar.retention_limits(r, r.spec.metrics) == {"a": 10, "b": 3}
    long = MetricResult.from_dict(
        result(measurements=[measurement("Successful", i) for i in range(12)])
    )
    assert len(ar.trim(long, 10).measurements or []) == 10
