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
)
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import PrometheusMetric
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
    (
        "matrix",
        200,
        ok("matrix", [{"metric": {}, "values": [[0, "1"]]}]),
        "Prometheus metric type not supported",
    ),
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
