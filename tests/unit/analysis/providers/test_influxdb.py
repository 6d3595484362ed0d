"""InfluxDB metrics against a local server speaking the v2 query API (cases from Argo's
influxdb_test.go: the values conditions see, the value, empty results, the profile Secret)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import influxdb
from rollout_workers.analysis.providers.base import ProviderDeps, SecretError
from rollout_workers.analysis.providers.factory import provider_for
from rollout_workers.analysis.providers.influxdb import InfluxdbProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import Measurement
from rollout_workers.kube.errors import NotFound
from rollout_workers.settings import Settings
from tests.support.metricapis_b import (
    INFLUX_ORG,
    INFLUX_TOKEN,
    INFLUX_TWO_RECORDS,
    InfluxServer,
    influx_table,
    stalled_server,
)
from tests.support.receiver import Receiver
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

NAMESPACE = "rollouts-system"


class Secrets:
    """Secrets by (namespace, name); reads are recorded."""

    def __init__(self, secrets: dict[tuple[str, str], dict[str, str]]) -> None:
        self.secrets = secrets
        self.reads: list[tuple[str, str, str]] = []

    def read(self, namespace: str, name: str, key: str) -> str:
        self.reads.append((namespace, name, key))
        if (namespace, name) not in self.secrets:
            raise NotFound(404, "NotFound", f'secrets "{name}" not found')
        data = self.secrets[(namespace, name)]
        if key not in data:
            raise SecretError(f"key '{key}' does not exist in secret '{name}'")
        return data[key]


def account(address: str, **overrides: str) -> dict[str, str]:
    return {"address": address, "authToken": INFLUX_TOKEN, "org": INFLUX_ORG, **overrides}


@pytest.fixture
def server() -> Iterator[InfluxServer]:
    with InfluxServer() as running:
        yield running


def measure(
    server_url: str,
    query: str,
    *,
    secrets: dict[tuple[str, str], dict[str, str]] | None = None,
    profile: str | None = None,
    **conditions: str,
) -> Measurement:
    reader = Secrets(
        secrets if secrets is not None else {(NAMESPACE, "influxdb"): account(server_url)}
    )
    deps = ProviderDeps(secrets=reader, namespace=NAMESPACE, clock=lambda: NOW)
    spec: dict[str, Any] = {"query": query}
    if profile is not None:
        spec["profile"] = profile
    m = metric("error-rate", provider={"influxdb": spec}, **conditions)
    provider = provider_for(m, deps)
    assert isinstance(provider, InfluxdbProvider) and provider.type() == "Influxdb"
    assert provider.metadata(m) == {}
    return provider.run(analysis_run(), m, NOW)


MEASURED = [
    # TestRunSuccessfully: Argo's own annotated CSV.
    ("doubles", INFLUX_TWO_RECORDS, "result[0] == 1", "result[0] != 1", "[1 6.6]", P.SUCCESSFUL),
    # TestRunWithTimeseries
    (
        "a series",
        influx_table("double", "10", "20"),
        "result[0] == 10",
        "result[1] <  20",
        "[10 20]",
        P.SUCCESSFUL,
    ),
    (
        "failure holds",
        influx_table("double", "10", "20"),
        "result[0] == 10",
        "result[1] >= 20",
        "[10 20]",
        P.FAILED,
    ),
    (
        "integers",
        influx_table("long", "3", "1000000"),
        "result[1] == 1000000",
        "",
        "[3 1000000]",
        P.SUCCESSFUL,
    ),
    (
        "large doubles print as Go prints them",
        influx_table("double", "1000000", "0.00001"),
        "result[0] == 1e6",
        "",
        "[1e+06 1e-05]",
        P.SUCCESSFUL,
    ),
    (
        "strings and booleans",
        influx_table("string", "ok", "slow"),
        'result[0] == "ok"',
        "",
        "[ok slow]",
        P.SUCCESSFUL,
    ),
    ("booleans", influx_table("boolean", "true"), "result[0]", "", "[true]", P.SUCCESSFUL),
    (
        "records of every table, in order",
        influx_table("double", "1", "2", "3", "4", tables=2),
        "len(result) == 4 && result[3] == 4",
        "",
        "[1 2 3 4]",
        P.SUCCESSFUL,
    ),
    (
        "neither condition holds",
        influx_table("double", "5"),
        "result[0] > 10",
        "result[0] < 1",
        "[5]",
        P.INCONCLUSIVE,
    ),
]


@pytest.mark.parametrize(
    ("csv", "success", "failure", "value", "phase"),
    [c[1:] for c in MEASURED],
    ids=[c[0] for c in MEASURED],
)
def test_measured(
    server: InfluxServer, *, csv: str, success: str, failure: str, value: str, phase: P
) -> None:
    server.results['from(bucket: "app")'] = csv
    conditions = {"successCondition": success}
    if failure:
        conditions["failureCondition"] = failure
    measurement = measure(server.url(), 'from(bucket: "app")', **conditions)
    assert (measurement.phase, measurement.value, measurement.message) == (phase, value, None)
    assert (measurement.started_at, measurement.finished_at) == (NOW_TEXT, NOW_TEXT)


def test_the_query_is_sent_with_the_token_for_the_org(server: InfluxServer) -> None:
    server.results["q"] = influx_table("double", "1")
    measurement = measure(server.url(), "q")
    assert measurement.phase == P.SUCCESSFUL
    (request,) = server.receiver.received()
    assert request.headers["Authorization"] == f"Token {INFLUX_TOKEN}"
    assert request.query["org"] == [INFLUX_ORG]
    assert request.json()["query"] == "q"


ERRORS = [
    # TestRunWithEmptyResult: the header row and no record.
    ("no record", "q", influx_table("double"), "no results returned from flux query"),
    (
        "a query the server cannot compile",
        "bad",
        None,
        "invalid: compilation failed: error at @1:1-1:4: undefined identifier bad",
    ),
]


@pytest.mark.parametrize(
    ("query", "csv", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_errors(server: InfluxServer, query: str, csv: str | None, message: str) -> None:
    if csv is not None:
        server.results[query] = csv
    measurement = measure(server.url(), query, successCondition="result[0] == 10")
    assert (measurement.phase, measurement.message) == (P.ERROR, message)
    assert measurement.value is None and measurement.finished_at == NOW_TEXT


def test_a_wrong_token_or_org_is_the_servers_error(server: InfluxServer) -> None:
    secrets = {(NAMESPACE, "influxdb"): account(server.url(), authToken="wrong")}
    measurement = measure(server.url(), "q", secrets=secrets)
    assert (measurement.phase, measurement.message) == (
        P.ERROR,
        "unauthorized: unauthorized access",
    )
    secrets = {(NAMESPACE, "influxdb"): account(server.url(), org="other")}
    measurement = measure(server.url(), "q", secrets=secrets)
    assert measurement.message == 'not found: organization name "other" not found'


# TestNewInfluxdbAPI
def test_the_profile_names_the_secret_in_the_controllers_namespace(server: InfluxServer) -> None:
    server.results["q"] = influx_table("double", "1")
    secrets = {
        (NAMESPACE, "my-influx-token-secret"): account(server.url()),
        ("ns", "my-influx-token-secret"): account("http://127.0.0.1:1"),  # the run's: not read
    }
    measurement = measure(server.url(), "q", secrets=secrets, profile="my-influx-token-secret")
    assert measurement.phase == P.SUCCESSFUL


SECRET_PROBLEMS = [
    (
        "the secret is not found",
        {},
        'secrets "influxdb" not found',
    ),
    (
        "authToken, org, or address missing",
        {(NAMESPACE, "influxdb"): {"authToken": INFLUX_TOKEN}},
        "authToken, org, or address not found",
    ),
    (
        "an empty key",
        {(NAMESPACE, "influxdb"): account("http://x", org="")},
        "authToken, org, or address not found",
    ),
]


@pytest.mark.parametrize(
    ("secrets", "message"), [c[1:] for c in SECRET_PROBLEMS], ids=[c[0] for c in SECRET_PROBLEMS]
)
def test_secret_problems(secrets: dict[tuple[str, str], dict[str, str]], message: str) -> None:
    measurement = measure("http://unused", "q", secrets=secrets)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)


def test_connection_refused() -> None:
    receiver = Receiver().start()
    url = receiver.url()
    receiver.stop()  # nothing listens there any more
    measurement = measure(url, "q")
    assert measurement.phase == P.ERROR
    assert measurement.message is not None
    assert measurement.message.startswith(f'Post "{url}/api/v2/query": ')


def test_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(influxdb, "QUERY_TIMEOUT_SECONDS", 0.2)
    with stalled_server() as url:
        measurement = measure(url, "q")
    assert measurement.phase == P.ERROR
    assert measurement.message == (
        f'Post "{url}/api/v2/query": timeout after 0.2s (context deadline exceeded)'
    )


@pytest.mark.parametrize(
    ("env", "served", "expected"),
    [
        ({}, "", "argo-rollouts"),
        ({}, "team", "team"),
        ({"POD_NAMESPACE": "pod"}, "team", "pod"),
        # The notifications' own setting does not move the controller's namespace.
        ({"ROLLOUTS_NOTIFICATIONS_NAMESPACE": "mine"}, "", "argo-rollouts"),
    ],
)
def test_the_controller_namespace(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], served: str, expected: str
) -> None:
    """Where profiles are read (Argo's `defaults.Namespace()`): wired from the settings."""
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.delenv("ROLLOUTS_NOTIFICATIONS_NAMESPACE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    data = Settings().model_dump()
    data["kube"]["namespace"] = served
    assert Settings.model_validate(data).controller_namespace == expected


def test_resume_terminate_and_garbage_collect_leave_things_alone() -> None:
    deps = ProviderDeps(secrets=Secrets({}), namespace=NAMESPACE)
    provider = InfluxdbProvider(deps)
    m = metric("m", provider={"influxdb": {"query": "q"}})
    previous = Measurement(phase=P.INCONCLUSIVE, started_at=NOW_TEXT)
    assert provider.resume(analysis_run(), m, previous, NOW) == previous
    running = Measurement(phase=P.RUNNING, started_at=NOW_TEXT)
    assert provider.terminate(analysis_run(), m, running, NOW) == running
    assert provider.garbage_collect(analysis_run(), m, 0) is None
