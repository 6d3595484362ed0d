"""Measured values encoded as Argo's Go code writes them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rollout_workers.analysis.providers.values import decode_json, format_float, go_json

FLOATS = [
    ("integral", 10.0, "10"),
    ("fraction", 0.5, "0.5"),
    ("negative", -1.1, "-1.1"),
    ("tiny, no exponent", 1.5e-7, "0.00000015"),
    ("huge, no exponent", 1e21, "1000000000000000000000"),
    ("NaN", math.nan, "NaN"),
    ("+Inf", math.inf, "+Inf"),
    ("-Inf", -math.inf, "-Inf"),
    ("negative zero", -0.0, "0"),
]


@pytest.mark.parametrize(("value", "text"), [c[1:] for c in FLOATS], ids=[c[0] for c in FLOATS])
def test_format_float(value: float, text: str) -> None:
    assert format_float(value) == text


JSON = [
    (
        "Argo's map case",
        '{"a": 1, "b": true, "c": [1, 2, 3, 4], "d": null}',
        '{"a":1,"b":true,"c":[1,2,3,4],"d":null}',
    ),
    (
        "keys sorted",
        '{"num":1.2, "bool":true, "mapfield":{"foo":"bar"}}',
        '{"bool":true,"mapfield":{"foo":"bar"},"num":1.2}',
    ),
    ("string", '"1"', '"1"'),
    ("float that is integral", "2.0", "2"),
    ("small exponent", "1e-7", "1e-7"),
    ("large exponent", "1.5e21", "1.5e+21"),
    ("html escaped as Go", '"<a&b>"', '"\\u003ca\\u0026b\\u003e"'),
    ("unicode kept", '"é"', '"é"'),
    ("control characters", '"a\\nb"', '"a\\nb"'),
]


@pytest.mark.parametrize(("source", "encoded"), [c[1:] for c in JSON], ids=[c[0] for c in JSON])
def test_go_json(source: str, encoded: str) -> None:
    assert go_json(decode_json(source)) == encoded


def test_numbers_decode_as_float64() -> None:
    value: Any = decode_json('{"n": 1}')
    assert isinstance(value["n"], float)


def test_nan_literals_are_not_json() -> None:
    with pytest.raises(ValueError):
        decode_json("NaN")
