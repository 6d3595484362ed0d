"""SkyWalking metrics: one GraphQL query to Apache SkyWalking's OAP server.

Behaviour of Argo Rollouts' `metricproviders/skywalking` (with machinebox/graphql's client):

- The query is POSTed to `<address>/graphql` as JSON, `{"query": ..., "variables":
  {"duration": {"start": ..., "end": ..., "step": "MINUTE"}}}`: the window ends at the
  measurement's time and starts `interval` before it, both written as SkyWalking's minute
  times (`2006-01-02 1504`, UTC). `interval` is required: without one (or with a bad one) the
  measurement is an Error with Go's message (`time: invalid duration ""`). 30 s bound the
  request.
- The answer's `data` is what the conditions see (`result.service_apdex.values.values`) and its
  Go JSON encoding is the value (`{"count":10}`). No data is the Error `no results returned from
  SkyWalking query`.
- GraphQL errors are Errors with the first one's message (`graphql: <message>`); an answer that
  is not JSON is `graphql: server returned a non-200 status code: 503`, or `decoding response:
  ...` when the status was 200.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rollout_workers.analysis.providers.base import mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.values import decode_json, go_json
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric, SkyWalkingMetric
from rollout_workers.timefmt import TimeError, parse_duration_string

PROVIDER_TYPE = "skywalking"  # sic: Argo's is lowercase
TIMEOUT_SECONDS = 30.0
MINUTE_FORMAT = "%Y-%m-%d %H%M"


class QueryError(Exception):
    pass


class SkyWalkingProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            data = self.query(spec, now)
        except (QueryError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        if data is None:
            return mark_error(measurement, "no results returned from SkyWalking query", now)
        return self.judged(measurement, metric, result=data, value=go_json(data), now=now)

    def query(self, spec: SkyWalkingMetric, now: dt.datetime) -> Any:
        """The answer's `data`; raises QueryError or RequestError."""
        try:
            nanos = parse_duration_string(spec.interval or "")
        except TimeError as err:
            raise QueryError(str(err)) from None
        duration = calculate_duration(now, nanos)
        body = {"query": spec.query or "", "variables": {"duration": duration}}
        response = send(
            self.deps.http,
            "POST",
            f"{spec.address or ''}/graphql",
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Accept": "application/json; charset=utf-8",
            },
            body=json.dumps(body).encode(),
            timeout=TIMEOUT_SECONDS,
        )
        try:
            answer = decode_json(response.data)
        except ValueError as err:
            if response.status != 200:
                raise QueryError(
                    f"graphql: server returned a non-200 status code: {response.status}"
                ) from None
            raise QueryError(f"decoding response: {err}") from None
        if not isinstance(answer, dict):
            raise QueryError("decoding response: the answer is not a JSON object")
        errors = answer.get("errors") or []
        if isinstance(errors, list) and errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            raise QueryError(f"graphql: {first.get('message', '')}")
        return answer.get("data")


def calculate_duration(now: dt.datetime, interval_nanos: int) -> dict[str, str]:
    """SkyWalking's `Duration` input: minute times, the window ending now."""
    end = now.astimezone(dt.UTC)
    start = end - dt.timedelta(microseconds=interval_nanos // 1000)
    return {
        "start": start.strftime(MINUTE_FORMAT),
        "end": end.strftime(MINUTE_FORMAT),
        "step": "MINUTE",
    }


def _spec(metric: Metric) -> SkyWalkingMetric:
    assert metric.provider.skywalking is not None, "the factory only builds it for skywalking"
    return metric.provider.skywalking
