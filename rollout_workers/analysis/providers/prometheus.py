"""Prometheus metrics: one query through the HTTP API, instant (`GET /api/v1/query`) or over a
range (`GET /api/v1/query_range`).

Behaviour of Argo Rollouts' `metricproviders/prometheus` with `client_golang`'s API client:

- The address is the metric's, else the controller-wide default (Argo's
  `ARGO_ROLLOUTS_PROMETHEUS_ADDRESS`); neither is an Error (`prometheus address is not
  configured`), nor is one that is not an absolute URL. `timeout` is in seconds (default 30;
  negative is an Error; zero means the default here, where Go would time out at once). `headers`
  are sent with the query; `insecure` skips TLS verification. The query runs at `now` (`time=`).
- `rangeQuery` makes it a range query: `start` and `end` are expr-lang expressions evaluated as
  Argo's `EvalTime` (`now() - duration("1h")`, `now()` being the measurement's time; see
  `expr.time`), `step` a DurationString (a bare integer is seconds). They are sent as client_golang
  formats them: Unix seconds with the shortest decimals (`1691967600`, `0.5`). An expression that
  does not give a time is an Error `failed to parse rangeQuery.start as time: <why>` (`.end`),
  a bad step `failed to parse rangeQuery.step as duration: time: invalid duration "??"`.
- `resultType` scalar: the result is a float, the value its Go formatting (`10`, `NaN`, `+Inf`).
  vector: the result is the list of sample values (`[]` when empty), the value `[10,11]`.
  matrix (a range query's answer, or an instant query of a range selector): the samples of
  every series, series after series, in one flat list, as a vector's (`[11,12,13,14]`).
  string: Error `Prometheus metric type not supported`.
- `authentication` (basicAuth, oauth2, sigv4) is applied as `auth` describes; its configuration
  errors, token and credential failures are Error measurements with Argo's messages.
- Query parameters are percent-encoded with `%20` for spaces (what SigV4 signs), which
  Prometheus reads like any other encoding.
- API errors are Errors with client_golang's messages: `bad_data: <error>` for a Prometheus
  error body, `server_error: server error: 503` or `client_error: client error: 404` for other
  statuses, `bad_response: ...` for a body that is not the API's JSON.
- Warnings in the response go to the measurement's metadata (`warnings`: `"w1", "w2"`).
- `metadata()` records the query as `ResolvedPrometheusQuery`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from rollout_workers.analysis.providers.auth import (
    AuthError,
    basic_credentials,
    basic_header,
    fetch_token,
    oauth2_config,
    sigv4_applies,
    sigv4_headers,
)
from rollout_workers.analysis.providers.base import (
    ProviderDeps,
    format_time,
    mark_error,
    started,
)
from rollout_workers.analysis.providers.evaluate import Evaluator, calculate_phase
from rollout_workers.analysis.providers.values import format_float
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import (
    AnalysisRun,
    Measurement,
    Metric,
    PrometheusMetric,
    PrometheusRangeQueryArgs,
)
from rollout_workers.expr.expression import evaluate_time
from rollout_workers.expr.values import ExpressionError
from rollout_workers.timefmt import TimeError, parse_duration_string

PROVIDER_TYPE = "Prometheus"
RESOLVED_QUERY_KEY = "ResolvedPrometheusQuery"
DEFAULT_TIMEOUT_SECONDS = 30


class QueryError(Exception):
    pass


@dataclass(frozen=True)
class QueryResult:
    """A decoded answer: the value to store, what the conditions see, and warnings."""

    value: str
    result: float | list[float]
    warnings: list[str]


class PrometheusProvider:
    def __init__(self, deps: ProviderDeps, *, evaluator: Evaluator | None = None) -> None:
        self.deps = deps
        self.evaluator = evaluator

    def type(self) -> str:
        return PROVIDER_TYPE

    def metadata(self, metric: Metric) -> dict[str, str]:
        query = _spec(metric).query
        return {RESOLVED_QUERY_KEY: query} if query else {}

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            status, body = self.query(spec, now)
            answer = parse_response(status, body)
        except (QueryError, RequestError, AuthError) as err:
            return mark_error(measurement, str(err), now)
        verdict = calculate_phase(metric, answer.result, evaluator=self.evaluator)
        if verdict.error is not None:
            return mark_error(measurement, verdict.error, now)
        update: dict[str, Any] = {
            "phase": verdict.phase,
            "value": answer.value,
            "finished_at": format_time(self.deps.clock()),
        }
        if answer.warnings:
            update["metadata"] = {"warnings": ", ".join(f'"{w}"' for w in answer.warnings)}
        return measurement.model_copy(update=update)

    def query(self, spec: PrometheusMetric, now: dt.datetime) -> tuple[int, bytes]:
        """The status and body of the metric's query; raises QueryError, RequestError or
        AuthError. Checks run in Argo's order: address, basicAuth, SigV4 credentials, OAuth2
        settings (NewPrometheusAPI), timeout (NewPrometheusProvider), range (executeQuery)."""
        address = spec.address or self.deps.prometheus_address
        if not address:
            raise QueryError("prometheus address is not configured")
        parts = urlsplit(address)
        if not parts.scheme or not parts.netloc:
            raise QueryError("prometheus address is not is url format")  # sic, Argo's wording
        auth = spec.authentication
        basic = basic_credentials(auth)
        signed = sigv4_applies(address, auth)
        if signed:
            assert auth is not None and auth.sigv4 is not None
            self.deps.aws.resolve(
                region=auth.sigv4.region or "",
                profile=auth.sigv4.profile or "",
                role_arn=auth.sigv4.role_arn or "",
            )
        oauth = oauth2_config(auth)
        if spec.timeout is not None and spec.timeout < 0:
            raise QueryError("prometheus timeout should not be negative")
        timeout = float(spec.timeout or DEFAULT_TIMEOUT_SECONDS)
        if spec.range_query is not None:
            endpoint, params = "query_range", range_params(spec.query or "", spec.range_query, now)
        else:
            endpoint = "query"
            params = {"query": spec.query or "", "time": format_float(now.timestamp())}
        url = f"{address.rstrip('/')}/api/v1/{endpoint}?{_encode(params)}"
        insecure = bool(spec.insecure)

        def send_one(
            method: str, target: str, headers: dict[str, str], body: bytes | None, limit: float
        ) -> Any:
            return send(
                self.deps.http,
                method,
                target,
                headers=headers,
                body=body,
                timeout=limit,
                insecure=insecure,
            )

        headers = {"Accept": "application/json"}
        try:
            # The layers of Argo's round-tripper chain, outermost first (see auth.py).
            if oauth is not None:
                headers["Authorization"] = fetch_token(send_one, oauth, timeout=timeout)
            if signed:
                assert auth is not None
                headers.update(sigv4_headers(self.deps.aws, auth, method="GET", url=url, body=None))
        except (AuthError, RequestError) as err:
            raise AuthError(f'Get "{url}": {err}') from None
        if basic is not None and "Authorization" not in headers:
            headers["Authorization"] = basic_header(*basic)
        for header in spec.headers or []:
            # Go's Header.Set: one value per (case-insensitive) name, the last one wins.
            for existing in [k for k in headers if k.lower() == header.key.lower()]:
                del headers[existing]
            headers[header.key] = header.value or ""
        response = send_one("GET", url, headers, None, timeout)
        if response.status in (401, 403) and auth is not None and auth.sigv4 and not signed:
            # Argo ignores sigv4 for other addresses; say so rather than leave a bare 403.
            raise QueryError(
                f"client_error: client error: {response.status} (authentication.sigv4 is only "
                f'applied to Amazon Managed Prometheus addresses, containing "aps-workspaces")'
            )
        return response.status, response.data

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        return None


def parse_response(status: int, body: bytes) -> QueryResult:
    """Decode an `/api/v1/query` answer as client_golang and Argo do; raises `QueryError`."""
    api_error = status in (400, 422)  # the statuses Prometheus answers errors with
    if status // 100 != 2 and not api_error:
        if status // 100 == 4:
            raise QueryError(f"client_error: client error: {status}")
        if status // 100 == 5:
            raise QueryError(f"server_error: server error: {status}")
        raise QueryError(f"bad_response: bad response code {status}")
    try:
        payload = json.loads(body) if status != 204 else {}
    except ValueError as err:
        raise QueryError(f"bad_response: {err}") from None
    if not isinstance(payload, dict):
        raise QueryError("bad_response: response is not a JSON object")
    if payload.get("status") == "error":
        raise QueryError(f"{payload.get('errorType', '')}: {payload.get('error', '')}")
    if api_error:
        raise QueryError("bad_response: inconsistent body for response code")
    warnings = [str(w) for w in payload.get("warnings") or []]
    data = payload.get("data")
    if not isinstance(data, dict):
        raise QueryError("Prometheus metric type not supported")
    kind, result = data.get("resultType"), data.get("result")
    try:
        if kind == "scalar":
            value = _sample_value(result)
            return QueryResult(format_float(value), value, warnings)
        if kind == "vector":
            values = [_sample_value(s.get("value")) for s in result or [] if isinstance(s, dict)]
            text = "[" + ",".join(format_float(v) for v in values) + "]"
            return QueryResult(text, values, warnings)
        if kind == "matrix":
            # Argo flattens the series: every sample of the first series, then the next's.
            values = [
                _sample_value(pair)
                for series in result or []
                if isinstance(series, dict)
                for pair in series.get("values") or []
            ]
            text = "[" + ",".join(format_float(v) for v in values) + "]"
            return QueryResult(text, values, warnings)
    except (TypeError, ValueError, IndexError) as err:
        raise QueryError(f"bad_response: malformed {kind} sample: {err}") from None
    raise QueryError("Prometheus metric type not supported")


def range_params(query: str, window: PrometheusRangeQueryArgs, now: dt.datetime) -> dict[str, str]:
    """`query`, `start`, `end` and `step` of a range query (Argo's executeQuery); raises
    QueryError with Argo's messages."""
    bounds: dict[str, str] = {}
    for name, expression in (("start", window.start), ("end", window.end)):
        try:
            moment = evaluate_time(expression or "", now=now)
        except ExpressionError as err:
            raise QueryError(f"failed to parse rangeQuery.{name} as time: {err.message}") from None
        seconds, nanos = divmod(moment.unix_nanos, 1_000_000_000)
        bounds[name] = format_float(float(seconds) + float(nanos) / 1e9)
    try:
        step = parse_duration_string(window.step or "")
    except TimeError as err:
        raise QueryError(f"failed to parse rangeQuery.step as duration: {err}") from None
    seconds, nanos = divmod(step, 1_000_000_000)
    return {"query": query, **bounds, "step": format_float(float(seconds) + float(nanos) / 1e9)}


def _encode(params: dict[str, str]) -> str:
    """A query string in AWS's canonical encoding (every byte but `A-Za-z0-9-_.~` escaped, a
    space as `%20`), so that what SigV4 signs is exactly what is sent."""
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in params.items())


def _sample_value(pair: Any) -> float:
    """`[<unix time>, "<value>"]` to the value; Prometheus writes NaN and infinities as
    "NaN", "+Inf" and "-Inf"."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise ValueError(f'expected [time, "value"], got {pair!r}')
    value = float(pair[1])
    return math.nan if math.isnan(value) else value


def _spec(metric: Metric) -> PrometheusMetric:
    assert metric.provider.prometheus is not None, "the factory only builds it for prometheus"
    return metric.provider.prometheus
