"""The Datadog-compatible answers over a fixed set of series (no sockets here)."""

from __future__ import annotations

from typing import Any

import pytest

from demoprometheus.datadog import (
    DatadogQueryError,
    evaluate,
    measure,
    parse_query,
    v1_query,
    v2_scalar,
)
from demoprometheus.series import Series

SERIES = [
    Series.of("demo_success_rate", {"app": "web", "rollouts_pod_template_hash": "a"}, 0.99),
    Series.of("demo_success_rate", {"app": "web", "rollouts_pod_template_hash": "b"}, 0.6),
    Series.of("demo_error_rate", {"app": "web", "rollouts_pod_template_hash": "a"}, 0.01),
]


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("demo.success_rate{*}", ("avg", "demo_success_rate", {})),
        ("max:demo.success_rate{app:web}", ("max", "demo_success_rate", {"app": "web"})),
        (" sum:a.b{x:1, y:2} ", ("sum", "a_b", {"x": "1", "y": "2"})),
        ("last:m{k:v:w}", ("last", "m", {"k": "v:w"})),
    ],
)
def test_parse_query(query: str, want: Any) -> None:
    assert parse_query(query) == want


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("rate(m)", r"unable to parse rate\(m\)"),
        ("m", "unable to parse m"),
        ("p99:m{*}", "unknown aggregator p99"),
        ("m{novalue}", "invalid tag 'novalue'"),
    ],
)
def test_queries_the_server_cannot_read(query: str, message: str) -> None:
    with pytest.raises(DatadogQueryError, match=message):
        parse_query(query)


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("demo.success_rate{rollouts_pod_template_hash:a}", 0.99),
        ("avg:demo.success_rate{app:web}", pytest.approx(0.795)),
        ("min:demo.success_rate{app:web}", 0.6),
        ("sum:demo.success_rate{*}", pytest.approx(1.59)),
        ("demo.success_rate{app:api}", None),
    ],
)
def test_measure_combines_the_series_selected(query: str, want: float | None) -> None:
    assert measure(query, SERIES) == want


def test_v1_answer_has_datadogs_shape() -> None:
    q = "demo.success_rate{rollouts_pod_template_hash:a}"
    status, body = v1_query({"query": q, "from": "100", "to": "400"}, series=SERIES)
    assert status == 200
    assert body["from_date"] == 100_000 and body["to_date"] == 400_000
    (one,) = body["series"]
    assert one["pointlist"] == [[400_000.0, 0.99]]
    assert one["scope"] == "rollouts_pod_template_hash:a"
    status, body = v1_query({"query": "x{*}", "from": "1", "to": "2"}, series=SERIES)
    assert (status, body["series"]) == (200, [])
    assert v1_query({"query": "x{*}"}, series=SERIES)[0] == 400


def scalar(queries: dict[str, str], formulas: list[str] = []) -> dict[str, Any]:  # noqa: B006
    return {"data": {"type": "scalar_request", "attributes": {
        "from": 1, "to": 2, "formulas": [{"formula": f} for f in formulas],
        "queries": [{"name": n, "query": q, "aggregator": "last", "data_source": "metrics"}
                    for n, q in queries.items()]}}}  # fmt: skip


def test_v2_columns_are_the_queries_or_the_formulas() -> None:
    a, b = "demo.success_rate{rollouts_pod_template_hash:a}", "demo.error_rate{*}"
    status, body = v2_scalar(scalar({"query": a}), series=SERIES)
    assert status == 200
    assert body["data"]["attributes"]["columns"] == [
        {"name": "query", "type": "number", "values": [0.99]}
    ]
    _, body = v2_scalar(scalar({"a": a, "b": b}, ["b / (a + b)"]), series=SERIES)
    (column,) = body["data"]["attributes"]["columns"]
    assert column["values"] == [pytest.approx(0.01)]
    _, body = v2_scalar(scalar({"a": "gone{*}"}, ["a * 2"]), series=SERIES)
    assert body["data"]["attributes"]["columns"][0]["values"] == []
    assert v2_scalar({"data": {}}, series=SERIES)[0] == 400
    assert v2_scalar(scalar({"a": a}, ["c + 1"]), series=SERIES) == (
        400, {"errors": ["Error parsing formula: unknown query c"]}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("formula", "want"),
    [("a", 2.0), ("-a + 3 * b", 7.0), ("a / 0", None), ("(a - b) / 2", -0.5), ("n", None)],
)
def test_evaluate(formula: str, want: float | None) -> None:
    assert evaluate(formula, {"a": 2.0, "b": 3.0, "n": None}) == want


def test_evaluate_refuses_anything_but_arithmetic() -> None:
    with pytest.raises(DatadogQueryError):
        evaluate("__import__('os')", {"a": 1.0})
    with pytest.raises(DatadogQueryError):
        evaluate("a +", {"a": 1.0})
