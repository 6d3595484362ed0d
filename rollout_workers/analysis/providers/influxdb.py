"""InfluxDB metrics: one Flux query through the v2 API (`POST /api/v2/query`).

Behaviour of Argo Rollouts' `metricproviders/influxdb` (influxdb-client-go), here with the
official Python client, `influxdb-client`:

- The account is a Secret in the controller's namespace (Argo's `defaults.Namespace()`:
  `ProviderDeps.namespace`), named by `profile`, default `influxdb`, with the keys `address`,
  `authToken` and `org`. A missing Secret is an Error with the API server's message; a Secret
  missing one of the keys (or holding an empty one) is `authToken, org, or address not found`.
- The query is sent for the org with `Authorization: Token <authToken>`, bounded by 30 s.
- What the conditions see is the list of every record's `_value`, table after table (doubles
  and integers as numbers, strings, booleans; times as RFC 3339 strings here, Go's being
  `time.Time`); no record at all is the Error `no results returned from flux query`.
- The value is Go's `fmt.Sprint` of that list: `[1 6.6]`.
- Errors of the API are Errors worded as the Go client's (`invalid: compilation failed: ...`,
  the body's code and message); connection failures and timeouts too.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import urllib3

from rollout_workers.analysis.providers.base import SecretError, mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.secretdata import read_keys
from rollout_workers.analysis.providers.values import condition_time, sprint
from rollout_workers.api.analysis import AnalysisRun, InfluxdbMetric, Measurement, Metric
from rollout_workers.kube.errors import KubeError, NotFound

PROVIDER_TYPE = "Influxdb"
DEFAULT_PROFILE = "influxdb"
TOKEN_KEY, ORG_KEY, ADDRESS_KEY = "authToken", "org", "address"
QUERY_TIMEOUT_SECONDS = 30


class QueryError(Exception):
    pass


class InfluxdbProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            address, token, org = self.account(spec)
            values = query(address=address, token=token, org=org, flux=spec.query or "")
        except QueryError as err:
            return mark_error(measurement, str(err), now)
        if not values:
            return mark_error(measurement, "no results returned from flux query", now)
        return self.judged(
            measurement,
            metric,
            result=[_condition_value(v) for v in values],
            value=sprint(values),
            now=now,
        )

    def account(self, spec: InfluxdbMetric) -> tuple[str, str, str]:
        """Address, token and org from the profile's Secret; raises QueryError."""
        if self.deps.secrets is None:
            raise QueryError("the influxdb provider needs a secret reader")
        name = spec.profile or DEFAULT_PROFILE
        keys = (ADDRESS_KEY, TOKEN_KEY, ORG_KEY)
        try:
            fields = read_keys(
                self.deps.secrets, namespace=self.deps.namespace, name=name, keys=keys
            )
        except SecretError:
            fields = {}  # undecodable data: as Go reads a key the Secret lacks, empty
        except NotFound as err:
            raise QueryError(err.message or f'secrets "{name}" not found') from None
        except KubeError as err:
            raise QueryError(err.message or str(err)) from None
        if not all(fields.get(key) for key in keys):
            raise QueryError("authToken, org, or address not found")
        return fields[ADDRESS_KEY], fields[TOKEN_KEY], fields[ORG_KEY]


def query(*, address: str, token: str, org: str, flux: str) -> list[Any]:
    """The `_value` of every record the query returns; raises QueryError."""
    from influxdb_client.client.exceptions import InfluxDBError
    from influxdb_client.client.influxdb_client import InfluxDBClient

    # The client's methods are untyped; it is handled as Any.
    client: Any = InfluxDBClient(
        url=address, token=token, org=org, timeout=QUERY_TIMEOUT_SECONDS * 1000
    )
    try:
        tables = client.query_api().query(flux, org=org)
    except InfluxDBError as err:
        raise QueryError(_api_error(err)) from None
    except urllib3.exceptions.HTTPError as err:
        raise QueryError(f'Post "{address.rstrip("/")}/api/v2/query": {_reason(err)}') from None
    except ValueError as err:  # a URL the client cannot use, a body it cannot parse
        raise QueryError(str(err)) from None
    finally:
        client.close()
    return [record.get_value() for table in tables for record in table.records]


def _api_error(err: Any) -> str:
    """Worded as the Go client's `http.Error`: `<code>: <message>` from the error body."""
    response = getattr(err, "response", None)
    status = getattr(response, "status", 0)
    body = getattr(response, "data", b"") or b""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        code, message = str(decoded.get("code") or ""), str(decoded.get("message") or "")
        if code and message:
            return f"{code}: {message}"
        if message or code:
            return message or code
    text = body.decode(errors="replace").strip() if isinstance(body, bytes) else str(body)
    if text:
        return f"{status} {text}" if status else text
    return f"Unexpected status code {status}" if status else str(err)


def _reason(err: Exception) -> str:
    if isinstance(err, urllib3.exceptions.TimeoutError):
        return f"timeout after {QUERY_TIMEOUT_SECONDS}s (context deadline exceeded)"
    return str(err)


def _condition_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return condition_time(value)
    return value


def _spec(metric: Metric) -> InfluxdbMetric:
    assert metric.provider.influxdb is not None, "the factory only builds it for influxdb"
    return metric.provider.influxdb
