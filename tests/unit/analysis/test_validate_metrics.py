"""validate_metrics against Argo Rollouts' ValidateMetrics/ValidateMetric (utils/analysis).

Named cases in the spirit of argo-rollouts' TestValidateMetrics: each rule, in Argo's order, with
the message Argo gives (prefixed `metrics[i]: `), and the AnalysisRun's message built from it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.analysis.controller import reconcile, validate_metrics
from rollout_workers.analysis.providers.base import Provider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from rollout_workers.timefmt import format_time

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
PROM = {"prometheus": {"address": "http://prom", "query": "up"}}


def metric(name: str = "m", **kw: Any) -> dict[str, Any]:
    return {"name": name, "provider": PROM, **kw}


ONE_METRIC: dict[str, tuple[dict[str, Any], str]] = {
    # -- valid ----------------------------------------------------------------------------------
    "defaults": ({}, ""),
    "count 3, failureLimit 3": ({"interval": "1m", "count": 3, "failureLimit": 3}, ""),
    "count 2, failureLimit 2 (Argo's 'Validate metric')": (
        {"interval": "60s", "count": 2, "failureLimit": 2},
        "",
    ),
    "count 3, inconclusiveLimit 3": ({"interval": "1m", "count": 3, "inconclusiveLimit": 3}, ""),
    "count 1 needs no interval": ({"count": 1}, ""),
    "count 0 bounds nothing": ({"count": 0, "failureLimit": 5, "inconclusiveLimit": 5}, ""),
    "implied count is never compared": ({"failureLimit": 5}, ""),
    "interval without count is never compared": ({"interval": "5s", "failureLimit": 5}, ""),
    "count and limits from resolved arguments": (
        {"interval": "1m", "count": "3", "failureLimit": "3"},
        "",
    ),
    "composite durations": ({"interval": "1h30m", "initialDelay": "1.5m"}, ""),
    # -- count against the limits ---------------------------------------------------------------
    "count < failureLimit": (
        {"count": 1, "failureLimit": 2},
        "metrics[0]: count must be >= failureLimit",
    ),
    "count < failureLimit, as strings": (
        {"interval": "1m", "count": "2", "failureLimit": "3"},
        "metrics[0]: count must be >= failureLimit",
    ),
    "count < inconclusiveLimit": (
        {"count": 1, "inconclusiveLimit": 2},
        "metrics[0]: count must be >= inconclusiveLimit",
    ),
    "failureLimit is checked before inconclusiveLimit": (
        {"count": 1, "failureLimit": 2, "inconclusiveLimit": 2},
        "metrics[0]: count must be >= failureLimit",
    ),
    # -- interval -------------------------------------------------------------------------------
    "count > 1 without interval": (
        {"count": 2},
        "metrics[0]: interval must be specified when count > 1",
    ),
    "count > 1 with an empty interval": (
        {"count": 2, "interval": ""},
        "metrics[0]: interval must be specified when count > 1",
    ),
    "limits are checked before the interval": (
        {"count": 2, "failureLimit": 3},
        "metrics[0]: count must be >= failureLimit",
    ),
    # -- durations, with Go's time.ParseDuration errors -----------------------------------------
    "interval with an unknown unit": (
        {"count": 2, "interval": "60s-typo", "failureLimit": 2},
        'metrics[0]: invalid interval string: time: unknown unit "s-typo" in duration "60s-typo"',
    ),
    "interval that is no duration": (
        {"interval": "soon"},
        'metrics[0]: invalid interval string: time: invalid duration "soon"',
    ),
    "interval without a unit": (
        {"interval": "1.5"},
        'metrics[0]: invalid interval string: time: missing unit in duration "1.5"',
    ),
    "initialDelay with an unknown unit": (
        {"count": 2, "interval": "60s", "initialDelay": "60s-typo", "failureLimit": 2},
        'metrics[0]: invalid startDelay string: time: unknown unit "s-typo" in duration "60s-typo"',
    ),
    "interval is checked before initialDelay": (
        {"interval": "x", "initialDelay": "y"},
        'metrics[0]: invalid interval string: time: invalid duration "x"',
    ),
    # A bare integer is read as seconds.
    "bare integer interval": ({"interval": "30"}, ""),
    "signed initialDelay": (
        {"initialDelay": "-5s"},
        'metrics[0]: unsupported startDelay string: "-5s"',
    ),
    # -- limits ---------------------------------------------------------------------------------
    "failureLimit below -1": ({"failureLimit": -2}, "metrics[0]: failureLimit must be >= -1"),
    "negative inconclusiveLimit": (
        {"inconclusiveLimit": -1},
        "metrics[0]: inconclusiveLimit must be >= 0",
    ),
    "negative consecutiveErrorLimit": (
        {"consecutiveErrorLimit": -1},
        "metrics[0]: consecutiveErrorLimit must be >= 0",
    ),
    "consecutiveErrorLimit 0 is valid": ({"consecutiveErrorLimit": 0}, ""),
    # -- providers ------------------------------------------------------------------------------
    "no provider": ({"count": 1, "provider": {}}, "metrics[0]: no provider specified"),
    "only an empty plugin map": ({"provider": {"plugin": {}}}, "metrics[0]: no provider specified"),
    "an unknown provider key is not a provider": (
        {"provider": {"opsmx": {"gateUrl": "http://x"}}},
        "metrics[0]: no provider specified",
    ),
    "two providers": (
        {"provider": {**PROM, "web": {"url": "http://x"}}},
        "metrics[0]: multiple providers specified",
    ),
    "every provider (Argo's case)": (
        {
            "provider": {
                **PROM,
                "job": {"spec": {}},
                "wavefront": {},
                "kayenta": {},
                "web": {"url": "http://x"},
                "datadog": {},
                "newRelic": {},
                "cloudWatch": {},
                "graphite": {},
                "influxdb": {},
            }
        },
        "metrics[0]: multiple providers specified",
    ),
    "one plugin": ({"provider": {"plugin": {"argoproj-labs/sample": {}}}}, ""),
    "two plugins": (
        {"provider": {"plugin": {"argoproj-labs/a": {}, "argoproj-labs/b": {}}}},
        "metrics[0]: multiple providers specified",
    ),
    "a plugin and a provider": (
        {"provider": {"web": {"url": "http://x"}, "plugin": {"argoproj-labs/a": {}}}},
        "metrics[0]: multiple providers specified",
    ),
    "a free-form provider counts": ({"provider": {"datadog": {"query": "q"}}}, ""),
    "limits are checked before the provider": (
        {"count": 1, "failureLimit": 2, "provider": {}},
        "metrics[0]: count must be >= failureLimit",
    ),
}


@pytest.mark.parametrize(("fields", "want"), ONE_METRIC.values(), ids=ONE_METRIC.keys())
def test_one_metric(fields: dict[str, Any], want: str) -> None:
    assert validate_metrics([Metric.from_dict(metric(**fields))]) == want


MANY_METRICS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "no metrics": ([], "no metrics specified"),
    "distinct names": ([metric("a"), metric("b")], ""),
    "duplicate name": (
        [metric("success-rate"), metric("success-rate")],
        "metrics[1]: duplicate name 'success-rate'",
    ),
    "the index is the offending metric's": (
        [metric("a"), metric("b"), metric("c", count=1, failureLimit=2)],
        "metrics[2]: count must be >= failureLimit",
    ),
    "the first problem wins": (
        [metric("a", provider={}), metric("a")],
        "metrics[0]: no provider specified",
    ),
    "a duplicate is found before the duplicate's own problems": (
        [metric("a"), metric("a", provider={})],
        "metrics[1]: duplicate name 'a'",
    ),
}


@pytest.mark.parametrize(("metrics", "want"), MANY_METRICS.values(), ids=MANY_METRICS.keys())
def test_many_metrics(metrics: list[dict[str, Any]], want: str) -> None:
    assert validate_metrics([Metric.from_dict(m) for m in metrics]) == want


class _NoSecrets:
    def read(self, namespace: str, name: str, key: str) -> str:
        raise AssertionError("an invalid run reads no secret")


class _Successful:
    """A provider whose every measurement is Successful."""

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        return Measurement(
            phase=P.SUCCESSFUL, value="1", started_at=format_time(now), finished_at=format_time(now)
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
        return "Successful"

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}


def _no_provider(metric: Metric) -> Provider:
    raise AssertionError("an invalid run takes no measurement")


def _run(*metrics: dict[str, Any], args: list[dict[str, Any]] | None = None) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "ns", "uid": "u"},
            "spec": {"metrics": list(metrics), "args": args or []},
        }
    )


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (
            _run(metric(count=1, failureLimit=2)),
            "Analysis spec invalid: metrics[0]: count must be >= failureLimit",
        ),
        (
            _run(metric("a"), metric("a")),
            "Analysis spec invalid: metrics[1]: duplicate name 'a'",
        ),
        (
            # Argo validates the metrics with their arguments resolved.
            _run(
                metric(count="{{args.n}}", failureLimit=3, interval="1m"),
                args=[{"name": "n", "value": "2"}],
            ),
            "Analysis spec invalid: metrics[0]: count must be >= failureLimit",
        ),
    ],
    ids=["limit", "duplicate", "resolved argument"],
)
def test_the_run_errors_with_argos_message(run: AnalysisRun, message: str) -> None:
    outcome, wake = reconcile(run, now=T0, providers=_no_provider, secrets=_NoSecrets())
    assert outcome.status.phase == P.ERROR and wake is None
    assert outcome.status.message == message


def test_a_run_with_count_equal_to_failure_limit_measures() -> None:
    run = _run(metric(count=3, failureLimit=3, interval="1m"))
    outcome, wake = reconcile(run, now=T0, providers=lambda m: _Successful(), secrets=_NoSecrets())
    assert outcome.status.phase == P.RUNNING and wake == T0 + dt.timedelta(minutes=1)
    results = outcome.status.metric_results or []
    assert [(r.name, r.count, r.successful) for r in results] == [("m", 1, 1)]
