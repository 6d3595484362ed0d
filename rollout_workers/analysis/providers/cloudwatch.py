"""CloudWatch metrics: one `GetMetricData` call over the last `interval`.

Behaviour of Argo Rollouts' `metricproviders/cloudwatch` (AWS SDK for Go v2), here with boto3:

- The client is built from the controller's environment as the SDK's default configuration
  (credentials chain, `AWS_REGION`, `AWS_ENDPOINT_URL_CLOUDWATCH`; see `auth.AwsClients`).
  The metric carries no credentials: the controller's identity needs `cloudwatch:GetMetricData`.
- `interval` (default 5m; a bare integer is seconds) sets `StartTime` = now - interval and
  `EndTime` = now, now being the measurement's time. A bad interval is an Error with Go's
  message (`time: invalid duration "x"`).
- `metricDataQueries` are sent as Argo converts them: `id` always; `expression`, `label`,
  `period` and `returnData` when set; `metricStat` with `metricName`, `stat` and `period`
  always (a period that is not a number is 0, as `IntOrString.IntValue()`), `namespace`,
  `dimensions` and `unit` when set. One call, no pagination (`NextToken` is not followed).
- What the conditions see is `MetricDataResults`, each with Go's field names: `Id`, `Label`,
  `StatusCode`, `Values` (floats), `Timestamps` and `Messages` (`result[0].Values[0]`).
  Timestamps are RFC 3339 strings here (Go's are `time.Time`, which the conditions'
  sandbox does not carry).
- The value is Go's `%+v` of the list of every result's values: `[[0.1 0.2 0.3]]`.
- Messages of the response go to the measurement's metadata (`messages`) as
  `[{Code:c Value:v}]` (Argo prints the pointers' addresses there).
- API and connection errors are Errors: `operation error CloudWatch: GetMetricData, https
  response error StatusCode: 400, RequestID: ..., api error ValidationError: ...` as the Go SDK
  words them. No retries: the next measurement is the retry.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from rollout_workers.analysis.providers.auth import AuthError, go_sdk_error
from rollout_workers.analysis.providers.base import mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.values import condition_time, sprint
from rollout_workers.api.analysis import (
    AnalysisRun,
    CloudWatchMetric,
    CloudWatchMetricDataQuery,
    Measurement,
    Metric,
)
from rollout_workers.timefmt import TimeError, parse_duration_string

PROVIDER_TYPE = "CloudWatch"
DEFAULT_INTERVAL_SECONDS = 300
MESSAGES_KEY = "messages"
OPERATION = "operation error CloudWatch: GetMetricData"


class QueryError(Exception):
    pass


class CloudWatchProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            seconds = calculate_interval(spec)
            response = self.query(
                calculate_queries(spec.metric_data_queries or []),
                start=now - dt.timedelta(seconds=seconds),
                end=now,
            )
        except (QueryError, AuthError) as err:
            return mark_error(measurement, str(err), now)
        results = [calculate_result(r) for r in response.get("MetricDataResults") or []]
        update: dict[str, Any] = {}
        messages = response.get("Messages") or []
        if messages:
            update["metadata"] = {MESSAGES_KEY: format_messages(messages)}
        return self.judged(
            measurement,
            metric,
            result=results,
            value="[" + " ".join(sprint(r["Values"]) for r in results) + "]",
            now=now,
            keep_value_on_error=True,
            **update,
        )

    def query(
        self, queries: list[dict[str, Any]], *, start: dt.datetime, end: dt.datetime
    ) -> dict[str, Any]:
        """The GetMetricData response; raises QueryError or AuthError."""
        import botocore.exceptions

        client = self.deps.cloudwatch.get()
        try:
            response: dict[str, Any] = client.get_metric_data(
                MetricDataQueries=queries, StartTime=start, EndTime=end
            )
        except botocore.exceptions.ClientError as err:
            raise QueryError(go_sdk_error(err, OPERATION)) from None
        except (botocore.exceptions.BotoCoreError, ValueError) as err:
            raise QueryError(go_sdk_error(err, OPERATION)) from None
        return response


def calculate_interval(spec: CloudWatchMetric) -> float:
    """The interval in seconds; raises QueryError."""
    if not spec.interval:
        return DEFAULT_INTERVAL_SECONDS
    try:
        return parse_duration_string(spec.interval) / 1e9
    except TimeError as err:
        raise QueryError(str(err)) from None


def calculate_queries(queries: list[CloudWatchMetricDataQuery]) -> list[dict[str, Any]]:
    """The `MetricDataQueries` parameter, as Argo's `convertType` builds it."""
    out: list[dict[str, Any]] = []
    for query in queries:
        item: dict[str, Any] = {"Id": query.id or ""}
        if query.expression is not None:
            item["Expression"] = query.expression
        if query.label is not None:
            item["Label"] = query.label
        if query.metric_stat is not None:
            stat = query.metric_stat
            target = stat.metric
            metric: dict[str, Any] = {"MetricName": (target.metric_name if target else None) or ""}
            if target is not None and target.namespace is not None:
                metric["Namespace"] = target.namespace
            if target is not None and target.dimensions is not None:
                metric["Dimensions"] = [
                    {"Name": d.name or "", "Value": d.value or ""} for d in target.dimensions
                ]
            item["MetricStat"] = {
                "Metric": metric,
                "Period": int_value(stat.period),
                "Stat": stat.stat or "",
            }
            if stat.unit:
                item["MetricStat"]["Unit"] = stat.unit
        if query.period is not None:
            item["Period"] = int_value(query.period)
        if query.return_data is not None:
            item["ReturnData"] = query.return_data
        out.append(item)
    return out


def int_value(value: int | str | None) -> int:
    """`intstr.IntOrString.IntValue()`: a string that is not an integer is 0."""
    if isinstance(value, int):
        return value
    try:
        return int(value or "0")
    except ValueError:
        return 0


def calculate_result(result: dict[str, Any]) -> dict[str, Any]:
    """One `MetricDataResult` as the conditions see it (Go's field names)."""
    return {
        "Id": result.get("Id"),
        "Label": result.get("Label"),
        "StatusCode": result.get("StatusCode") or "",
        "Values": [float(v) for v in result.get("Values") or []],
        "Timestamps": [_timestamp(t) for t in result.get("Timestamps") or []],
        "Messages": [
            {"Code": m.get("Code"), "Value": m.get("Value")} for m in result.get("Messages") or []
        ],
    }


def format_messages(messages: list[dict[str, Any]]) -> str:
    items = [f"{{Code:{m.get('Code') or ''} Value:{m.get('Value') or ''}}}" for m in messages]
    return "[" + " ".join(items) + "]"


def _timestamp(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return condition_time(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    return str(value)


def _spec(metric: Metric) -> CloudWatchMetric:
    assert metric.provider.cloud_watch is not None, "the factory only builds it for cloudWatch"
    return metric.provider.cloud_watch
