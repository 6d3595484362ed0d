"""The HTTP API's answers, computed over a store of series (no sockets here)."""

from __future__ import annotations

import json

import pytest

from demoprometheus.series import Series
from demoprometheus.server import (
    SourceUnavailable,
    Store,
    instant_query,
    parse_time,
    web_delete,
    web_get,
    web_put,
)

NOW = 1714564800.25
GOOD = {"app": "web", "rollouts_pod_template_hash": "good"}
BAD = {"app": "web", "rollouts_pod_template_hash": "bad"}


def store() -> Store:
    return Store(
        lambda: [
            Series.of("demo_success_rate", GOOD, 0.99),
            Series.of("demo_success_rate", BAD, 0.6),
        ]
    )


def down() -> list[Series]:
    raise SourceUnavailable("cannot list ReplicaSets: 0 Unavailable: connection refused")


def test_vector_answer_has_prometheus_shape() -> None:
    status, body = instant_query(
        {"query": 'demo_success_rate{rollouts_pod_template_hash="good"}'}, store=store(), now=NOW
    )
    assert status == 200
    assert body == {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {
                    "metric": {"__name__": "demo_success_rate", **GOOD},
                    "value": [1714564800.25, "0.99"],
                }
            ],
        },
    }
    json.dumps(body, allow_nan=False)  # what goes on the wire is strict JSON


def test_every_matching_series_in_label_order() -> None:
    _, body = instant_query({"query": 'demo_success_rate{app="web"}'}, store=store(), now=NOW)
    values = [r["value"][1] for r in body["data"]["result"]]
    assert values == ["0.6", "0.99"]  # bad < good


def test_no_match_is_an_empty_vector() -> None:
    _, body = instant_query({"query": "nothing_here"}, store=store(), now=NOW)
    assert body["data"] == {"resultType": "vector", "result": []}


def test_number_literal_is_a_scalar_at_the_requested_time() -> None:
    status, body = instant_query({"query": "0.5", "time": "1714564800"}, store=store(), now=NOW)
    assert (status, body["data"]) == (200, {"resultType": "scalar", "result": [1714564800, "0.5"]})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"query": "sum(demo_success_rate)"}, '1:1: parse error: function or aggregation "sum"'),
        ({}, "1:1: parse error: no expression found in input"),
        ({"query": "m", "time": "yesterday"},
         'invalid parameter "time": cannot parse "yesterday" to a valid timestamp'),
    ],
)  # fmt: skip
def test_queries_it_cannot_answer_are_bad_data(params: dict[str, str], message: str) -> None:
    status, body = instant_query(params, store=store(), now=NOW)
    assert status == 400
    assert body["status"] == "error" and body["errorType"] == "bad_data"
    assert body["error"].startswith(message)


def test_cluster_unreachable_is_unavailable() -> None:
    status, body = instant_query({"query": "m"}, store=Store(down), now=NOW)
    assert (status, body["errorType"]) == (503, "unavailable")
    assert "connection refused" in body["error"]
    assert web_get("m", {}, store=Store(down))[0] == 503


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1714564800", 1714564800.0), ("1714564800.5", 1714564800.5),
     ("2024-05-01T12:00:00Z", 1714564800.0), ("2024-05-01T14:00:00+02:00", 1714564800.0)],
)  # fmt: skip
def test_times(text: str, seconds: float) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["2024-05-01T12:00:00", "NaN", "inf", "soon"])
def test_bad_times(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


def test_web_answers_the_one_series() -> None:
    status, body = web_get(
        "demo_success_rate", {"rollouts_pod_template_hash": "bad"}, store=store()
    )
    assert (status, body) == (200, {"value": 0.6, "labels": BAD})


@pytest.mark.parametrize(
    ("name", "params", "status", "error"),
    [
        ("demo_success_rate", {"app": "web"}, 400, '2 series match demo_success_rate{app="web"}'),
        ("demo_success_rate", {"app": "nope"}, 404, 'no series demo_success_rate{app="nope"}'),
        ("demo-success", {}, 400, "invalid metric name 'demo-success'"),
        ("demo_success_rate", {"bad-label": "x"}, 400, "invalid label name 'bad-label'"),
        ("demo_success_rate", {"__name__": "x"}, 400, "invalid label name '__name__'"),
    ],
)
def test_web_errors(name: str, params: dict[str, str], status: int, error: str) -> None:
    got_status, body = web_get(name, params, store=store())
    assert got_status == status
    assert body["error"].startswith(error)


def test_put_sets_a_series_that_replaces_a_derived_one_until_deleted() -> None:
    s = store()
    assert web_put("demo_success_rate", BAD, b'{"value": 0.97}', store=s) == (
        200,
        {"value": 0.97, "labels": BAD},
    )
    assert web_get("demo_success_rate", BAD, store=s)[1]["value"] == 0.97
    _, body = instant_query(
        {"query": 'demo_success_rate{rollouts_pod_template_hash="bad"}'}, store=s, now=NOW
    )
    assert [r["value"][1] for r in body["data"]["result"]] == ["0.97"]
    assert web_delete("demo_success_rate", BAD, store=s)[0] == 200
    assert web_get("demo_success_rate", BAD, store=s)[1]["value"] == 0.6
    assert web_delete("demo_success_rate", BAD, store=s)[0] == 404


def test_put_of_a_new_series() -> None:
    s = Store()
    assert web_put("custom", {}, b'{"value": 3}', store=s)[0] == 200
    assert instant_query({"query": "custom"}, store=s, now=NOW)[1]["data"]["result"] == [
        {"metric": {"__name__": "custom"}, "value": [1714564800.25, "3"]}
    ]


@pytest.mark.parametrize(
    "body", [b"", b"0.5", b"{}", b'{"value": "0.5"}', b'{"value": true}', b'{"value": NaN}', b"{"]
)
def test_put_needs_a_finite_number(body: bytes) -> None:
    status, answer = web_put("m", {}, body, store=Store())
    assert status == 400
    assert answer["error"] == 'expected a JSON body {"value": <finite number>}'
