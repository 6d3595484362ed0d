"""Measured values as Argo Rollouts writes them into `Measurement.value`.

Argo stores a string. The web provider stores Go's `json.Marshal` of the value found by the
JSONPath (map keys sorted, no spaces, numbers as Go prints a float64, `<`, `>` and `&` escaped);
the prometheus provider stores `model.SampleValue.String()` (`strconv.FormatFloat(v, 'f', -1)`:
`10`, `0.5`, `NaN`, `+Inf`), vectors as `[10,11]`. Reproducing both keeps values comparable with
runs written by Argo's own controller.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028"}
_HTML_ESCAPES["\u2029"] = "\\u2029"


def format_float(value: float) -> str:
    """`strconv.FormatFloat(value, 'f', -1, 64)`: the shortest digits, never an exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _json_float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"json: unsupported value: {format_float(value)}")
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # exponent form, as Go's 'e' with the shortest digits
        mantissa, _, exponent = text.partition("e")
        sign = exponent[0] if exponent[0] in "+-" else "+"
        digits = exponent.lstrip("+-")
        if sign == "-":
            digits = digits.lstrip("0") or "0"  # Go's encoder turns e-07 into e-7
        elif len(digits) < 2:
            digits = digits.zfill(2)
        return f"{mantissa}e{sign}{digits}"
    return format_float(value)


def _json_string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    for char, escape in _HTML_ESCAPES.items():
        text = text.replace(char, escape)
    return text


def go_json(value: Any) -> str:
    """Go's `json.Marshal` of a value decoded from JSON (`map[string]any`, `[]any`, float64...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _json_float(float(value)) if abs(value) >= 2**53 else str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        items = sorted(((str(k), v) for k, v in value.items()), key=lambda kv: kv[0])
        return "{" + ",".join(f"{_json_string(k)}:{go_json(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise TypeError(f"json: unsupported type: {type(value).__name__}")


def decode_json(data: bytes | str) -> Any:
    """JSON as Go decodes it into `any`: every number a float64."""
    return json.loads(data, parse_int=float, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    # Go rejects NaN and Infinity literals; so do we.
    raise ValueError(f"invalid character in literal {name}")


def sprint_float(value: float) -> str:
    """Go's `%v` of a float64 (`strconv.FormatFloat(value, 'g', -1, 64)`): the shortest digits,
    with an exponent below 1e-4 and from 1e+06 on (`6.6`, `123456`, `1e+06`, `1.5e-05`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point
    magnitude = point - 1
    if magnitude < -4 or magnitude >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'-' if magnitude < 0 else '+'}{abs(magnitude):02d}"
    elif point <= 0:
        body = "0." + "0" * -point + text
    elif point >= len(text):
        body = text + "0" * (point - len(text))
    else:
        body = text[:point] + "." + text[point:]
    return ("-" if sign else "") + body


def condition_time(value: dt.datetime) -> str:
    """A time as conditions see it where Go hands them a `time.Time`, which the conditions'
    sandbox does not carry: RFC 3339 in UTC (`2024-05-01T12:00:00.5Z`)."""
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def sprint(value: Any) -> str:
    """Go's `fmt.Sprint` of a decoded value: lists as `[a b]`, nil as `<nil>`, times as Go's
    `time.Time.String()` in UTC."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return sprint_float(value)
    if isinstance(value, dt.datetime):
        moment = value.astimezone(dt.UTC)
        fraction = f".{moment.microsecond:06d}".rstrip("0").rstrip(".")
        return moment.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"
    if isinstance(value, list | tuple):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    return str(value)
