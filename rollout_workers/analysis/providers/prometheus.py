"""Prometheus metrics: one instant query through the HTTP API (`GET /api/v1/query`).

Behaviour of Argo Rollouts' `metricproviders/prometheus` with `client_golang`'s API client:

- The address is the metric's, else the controller-wide default (Argo's
  `ARGO_ROLLOUTS_PROMETHEUS_ADDRESS`); neither is an Error (`prometheus address is not
  configured`), nor is one that is not an absolute URL. `timeout` is in seconds (default 30;
  negative is an Error; zero means the default here, where Go would time out at once). `headers`
  are sent with the query; `insecure` skips TLS verification. The query runs at `now` (`time=`).
- `resultType` scalar: the result is a float, the value its Go formatting (`10`, `NaN`, `+Inf`).
  vector: the result is the list of sample values (`[]` when empty), the value `[10,11]`.
  matrix and string: Error `Prometheus metric type not supported`.
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
from urllib.parse import urlencode, urlsplit

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
)

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
        except (QueryError, RequestError) as err:
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
        """The status and body of `GET <address>/api/v1/query?query=...&time=...`."""
        address = spec.address or self.deps.prometheus_address
        if not address:
            raise QueryError("prometheus address is not configured")
        parts = urlsplit(address)
        if not parts.scheme or not parts.netloc:
            raise QueryError("prometheus address is not is url format")  # sic, Argo's wording
        if spec.timeout is not None and spec.timeout < 0:
            raise QueryError("prometheus timeout should not be negative")
        timeout = float(spec.timeout or DEFAULT_TIMEOUT_SECONDS)
        params = urlencode({"query": spec.query or "", "time": format_float(now.timestamp())})
        url = f"{address.rstrip('/')}/api/v1/query?{params}"
        headers = {"Accept": "application/json"}
        for header in spec.headers or []:
            headers[header.key] = header.value or ""
        response = send(
            self.deps.http,
            "GET",
            url,
            headers=headers,
            timeout=timeout,
            insecure=bool(spec.insecure),
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
    except (TypeError, ValueError, IndexError) as err:
        raise QueryError(f"bad_response: malformed {kind} sample: {err}") from None
    raise QueryError("Prometheus metric type not supported")


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
