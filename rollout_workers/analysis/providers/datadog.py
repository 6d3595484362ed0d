"""Datadog metrics: a query over the last `interval`, through Datadog's HTTP API v1
(`GET /api/v1/query`) or v2 (`POST /api/v2/query/scalar`).

Behaviour of Argo Rollouts' `metricproviders/datadog` (plain HTTP, as Argo itself does; the
official client, datadog-api-client, is not needed for two endpoints):

- Credentials: with `secretRef.name`, only that Secret, in the controller's namespace
  (`ProviderDeps.namespace`), or in the run's with `secretRef.namespaced` (which then requires
  the name: `secret name is required for namespaced credentials`). Without it, the controller's
  environment (`DD_API_KEY`, `DD_APP_KEY` and `DD_ADDRESS`, all three set), else the Secret
  `datadog` in the controller's namespace. A source counts when it has both `api-key` and
  `app-key`; `address` is optional (default `https://api.datadoghq.com`). None found is an Error
  `failed to find the credentials for datadog metrics provider`.
- The spec is checked as Argo's `validateIncomingProps` does, with its messages (one of `query`
  and `queries`; v1 takes only `query` and no `aggregator`; `formula` needs `queries`; several
  queries need a formula). `apiVersion` is v1 (the default, as Argo's CRD sets it) or v2,
  `aggregator` one of Argo's enum: their CRD enforces these, ours does not, so other values are
  Errors here.
- The window is `[now - interval, now]` (`interval` default 5m, whole seconds), `now` being the
  measurement's time. v1 sends `query`, `from` and `to` (Unix seconds) as query parameters; v2
  a `scalar_request` with `from` and `to` in milliseconds, one query per entry of `queries`
  (`query` alone is named `query`) with the `aggregator` (default `last`) and `data_source`
  `metrics`, and the `formula` if any. Headers `DD-API-KEY`, `DD-APPLICATION-KEY` and
  `Content-Type: application/json`; the request times out after 10 s.
- 401 and 403 are Errors `received authentication error response code: 401 <body>`, any other
  status but 200 `received non 2xx response code: 400 <body>`.
- v1: the value is the last point of the first series. v2: the first value of the first column;
  a non-empty `errors` is an Error `There were errors in your query: <errors>`. The value is
  the number as Go formats it (`0.0003332881882246533`); conditions see the number.
- No data (no series, no points, no column, no value, or a null value) leaves `result` nil for
  the conditions (`default(result, 0) < 0.05` decides; `result < 0.05` is an evaluation Error),
  and the value is what Go's encoder makes of the empty part: `[]`, `null`, `[null]`, or the
  attributes as `{"Columns":...}`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import urlencode

from rollout_workers.analysis.providers.base import SecretError, mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.secretdata import read_keys
from rollout_workers.analysis.providers.values import decode_json, format_float, go_json
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import AnalysisRun, DatadogMetric, Measurement, Metric
from rollout_workers.kube.errors import KubeError
from rollout_workers.timefmt import TimeError, parse_duration_string

PROVIDER_TYPE = "Datadog"
SECRET_NAME = "datadog"
API_KEY, APP_KEY, ADDRESS = "api-key", "app-key", "address"
DEFAULT_ADDRESS = "https://api.datadoghq.com"
DEFAULT_INTERVAL = "5m"
DEFAULT_AGGREGATOR = "last"
AGGREGATORS = ("avg", "min", "max", "sum", "last", "percentile", "mean", "l2norm", "area")
TIMEOUT_SECONDS = 10.0


class DatadogError(Exception):
    pass


class DatadogProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            address, api_key, app_key = self.credentials(spec, run.metadata.namespace or "")
            validate(spec)
            version = spec.api_version or "v1"
            url = endpoint(address, version)
            try:
                interval = parse_duration_string(spec.interval or DEFAULT_INTERVAL) // 10**9
            except TimeError as err:
                raise DatadogError(str(err)) from None
            to = int(now.timestamp())
            headers = {
                "Content-Type": "application/json",
                "DD-API-KEY": api_key,
                "DD-APPLICATION-KEY": app_key,
            }
            if version == "v1":
                params = {"from": str(to - interval), "query": spec.query or "", "to": str(to)}
                response = send(
                    self.deps.http,
                    "GET",
                    f"{url}?{urlencode(params)}",
                    headers=headers,
                    timeout=TIMEOUT_SECONDS,
                )
            else:
                body = v2_request(spec, start=to - interval, end=to)
                response = send(
                    self.deps.http,
                    "POST",
                    url,
                    headers=headers,
                    body=body,
                    timeout=TIMEOUT_SECONDS,
                )
            value, result = parse_response(version, response.status, response.data)
        except (DatadogError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        return self.judged(measurement, metric, result=result, value=value, now=now)

    def credentials(self, spec: DatadogMetric, run_namespace: str) -> tuple[str, str, str]:
        """`(address, api key, app key)` from the first source that has both keys (Argo's
        `findCredentials`); raises DatadogError."""
        ref = spec.secret_ref
        name = (ref.name if ref else None) or ""
        namespace = self.deps.namespace
        if ref is not None and ref.namespaced:
            namespace = run_namespace
            if not name:
                raise DatadogError("secret name is required for namespaced credentials")
        if name:
            found = [self._from_secret(namespace, name)]
        else:
            found = [self._from_environment(), self._from_secret(self.deps.namespace, SECRET_NAME)]
        for address, api_key, app_key in found:
            if api_key and app_key:
                return address or DEFAULT_ADDRESS, api_key, app_key
        raise DatadogError("failed to find the credentials for datadog metrics provider")

    def _from_environment(self) -> tuple[str, str, str]:
        env = self.deps.environ
        names = ("DD_ADDRESS", "DD_API_KEY", "DD_APP_KEY")
        if not all(n in env for n in names):
            return "", "", ""
        return env["DD_ADDRESS"], env["DD_API_KEY"], env["DD_APP_KEY"]

    def _from_secret(self, namespace: str, name: str) -> tuple[str, str, str]:
        # Argo only logs (at debug level) why a Secret did not do; the next source is tried.
        if self.deps.secrets is None:
            return "", "", ""
        try:
            data = read_keys(
                self.deps.secrets, namespace=namespace, name=name, keys=(API_KEY, APP_KEY, ADDRESS)
            )
        except (KubeError, SecretError):
            return "", "", ""
        return data.get(ADDRESS, ""), data.get(API_KEY, ""), data.get(APP_KEY, "")


def validate(spec: DatadogMetric) -> None:
    """Argo's `validateIncomingProps`, with the enums its CRD enforces; raises DatadogError."""
    queries = spec.queries or {}
    if spec.api_version not in (None, "", "v1", "v2"):
        raise DatadogError(f'apiVersion "{spec.api_version}" is not supported: use v1 or v2')
    if spec.aggregator and spec.aggregator not in AGGREGATORS:
        raise DatadogError(
            f'aggregator "{spec.aggregator}" is not supported: use one of {", ".join(AGGREGATORS)}'
        )
    v1 = (spec.api_version or "v1") == "v1"
    if not spec.query and not queries:
        raise DatadogError(
            "Must have either a query or queries. Please review the Analysis Template."
        )
    if spec.query and queries:
        raise DatadogError(
            "Cannot have both a query and queries. Please review the Analysis Template."
        )
    if v1 and not spec.query:
        raise DatadogError(
            "Query is empty. API Version v1 only supports using the query parameter in your "
            "Analysis Template."
        )
    if spec.formula and not queries:
        raise DatadogError(
            "Formula are only valid when queries are set. Please review the Analysis Template."
        )
    if not spec.formula and len(queries) > 1:
        raise DatadogError("When multiple queries are provided you must include a formula.")
    if v1 and spec.aggregator:
        raise DatadogError(
            "Aggregator is not supported in v1. Please review the Analysis Template."
        )


def endpoint(address: str, version: str) -> str:
    """The API route under `address`, refused as Go's `url.Parse` refuses it."""
    if address.startswith(":"):
        raise DatadogError(f'parse "{address}": missing protocol scheme')
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in address):
        raise DatadogError(f'parse "{address}": net/url: invalid control character in URL')
    return address + ("/api/v2/query/scalar" if version == "v2" else "/api/v1/query")


def v2_request(spec: DatadogMetric, *, start: int, end: int) -> bytes:
    """The `scalar_request` body, as Argo builds it (queries in name order here; Go's map order
    is random)."""
    queries = {"query": spec.query} if spec.query else dict(spec.queries or {})
    aggregator = spec.aggregator or DEFAULT_AGGREGATOR
    body = {
        "data": {
            "attributes": {
                "from": start * 1000,
                "to": end * 1000,
                "queries": [
                    {"aggregator": aggregator, "data_source": "metrics", "name": k, "query": v}
                    for k, v in sorted(queries.items())
                ],
                "formulas": [{"formula": spec.formula}] if spec.formula else [],
            },
            "type": "scalar_request",
        }
    }
    return json.dumps(body, separators=(",", ":")).encode()


def parse_response(version: str, status: int, body: bytes) -> tuple[str, float | None]:
    """The stored value and what the conditions see (None: no data); raises DatadogError."""
    text = body.decode(errors="replace")
    if status in (401, 403):
        raise DatadogError(f"received authentication error response code: {status} {text}")
    if status != 200:
        raise DatadogError(f"received non 2xx response code: {status} {text}")
    try:
        payload = decode_json(body)
        if not isinstance(payload, dict):
            raise ValueError("the body is not a JSON object")
        if version == "v1":
            return _v1(payload)
        return _v2(payload)
    except (ValueError, TypeError) as err:
        raise DatadogError(f"Could not parse JSON body: {err}") from None


def _v1(payload: dict[str, Any]) -> tuple[str, float | None]:
    series = _list_or_none(payload.get("series"), "series")
    points = [
        _list_or_none(_object(s, "series").get("pointlist"), "pointlist") for s in series or []
    ]
    checked = [
        None if pl is None else [_numbers(_list_or_none(p, "point"), "point") for p in pl]
        for pl in points
    ]
    if not checked or not checked[0]:
        shown = None if series is None else [{"pointlist": pl} for pl in checked]
        return go_json(shown), None
    point = checked[0][-1] or []
    if len(point) != 2:
        raise DatadogError("Datapoint does not have 2 values")
    # Go decodes a null point into 0 (a float64 cannot be nil).
    value = point[1] if point[1] is not None else 0.0
    return format_float(value), value


def _v2(payload: dict[str, Any]) -> tuple[str, float | None]:
    data = _object(payload.get("data") or {}, "data")
    errors = data.get("errors")
    if errors:
        raise DatadogError(f"There were errors in your query: {errors}")
    attributes = _object(data.get("attributes") or {}, "attributes")
    columns = _list_or_none(attributes.get("columns"), "columns")
    values = [
        _numbers(_list_or_none(_object(c, "column").get("values"), "values"), "values")
        for c in columns or []
    ]
    if not values or not values[0] or values[0][0] is None:
        if len(values) == 1:
            return go_json(values[0]), None
        shown = None if columns is None else [{"Values": v} for v in values]
        return go_json({"Columns": shown}), None
    value = values[0][0]
    return format_float(value), value


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def _list_or_none(value: Any, what: str) -> list[Any] | None:
    if value is not None and not isinstance(value, list):
        raise ValueError(f"{what} is not a JSON array")
    return value


def _numbers(values: list[Any] | None, what: str) -> list[float | None] | None:
    if values is None:
        return None
    if not all(v is None or isinstance(v, float) for v in values):
        raise ValueError(f"{what} holds something other than numbers")
    return list(values)


def _spec(metric: Metric) -> DatadogMetric:
    assert metric.provider.datadog is not None, "the factory only builds it for datadog"
    return metric.provider.datadog
