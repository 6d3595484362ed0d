"""Graphite metrics: a render query (`GET <address>/render?target=...&format=json`).

Behaviour of Argo Rollouts' `metricproviders/graphite` (plain HTTP, as Argo does):

- `address` is required and must parse as a URL (`Graphite address <address> is not a valid
  URL`); `render` is joined to its path. No authentication (Argo has none either).
- `query` is the query string of the render call (`target=sumSeries(a.b.*)&from=-5min`): every
  whitespace character is removed first (so a query may be written over several lines), then
  it is parsed as Go's `url.Parse("./render?" + query)` does (a `#` starts a fragment, whose bad
  escapes are an Error: `parse "./render?...": invalid URL escape "%^&"`) and re-encoded with
  `format=json` added, keys in order. The request times out after 10 s.
- A status of 400 or more is an Error `error response: <body>`; a body that is not the render
  API's JSON is an Error.
- Only the first target's datapoints are read. No datapoint at all is an Error `no values
  found`. A datapoint is `[value, timestamp]`; a value or timestamp may be a number, a numeric
  string or null; anything else is an Error with Argo's messages.
- The non-null values are what conditions see (a list of numbers); the value is them with six
  decimals, `[10.000000,5.500000]` (Argo's `%f`), kept in the measurement even when a condition
  cannot be evaluated.
"""

from __future__ import annotations

import datetime as dt
import math
import posixpath
import re
from typing import Any
from urllib.parse import quote_plus, unquote_to_bytes, urlsplit

from rollout_workers.analysis.providers.base import mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.values import decode_json, format_float
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import AnalysisRun, GraphiteMetric, Measurement, Metric

PROVIDER_TYPE = "Graphite"
TIMEOUT_SECONDS = 10.0
_SPACE = re.compile(r"\s+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class GraphiteError(Exception):
    pass


class GraphiteProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            url = render_url(spec.address or "", spec.query or "")
            response = send(self.deps.http, "GET", url, headers={}, timeout=TIMEOUT_SECONDS)
            if response.status >= 400:
                raise GraphiteError(f"error response: {response.data.decode(errors='replace')}")
            values = parse_datapoints(response.data)
        except (GraphiteError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        if not values:
            return mark_error(measurement, "no values found", now)
        present = [v for v in values if v is not None]
        text = "[" + ",".join(_six_decimals(v) for v in present) + "]"
        return self.judged(
            measurement, metric, result=present, value=text, now=now, keep_value_on_error=True
        )


def render_url(address: str, query: str) -> str:
    """The render URL of `query` under `address`; raises GraphiteError with Argo's messages."""
    parts = urlsplit(address) if address else None
    if parts is None or address.startswith(":") or _BAD_ESCAPE.search(address):
        raise GraphiteError(f"{PROVIDER_TYPE} address {address} is not a valid URL")
    relative = "./render?" + _SPACE.sub("", query)
    raw_query, _, fragment = relative.partition("?")[2].partition("#")
    bad = _BAD_ESCAPE.search(fragment)
    if bad is not None:
        escape = fragment[bad.start() : bad.start() + 3]
        raise GraphiteError(f'parse "{relative}": invalid URL escape "{escape}"')
    params = _parse_query(raw_query)
    params["format"] = ["json"]
    encoded = "&".join(
        f"{quote_plus(k, safe='')}={quote_plus(v, safe='')}"
        for k in sorted(params)
        for v in params[k]
    )
    joined = posixpath.normpath(posixpath.join(parts.path, "render")) if parts.path else "render"
    path = joined if joined.startswith("/") else "/" + joined
    return f"{parts.scheme}://{parts.netloc}{path}?{encoded}"


def _parse_query(raw: str) -> dict[str, list[str]]:
    """Go's `url.ParseQuery`, keeping what it keeps: pairs with a `;` or a bad escape are
    dropped."""
    out: dict[str, list[str]] = {}
    for pair in raw.split("&"):
        if not pair or ";" in pair or _BAD_ESCAPE.search(pair):
            continue
        key, _, value = pair.partition("=")
        try:
            key, value = (unquote_to_bytes(p.replace("+", " ")).decode() for p in (key, value))
        except UnicodeDecodeError:
            continue
        out.setdefault(key, []).append(value)
    return out


def parse_datapoints(body: bytes) -> list[float | None]:
    """The values of the first target's datapoints (None for a null value); raises
    GraphiteError."""
    try:
        targets = decode_json(body)
    except ValueError as err:
        raise GraphiteError(str(err)) from None
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        raise GraphiteError("the render API's answer is not a list of targets")
    # Argo decodes every target before reading the first one's points.
    decoded = [[_datapoint(p) for p in t.get("datapoints") or []] for t in targets]
    return decoded[0] if decoded else []


def _datapoint(point: Any) -> float | None:
    if not isinstance(point, list) or len(point) != 2:
        raise GraphiteError(f"error unmarshaling data point: {_go_value(point)}")
    value, stamp = point
    if isinstance(stamp, str):
        try:
            int(stamp, 10)
        except ValueError:
            raise GraphiteError(f'strconv.ParseInt: parsing "{stamp}": invalid syntax') from None
    elif stamp is not None and not isinstance(stamp, float):
        # Argo's message shows the value, not the timestamp.
        raise GraphiteError(f"error unmarshaling timestamp: {_go_value(value)}")
    if value is None:
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise GraphiteError(f'strconv.ParseFloat: parsing "{value}": invalid syntax') from None
    raise GraphiteError(f"error unmarshaling value: {_go_value(value)}")


def _go_value(value: Any) -> str:
    """Go's `%v` of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value) if abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)


def _six_decimals(value: float) -> str:
    """Go's `%f`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.6f}"


def _spec(metric: Metric) -> GraphiteMetric:
    assert metric.provider.graphite is not None, "the factory only builds it for graphite"
    return metric.provider.graphite
