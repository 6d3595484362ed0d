"""New Relic metrics: an NRQL query through NerdGraph, New Relic's GraphQL API.

Behaviour of Argo Rollouts' `metricproviders/newrelic` with newrelic-client-go (plain HTTP
here: New Relic's Python packages are agents, not API clients, and one GraphQL POST needs none):

- The account settings are the Secret named by `profile` (default `newrelic`; Argo uses the
  profile as the Secret's name) in the controller's namespace (`ProviderDeps.namespace`):
  `personal-api-key` and `account-id` (both required: `account ID or personal API key not
  found`; a non-integer account is `could not parse account ID: ...`), `region` (`us`, the
  default, or `eu`; anything else is `us`, as the client does), `base-url-nerdgraph` (the
  GraphQL endpoint, for a proxy). `base-url-rest` is accepted and unused: NRQL goes through
  NerdGraph only. A Secret that cannot be read is an Error with the API server's message.
- `timeout` (seconds, default 5) is NRQL's own limit, sent as the `timeout` variable; negative
  is an Error `timeout value needs to be a positive value`. The HTTP request times out after
  30 s (the client's default).
- The request is `POST` with `{"query": <the NRQL GraphQL query>, "variables": {"accountId",
  "query", "timeout"}}` and the key in `Api-Key`.
- Errors as the client reports them: GraphQL `errors` messages joined with `, `; a 404
  `resource not found`; an unauthorised answer (401, or `BAD_API_KEY`) `401 response returned:
  Invalid credentials provided. ...`; another status `<status> response returned[: errors]`.
  The client retries GraphQL timeouts and server errors three times, sleeping in between;
  here they are Errors at once (the metric's interval is the retry).
- One result row: conditions see the row (a map: `result.count`, `result['average.duration']`)
  and the value is its JSON (`{"average.duration":12.34,"count":10}`). Several rows (a
  TIMESERIES or FACET query): the list of rows and its JSON. No row, or one empty row, is an
  Error `no results returned from NRQL query`.
- `metadata()` records the query as `ResolvedNewRelicQuery`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rollout_workers.analysis.providers.base import SecretError, mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.secretdata import read_keys
from rollout_workers.analysis.providers.values import decode_json, go_json
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric, NewRelicMetric
from rollout_workers.kube.errors import KubeError

PROVIDER_TYPE = "NewRelic"
DEFAULT_PROFILE = "newrelic"
RESOLVED_QUERY_KEY = "ResolvedNewRelicQuery"
DEFAULT_NRQL_TIMEOUT = 5
HTTP_TIMEOUT_SECONDS = 30.0
USER_AGENT = "rollout-workers (newRelic metric provider)"
NERDGRAPH_URLS = {
    "us": "https://api.newrelic.com/graphql",
    "eu": "https://api.eu.newrelic.com/graphql",
    "staging": "https://staging-api.newrelic.com/graphql",
    "local": "http://localhost:3000/graphql",
}
SECRET_KEYS = ("personal-api-key", "account-id", "region", "base-url-rest", "base-url-nerdgraph")
NRQL_QUERY = """query (
  $query: Nrql!,
  $accountId: Int!,
  $timeout: Seconds!
)
{
  actor {
    account(id: $accountId) {
      nrql(query: $query, timeout: $timeout) {
        results
      }
    }
  }
}
"""
UNAUTHORIZED = (
    "401 response returned: Invalid credentials provided. Missing API key or an invalid API "
    "key was provided."
)


class NewRelicError(Exception):
    pass


class NewRelicProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def metadata(self, metric: Metric) -> dict[str, str]:
        query = _spec(metric).query
        return {RESOLVED_QUERY_KEY: query} if query else {}

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            url, api_key, account = self.account(spec)
            rows = self.query(spec, url=url, api_key=api_key, account=account)
            if not rows or (len(rows) == 1 and not rows[0]):
                raise NewRelicError("no results returned from NRQL query")
            result: Any = rows[0] if len(rows) == 1 else rows
            value = go_json(result)
        except (NewRelicError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        return self.judged(measurement, metric, result=result, value=value, now=now)

    def account(self, spec: NewRelicMetric) -> tuple[str, str, int]:
        """`(NerdGraph URL, API key, account id)` from the profile's Secret (Argo's
        `NewNewRelicAPIClient`); raises NewRelicError."""
        if self.deps.secrets is None:
            raise NewRelicError("account ID or personal API key not found")
        name = spec.profile or DEFAULT_PROFILE
        try:
            data = read_keys(
                self.deps.secrets, namespace=self.deps.namespace, name=name, keys=SECRET_KEYS
            )
        except KubeError as err:
            raise NewRelicError(err.message) from None
        except SecretError as err:
            raise NewRelicError(str(err)) from None
        api_key, account = data.get("personal-api-key", ""), data.get("account-id", "")
        if not api_key or not account:
            raise NewRelicError("account ID or personal API key not found")
        try:
            account_id = _atoi(account)
        except ValueError as err:
            raise NewRelicError(f"could not parse account ID: {err}") from None
        region = data.get("region", "us").lower()
        url = data.get("base-url-nerdgraph") or NERDGRAPH_URLS.get(region, NERDGRAPH_URLS["us"])
        return url, api_key, account_id

    def query(
        self, spec: NewRelicMetric, *, url: str, api_key: str, account: int
    ) -> list[dict[str, Any]]:
        """The NRQL result rows; raises NewRelicError or RequestError."""
        timeout = DEFAULT_NRQL_TIMEOUT if spec.timeout is None else spec.timeout
        if timeout < 0:
            raise NewRelicError("timeout value needs to be a positive value")
        body = {
            "query": NRQL_QUERY,
            "variables": {"accountId": account, "query": spec.query, "timeout": timeout},
        }
        headers = {
            "Api-Key": api_key,
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        response = send(
            self.deps.http,
            "POST",
            url,
            headers=headers,
            body=json.dumps(body).encode(),
            timeout=HTTP_TIMEOUT_SECONDS,
        )
        return parse_response(response.status, response.data)


def parse_response(status: int, body: bytes) -> list[dict[str, Any]]:
    """The rows of a NerdGraph answer, or the client's error; raises NewRelicError."""
    if status == 404:
        raise NewRelicError("resource not found")
    try:
        payload = decode_json(body)
    except ValueError:
        payload = None
    errors = payload.get("errors") if isinstance(payload, dict) else None
    errors = [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
    messages = ", ".join(str(e["message"]) for e in errors if e.get("message"))
    if not 200 <= status <= 299:
        bad_key = any(
            (e.get("extensions") or {}).get("error_code") == "BAD_API_KEY" for e in errors
        )
        if errors and (status == 401 or bad_key):
            raise NewRelicError(UNAUTHORIZED)
        raise NewRelicError(f"{status} response returned" + (f": {messages}" if messages else ""))
    deprecated = any(
        str(e.get("message", "")).startswith("This field is deprecated!") for e in errors
    )
    if messages and not deprecated:
        raise NewRelicError(messages)
    if not isinstance(payload, dict):
        raise NewRelicError("the NerdGraph answer is not a JSON object")
    node: Any = payload.get("data")
    for step in ("actor", "account", "nrql", "results"):
        node = node.get(step) if isinstance(node, dict) else None
    if node is None:
        return []
    if not isinstance(node, list) or not all(isinstance(r, dict) for r in node):
        raise NewRelicError("the NRQL results are not a list of objects")
    return node


def _atoi(text: str) -> int:
    """Go's `strconv.Atoi`: an optional sign and decimal digits only."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _spec(metric: Metric) -> NewRelicMetric:
    assert metric.provider.new_relic is not None, "the factory only builds it for newRelic"
    return metric.provider.new_relic
