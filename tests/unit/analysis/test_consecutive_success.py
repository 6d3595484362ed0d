"""consecutiveSuccessLimit: the counter, the metric's verdict, validation, timing and templates.

Tables of named cases in the spirit of argo-rollouts' analysis_test.go (assessMetricStatus with
consecutiveSuccessLimit and failureLimit, each applicable or disabled), then whole runs driven
through the controller's reconcile with a scripted provider and a fixed clock.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.analysis import run as ar
from rollout_workers.analysis.controller import reconcile, validate_metrics
from rollout_workers.analysis.templates import merge_templates
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import (
    AnalysisRun,
    AnalysisTemplateSpec,
    Measurement,
    Metric,
    MetricResult,
)
from rollout_workers.timefmt import format_time

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def metric(**kw: Any) -> dict[str, Any]:
    return {"name": "m", "provider": {"web": {"url": "http://x"}}, **kw}


def done(phase: str) -> dict[str, Any]:
    return {"phase": phase, "startedAt": format_time(T0), "finishedAt": format_time(T0)}


def result(last: str = "Successful", **counts: Any) -> dict[str, Any]:
    return {"name": "m", "phase": "Running", "measurements": [done(last)], **counts}


# -- the counter ---------------------------------------------------------------------------------


def test_successes_in_a_row_are_counted_and_any_other_outcome_resets_them() -> None:
    out = MetricResult.from_dict({"name": "m", "phase": "Running"})
    seen = []
    for phase in [
        "Successful",
        "Successful",
        "Failed",
        "Successful",
        "Inconclusive",
        "Successful",
        "Successful",
        "Error",
        "Successful",
    ]:
        out = ar.record(out, Measurement.from_dict(done(phase)), replace_last=False)
        seen.append(out.consecutive_success)
    assert seen == [1, 2, 0, 1, 0, 1, 2, 0, 1]
    assert (out.successful, out.failed, out.inconclusive, out.error) == (6, 1, 1, 1)


def test_a_measurement_still_in_flight_leaves_the_counter_alone() -> None:
    base = MetricResult.from_dict(result(consecutiveSuccess=2, successful=2, count=2))
    running = Measurement(phase=P.RUNNING, started_at=format_time(T0))
    assert ar.record(base, running, replace_last=False).consecutive_success == 2
    finished = running.model_copy(update={"phase": P.SUCCESSFUL, "finished_at": format_time(T0)})
    assert ar.record(base, finished, replace_last=True).consecutive_success == 3


# -- the metric's verdict ------------------------------------------------------------------------

ASSESS: dict[str, tuple[dict[str, Any], dict[str, Any], bool, P]] = {
    # consecutiveSuccessLimit alone (failureLimit: -1): wait for N successes in a row.
    "only success limit, reached": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=3),
        result(count=5, successful=3, failed=2, consecutiveSuccess=3),
        False,
        P.SUCCESSFUL,
    ),
    "only success limit, failures do not end it": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=3),
        result("Failed", count=7, successful=2, failed=5, consecutiveSuccess=0),
        False,
        P.RUNNING,
    ),
    "only success limit, successes not in a row": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=3),
        result(count=6, successful=5, failed=1, consecutiveSuccess=2),
        False,
        P.RUNNING,
    ),
    "only success limit, count reached without it": (
        metric(interval="1s", count=4, failureLimit=-1, consecutiveSuccessLimit=3),
        result(count=4, successful=3, failed=1, consecutiveSuccess=2),
        False,
        P.FAILED,
    ),
    "only success limit, reached on the last measurement": (
        metric(interval="1s", count=4, failureLimit=-1, consecutiveSuccessLimit=3),
        result(count=4, successful=3, failed=1, consecutiveSuccess=3),
        False,
        P.SUCCESSFUL,
    ),
    "only success limit, single measurement": (
        metric(failureLimit=-1, consecutiveSuccessLimit=1),
        result(count=1, successful=1, consecutiveSuccess=1),
        False,
        P.SUCCESSFUL,
    ),
    "only success limit given as a string": (
        metric(interval="1s", failureLimit="-1", consecutiveSuccessLimit="2"),
        result(count=2, successful=2, consecutiveSuccess=2),
        False,
        P.SUCCESSFUL,
    ),
    # Both limits: whichever is hit first decides; the count reached first is Inconclusive.
    "both, success limit reached within the failure limit": (
        metric(interval="1s", failureLimit=2, consecutiveSuccessLimit=2),
        result(count=4, successful=2, failed=2, consecutiveSuccess=2),
        False,
        P.SUCCESSFUL,
    ),
    "both, failure limit exceeded first": (
        metric(interval="1s", failureLimit=1, consecutiveSuccessLimit=3),
        result("Failed", count=3, successful=1, failed=2, consecutiveSuccess=0),
        False,
        P.FAILED,
    ),
    "both, failure limit is checked before the success limit": (
        metric(interval="1s", failureLimit=0, consecutiveSuccessLimit=1),
        result(count=2, successful=1, failed=1, consecutiveSuccess=1),
        False,
        P.FAILED,
    ),
    "both, still measuring": (
        metric(interval="1s", failureLimit=2, consecutiveSuccessLimit=3),
        result(count=3, successful=2, failed=1, consecutiveSuccess=2),
        False,
        P.RUNNING,
    ),
    "both, count reached with neither limit hit": (
        metric(interval="1s", count=4, failureLimit=2, consecutiveSuccessLimit=3),
        result(count=4, successful=3, failed=1, consecutiveSuccess=2),
        False,
        P.INCONCLUSIVE,
    ),
    "both, default failureLimit applies": (
        metric(interval="1s", count=2, consecutiveSuccessLimit=2),
        result(count=2, successful=2, consecutiveSuccess=2),
        False,
        P.SUCCESSFUL,
    ),
    "both, default failureLimit, count reached short of the limit": (
        metric(interval="1s", count=3, consecutiveSuccessLimit=3),
        result(count=3, successful=3, consecutiveSuccess=2),
        False,
        P.INCONCLUSIVE,
    ),
    # The other limits keep their precedence.
    "inconclusive limit exceeded before the success limit": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=2),
        result("Inconclusive", count=2, successful=1, inconclusive=1, consecutiveSuccess=0),
        False,
        P.INCONCLUSIVE,
    ),
    "consecutive errors before the success limit": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=2),
        result("Error", count=1, successful=1, error=5, consecutiveError=5),
        False,
        P.ERROR,
    ),
    # Disabled: 0 is the default, and nothing below 1 applies.
    "success limit 0 is disabled": (
        metric(interval="1s", count=2, consecutiveSuccessLimit=0),
        result(count=2, successful=2, consecutiveSuccess=2),
        False,
        P.SUCCESSFUL,
    ),
    "success limit 0 does not end an indefinite metric": (
        metric(interval="1s", consecutiveSuccessLimit=0),
        result(count=9, successful=9, consecutiveSuccess=9),
        False,
        P.RUNNING,
    ),
    "negative success limit is disabled too": (
        metric(interval="1s", count=2, consecutiveSuccessLimit=-1),
        result(count=2, successful=1, failed=0, inconclusive=0, consecutiveSuccess=1),
        False,
        P.SUCCESSFUL,
    ),
    # Termination ends a metric that waits for successes, successfully, as any open metric.
    "terminating before the success limit": (
        metric(interval="1s", failureLimit=-1, consecutiveSuccessLimit=3),
        result(count=2, successful=1, failed=1, consecutiveSuccess=1),
        True,
        P.SUCCESSFUL,
    ),
}


@pytest.mark.parametrize(("m", "res", "terminating", "want"), ASSESS.values(), ids=ASSESS.keys())
def test_assess_metric(m: dict[str, Any], res: dict[str, Any], terminating: bool, want: P) -> None:
    assert ar.assess_metric(Metric.from_dict(m), MetricResult.from_dict(res), terminating) == want


COUNT_REACHED = {
    "failure limit only": ({}, P.SUCCESSFUL),
    "failure limit only, explicit": ({"failureLimit": 2}, P.SUCCESSFUL),
    "success limit only": ({"failureLimit": -1, "consecutiveSuccessLimit": 2}, P.FAILED),
    "both": ({"failureLimit": 0, "consecutiveSuccessLimit": 2}, P.INCONCLUSIVE),
    "neither (rejected by validation)": ({"failureLimit": -1}, P.ERROR),
}


@pytest.mark.parametrize(("limits", "want"), COUNT_REACHED.values(), ids=COUNT_REACHED.keys())
def test_count_reached(limits: dict[str, Any], want: P) -> None:
    assert ar.count_reached(Metric.from_dict(metric(interval="1s", count=3, **limits))) == want


# -- validation ----------------------------------------------------------------------------------

VALIDATE = {
    "defaults": ({}, ""),
    "success limit alone": (
        {"interval": "1s", "failureLimit": -1, "consecutiveSuccessLimit": 2},
        "",
    ),
    "both limits": (
        {"interval": "1s", "count": 5, "failureLimit": 2, "consecutiveSuccessLimit": 5},
        "",
    ),
    "success limit without count or interval": ({"consecutiveSuccessLimit": 3}, ""),
    "neither limit applies": (
        {"interval": "1s", "failureLimit": -1},
        "metrics[0]: either failureLimit (>= 0) or consecutiveSuccessLimit (> 0) must apply",
    ),
    "neither, success limit explicitly 0": (
        {"interval": "1s", "failureLimit": -1, "consecutiveSuccessLimit": 0},
        "metrics[0]: either failureLimit (>= 0) or consecutiveSuccessLimit (> 0) must apply",
    ),
    "failure limit below -1": (
        {"interval": "1s", "failureLimit": -2, "consecutiveSuccessLimit": 1},
        "metrics[0]: failureLimit must be >= -1",
    ),
    "negative success limit": (
        {"interval": "1s", "consecutiveSuccessLimit": -1},
        "metrics[0]: consecutiveSuccessLimit must be >= 0",
    ),
    "success limit above count": (
        {"interval": "1s", "count": 3, "consecutiveSuccessLimit": 4},
        "metrics[0]: count must be >= consecutiveSuccessLimit (3 < 4)",
    ),
    "success limit from a resolved argument": (
        {"interval": "1s", "count": "3", "failureLimit": "-1", "consecutiveSuccessLimit": "3"},
        "",
    ),
}


@pytest.mark.parametrize(("fields", "want"), VALIDATE.values(), ids=VALIDATE.keys())
def test_validate_metrics(fields: dict[str, Any], want: str) -> None:
    assert validate_metrics([Metric.from_dict(metric(**fields))]) == want


# -- whole runs ------------------------------------------------------------------------------------


class ByMetric:
    """A provider whose measurements come, per metric, from a list of phases."""

    def __init__(self, phases: dict[str, list[str]]) -> None:
        self.phases = {name: list(p) for name, p in phases.items()}
        self.calls: list[str] = []

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        self.calls.append(metric.name)
        return Measurement(
            phase=P(self.phases[metric.name].pop(0)),
            started_at=format_time(now),
            finished_at=format_time(now),
            value="1",
        )

    def resume(
        self, run: AnalysisRun, metric: Metric, m: Measurement, now: dt.datetime
    ) -> Measurement:
        raise AssertionError("no measurement is left in flight")

    def terminate(
        self, run: AnalysisRun, metric: Metric, m: Measurement, now: dt.datetime
    ) -> Measurement:
        raise AssertionError("no measurement is left in flight")

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        return None

    def type(self) -> str:
        return "Web"

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}


class _NoSecrets:
    def read(self, namespace: str, name: str, key: str) -> str:
        raise AssertionError("no secret expected")


def new_run(*metrics: dict[str, Any]) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {"metrics": list(metrics)},
        }
    )


def drive(
    run: AnalysisRun, provider: ByMetric, *, max_steps: int = 20
) -> tuple[AnalysisRun, list[dt.datetime]]:
    """Reconcile at each wake-up until the run completes; returns the run and the wake-ups."""
    now, wakes = T0, list[dt.datetime]()
    for _ in range(max_steps):
        outcome, wake = reconcile(run, now=now, providers=lambda m: provider, secrets=_NoSecrets())
        run = run.model_copy(update={"status": outcome.status})
        assert run.status is not None
        if ar.completed(run.status.phase):
            assert wake is None, "a completed run asks for no timer"
            return run, wakes
        assert wake is not None, "a running run must ask to be woken"
        wakes.append(wake)
        now = max(wake, now)
    raise AssertionError("never completed")


def seconds(*values: int) -> list[dt.datetime]:
    return [T0 + dt.timedelta(seconds=v) for v in values]


def test_waits_through_failures_until_the_successes_in_a_row() -> None:
    m = metric(interval="5s", failureLimit=-1, consecutiveSuccessLimit=2)
    provider = ByMetric({"m": ["Failed", "Successful", "Failed", "Successful", "Successful"]})
    run, wakes = drive(new_run(m), provider)
    assert run.status is not None and run.status.phase == P.SUCCESSFUL
    assert run.status.message is None
    res = run.status.metric_results[0]  # type: ignore[index]
    assert (res.phase, res.count, res.successful, res.failed, res.consecutive_success) == (
        P.SUCCESSFUL,
        5,
        3,
        2,
        2,
    )
    assert wakes == seconds(5, 10, 15, 20) and len(provider.calls) == 5
    assert run.status.run_summary is not None
    assert (run.status.run_summary.successful, run.status.run_summary.failed) == (1, 0)


def test_count_reached_without_the_successes_fails_the_run() -> None:
    m = metric(interval="5s", count=4, failureLimit=-1, consecutiveSuccessLimit=3)
    provider = ByMetric({"m": ["Successful", "Failed", "Successful", "Successful"]})
    run, _ = drive(new_run(m), provider)
    assert run.status is not None and run.status.phase == P.FAILED
    assert run.status.message == (
        'Metric "m" assessed Failed due to consecutiveSuccess (2) < '
        "consecutiveSuccessLimit (3) after count (4)"
    )
    assert run.status.run_summary is not None
    assert (run.status.run_summary.successful, run.status.run_summary.failed) == (0, 1)


def test_count_reached_with_neither_limit_hit_is_inconclusive() -> None:
    m = metric(interval="5s", count=3, failureLimit=1, consecutiveSuccessLimit=2)
    provider = ByMetric({"m": ["Successful", "Failed", "Successful"]})
    run, _ = drive(new_run(m), provider)
    assert run.status is not None and run.status.phase == P.INCONCLUSIVE
    assert run.status.run_summary is not None and run.status.run_summary.inconclusive == 1


def test_failure_limit_still_fails_a_metric_waiting_for_successes() -> None:
    m = metric(interval="5s", failureLimit=1, consecutiveSuccessLimit=3)
    provider = ByMetric({"m": ["Successful", "Failed", "Successful", "Failed"]})
    run, _ = drive(new_run(m), provider)
    assert run.status is not None and run.status.phase == P.FAILED
    assert run.status.message == 'Metric "m" assessed Failed due to failed (2) > failureLimit (1)'


def test_a_completed_metric_takes_no_more_measurements_while_others_run() -> None:
    fast = metric(name="fast", interval="5s", failureLimit=-1, consecutiveSuccessLimit=2)
    slow = metric(name="slow", interval="30s", count=2)
    provider = ByMetric({"fast": ["Successful"] * 2, "slow": ["Successful"] * 2})
    run, wakes = drive(new_run(fast, slow), provider)
    assert run.status is not None and run.status.phase == P.SUCCESSFUL
    # After its second success `fast` is complete: the next timer is `slow`'s, not 5s later.
    assert wakes == seconds(5, 30)
    assert provider.calls.count("fast") == 2 and provider.calls.count("slow") == 2


def test_a_run_whose_metric_no_limit_can_decide_is_invalid() -> None:
    run = new_run(metric(interval="5s", failureLimit=-1))
    outcome, wake = reconcile(run, now=T0, providers=lambda m: ByMetric({}), secrets=_NoSecrets())
    assert outcome.status.phase == P.ERROR and wake is None
    assert outcome.status.message == (
        "Analysis spec invalid: metrics[0]: either failureLimit (>= 0) or "
        "consecutiveSuccessLimit (> 0) must apply"
    )


def test_templates_carry_the_limit_into_the_run() -> None:
    spec = AnalysisTemplateSpec.from_dict(
        {"metrics": [metric(interval="5s", failureLimit=-1, consecutiveSuccessLimit=4)]}
    )
    merged = merge_templates([{"templateName": "t"}], lambda name, cluster: spec)
    built = Metric.from_dict(merged.metrics[0])
    assert (built.consecutive_success_limit, built.failure_limit) == (4, -1)


def test_the_next_measurement_is_due_an_interval_after_the_one_just_taken() -> None:
    # The status keeps times to the second; the wake-up is computed from the reconcile's own
    # time, as Argo computes it from the in-memory finishedAt, not up to a second early.
    m = metric(interval="5s", count=2)
    provider = ByMetric({"m": ["Successful", "Successful"]})
    start = T0 + dt.timedelta(seconds=0.75)
    outcome, wake = reconcile(
        new_run(m), now=start, providers=lambda _: provider, secrets=_NoSecrets()
    )
    assert outcome.status.metric_results[0].measurements[0].finished_at == format_time(T0)  # type: ignore[index]
    assert wake == start + dt.timedelta(seconds=5)
    # A later reconcile reads the time back from the status: the one it has.
    run = new_run(m).model_copy(update={"status": outcome.status})
    later = T0 + dt.timedelta(seconds=2.5)
    assert ar.next_reconcile(run, [Metric.from_dict(m)], later) == T0 + dt.timedelta(seconds=5)
