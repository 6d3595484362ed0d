"""Datadog metrics against a stand-in of Datadog's API on 127.0.0.1 that checks the keys, the
query and the window (tests/support/metricapis.py). Cases from Argo's datadogV1_test.go,
datadogV2_test.go and datadog_test.go; conditions are judged by the real evaluator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import datadog
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.datadog import DatadogProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import Measurement
from tests.support.metricapis import DD_API_KEY, DD_APP_KEY, FakeSecrets, MetricAPI
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

CONTROLLER_NS = "argo-rollouts"
EPOCH = int(NOW.timestamp())
QUERY = "avg:kubernetes.cpu.user.total{*}"


@pytest.fixture
def api() -> Iterator[MetricAPI]:
    server = MetricAPI().start()
    server.expect.now = EPOCH
    server.expect.queries = {"query": QUERY}
    yield server
    server.stop()


def keys(address: str, **extra: str) -> dict[str, str]:
    return {"address": address, "api-key": DD_API_KEY, "app-key": DD_APP_KEY, **extra}


def measure(
    api: MetricAPI,
    spec: dict[str, Any],
    *,
    success: str = "",
    failure: str = "",
    secrets: dict[tuple[str, str], dict[str, str]] | None = None,
    environ: dict[str, str] | None = None,
) -> Measurement:
    m = metric(
        provider={"datadog": spec},
        successCondition=success or None,
        failureCondition=failure or None,
    )
    deps = ProviderDeps(
        clock=lambda: NOW,
        namespace=CONTROLLER_NS,
        secrets=FakeSecrets(
            {(CONTROLLER_NS, "datadog"): keys(api.url())} if secrets is None else secrets
        ),
        environ=environ or {},
    )
    return DatadogProvider(deps).run(analysis_run(m.to_dict()), m, NOW)


def outcome(measurement: Measurement) -> dict[str, Any]:
    out = measurement.to_dict()
    assert out.pop("startedAt") == NOW_TEXT
    assert out.pop("finishedAt") == NOW_TEXT
    return out


def series(*values: float) -> dict[str, Any]:
    return {"status": "ok", "series": [{"pointlist": [[1598867910000.0, v] for v in values]}]}


def columns(*values: Any) -> dict[str, Any]:
    return {
        "data": {"type": "scalar_response", "attributes": {"columns": [{"values": list(values)}]}}
    }


# (id, answer status, answer body, success, failure, phase, value or message)
V1 = [
    (
        "last point of the first series",
        200,
        series(0.0020008318672513122, 0.0003332881882246533),
        "result < 0.001",
        "result >= 0.001",
        {"phase": "Successful", "value": "0.0003332881882246533"},
    ),
    (
        "value does not match condition then fail",
        200,
        series(0.0020008318672513122, 0.006121378742186943),
        "result < 0.001",
        "result >= 0.001",
        {"phase": "Failed", "value": "0.006121378742186943"},
    ),
    (
        "error for invalid request",
        400,
        b'{"status":"error","error":"error messsage"}',
        "result < 0.001",
        "",
        {
            "phase": "Error",
            "message": "received non 2xx response code: 400 "
            '{"status":"error","error":"error messsage"}',
        },
    ),
    (
        "no authenticated user",
        401,
        b'{"errors": ["No authenticated user."]}',
        "result < 0.001",
        "",
        {
            "phase": "Error",
            "message": 'received authentication error response code: 401 {"errors": '
            '["No authenticated user."]}',
        },
    ),
    (
        "error with no default and no data",
        200,
        {"status": "ok", "series": []},
        "result < 0.05",
        "",
        {"phase": "Error", "message": "invalid operation: nil < float"},
    ),
    (
        "success with default and no data",
        200,
        {"status": "ok", "series": []},
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": "[]"},
    ),
    (
        "fail when bad default and no data",
        200,
        {"status": "ok", "series": []},
        "default(result, 1) < 0.05",
        "",
        {"phase": "Failed", "value": "[]"},
    ),
    (
        "a series without points is no data",
        200,
        {"status": "ok", "series": [{"pointlist": []}]},
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": '[{"pointlist":[]}]'},
    ),
    (
        "no series field",
        200,
        {"status": "ok"},
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": "null"},
    ),
    (
        "series is not a list",
        200,
        {"status": "ok", "series": "invalid"},
        "result < 0.001",
        "",
        {"phase": "Error", "message": "Could not parse JSON body: series is not a JSON array"},
    ),
    (
        "a point without two values",
        200,
        {"series": [{"pointlist": [[1598867910000.0]]}]},
        "result < 0.001",
        "",
        {"phase": "Error", "message": "Datapoint does not have 2 values"},
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "success", "failure", "want"), [c[1:] for c in V1], ids=[c[0] for c in V1]
)
def test_v1(
    api: MetricAPI, *, status: int, body: Any, success: str, failure: str, want: dict[str, Any]
) -> None:
    api.answer = (status, body)
    spec = {"query": QUERY, "interval": "5m", "apiVersion": "v1"}
    assert outcome(measure(api, spec, success=success, failure=failure)) == want
    assert api.problems == []
    (seen,) = api.seen
    assert seen.method == "GET"


def test_v1_is_the_default_version_and_5m_the_default_interval(api: MetricAPI) -> None:
    api.answer = (200, series(1.0))
    assert outcome(measure(api, {"query": QUERY})) == {"phase": "Successful", "value": "1"}
    assert api.problems == []
    assert [(s.method, s.path) for s in api.seen] == [("GET", "/api/v1/query")]


# (id, spec besides apiVersion v2, answer body, success, failure, expected aggregator, want)
QUERY_10M = {"query": QUERY, "interval": "10m"}
V2 = [
    (
        "simple scalar query over 10m",
        QUERY_10M,
        columns(0.0006332881882246533),
        "result < 0.001",
        "result >= 0.001",
        {"phase": "Successful", "value": "0.0006332881882246533"},
    ),
    (
        "value does not match condition then fail",
        {"query": QUERY},
        columns(0.006121374442186943),
        "result < 0.001",
        "result >= 0.001",
        {"phase": "Failed", "value": "0.006121374442186943"},
    ),
    (
        "sum aggregator",
        {"query": QUERY, "aggregator": "sum"},
        columns(0.006121378742186943),
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": "0.006121378742186943"},
    ),
    (
        "error with no default and no data",
        {"query": QUERY},
        columns(),
        "result < 0.05",
        "",
        {"phase": "Error", "message": "invalid operation: nil < float"},
    ),
    (
        "success with default and no data",
        {"query": QUERY},
        columns(),
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": "[]"},
    ),
    (
        "fail when bad default and no data",
        {"query": QUERY},
        columns(),
        "default(result, 1) < 0.05",
        "",
        {"phase": "Failed", "value": "[]"},
    ),
    (
        "a null value is no data",
        {"query": QUERY},
        columns(None),
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": "[null]"},
    ),
    (
        "no columns",
        {"query": QUERY},
        {"data": {"attributes": {}}},
        "default(result, 0) < 0.05",
        "",
        {"phase": "Successful", "value": '{"Columns":null}'},
    ),
    (
        "error when bad values from dd",
        {"query": QUERY},
        {"data": {"attributes": {"columns": [{"values": "invalid"}]}}},
        "result < 0.001",
        "",
        {"phase": "Error", "message": "Could not parse JSON body: values is not a JSON array"},
    ),
    (
        "errors in the query",
        {"query": QUERY},
        {"data": {"errors": "unknown metric"}},
        "result < 0.001",
        "",
        {"phase": "Error", "message": "There were errors in your query: unknown metric"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "body", "success", "failure", "want"), [c[1:] for c in V2], ids=[c[0] for c in V2]
)
def test_v2(
    api: MetricAPI,
    *,
    spec: dict[str, Any],
    body: Any,
    success: str,
    failure: str,
    want: dict[str, Any],
) -> None:
    api.answer = (200, body)
    api.expect.interval = 600 if spec.get("interval") == "10m" else 300
    api.expect.aggregator = spec.get("aggregator", "last")
    got = measure(api, {**spec, "apiVersion": "v2"}, success=success, failure=failure)
    assert outcome(got) == want
    assert api.problems == []
    assert [(s.method, s.path) for s in api.seen] == [("POST", "/api/v2/query/scalar")]


def test_v2_queries_and_formula(api: MetricAPI) -> None:
    """newQueriesDefaultProvider: two named queries combined by a formula."""
    api.answer = (200, columns(0.0006444881882246533))
    api.expect.queries = {"a": "avg:error_requests{*}", "b": "avg:total_requests{*}"}
    api.expect.formula = "a/b"
    spec = {"apiVersion": "v2", "queries": api.expect.queries, "formula": "a/b"}
    got = measure(api, spec, success="default(result, 0) < 0.05")
    assert outcome(got) == {"phase": "Successful", "value": "0.0006444881882246533"}
    assert api.problems == []


def test_server_errors(api: MetricAPI) -> None:
    api.answer = (500, b"oops")
    got = measure(api, {"query": QUERY, "apiVersion": "v2"}, success="result < 1")
    assert outcome(got) == {"phase": "Error", "message": "received non 2xx response code: 500 oops"}


# (id, secrets, environ, secretRef, want): where the keys come from (Argo's findCredentials).
def credential_cases(url: str) -> list[tuple[str, Any, Any, Any, str]]:
    wrong = {"address": url, "api-key": "wrong", "app-key": "wrong"}
    env = {"DD_API_KEY": DD_API_KEY, "DD_APP_KEY": DD_APP_KEY, "DD_ADDRESS": url}
    return [
        ("the datadog Secret", {(CONTROLLER_NS, "datadog"): keys(url)}, {}, None, "Successful"),
        ("keys from env vars", {(CONTROLLER_NS, "datadog"): wrong}, env, None, "Successful"),
        (
            "env vars count only when all three are set",
            {(CONTROLLER_NS, "datadog"): keys(url)},
            {"DD_API_KEY": "wrong", "DD_APP_KEY": "wrong"},
            None,
            "Successful",
        ),
        (
            "secretRef: only that Secret, in the controller's namespace",
            {(CONTROLLER_NS, "mine"): keys(url), ("ns", "mine"): wrong},
            env,
            {"name": "mine"},
            "Successful",
        ),
        (
            "secretRef namespaced: the run's namespace",
            {("ns", "mine"): keys(url), (CONTROLLER_NS, "mine"): wrong},
            {},
            {"name": "mine", "namespaced": True},
            "Successful",
        ),
        (
            "namespaced needs a name",
            {},
            {},
            {"namespaced": True},
            "secret name is required for namespaced credentials",
        ),
        (
            "a Secret without app-key",
            {(CONTROLLER_NS, "datadog"): {"api-key": DD_API_KEY}},
            {},
            None,
            "failed to find the credentials for datadog metrics provider",
        ),
        (
            "no Secret",
            {},
            {},
            {"name": "absent"},
            "failed to find the credentials for datadog metrics provider",
        ),
    ]


@pytest.mark.parametrize("case", range(8), ids=[c[0] for c in credential_cases("")])
def test_credentials(api: MetricAPI, case: int) -> None:
    _, secrets, environ, ref, want = credential_cases(api.url())[case]
    api.answer = (200, series(1.0))
    spec: dict[str, Any] = {"query": QUERY}
    if ref is not None:
        spec["secretRef"] = ref
    got = measure(api, spec, secrets=secrets, environ=environ)
    if want == "Successful":
        assert (got.phase, got.value, api.problems) == (P.SUCCESSFUL, "1", [])
    else:
        assert (got.phase, got.message, api.seen) == (P.ERROR, want, [])


def test_the_default_address_is_datadogs(api: MetricAPI) -> None:
    secrets = FakeSecrets({(CONTROLLER_NS, "datadog"): {"api-key": "a", "app-key": "b"}})
    provider = DatadogProvider(ProviderDeps(secrets=secrets))
    spec = metric(provider={"datadog": {"query": QUERY}}).provider.datadog
    assert spec is not None
    assert provider.credentials(spec, "ns") == ("https://api.datadoghq.com", "a", "b")


# datadog_test.go TestValidateIncomingProps, and the enums of Argo's CRD.
INVALID = [
    ("neither query nor queries", {}, "Must have either a query or queries"),
    ("both", {"query": "q", "queries": {"a": "q"}}, "Cannot have both a query and queries"),
    (
        "v1 with queries",
        {"apiVersion": "v1", "queries": {"a": "q"}},
        "Query is empty. API Version v1 only supports using the query parameter in your "
        "Analysis Template.",
    ),
    (
        "v2 formula without queries",
        {"apiVersion": "v2", "query": "q", "formula": "a/b"},
        "Formula are only valid when queries are set",
    ),
    (
        "v1 with an aggregator",
        {"query": "q", "aggregator": "sum"},
        "Aggregator is not supported in v1. Please review the Analysis Template.",
    ),
    (
        "several queries without a formula",
        {"apiVersion": "v2", "queries": {"a": "q", "b": "r"}},
        "When multiple queries are provided you must include a formula.",
    ),
    ("unknown apiVersion", {"apiVersion": "v3", "query": "q"}, 'apiVersion "v3" is not supported'),
    (
        "unknown aggregator",
        {"apiVersion": "v2", "query": "q", "aggregator": "median"},
        'aggregator "median" is not supported',
    ),
    ("bad interval", {"query": "q", "interval": "??"}, 'time: invalid duration "??"'),
]


@pytest.mark.parametrize(("spec", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_specs(api: MetricAPI, spec: dict[str, Any], message: str) -> None:
    got = measure(api, spec, success="true")
    assert got.phase == P.ERROR
    assert message in (got.message or "")
    assert api.seen == []


def test_bad_address(api: MetricAPI) -> None:
    """Error if server address is faulty."""
    got = measure(
        api, {"query": QUERY}, secrets={(CONTROLLER_NS, "datadog"): keys("://wrong.schema")}
    )
    assert (got.phase, got.message) == (P.ERROR, 'parse "://wrong.schema": missing protocol scheme')


def test_timeout(api: MetricAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datadog, "TIMEOUT_SECONDS", 0.2)
    api.delay.set()
    got = measure(api, {"query": QUERY}, success="true")
    assert got.phase == P.ERROR
    assert "timeout after 0.2s" in (got.message or "")


def test_type_and_metadata() -> None:
    provider = DatadogProvider(ProviderDeps())
    assert (provider.type(), provider.metadata(metric(provider={"datadog": {}}))) == ("Datadog", {})
