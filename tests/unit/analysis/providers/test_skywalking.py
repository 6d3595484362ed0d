"""SkyWalking metrics against a local GraphQL server (cases from Argo's skywalking_test.go: the
value, what conditions see, no results, errors; and the `$duration` window)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import skywalking
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.factory import provider_for
from rollout_workers.analysis.providers.skywalking import SkyWalkingProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import Measurement
from tests.support.metricapis_b import SkyWalkingServer, stalled_server
from tests.support.receiver import Answer, Receiver
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

APDEX_QUERY = """query queryData($duration: Duration!) {
  service_apdex: readMetricsValues(
    condition: {
      name: "service_apdex", entity: { scope: Service, serviceName: "web", normal: true }
    },
    duration: $duration) { label values { values { value } } }
}"""
#: The documented example's answer shape.
APDEX = {
    "service_apdex": {
        "label": None,
        "values": {"values": [{"value": 9950}, {"value": 9990}]},
    }
}


@pytest.fixture
def server() -> Iterator[SkyWalkingServer]:
    with SkyWalkingServer() as running:
        yield running


def measure(
    address: str, *, interval: str | None = "3m", query: str = APDEX_QUERY, **conditions: str
) -> Measurement:
    spec: dict[str, Any] = {"address": address, "query": query}
    if interval is not None:
        spec["interval"] = interval
    m = metric("apdex", provider={"skywalking": spec}, **conditions)
    provider = provider_for(m, ProviderDeps(clock=lambda: NOW))
    assert isinstance(provider, SkyWalkingProvider) and provider.type() == "skywalking"
    assert provider.metadata(m) == {}
    return provider.run(analysis_run(), m, NOW)


MEASURED = [
    # TestRunSuccessfully
    ("an object", {"count": 10}, "result.count == 10", "result.count != 10", '{"count":10}'),
    # TestRunWithTimeseries
    (
        "a list",
        [{"count": 10}, {"count": 20}, {"count": 30}],
        "result[0].count == 10",
        "result[2].count < 20",
        '[{"count":10},{"count":20},{"count":30}]',
    ),
    # The documented example.
    (
        "the apdex example",
        APDEX,
        "all(result.service_apdex.values.values, {asFloat(.value) >= 9900})",
        "",
        '{"service_apdex":{"label":null,"values":{"values":[{"value":9950},{"value":9990}]}}}',
    ),
]


@pytest.mark.parametrize(
    ("data", "success", "failure", "value"),
    [c[1:] for c in MEASURED],
    ids=[c[0] for c in MEASURED],
)
def test_measured(
    server: SkyWalkingServer, data: Any, success: str, failure: str, value: str
) -> None:
    server.data = data
    conditions = {"successCondition": success}
    if failure:
        conditions["failureCondition"] = failure
    measurement = measure(server.url(), **conditions)
    assert (measurement.phase, measurement.value, measurement.message) == (
        P.SUCCESSFUL,
        value,
        None,
    )
    assert (measurement.started_at, measurement.finished_at) == (NOW_TEXT, NOW_TEXT)


def test_failed(server: SkyWalkingServer) -> None:
    server.data = {"count": 30}
    measurement = measure(server.url(), successCondition="result.count == 10")
    assert (measurement.phase, measurement.value) == (P.FAILED, '{"count":30}')


def test_the_query_carries_the_interval_as_minute_times(server: SkyWalkingServer) -> None:
    server.data = {"count": 10}
    assert measure(server.url(), interval="1h").phase == P.SUCCESSFUL
    (request,) = server.receiver.received()
    assert request.json() == {
        "query": APDEX_QUERY,
        "variables": {
            "duration": {"start": "2024-05-01 1100", "end": "2024-05-01 1200", "step": "MINUTE"}
        },
    }
    assert request.headers["Accept"].startswith("application/json")


ERRORS = [
    # TestRunWithQueryError / TestRunWithEvaluationError: no data.
    ("no data", {"data": None}, 200, "no results returned from SkyWalking query"),
    (
        "a GraphQL error",
        {"data": None, "errors": [{"message": "Field 'x' not found"}, {"message": "second"}]},
        200,
        "graphql: Field 'x' not found",
    ),
    (
        "not JSON",
        b"<html>bad gateway</html>",
        502,
        "graphql: server returned a non-200 status code: 502",
    ),
    ("not JSON with 200", b"<html>", 200, "decoding response: "),
]


@pytest.mark.parametrize(
    ("body", "status", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_errors(body: Any, status: int, message: str) -> None:
    def answer(_: Any) -> Answer:
        if isinstance(body, bytes):
            return Answer(status, body, (("Content-Type", "text/html"),))
        return Answer.json(status, body)

    with Receiver(answer) as receiver:
        measurement = measure(receiver.url(), successCondition="result.count == 10")
    assert measurement.phase == P.ERROR
    assert measurement.message is not None and measurement.message.startswith(message)
    assert measurement.value is None and measurement.finished_at == NOW_TEXT


def test_the_servers_own_checks_come_back_as_graphql_errors(server: SkyWalkingServer) -> None:
    measurement = measure(server.url(), query="")
    assert (measurement.phase, measurement.message) == (P.ERROR, "graphql: no query")


def test_an_unusable_condition_is_an_error(server: SkyWalkingServer) -> None:
    server.data = {"count": 10}
    measurement = measure(server.url(), successCondition="result.count")
    assert (measurement.phase, measurement.message) == (P.ERROR, "expected bool, but got float")


@pytest.mark.parametrize(
    ("interval", "message"),
    [
        (None, 'time: invalid duration ""'),
        ("3 minutes", 'time: unknown unit " minutes" in duration "3 minutes"'),
    ],
)
def test_the_interval_is_required(
    server: SkyWalkingServer, interval: str | None, message: str
) -> None:
    measurement = measure(server.url(), interval=interval)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)
    assert server.receiver.received() == []


def test_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(skywalking, "TIMEOUT_SECONDS", 0.2)
    with stalled_server() as url:
        measurement = measure(url)
    assert (measurement.phase, measurement.message) == (
        P.ERROR,
        f'Post "{url}/graphql": timeout after 0.2s (Client.Timeout exceeded)',
    )


def test_resume_terminate_and_garbage_collect_leave_things_alone() -> None:
    provider = SkyWalkingProvider(ProviderDeps())
    m = metric("m", provider={"skywalking": {"query": "q"}})
    previous = Measurement(phase=P.INCONCLUSIVE, started_at=NOW_TEXT)
    assert provider.resume(analysis_run(), m, previous, NOW) == previous
    running = Measurement(phase=P.RUNNING, started_at=NOW_TEXT)
    assert provider.terminate(analysis_run(), m, running, NOW) == running
    assert provider.garbage_collect(analysis_run(), m, 0) is None
