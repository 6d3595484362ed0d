"""New Relic metrics against a stand-in of NerdGraph on 127.0.0.1 that checks the key, the NRQL
GraphQL query and its variables (tests/support/metricapis.py). Cases from Argo's
newrelic_test.go; conditions are judged by the real evaluator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import newrelic
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.newrelic import NewRelicProvider
from rollout_workers.api.analysis import Measurement
from tests.support.metricapis import NR_ACCOUNT, NR_API_KEY, FakeSecrets, MetricAPI
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

CONTROLLER_NS = "argo-rollouts"
NRQL = "FROM K8sContainerSample SELECT percentile(`cpuCoresUtilization`, 95)"


@pytest.fixture
def api() -> Iterator[MetricAPI]:
    server = MetricAPI().start()
    server.expect.queries = {"query": NRQL}
    yield server
    server.stop()


def account(api: MetricAPI, **extra: str) -> dict[str, str]:
    return {
        "personal-api-key": NR_API_KEY,
        "account-id": str(NR_ACCOUNT),
        "base-url-nerdgraph": api.url("/graphql"),
        **extra,
    }


def measure(
    api: MetricAPI,
    spec: dict[str, Any] | None = None,
    *,
    secrets: dict[tuple[str, str], dict[str, str]] | None = None,
    **conditions: str,
) -> Measurement:
    m = metric(provider={"newRelic": {"query": NRQL, **(spec or {})}}, **conditions)
    deps = ProviderDeps(
        clock=lambda: NOW,
        namespace=CONTROLLER_NS,
        secrets=FakeSecrets(
            {(CONTROLLER_NS, "newrelic"): account(api)} if secrets is None else secrets
        ),
    )
    return NewRelicProvider(deps).run(analysis_run(m.to_dict()), m, NOW)


def outcome(measurement: Measurement) -> dict[str, Any]:
    out = measurement.to_dict()
    assert out.pop("startedAt") == NOW_TEXT
    assert out.pop("finishedAt") == NOW_TEXT
    return out


def rows(*results: dict[str, Any]) -> dict[str, Any]:
    return {"data": {"actor": {"account": {"nrql": {"results": list(results)}}}}}


# (id, answer, conditions, want)
CASES = [
    (
        "run successfully",
        rows({"count": 10}),
        {"successCondition": "result.count == 10", "failureCondition": "result.count != 10"},
        {"phase": "Successful", "value": '{"count":10}'},
    ),
    (
        "with timeseries",
        rows({"count": 10}, {"count": 20}, {"count": 30}),
        {"successCondition": "result[0].count == 10", "failureCondition": "result[2].count < 20"},
        {"phase": "Successful", "value": '[{"count":10},{"count":20},{"count":30}]'},
    ),
    (
        "with facet",
        rows({"count": 10, "average.duration": 12.34}),
        {
            "successCondition": "result.count == 10 and result['average.duration'] < 15.0",
            "failureCondition": "result.count != 10 or result['average.duration'] >= 15.0",
        },
        {"phase": "Successful", "value": '{"average.duration":12.34,"count":10}'},
    ),
    (
        "failed",
        rows({"count": 11}),
        {"successCondition": "result.count == 10", "failureCondition": "result.count != 10"},
        {"phase": "Failed", "value": '{"count":11}'},
    ),
    (
        "with empty result",
        rows({}),
        {"successCondition": "result.count == 10"},
        {"phase": "Error", "message": "no results returned from NRQL query"},
    ),
    (
        "no rows (TestRunWithEvaluationError)",
        rows(),
        {"successCondition": "result == 10"},
        {"phase": "Error", "message": "no results returned from NRQL query"},
    ),
    (
        "null results",
        {"data": {"actor": {"account": {"nrql": None}}}},
        {"successCondition": "result == 10"},
        {"phase": "Error", "message": "no results returned from NRQL query"},
    ),
    (
        "GraphQL errors (errors when nerdgraph returns error)",
        {"data": None, "errors": [{"message": "NRQL Syntax Error"}, {"message": "boom"}]},
        {"successCondition": "result == 10"},
        {"phase": "Error", "message": "NRQL Syntax Error, boom"},
    ),
]


@pytest.mark.parametrize(
    ("body", "conditions", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_nrql(api: MetricAPI, body: Any, conditions: dict[str, str], want: dict[str, Any]) -> None:
    api.answer = (200, body)
    assert outcome(measure(api, **conditions)) == want
    assert api.problems == []
    (seen,) = api.seen
    assert (seen.method, seen.path, seen.headers["Content-Type"]) == (
        "POST",
        "/graphql",
        "application/json",
    )


STATUSES = [
    ("not found", 404, {}, "resource not found"),
    ("server error", 503, b"unavailable", "503 response returned"),
    (
        "server error with GraphQL errors",
        500,
        {"errors": [{"message": "internal"}]},
        "500 response returned: internal",
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "message"), [c[1:] for c in STATUSES], ids=[c[0] for c in STATUSES]
)
def test_statuses(api: MetricAPI, status: int, body: Any, message: str) -> None:
    api.answer = (status, body)
    assert outcome(measure(api, successCondition="true")) == {"phase": "Error", "message": message}


def test_timeout_variable(api: MetricAPI) -> None:
    """uses default timeout when one is not provided, else the metric's."""
    api.answer = (200, rows({"count": 10}))
    api.expect.nrql_timeout = 7
    assert measure(api, {"timeout": 7}).phase == "Successful"
    api.expect.nrql_timeout = 5
    assert measure(api).phase == "Successful"
    assert api.problems == []


def test_negative_timeout(api: MetricAPI) -> None:
    got = outcome(measure(api, {"timeout": -1}))
    assert got == {"phase": "Error", "message": "timeout value needs to be a positive value"}
    assert api.seen == []


def test_wrong_key(api: MetricAPI) -> None:
    secrets = {(CONTROLLER_NS, "newrelic"): account(api, **{"personal-api-key": "stale"})}
    got = outcome(measure(api, secrets=secrets, successCondition="true"))
    assert got == {"phase": "Error", "message": newrelic.UNAUTHORIZED}


def test_profile_names_the_secret(api: MetricAPI) -> None:
    """when secretName is specified by the metric (Argo: the profile is the Secret's name)."""
    api.answer = (200, rows({"count": 10}))
    secrets = {(CONTROLLER_NS, "my-newrelic-token-secret"): account(api)}
    got = measure(api, {"profile": "my-newrelic-token-secret"}, secrets=secrets)
    assert got.phase == "Successful"


ACCOUNTS = [
    (
        "api token or account id missing",
        {"personal-api-key": "ABCDEFG01234"},
        "account ID or personal API key not found",
    ),
    (
        "a non-integer account ID",
        {"personal-api-key": "ABCDEFG01234", "account-id": "abcdef"},
        'could not parse account ID: strconv.Atoi: parsing "abcdef": invalid syntax',
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [c[1:] for c in ACCOUNTS], ids=[c[0] for c in ACCOUNTS]
)
def test_account_errors(api: MetricAPI, data: dict[str, str], message: str) -> None:
    got = outcome(measure(api, secrets={(CONTROLLER_NS, "newrelic"): data}))
    assert got == {"phase": "Error", "message": message}


def test_the_secret_is_not_found(api: MetricAPI) -> None:
    got = outcome(measure(api, secrets={("ns", "newrelic"): account(api)}))
    assert got == {"phase": "Error", "message": 'secrets "newrelic" not found'}


REGIONS = [
    ("default", {}, "https://api.newrelic.com/graphql"),
    ("eu", {"region": "eu"}, "https://api.eu.newrelic.com/graphql"),
    ("EU", {"region": "EU"}, "https://api.eu.newrelic.com/graphql"),
    ("an invalid region is us", {"region": "prod"}, "https://api.newrelic.com/graphql"),
    (
        "base-url-nerdgraph wins",
        {"region": "eu", "base-url-nerdgraph": "https://proxy/graphql"},
        "https://proxy/graphql",
    ),
]


@pytest.mark.parametrize(("extra", "url"), [c[1:] for c in REGIONS], ids=[c[0] for c in REGIONS])
def test_regions(extra: dict[str, str], url: str) -> None:
    data = {"personal-api-key": "k", "account-id": "12345", **extra}
    provider = NewRelicProvider(
        ProviderDeps(namespace="c", secrets=FakeSecrets({("c", "newrelic"): data}))
    )
    spec = metric(provider={"newRelic": {"query": "q"}}).provider.new_relic
    assert spec is not None
    assert provider.account(spec) == (url, "k", 12345)


def test_http_timeout(api: MetricAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(newrelic, "HTTP_TIMEOUT_SECONDS", 0.2)
    api.delay.set()
    got = measure(api, successCondition="true")
    assert got.phase == "Error" and "timeout after 0.2s" in (got.message or "")


def test_type_and_metadata() -> None:
    provider = NewRelicProvider(ProviderDeps())
    m = metric(provider={"newRelic": {"query": "resolved-query"}})
    assert provider.type() == "NewRelic"
    assert provider.metadata(m) == {"ResolvedNewRelicQuery": "resolved-query"}
