"""Wavefront metrics against a stand-in of Wavefront's chart API, over HTTPS on 127.0.0.1, that
checks the bearer token and the query window (tests/support/metricapis.py). Cases from Argo's
wavefront_test.go; conditions are judged by the real evaluator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import wavefront
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.wavefront import WavefrontProvider, nearest
from rollout_workers.api.analysis import Measurement
from tests.support.metricapis import WF_TOKEN, FakeSecrets, MetricAPI, trusting_pool
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

CONTROLLER_NS = "argo-rollouts"
EPOCH = int(NOW.timestamp())


@pytest.fixture
def api() -> Iterator[MetricAPI]:
    server = MetricAPI(tls=True).start()
    server.expect.now = EPOCH
    server.expect.queries = {"query": "ts(requests)"}
    yield server
    server.stop()


def measure(
    api: MetricAPI, *, tokens: dict[str, str] | None = None, **conditions: str
) -> Measurement:
    m = metric(
        provider={"wavefront": {"address": api.address, "query": "ts(requests)"}}, **conditions
    )
    secrets = (
        {}
        if tokens == {}
        else {(CONTROLLER_NS, "wavefront-api-tokens"): tokens or {api.address: WF_TOKEN}}
    )
    deps = ProviderDeps(
        clock=lambda: NOW,
        http=trusting_pool(),
        namespace=CONTROLLER_NS,
        secrets=FakeSecrets(secrets),
    )
    return WavefrontProvider(deps).run(analysis_run(m.to_dict()), m, NOW)


def outcome(measurement: Measurement) -> dict[str, Any]:
    out = measurement.to_dict()
    assert out.pop("startedAt") == NOW_TEXT
    assert out.pop("finishedAt") == NOW_TEXT
    return out


def answer(*series: list[list[float]], **extra: Any) -> dict[str, Any]:
    return {
        "name": "ts(requests)",
        "query": "ts(requests)",
        "granularity": 1,
        "timeseries": [{"label": "requests", "host": "h", "tags": {}, "data": s} for s in series],
        **extra,
    }


CONDITIONS = {"successCondition": "result == 10", "failureCondition": "result != 10"}
# (id, body, conditions, want)
CASES = [
    (
        "run successfully",
        answer([[EPOCH - 30, 9], [EPOCH - 2, 10], [EPOCH + 5, 11]]),
        CONDITIONS,
        {
            "phase": "Successful",
            "value": "10.00",
            "metadata": {"timestamps": str(EPOCH - 2), "drift": "-2"},
        },
    ),
    (
        "failed",
        answer([[EPOCH + 1, 12.345]]),
        CONDITIONS,
        {
            "phase": "Failed",
            "value": "12.35",
            "metadata": {"timestamps": str(EPOCH + 1), "drift": "1"},
        },
    ),
    (
        "multiple timeseries (TestProcessMultipleTimeseriesResponse)",
        answer([[EPOCH, 10]], [[EPOCH - 1, 11]]),
        {"successCondition": "10 in result", "failureCondition": "len(result) != 2"},
        {
            "phase": "Successful",
            "value": "[10.00,11.00]",
            "metadata": {"timestamps": f"[{EPOCH},{EPOCH - 1}]", "drift": "[0,-1]"},
        },
    ),
    (
        "warnings go to the metadata",
        answer([[EPOCH, 10]], warnings="partial results"),
        CONDITIONS,
        {
            "phase": "Successful",
            "value": "10.00",
            "metadata": {"timestamps": str(EPOCH), "drift": "0", "warnings": "partial results"},
        },
    ),
    (
        "no time series (TestRunWithEvaluationError)",
        answer(warnings="No query provided"),
        CONDITIONS,
        {
            "phase": "Error",
            "message": "No TimeSeries found in response from Wavefront",
            "metadata": {"warnings": "No query provided"},
        },
    ),
    (
        "condition error",
        answer([[EPOCH, 10]]),
        {"successCondition": "result =="},
        {
            "phase": "Error",
            "message": "unexpected token EOF",
            "metadata": {"timestamps": str(EPOCH), "drift": "0"},
        },
    ),
]


@pytest.mark.parametrize(
    ("body", "conditions", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_chart_api(
    api: MetricAPI, body: Any, conditions: dict[str, str], want: dict[str, Any]
) -> None:
    api.answer = (200, body)
    assert outcome(measure(api, **conditions)) == want
    assert api.problems == []
    assert [(s.method, s.path) for s in api.seen] == [("GET", "/api/v2/chart/api")]


def test_server_error(api: MetricAPI) -> None:
    api.answer = (500, b"boom")
    got = outcome(measure(api, **CONDITIONS))
    assert got == {"phase": "Error", "message": "server returned 500 Internal Server Error\nboom\n"}


def test_wrong_token(api: MetricAPI) -> None:
    got = outcome(measure(api, tokens={api.address: "stale"}, **CONDITIONS))
    assert got["phase"] == "Error" and got["message"].startswith("server returned 401 Unauthorized")
    assert len(api.problems) == 1


def test_no_token_for_the_address(api: MetricAPI) -> None:
    got = outcome(measure(api, tokens={"other.wavefront.com": WF_TOKEN}, **CONDITIONS))
    assert got == {"phase": "Error", "message": "API token not found"}
    assert api.seen == []


def test_no_secret(api: MetricAPI) -> None:
    got = outcome(measure(api, tokens={}, **CONDITIONS))
    assert got == {"phase": "Error", "message": 'secrets "wavefront-api-tokens" not found'}


def test_timeout(api: MetricAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wavefront, "TIMEOUT_SECONDS", 0.2)
    api.delay.set()
    got = measure(api, **CONDITIONS)
    assert got.phase == "Error" and "timeout after 0.2s" in (got.message or "")


def test_nearest_point() -> None:
    assert nearest([(100.0, 1.0), (104.0, 2.0), (96.0, 3.0)], 100) == (1.0, 100, 0)
    assert nearest([(103.0, 2.0), (97.0, 3.0)], 100) == (2.0, 103, 3)  # the first of two
    assert nearest([(90.0, 2.0), (95.0, 3.0)], 100) == (3.0, 95, -5)


def test_type_and_metadata() -> None:
    provider = WavefrontProvider(ProviderDeps())
    assert (provider.type(), provider.metadata(metric(provider={"wavefront": {}}))) == (
        "Wavefront",
        {},
    )
