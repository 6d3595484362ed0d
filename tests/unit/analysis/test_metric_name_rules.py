"""`dryRun[].metricName` and `measurementRetention[].metricName` are regular expressions, matched
as Argo's GetDryRunMetrics / GetMeasurementRetentionMetrics do (utils/analysis/helpers.go, cases
from helpers_test.go and analysis_test.go); a rule matching no metric errors the run."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.analysis import run as ar
from rollout_workers.analysis.controller import reconcile
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
NO_MATCH = "Rule didn't match any metric name(s)"


def new_run(names: list[str], **spec: Any) -> AnalysisRun:
    metrics = [{"name": n, "provider": {"web": {"url": "http://x"}}} for n in names]
    return AnalysisRun.from_dict(
        {"metadata": {"name": "r", "namespace": "d"}, "spec": {"metrics": metrics, **spec}}
    )


# (id, metric names, dryRun metricNames, dry-run metrics, error)
DRY_RUN = [
    # helpers_test.go TestGetDryRunMetrics "returns the metric names map"
    ("exact name", ["success-rate"], ["success-rate"], {"success-rate"}, ""),
    # "handles the RegEx rules"
    (
        "regex .* matches all",
        ["success-rate", "error-rate"],
        [".*"],
        {"success-rate", "error-rate"},
        "",
    ),
    # "throw error when a rule doesn't get matched"
    ("rule matching nothing", ["success-rate"], ["error-rate"], set(), f"dryRun[0]: {NO_MATCH}"),
    # regexp.MatchString is an unanchored search
    ("unanchored search", ["error-rate", "latency"], ["rate"], {"error-rate"}, ""),
    ("anchors", ["rate", "error-rate"], ["^rate$"], {"rate"}, ""),
    ("prefix (docs: test.*)", ["test-a", "b-test", "c"], ["^test.*"], {"test-a"}, ""),
    ("alternation", ["a", "b", "c"], ["^(a|c)$"], {"a", "c"}, ""),
    ("several rules add up", ["a", "b", "c"], ["^a$", "^b$"], {"a", "b"}, ""),
    (
        "second rule matching nothing",
        ["a", "b"],
        ["a", "z"],
        {"a"},
        f"dryRun[1]: {NO_MATCH}",
    ),
    # `*` is not a regular expression: Go's compile error is ignored and it matches nothing.
    (
        "star is not a regex",
        ["a"],
        ["*"],
        set(),
        f'dryRun[0]: {NO_MATCH} (metricName "*" is not a valid regular expression: ',
    ),
    (
        "RE2 has no lookahead",
        ["a"],
        ["(?=a)"],
        set(),
        f'dryRun[0]: {NO_MATCH} (metricName "(?=a)" is not a valid regular expression: ',
    ),
    ("no rules", ["a"], [], set(), ""),
]


@pytest.mark.parametrize(
    ("names", "rules", "dry", "error"), [c[1:] for c in DRY_RUN], ids=[c[0] for c in DRY_RUN]
)
def test_dry_run_rules(names: list[str], rules: list[str], dry: set[str], error: str) -> None:
    run = new_run(names, dryRun=[{"metricName": rule} for rule in rules])
    matched, problem = ar.dry_run_metrics(run, run.spec.metrics)
    assert problem.startswith(error) and bool(problem) == bool(error)
    if not error:
        assert matched == dry
        assert ar.dry_run_names(run, run.spec.metrics) == dry


# (id, metric names, (metricName, limit) rules, limits kept, error)
RETENTION = [
    # helpers_test.go TestGetMeasurementRetentionMetrics "returns the metric names map"
    ("exact name", ["success-rate"], [("success-rate", 10)], {"success-rate": 10}, ""),
    # "handles the RegEx rules"
    (
        "regex .* matches all",
        ["success-rate", "error-rate"],
        [(".*", 15)],
        {"success-rate": 15, "error-rate": 15},
        "",
    ),
    # "throw error when a rule doesn't get matched"
    (
        "rule matching nothing",
        ["success-rate"],
        [("error-rate", 11)],
        {},
        f"measurementRetention[0]: {NO_MATCH}",
    ),
    ("unmatched metric keeps 10", ["a", "b"], [("^b$", 3)], {"a": 10, "b": 3}, ""),
    # analysis.go garbageCollectMeasurements: the last matching rule wins, a limit <= 0 means 10
    ("last rule wins", ["a", "b"], [(".*", 3), ("^b$", 20)], {"a": 3, "b": 20}, ""),
    ("zero limit means the default", ["a"], [("a", 3), ("a", 0)], {"a": 10}, ""),
    (
        "star is not a regex",
        ["a"],
        [("*", 2)],
        {},
        f'measurementRetention[0]: {NO_MATCH} (metricName "*" is not a valid regular expression',
    ),
]


@pytest.mark.parametrize(
    ("names", "rules", "limits", "error"),
    [c[1:] for c in RETENTION],
    ids=[c[0] for c in RETENTION],
)
def test_retention_rules(
    names: list[str], rules: list[tuple[str, int]], limits: dict[str, int], error: str
) -> None:
    run = new_run(names, measurementRetention=[{"metricName": n, "limit": k} for n, k in rules])
    _, problem = ar.retention_rules(run, run.spec.metrics)
    assert problem.startswith(error) and bool(problem) == bool(error)
    if not error:
        assert ar.retention_limits(run, run.spec.metrics) == limits


class _Never:
    """A provider factory that must not be reached: the run fails before measuring."""

    def __call__(self, metric: Metric) -> Any:
        raise AssertionError("nothing is measured when a rule matches no metric")

    def read(self, namespace: str, name: str, key: str) -> str:
        raise AssertionError("no secret expected")


RUN_ERRORS = [
    (
        "dryRun rule matching nothing",
        {"dryRun": [{"metricName": "other"}]},
        f"Analysis spec invalid: dryRun[0]: {NO_MATCH}",
    ),
    (
        "measurementRetention rule matching nothing",
        {"measurementRetention": [{"metricName": "other", "limit": 2}]},
        f"Analysis spec invalid: measurementRetention[0]: {NO_MATCH}",
    ),
    (
        "dryRun checked before measurementRetention",
        {
            "dryRun": [{"metricName": "*"}],
            "measurementRetention": [{"metricName": "other", "limit": 2}],
        },
        f'Analysis spec invalid: dryRun[0]: {NO_MATCH} (metricName "*" is not a valid',
    ),
]


@pytest.mark.parametrize(
    ("spec", "message"), [c[1:] for c in RUN_ERRORS], ids=[c[0] for c in RUN_ERRORS]
)
def test_unmatched_rule_errors_the_run(spec: dict[str, Any], message: str) -> None:
    never = _Never()
    outcome, wake = reconcile(new_run(["m"], **spec), now=NOW, providers=never, secrets=never)
    assert outcome.status.phase == "Error" and wake is None
    assert (outcome.status.message or "").startswith(message)
    assert outcome.events == [("AnalysisRunError", "Analysis Completed. Result: Error", True)]


def test_regex_dry_run_metric_does_not_decide_the_run() -> None:
    """docs/features/analysis.md: `metricName: .*` makes every metric dry-run."""

    class Failing:
        def __call__(self, metric: Metric) -> Failing:
            return self

        def metadata(self, metric: Metric) -> dict[str, str]:
            return {}

        def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
            stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
            return Measurement.from_dict(
                {"phase": "Failed", "startedAt": stamp, "finishedAt": stamp}
            )

        def read(self, namespace: str, name: str, key: str) -> str:
            raise AssertionError("no secret expected")

    failing = Failing()
    run = new_run(["total-5xx-errors"], dryRun=[{"metricName": ".*"}])
    outcome, _ = reconcile(run, now=NOW, providers=failing, secrets=failing)
    assert outcome.status.phase == "Successful"
    result = (outcome.status.metric_results or [])[0]
    assert (result.phase, result.dry_run) == ("Failed", True)
    assert outcome.status.dry_run_summary is not None
    assert outcome.status.dry_run_summary.failed == 1
