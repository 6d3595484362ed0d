"""The rules that make the series up, and how series are written."""

from __future__ import annotations

import math
from typing import Any

import pytest

from demoprometheus.series import (
    Rule,
    Series,
    exposition,
    format_value,
    label_name,
    merge,
    parse_rule,
    replicaset_series,
    success_rate,
)

HASH = "rollouts-pod-template-hash"


def replicaset(name: str, image: str, available: int, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}},
        "status": {"availableReplicas": available},
    }


RATES = [
    ("any image", [], "argoproj/rollouts-demo:green", 0.99),
    ("a flaky tag", [], "argoproj/rollouts-demo:flaky-yellow", 0.6),
    ("flaky elsewhere is not a flaky tag", [], "flaky/rollouts-demo:green", 0.99),
    ("a user rule first", [Rule("*:green", 0.5)], "argoproj/rollouts-demo:green", 0.5),
    ("user rules before the defaults", [Rule("*", 0.1)], "x:flaky", 0.1),
    ("first user rule wins", [Rule("*:g*", 0.2), Rule("*", 0.3)], "x:green", 0.2),
]


@pytest.mark.parametrize(
    ("rules", "image", "rate"), [c[1:] for c in RATES], ids=[c[0] for c in RATES]
)
def test_success_rate(rules: list[Rule], image: str, rate: float) -> None:
    assert success_rate(image, rules) == rate


@pytest.mark.parametrize(
    ("text", "rule"),
    [("*:flaky*=0.6", Rule("*:flaky*", 0.6)), ("a=b=1", Rule("a=b", 1.0)), ("x=0", Rule("x", 0))],
)
def test_parse_rule(text: str, rule: Rule) -> None:
    assert parse_rule(text) == rule


@pytest.mark.parametrize(
    ("text", "message"),
    [("x", "expected GLOB=RATE"), ("=0.5", "expected GLOB=RATE"), ("x=high", "not a number"),
     ("x=1.5", "not between 0 and 1"), ("x=-0.1", "not between 0 and 1")],
)  # fmt: skip
def test_bad_rules(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rule(text)


def test_replicasets_with_available_replicas_are_versions_serving_traffic() -> None:
    series = replicaset_series(
        [
            replicaset("web-good", "demo:green", 2, app="web", **{HASH: "good"}),
            replicaset("web-bad", "demo:flaky-yellow", 1, app="web", **{HASH: "bad"}),
            replicaset("web-old", "demo:blue", 0, app="web", **{HASH: "old"}),
            {"metadata": {"name": "bare"}, "status": {"availableReplicas": 1}},
        ],
        [],
    )  # fmt: skip
    assert [
        (s.name, s.value, dict(s.labels).get("rollouts_pod_template_hash")) for s in series
    ] == [
        ("demo_success_rate", 0.99, "good"),
        ("demo_error_rate", 0.01, "good"),
        ("demo_success_rate", 0.6, "bad"),
        ("demo_error_rate", 0.4, "bad"),
        ("demo_success_rate", 0.99, None),
        ("demo_error_rate", 0.01, None),
    ]
    assert dict(series[0].labels) == {
        "app": "web",
        "rollouts_pod_template_hash": "good",
        "namespace": "ns",
        "replicaset": "web-good",
        "image": "demo:green",
    }
    assert dict(series[4].labels) == {"namespace": "", "replicaset": "bare", "image": ""}


@pytest.mark.parametrize(
    ("key", "name"),
    [("app", "app"), ("rollouts-pod-template-hash", "rollouts_pod_template_hash"),
     ("app.kubernetes.io/name", "app_kubernetes_io_name"), ("9lives", "_9lives")],
)  # fmt: skip
def test_label_names(key: str, name: str) -> None:
    assert label_name(key) == name


def test_hand_set_values_override_the_derived_series_they_select() -> None:
    derived = [
        Series.of("m", {"app": "a", "v": "1"}, 1),
        Series.of("m", {"app": "a", "v": "2"}, 2),
        Series.of("m", {"app": "b", "v": "1"}, 3),
        Series.of("n", {"app": "a", "v": "1"}, 4),
    ]
    manual = [
        Series.of("m", {"v": "1", "app": "a"}, 10),  # the most specific wins, in any order
        Series.of("m", {"app": "a"}, 20),
        Series.of("m", {"app": "c"}, 30),  # selects nothing: a series of its own
        Series.of("k", {}, 40),
    ]
    assert [(s.name, dict(s.labels), s.value) for s in merge(derived, manual)] == [
        ("k", {}, 40),
        ("m", {"app": "a", "v": "1"}, 10),
        ("m", {"app": "a", "v": "2"}, 20),
        ("m", {"app": "b", "v": "1"}, 3),
        ("m", {"app": "c"}, 30),
        ("n", {"app": "a", "v": "1"}, 4),
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.99, "0.99"), (1.0, "1"), (0.0, "0"), (-2.5, "-2.5"), (1e-7, "0.0000001"),
     (1e21, "1000000000000000000000"), (math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf")],
)  # fmt: skip
def test_values_are_written_as_prometheus_does(value: float, text: str) -> None:
    assert format_value(value) == text


def test_exposition() -> None:
    text = exposition([Series.of("m", {"b": 'say "hi"\\', "a": "x"}, 0.5), Series.of("k", {}, 1)])
    assert text == 'm{a="x",b="say \\"hi\\"\\\\"} 0.5\nk 1\n'
