"""Web metrics: one HTTP request whose JSON response, narrowed by `jsonPath`, is the value.

Behaviour of Argo Rollouts' `metricproviders/webmetric`:

- `method` GET (default), POST or PUT; `body` or `jsonBody` (not both; neither with GET);
  `jsonBody` also sets `Content-Type: application/json`. `headers` are set in order (a later
  header of the same name wins). `timeoutSeconds` bounds the whole request (default 10 s);
  `insecure` skips TLS verification. Redirects are followed (up to 10, as Go's client).
- A non-2xx status is an Error: `received non 2xx response code: 404`.
- A body that is not JSON (an empty one included) is recorded as is and is Successful without
  evaluating the conditions.
- `jsonPath` (default `{$}`) selects the value; the first result is kept; its Go JSON encoding is
  the measurement's value and its decoded form is what the conditions see. No result is an Error.
- `{{args.NAME}}` in url, headers and body is substituted by the AnalysisRun reconcile before
  the provider runs (as Argo's controller does), secret-valued arguments included.

- `authentication.oauth2`: a client-credentials token is fetched for each measurement and sent
  as `Authorization: Bearer ...`, replacing an Authorization header of `headers` (Go's oauth2
  transport sets it last); `clientId` and `clientSecret` are mandatory. See `auth`.

Extension: `authentication.basicAuth`, which Argo accepts for web metrics but applies only to
prometheus ones, is applied here as it is there: `Authorization: Basic ...` unless `headers` or
oauth2 set Authorization; both fields are mandatory once one is set. (`sigv4` stays ignored for
web metrics, as in Argo.)

Extension: a header may name a Secret instead of a value, `{key: Authorization, value: "",
valueFrom: {secretKeyRef: {name: s, key: token}}}`; it is read from the run's namespace with the
`SecretReader`. (Argo supports secrets only through arguments; `value` must still be present
because the API model requires it.)
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from typing import Any
from urllib.parse import urlsplit

import urllib3

from rollout_workers.analysis.providers.auth import (
    AuthError,
    basic_credentials,
    basic_header,
    fetch_token,
    oauth2_config,
)
from rollout_workers.analysis.providers.base import (
    ProviderDeps,
    SecretError,
    format_time,
    mark_error,
    started,
)
from rollout_workers.analysis.providers.evaluate import Evaluator, calculate_phase
from rollout_workers.analysis.providers.jsonpath import JSONPathError, find_results, parse
from rollout_workers.analysis.providers.values import decode_json, go_json
from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRun,
    Measurement,
    Metric,
    WebMetric,
    WebMetricHeader,
    WebMetricMethod,
)
from rollout_workers.kube.errors import KubeError

PROVIDER_TYPE = "Web"
DEFAULT_TIMEOUT_SECONDS = 10
DEFAULT_JSON_PATH = "{$}"
MAX_REDIRECTS = 10


class RequestError(Exception):
    """The request could not be made or answered (bad spec, connection, timeout, status)."""


class WebProvider:
    def __init__(self, deps: ProviderDeps, *, evaluator: Evaluator | None = None) -> None:
        self.deps = deps
        self.evaluator = evaluator

    def type(self) -> str:
        return PROVIDER_TYPE

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        web = _spec(metric)
        try:
            parse(web.json_path or DEFAULT_JSON_PATH)
            body = self.request(web, namespace=run.metadata.namespace or "")
        except (RequestError, JSONPathError, SecretError, KubeError, AuthError) as err:
            return mark_error(measurement, _message(err), now)
        try:
            data = decode_json(body)
        except ValueError:
            # Argo: a body that is not JSON is the value, and the measurement is Successful.
            return self._finished(
                measurement, AnalysisPhase.SUCCESSFUL, body.decode(errors="replace")
            )
        try:
            results = find_results(web.json_path or DEFAULT_JSON_PATH, data)
        except JSONPathError as err:
            return mark_error(measurement, f"Could not find JSONPath in body: {err}", now)
        if not results:
            return mark_error(measurement, "result of web metric produced no value", now)
        value = results[0]
        verdict = calculate_phase(metric, value, evaluator=self.evaluator)
        if verdict.error is not None:
            return mark_error(measurement, verdict.error, now)
        return self._finished(measurement, verdict.phase, go_json(value))

    def _finished(self, measurement: Measurement, phase: AnalysisPhase, value: str) -> Measurement:
        return measurement.model_copy(
            update={"phase": phase, "value": value, "finished_at": format_time(self.deps.clock())}
        )

    def request(self, web: WebMetric, *, namespace: str) -> bytes:
        """The body of a 2xx answer to the metric's request; raises `RequestError`."""
        method = (web.method or WebMetricMethod.GET).value
        body: bytes | None = None
        if web.body and web.json_body is not None:
            raise RequestError(
                "use either Body or JSONBody; both cannot exists for WebMetric payload"
            )
        if (web.body or web.json_body is not None) and method == WebMetricMethod.GET:
            raise RequestError(
                "Body/JSONBody can only be used with POST or PUT WebMetric Method types"
            )
        if web.body:
            body = web.body.encode()
        elif web.json_body is not None:
            body = json.dumps(web.json_body, separators=(",", ":")).encode()
        # NewWebMetricHttpClient checks the OAuth2 settings before any request is built.
        oauth = oauth2_config(web.authentication)
        basic = basic_credentials(web.authentication)
        headers = self._headers(web.headers or [], namespace)
        if web.json_body is not None:
            headers["Content-Type"] = "application/json"
        timeout = float(web.timeout_seconds or 0)
        if timeout <= 0:
            timeout = DEFAULT_TIMEOUT_SECONDS
        insecure = bool(web.insecure)

        def send_one(
            verb: str, url: str, extra: dict[str, str], payload: bytes | None, limit: float
        ) -> urllib3.BaseHTTPResponse:
            return send(
                self.deps.http,
                verb,
                url,
                headers=extra,
                body=payload,
                timeout=limit,
                insecure=insecure,
            )

        if oauth is not None:
            try:
                token = fetch_token(send_one, oauth, timeout=timeout)
            except (AuthError, RequestError) as err:
                raise RequestError(f'{method.title()} "{web.url}": {err}') from None
            _set(headers, "Authorization", token)
        elif basic is not None and not any(k.lower() == "authorization" for k in headers):
            _set(headers, "Authorization", basic_header(*basic))
        response = send_one(method, web.url, headers, body, timeout)
        if not 200 <= response.status < 300:
            raise RequestError(f"received non 2xx response code: {response.status}")
        return response.data

    def _headers(self, headers: list[WebMetricHeader], namespace: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for header in headers:
            value = header.value or ""
            ref = ((header.model_extra or {}).get("valueFrom") or {}).get("secretKeyRef")
            if isinstance(ref, dict):
                if self.deps.secrets is None:
                    raise RequestError(f"header {header.key!r} names a secret but none can be read")
                value = self.deps.secrets.read(namespace, str(ref.get("name")), str(ref.get("key")))
            _set(out, header.key, value)
        return out

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement  # all the work happens in run

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        return None


def _set(headers: dict[str, str], key: str, value: str) -> None:
    """Go's Header.Set: one value per (case-insensitive) name, the last one wins."""
    for existing in [k for k in headers if k.lower() == key.lower()]:
        del headers[existing]
    headers[key] = value


def send(
    http: urllib3.PoolManager,
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    body: bytes | None = None,
    timeout: float,
    insecure: bool = False,
) -> urllib3.BaseHTTPResponse:
    """One bounded HTTP request, without retries; failures raise `RequestError` with a message
    shaped like Go's (`Get "http://x": ...`)."""
    parts = urlsplit(url)
    where = f'{method.title()} "{url}"'
    if parts.scheme not in ("http", "https"):
        raise RequestError(f'{where}: unsupported protocol scheme "{parts.scheme}"')
    if not parts.hostname:
        raise RequestError(f"{where}: no Host in request URL")
    options: dict[str, Any] = {
        "headers": headers,
        "body": body,
        "timeout": urllib3.Timeout(total=timeout),
        "retries": urllib3.Retry(
            total=None, connect=0, read=0, status=0, other=0, redirect=MAX_REDIRECTS
        ),
        "preload_content": True,
    }
    try:
        if insecure and parts.scheme == "https":
            pool = http.connection_from_url(
                url, pool_kwargs={"cert_reqs": "CERT_NONE", "assert_hostname": False}
            )
            # The metric asked for it: no warning in the worker's log on every measurement.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                return pool.urlopen(method, url, **options)
        return http.request(method, url, **options)
    except urllib3.exceptions.MaxRetryError as err:
        raise RequestError(f"{where}: {_reason(err.reason, timeout)}") from None
    except urllib3.exceptions.HTTPError as err:
        raise RequestError(f"{where}: {_reason(err, timeout)}") from None


def _reason(err: Exception | None, timeout: float) -> str:
    if isinstance(err, urllib3.exceptions.TimeoutError):
        return f"timeout after {timeout:g}s (Client.Timeout exceeded)"
    if isinstance(err, urllib3.exceptions.NewConnectionError):
        return f"connection failed: {err}"
    return str(err) if err is not None else "request failed"


def _message(err: Exception) -> str:
    return err.message if isinstance(err, KubeError) else str(err)


def _spec(metric: Metric) -> WebMetric:
    assert metric.provider.web is not None, "the factory only builds a web provider for web metrics"
    return metric.provider.web
