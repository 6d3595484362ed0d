"""Graphite metrics against a stand-in of Graphite's render API on 127.0.0.1 that checks the
render parameters (tests/support/metricapis.py). Cases from Argo's graphite_test.go and
api_test.go; conditions are judged by the real evaluator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import graphite
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.graphite import GraphiteProvider, render_url
from rollout_workers.api.analysis import Measurement
from tests.support.metricapis import MetricAPI
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

QUERY = "target=sumSeries(app.http.*.*.count)&from=-2min"
PARAMS = {"target": ["sumSeries(app.http.*.*.count)"], "from": ["-2min"]}


@pytest.fixture
def api() -> Iterator[MetricAPI]:
    server = MetricAPI().start()
    server.expect.graphite = PARAMS
    yield server
    server.stop()


def measure(
    api: MetricAPI, *, query: str = QUERY, address: str = "", **conditions: str
) -> Measurement:
    m = metric(
        provider={"graphite": {"address": address or api.url(), "query": query}}, **conditions
    )
    provider = GraphiteProvider(ProviderDeps(clock=lambda: NOW))
    return provider.run(analysis_run(m.to_dict()), m, NOW)


def outcome(measurement: Measurement) -> dict[str, Any]:
    out = measurement.to_dict()
    assert out.pop("startedAt") == NOW_TEXT
    assert out.pop("finishedAt") == NOW_TEXT
    return out


def target(*points: Any) -> list[dict[str, Any]]:
    return [{"target": "sumSeries(app.http.*.*.count)", "datapoints": list(points)}]


TS = 1621348430
CONDITIONS = {
    "successCondition": "10.000000 in result",
    "failureCondition": "10.000000 not in result",
}
# (id, status, body, conditions, want)
CASES = [
    (
        "ok",
        200,
        target([100.0, TS]),
        {"successCondition": "result[0] == 100"},
        {"phase": "Successful", "value": "[100.000000]"},
    ),
    (
        "successful evaluation",
        200,
        target([10, TS]),
        CONDITIONS,
        {"phase": "Successful", "value": "[10.000000]"},
    ),
    (
        "failed evaluation",
        200,
        target([5, TS]),
        CONDITIONS,
        {"phase": "Failed", "value": "[5.000000]"},
    ),
    (
        "several points, nulls left out",
        200,
        target([10, TS], [None, TS + 10], ["5.5", str(TS + 20)]),
        {"successCondition": "len(result) == 2 and result[1] == 5.5"},
        {"phase": "Successful", "value": "[10.000000,5.500000]"},
    ),
    (
        "only nulls: an empty list",
        200,
        target([None, TS]),
        {"successCondition": "len(result) == 0"},
        {"phase": "Successful", "value": "[]"},
    ),
    (
        "measurement error keeps the value (TestRunMeasurementError)",
        200,
        target([10, TS]),
        {"successCondition": "result[0] 10.000000"},
        {
            "phase": "Error",
            "value": "[10.000000]",
            "message": 'unexpected token Number("10.000000")',
        },
    ),
    (
        "graphite response with empty array",
        200,
        [],
        CONDITIONS,
        {"phase": "Error", "message": "no values found"},
    ),
    (
        "a target without points",
        200,
        target(),
        CONDITIONS,
        {"phase": "Error", "message": "no values found"},
    ),
    (
        "400 graphite response status",
        400,
        b"foo",
        CONDITIONS,
        {"phase": "Error", "message": "error response: foo"},
    ),
    (
        "500 graphite response status",
        500,
        b"bar",
        CONDITIONS,
        {"phase": "Error", "message": "error response: bar"},
    ),
    (
        "data point JSON with only one item",
        200,
        target([10]),
        CONDITIONS,
        {"phase": "Error", "message": "error unmarshaling data point: [10]"},
    ),
    (
        "data point JSON with an invalid timestamp",
        200,
        target([100, "f"]),
        CONDITIONS,
        {"phase": "Error", "message": 'strconv.ParseInt: parsing "f": invalid syntax'},
    ),
    (
        "value JSON triggers unmarshaling error",
        200,
        target([[], 1621348420]),
        CONDITIONS,
        {"phase": "Error", "message": "error unmarshaling value: []"},
    ),
    (
        "timestamp JSON triggers unmarshaling error",
        200,
        target([100, []]),
        CONDITIONS,
        {"phase": "Error", "message": "error unmarshaling timestamp: 100"},
    ),
    (
        "a string value that is no number",
        200,
        target(["x", TS]),
        CONDITIONS,
        {"phase": "Error", "message": 'strconv.ParseFloat: parsing "x": invalid syntax'},
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "conditions", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_render(
    api: MetricAPI, status: int, body: Any, conditions: dict[str, str], want: dict[str, Any]
) -> None:
    api.answer = (status, body)
    assert outcome(measure(api, **conditions)) == want
    assert api.problems == []
    assert [(s.method, s.path) for s in api.seen] == [("GET", "/render")]


def test_invalid_json(api: MetricAPI) -> None:
    api.answer = (200, b"invalid JSON")
    got = measure(api, **CONDITIONS)
    assert got.phase == "Error" and got.message and got.value is None


def test_query_over_several_lines(api: MetricAPI) -> None:
    """query with surrounding whitespace: every whitespace character is removed."""
    api.answer = (200, target([10, TS]))
    got = measure(
        api, query="\n  target=sumSeries(\n  app.http.*.*.count)\t&from=-2min \n", **CONDITIONS
    )
    assert (got.phase, api.problems) == ("Successful", [])


URLS = [
    (
        "no path",
        "http://g:8080",
        "target=a&from=-5min",
        "http://g:8080/render?format=json&from=-5min&target=a",
    ),
    ("a path", "http://g/graphite/", "target=a", "http://g/graphite/render?format=json&target=a"),
    (
        "escaped",
        "http://g",
        "target=a(b,'5min')",
        "http://g/render?format=json&target=a%28b%2C%275min%27%29",
    ),
    (
        "repeated keys kept in order",
        "http://g",
        "target=b&target=a",
        "http://g/render?format=json&target=b&target=a",
    ),
    ("format is ours", "http://g", "target=a&format=csv", "http://g/render?format=json&target=a"),
]


@pytest.mark.parametrize(
    ("address", "query", "url"), [c[1:] for c in URLS], ids=[c[0] for c in URLS]
)
def test_render_url(address: str, query: str, url: str) -> None:
    assert render_url(address, query) == url


REFUSED = [
    ("TestNewAPIWithInvalidURL", ":::", QUERY, "Graphite address ::: is not a valid URL"),
    ("no address", "", QUERY, "Graphite address  is not a valid URL"),
    (
        "invalid query",
        "http://g",
        "target=#$%^&*(proper$#$%%^(password&from=-2min",
        'parse "./render?target=#$%^&*(proper$#$%%^(password&from=-2min": invalid URL escape "%^&"',
    ),
]


@pytest.mark.parametrize(
    ("address", "query", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused(address: str, query: str, message: str) -> None:
    m = metric(provider={"graphite": {"address": address, "query": query}})
    got = GraphiteProvider(ProviderDeps(clock=lambda: NOW)).run(analysis_run(m.to_dict()), m, NOW)
    assert (got.phase, got.message) == ("Error", message)


def test_timeout(api: MetricAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graphite, "TIMEOUT_SECONDS", 0.2)
    api.delay.set()
    got = measure(api, **CONDITIONS)
    assert got.phase == "Error" and "timeout after 0.2s" in (got.message or "")


def test_type_metadata_resume_terminate() -> None:
    provider = GraphiteProvider(ProviderDeps())
    m = metric(provider={"graphite": {"address": "http://g", "query": "target=a"}})
    run = analysis_run(m.to_dict())
    taken = Measurement.from_dict({"phase": "Successful", "startedAt": NOW_TEXT})
    assert provider.resume(run, m, taken, NOW) is taken
    assert provider.terminate(run, m, taken, NOW) is taken
    provider.garbage_collect(run, m, 1)
    assert (provider.type(), provider.metadata(m)) == ("Graphite", {})
