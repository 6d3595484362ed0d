"""Decoding `/api/v1/query` answers (cases from Argo's prometheus_test.go) and the measurement
built from them."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.prometheus import (
    PrometheusProvider,
    QueryError,
    parse_response,
    range_params,
)
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import PrometheusMetric, PrometheusRangeQueryArgs
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric, stub_evaluator


def ok(result_type: str, result: Any, **extra: Any) -> bytes:
    return json.dumps(
        {"status": "success", "data": {"resultType": result_type, "result": result}, **extra}
    ).encode()


def sample(value: str) -> dict[str, Any]:
    return {"metric": {"pod": "p"}, "value": [1714564800.0, value]}


PARSED = [
    ("scalar", ok("scalar", [1714564800, "10"]), "10", 10.0),
    ("scalar fraction", ok("scalar", [1714564800, "0.25"]), "0.25", 0.25),
    ("scalar +Inf", ok("scalar", [1714564800, "+Inf"]), "+Inf", math.inf),
    ("vector", ok("vector", [sample("10"), sample("11")]), "[10,11]", [10.0, 11.0]),
    ("empty vector", ok("vector", []), "[]", []),
    ("vector with NaN", ok("vector", [sample("NaN")]), "[NaN]", None),
    # TestRunSuccessfullyWithRangeQuery's newMatrix(10): the series' samples, flattened.
    (
        "matrix",
        ok(
            "matrix",
            [
                {"metric": {}, "values": [[1234, "11"], [1234, "12"]]},
                {"metric": {"b": "1"}, "values": [[1234, "13"], [1234, "14"]]},
            ],
        ),
        "[11,12,13,14]",
        [11.0, 12.0, 13.0, 14.0],
    ),
    ("empty matrix", ok("matrix", []), "[]", []),
]


@pytest.mark.parametrize(
    ("body", "value", "result"), [c[1:] for c in PARSED], ids=[c[0] for c in PARSED]
)
def test_parsed(body: bytes, value: str, result: Any) -> None:
    answer = parse_response(200, body)
    assert answer.value == value
    if result is None:
        assert isinstance(answer.result, list) and math.isnan(answer.result[0])
    else:
        assert answer.result == result


def test_scalar_nan() -> None:
    answer = parse_response(200, ok("scalar", [1714564800, "NaN"]))
    assert answer.value == "NaN"
    assert isinstance(answer.result, float) and math.isnan(answer.result)


def test_warnings() -> None:
    body = ok("scalar", [0, "1"], warnings=["warning", "warning2"])
    assert parse_response(200, body).warnings == ["warning", "warning2"]


FAILED = [
    ("string", 200, ok("string", [0, "x"]), "Prometheus metric type not supported"),
    ("no data", 200, b'{"status": "success"}', "Prometheus metric type not supported"),
    (
        "API error",
        400,
        b'{"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}',
        "bad_data: parse error at char 3",
    ),
    (
        "execution error",
        422,
        b'{"status": "error", "errorType": "execution", "error": "query timed out"}',
        "execution: query timed out",
    ),
    ("server error", 503, b"unavailable", "server_error: server error: 503"),
    ("client error", 404, b"404 page not found", "client_error: client error: 404"),
    ("not JSON", 200, b"<html>", "bad_response: "),
    ("400 claiming success", 400, ok("scalar", [0, "1"]), "bad_response: inconsistent body"),
    ("malformed sample", 200, ok("vector", [{"value": [0, 1]}]), "bad_response: malformed vector"),
]


@pytest.mark.parametrize(
    ("status", "body", "message"), [c[1:] for c in FAILED], ids=[c[0] for c in FAILED]
)
def test_errors(status: int, body: bytes, message: str) -> None:
    with pytest.raises(QueryError) as err:
        parse_response(status, body)
    assert str(err.value).startswith(message)


class CannedProvider(PrometheusProvider):
    """The provider with the HTTP request replaced by a canned answer."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
        self.answer = (status, body)

    def query(self, spec: PrometheusMetric, now: Any) -> tuple[int, bytes]:
        return self.answer


def prom_metric(**fields: Any) -> Any:
    return metric(provider={"prometheus": {"address": "http://p:9090", "query": "up"}}, **fields)


MEASURED = [
    ("scalar success", ok("scalar", [0, "10"]), "result == 10", "result != 10", P.SUCCESSFUL),
    (
        "vector success (10 in result)",
        ok("vector", [sample("10"), sample("11")]),
        "10 in result",
        "len(result) != 2",
        P.SUCCESSFUL,
    ),
    ("NaN inconclusive", ok("scalar", [0, "NaN"]), "result >= 0.9", "result < 0.9", P.INCONCLUSIVE),
    (
        "NaN failed without failure condition",
        ok("scalar", [0, "NaN"]),
        "result >= 0.9",
        "",
        P.FAILED,
    ),
    ("empty vector", ok("vector", []), "len(result) == 0", "", P.SUCCESSFUL),
]


@pytest.mark.parametrize(
    ("body", "success", "failure", "phase"), [c[1:] for c in MEASURED], ids=[c[0] for c in MEASURED]
)
def test_measurement_phase(body: bytes, success: str, failure: str, phase: P) -> None:
    m = prom_metric(successCondition=success, failureCondition=failure)
    measurement = CannedProvider(200, body).run(analysis_run(m.to_dict()), m, NOW)
    assert measurement.phase == phase
    assert measurement.started_at == measurement.finished_at == NOW_TEXT


def test_measurement_records_warnings() -> None:
    m = prom_metric(successCondition="true")
    body = ok("scalar", [0, "10"], warnings=["warning", "warning2"])
    measurement = CannedProvider(200, body).run(analysis_run(m.to_dict()), m, NOW)
    assert measurement.to_dict() == {
        "phase": "Successful",
        "value": "10",
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
        "metadata": {"warnings": '"warning", "warning2"'},
    }


def test_query_error_is_an_error_measurement() -> None:
    m = prom_metric(successCondition="true")
    measurement = CannedProvider(503, b"").run(analysis_run(m.to_dict()), m, NOW)
    assert measurement.to_dict() == {
        "phase": "Error",
        "message": "server_error: server error: 503",
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
    }


def test_condition_error_is_an_error_measurement() -> None:
    m = prom_metric(successCondition="nonsense")
    measurement = CannedProvider(200, ok("scalar", [0, "1"])).run(analysis_run(m.to_dict()), m, NOW)
    assert (measurement.phase, measurement.message, measurement.value) == (
        P.ERROR,
        "unknown name nonsense",
        None,
    )


CONFIG_ERRORS = [
    ("no address", {"query": "up"}, "prometheus address is not configured"),
    (
        "not a URL",
        {"address": ":invalid::url", "query": "up"},
        "prometheus address is not is url format",
    ),
    (
        "negative timeout",
        {"address": "http://p", "query": "up", "timeout": -20},
        "prometheus timeout should not be negative",
    ),
]


@pytest.mark.parametrize(
    ("spec", "message"), [c[1:] for c in CONFIG_ERRORS], ids=[c[0] for c in CONFIG_ERRORS]
)
def test_configuration_errors(spec: dict[str, Any], message: str) -> None:
    m = metric(provider={"prometheus": spec})
    provider = PrometheusProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    measurement = provider.run(analysis_run(m.to_dict()), m, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)


def test_metadata_is_the_resolved_query() -> None:
    provider = PrometheusProvider(ProviderDeps())
    assert provider.metadata(prom_metric()) == {"ResolvedPrometheusQuery": "up"}
    assert provider.metadata(metric(provider={"prometheus": {"address": "http://p"}})) == {}
    assert provider.type() == "Prometheus"


AUG_14 = 'date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC")'

# (id, start, end, step, params or the Error message); NOW is 2024-05-01T12:00:00Z = 1714564800.
RANGES = [
    # TestRunSuccessfullyWithRangeQuery: 2023-08-13 23:00:00 to 2023-08-14 00:00:00 by 1m0s
    (
        "Argo's range",
        f'{AUG_14} - duration("1h")',
        AUG_14,
        "1m",
        {"start": "1691967600", "end": "1691971200", "step": "60"},
    ),
    (
        "now() is the measurement's time",
        'now() - duration("1h")',
        "now()",
        "30s",
        {"start": "1714561200", "end": "1714564800", "step": "30"},
    ),
    ("bare integer step is seconds", "now()", "now()", "90", {"step": "90"}),
    (
        "fractions of seconds",
        'now() - duration("1.5s")',
        'now() + duration("250ms")',
        "500ms",
        {"start": "1714564798.5", "end": "1714564800.25", "step": "0.5"},
    ),
    # TestRunUnparsableStartTime / TestRunUnparsableEndTime / TestRunUnparsableStep
    (
        "unparsable start",
        'now() - duration("??")',
        AUG_14,
        "1m",
        'failed to parse rangeQuery.start as time: time: invalid duration "??"',
    ),
    (
        "unparsable end",
        f'{AUG_14} - duration("1h")',
        'now() - duration("??")',
        "1m",
        'failed to parse rangeQuery.end as time: time: invalid duration "??"',
    ),
    (
        "unparsable step",
        f'{AUG_14} - duration("1h")',
        AUG_14,
        "??",
        'failed to parse rangeQuery.step as duration: time: invalid duration "??"',
    ),
    # evaluate_test.go TestEvalTimeWithNotTimeResult / TestEvalTimeWithInvalidExpression
    (
        "not a time",
        "hello",
        "now()",
        "1m",
        "failed to parse rangeQuery.start as time: unknown name hello",
    ),
    (
        "a duration is not a time",
        'duration("1h")',
        "now()",
        "1m",
        "failed to parse rangeQuery.start as time: expected time.Time, but got time.Duration",
    ),
    (
        "empty start",
        "",
        "now()",
        "1m",
        "failed to parse rangeQuery.start as time: unexpected token EOF",
    ),
    (
        "empty step",
        "now()",
        "now()",
        "",
        'failed to parse rangeQuery.step as duration: time: invalid duration ""',
    ),
]


@pytest.mark.parametrize(
    ("start", "end", "step", "want"), [c[1:] for c in RANGES], ids=[c[0] for c in RANGES]
)
def test_range_params(start: str, end: str, step: str, want: dict[str, str] | str) -> None:
    window = PrometheusRangeQueryArgs(start=start, end=end, step=step)
    if isinstance(want, str):
        with pytest.raises(QueryError) as err:
            range_params("up", window, NOW)
        assert str(err.value) == want
    else:
        params = range_params("up", window, NOW)
        assert params["query"] == "up"
        assert {k: params[k] for k in want} == want


def test_range_error_is_an_error_measurement() -> None:
    """TestRunUnparsableStartTime: the measurement is an Error with the message, no value."""
    m = metric(
        provider={
            "prometheus": {
                "address": "http://p:9090",
                "query": "test",
                "rangeQuery": {"start": 'now() - duration("??")', "end": "now()", "step": "1m"},
            }
        },
        successCondition="true",
    )
    provider = PrometheusProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    measurement = provider.run(analysis_run(m.to_dict()), m, NOW)
    assert measurement.to_dict() == {
        "phase": "Error",
        "message": 'failed to parse rangeQuery.start as time: time: invalid duration "??"',
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
    }


AUTH_ERRORS = [
    # TestNewPromApiErrorWithIncompleteOAuthParams
    (
        "oauth2 without clientId",
        {"oauth2": {"tokenUrl": "http://tokenurl", "clientSecret": "mySecret"}},
        "missing mandatory parameter in metric for OAuth2 setup",
    ),
    (
        "oauth2 without clientSecret",
        {"oauth2": {"tokenUrl": "http://tokenurl", "clientId": "someId"}},
        "missing mandatory parameter in metric for OAuth2 setup",
    ),
    # TestNewPrometheusAPIMissingBasicAuthUsername / ...Password (Argo after 1.9)
    (
        "basicAuth without username",
        {"basicAuth": {"password": "mypassword"}},
        "missing mandatory parameter in metric for basic auth setup: username",
    ),
    (
        "basicAuth without password",
        {"basicAuth": {"username": "myuser"}},
        "missing mandatory parameter in metric for basic auth setup: password",
    ),
]


@pytest.mark.parametrize(
    ("auth", "message"), [c[1:] for c in AUTH_ERRORS], ids=[c[0] for c in AUTH_ERRORS]
)
def test_authentication_configuration_errors(auth: dict[str, Any], message: str) -> None:
    spec = {"address": "http://127.0.0.1:9", "query": "up", "authentication": auth}
    m = metric(provider={"prometheus": spec})
    provider = PrometheusProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    measurement = provider.run(analysis_run(m.to_dict()), m, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)
