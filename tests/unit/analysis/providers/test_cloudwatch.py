"""CloudWatch metrics against moto's AWS emulator in server mode, reached as the SDK reaches a
custom endpoint (`AWS_ENDPOINT_URL_CLOUDWATCH`); cases from Argo's cloudwatch_test.go (the value,
what conditions see, API errors, the query conversion) and the documented example."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from rollout_workers.analysis.providers import auth
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.cloudwatch import (
    CloudWatchProvider,
    calculate_queries,
    format_messages,
)
from rollout_workers.analysis.providers.factory import provider_for
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import CloudWatchMetricDataQuery, Measurement, Metric
from tests.support.metricapis_b import moto_server, point_aws_at, stalled_server
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

REGION = "eu-west-1"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def aws(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The controller's environment pointed at a fresh emulator."""
    point_aws_at(
        monkeypatch, endpoint, region=REGION, endpoint_variable="AWS_ENDPOINT_URL_CLOUDWATCH"
    )
    yield endpoint


def seed(endpoint: str, name: str, points: list[tuple[int, float]], region: str = REGION) -> None:
    """Data points of metric `app/<name>`, `minutes` before NOW."""
    client = boto3.client("cloudwatch", region_name=region, endpoint_url=endpoint)
    client.put_metric_data(
        Namespace="app",
        MetricData=[
            {
                "MetricName": name,
                "Timestamp": NOW - dt.timedelta(minutes=minutes),
                "Value": value,
                "Unit": "Count",
            }
            for minutes, value in points
        ],
    )


def stat(id_: str, name: str, *, return_data: bool = True, stat_: str = "Sum") -> dict[str, Any]:
    return {
        "id": id_,
        "metricStat": {
            "metric": {"namespace": "app", "metricName": name},
            "period": 60,
            "stat": stat_,
            "unit": "Count",
        },
        "returnData": return_data,
    }


def cloudwatch_metric(queries: list[dict[str, Any]], **fields: Any) -> Metric:
    provider: dict[str, Any] = {"metricDataQueries": queries}
    if "interval" in fields:
        provider["interval"] = fields.pop("interval")
    return metric("success-rate", provider={"cloudWatch": provider}, **fields)


def measure(m: Metric) -> Measurement:
    provider = provider_for(m, ProviderDeps(clock=lambda: NOW))
    assert isinstance(provider, CloudWatchProvider) and provider.type() == "CloudWatch"
    assert provider.metadata(m) == {}
    return provider.run(analysis_run(), m, NOW)


# TestRunSuccessfully
def test_the_values_of_each_result(aws: str) -> None:
    # Newest first, as CloudWatch answers by default (ScanBy TimestampDescending).
    seed(aws, "latency", [(2, 0.1), (3, 0.2), (4, 0.3)])
    m = cloudwatch_metric(
        [stat("latency", "latency")],
        successCondition="result[0].Values[0] == 0.1",
        failureCondition="result[0].Values[0] != 0.1",
    )
    measurement = measure(m)
    assert (measurement.phase, measurement.value, measurement.message) == (
        P.SUCCESSFUL,
        "[[0.1 0.2 0.3]]",
        None,
    )
    assert (measurement.started_at, measurement.finished_at) == (NOW_TEXT, NOW_TEXT)


def test_conditions_see_the_results_with_gos_field_names(aws: str) -> None:
    seed(aws, "latency", [(2, 7.0)])
    m = cloudwatch_metric(
        [{**stat("latency", "latency"), "label": "p99"}],
        successCondition='result[0].Id == "latency" && result[0].Label == "p99" && '
        'result[0].StatusCode == "Complete" && len(result[0].Timestamps) == 1',
    )
    assert measure(m).phase == P.SUCCESSFUL


# The documented example's shape: an expression over statistics that are not returned (moto
# evaluates only expressions that name one query, so the rate is stored as a metric).
def test_an_expression_over_hidden_statistics(aws: str) -> None:
    seed(aws, "rate", [(3, 0.01), (2, 0.005)])
    seed(aws, "requests", [(3, 200.0), (2, 100.0)])
    m = cloudwatch_metric(
        [
            {"id": "errorRate", "expression": "rate"},
            stat("rate", "rate", return_data=False),
            stat("requests", "requests", return_data=False),
        ],
        interval="30m",
        successCondition="len(result[0].Values) >= 2 and all(result[0].Values, {# <= 0.01})",
    )
    measurement = measure(m)
    assert (measurement.phase, measurement.value) == (P.SUCCESSFUL, "[[0.005 0.01]]")
    seed(aws, "rate", [(1, 0.02)])
    measurement = measure(m)
    assert (measurement.phase, measurement.value) == (P.FAILED, "[[0.02 0.005 0.01]]")


INTERVALS = [
    ("the default is 5m", None, "[[2]]"),
    ("a longer interval", "15m", "[[2 1]]"),
    ("a bare number is seconds", "900", "[[2 1]]"),
]


@pytest.mark.parametrize(
    ("interval", "value"), [c[1:] for c in INTERVALS], ids=[c[0] for c in INTERVALS]
)
def test_the_interval_is_the_window_read(aws: str, interval: str | None, value: str) -> None:
    seed(aws, "requests", [(10, 1.0), (2, 2.0)])
    fields = {} if interval is None else {"interval": interval}
    m = cloudwatch_metric([stat("requests", "requests")], **fields)
    assert measure(m).value == value


def test_no_data_is_an_empty_result(aws: str) -> None:
    m = cloudwatch_metric(
        [stat("requests", "requests")],
        successCondition="len(result[0].Values) == 0",
    )
    measurement = measure(m)
    assert (measurement.phase, measurement.value) == (P.SUCCESSFUL, "[[]]")


def test_the_region_comes_from_the_environment(aws: str, monkeypatch: Any) -> None:
    seed(aws, "requests", [(2, 2.0)], region="us-east-2")
    m = cloudwatch_metric([stat("requests", "requests")])
    assert measure(m).value == "[[]]"  # our region, eu-west-1, has no data
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert measure(m).value == "[[2]]"
    # botocore alone reads AWS_DEFAULT_REGION; the SDK reads both.
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    assert measure(m).value == "[[2]]"


ERRORS = [
    # TestRunWithEvaluationError: an API error comes back worded as the Go SDK words it.
    (
        "an API error",
        {"interval": "0s"},
        "operation error CloudWatch: GetMetricData, https response error StatusCode: 400, "
        "RequestID: ",
        "api error ValidationError: The parameter StartTime must not equal parameter EndTime.",
    ),
    ("a bad interval", {"interval": "5 min"}, 'time: unknown unit " min" in duration "5 min"', ""),
    (
        "a condition that cannot be evaluated",
        {"successCondition": "result[0].Values[0] > 0"},
        "index out of range",
        "",
    ),
]


@pytest.mark.parametrize(
    ("fields", "start", "end"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_errors(aws: str, fields: dict[str, Any], start: str, end: str) -> None:
    measurement = measure(cloudwatch_metric([stat("requests", "requests")], **fields))
    assert measurement.phase == P.ERROR
    assert measurement.message is not None
    assert measurement.message.startswith(start) and measurement.message.endswith(end)
    assert measurement.finished_at == NOW_TEXT


def test_no_region_is_an_error(aws: str, monkeypatch: Any) -> None:
    monkeypatch.delenv("AWS_REGION")
    measurement = measure(cloudwatch_metric([stat("requests", "requests")]))
    assert (measurement.phase, measurement.message) == (
        P.ERROR,
        "an AWS region is required, but was not found (set AWS_REGION in the controller's "
        "environment)",
    )


def test_a_service_that_hangs_times_out(aws: str, monkeypatch: Any) -> None:
    monkeypatch.setattr(auth, "AWS_READ_TIMEOUT_SECONDS", 0.2)
    with stalled_server() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", url)
        measurement = measure(cloudwatch_metric([stat("requests", "requests")]))
    assert (measurement.phase, measurement.message) == (
        P.ERROR,
        f'operation error CloudWatch: GetMetricData, Read timeout on endpoint URL: "{url}/"',
    )


def test_clients_are_kept_per_environment(aws: str, monkeypatch: Any) -> None:
    clients = auth.cloudwatch_clients()
    first = clients.get()
    assert clients.get() is first
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert clients.get() is not first


# TestConvertType
def test_convert_type() -> None:
    queries = [
        CloudWatchMetricDataQuery.from_dict(q)
        for q in [
            {"id": "rate", "expression": "errors / requests"},
            {
                "id": "errors",
                "metricStat": {
                    "metric": {
                        "dimensions": [
                            {"name": "hoge", "value": "fuga"},
                            {"name": "poge", "value": "doge"},
                        ],
                        "namespace": "app1",
                        "metricName": "errors",
                    },
                    "period": 300,
                    "stat": "Max",
                    "unit": "Count",
                },
                "returnData": False,
            },
            {
                "id": "requests",
                "metricStat": {
                    "metric": {"namespace": "app2", "metricName": "requests"},
                    "period": "300",
                    "stat": "Sum",
                    "unit": "Bytes/Second",
                },
                "returnData": True,
                "period": "x",
                "label": "l",
            },
        ]
    ]
    assert calculate_queries(queries) == [
        {"Id": "rate", "Expression": "errors / requests"},
        {
            "Id": "errors",
            "MetricStat": {
                "Metric": {
                    "MetricName": "errors",
                    "Namespace": "app1",
                    "Dimensions": [
                        {"Name": "hoge", "Value": "fuga"},
                        {"Name": "poge", "Value": "doge"},
                    ],
                },
                "Period": 300,
                "Stat": "Max",
                "Unit": "Count",
            },
            "ReturnData": False,
        },
        {
            "Id": "requests",
            "Label": "l",
            "MetricStat": {
                "Metric": {"MetricName": "requests", "Namespace": "app2"},
                "Period": 300,
                "Stat": "Sum",
                "Unit": "Bytes/Second",
            },
            "Period": 0,  # IntOrString.IntValue() of a string that is no number
            "ReturnData": True,
        },
    ]


def test_messages_are_written_out() -> None:
    messages = [{"Code": "MaxMetricsExceeded", "Value": "too many"}, {"Code": "X"}]
    assert format_messages(messages) == "[{Code:MaxMetricsExceeded Value:too many} {Code:X Value:}]"


def test_resume_terminate_and_garbage_collect_leave_things_alone() -> None:
    provider = CloudWatchProvider(ProviderDeps())
    m = cloudwatch_metric([])
    previous = Measurement(phase=P.INCONCLUSIVE, started_at=NOW_TEXT)
    assert provider.resume(analysis_run(), m, previous, NOW) == previous
    running = Measurement(phase=P.RUNNING, started_at=NOW_TEXT)
    assert provider.terminate(analysis_run(), m, running, NOW) == running
    assert provider.garbage_collect(analysis_run(), m, 0) is None
