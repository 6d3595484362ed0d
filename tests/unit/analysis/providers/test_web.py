"""Web metric specs rejected before any request is sent (the requests themselves are tested
against a real server in tests/integration/analysis)."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import Measurement
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric, stub_evaluator

REJECTED = [
    (
        "body with GET",
        {"url": "http://h/", "body": "x"},
        "Body/JSONBody can only be used with POST or PUT WebMetric Method types",
    ),
    (
        "jsonBody with GET",
        {"url": "http://h/", "jsonBody": {"a": 1}},
        "Body/JSONBody can only be used with POST or PUT WebMetric Method types",
    ),
    (
        "both bodies",
        {"url": "http://h/", "method": "POST", "body": "x", "jsonBody": {"a": 1}},
        "use either Body or JSONBody; both cannot exists for WebMetric payload",
    ),
    (
        "unsupported scheme (Argo's bad://url.com)",
        {"url": "bad://url.com"},
        'Get "bad://url.com": unsupported protocol scheme "bad"',
    ),
    ("no host", {"url": "http:///path"}, 'Get "http:///path": no Host in request URL'),
    (
        "unsupported jsonPath",
        {"url": "http://h/", "jsonPath": "{$..x}"},
        "unsupported JSONPath '{$..x}': recursive descent",
    ),
    (
        "secret header without a reader",
        {
            "url": "http://h/",
            "headers": [
                {"key": "A", "value": "", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
            ],
        },
        "header 'A' names a secret but none can be read",
    ),
]


@pytest.mark.parametrize(
    ("web", "message"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_rejected(web: dict[str, Any], message: str) -> None:
    m = metric(provider={"web": web}, successCondition="true")
    provider = WebProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    measurement = provider.run(analysis_run(m.to_dict()), m, NOW)
    assert measurement.to_dict() == {
        "phase": P.ERROR.value,
        "message": message,
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
    }


def test_resume_and_terminate_leave_the_measurement_alone() -> None:
    m = metric(provider={"web": {"url": "http://h/"}})
    provider = WebProvider(ProviderDeps())
    run = analysis_run(m.to_dict())
    taken = Measurement.from_dict({"phase": "Running", "startedAt": NOW_TEXT})
    assert provider.resume(run, m, taken, NOW) is taken
    assert provider.terminate(run, m, taken, NOW) is taken
    provider.garbage_collect(run, m, 1)
    assert (provider.type(), provider.metadata(m)) == ("Web", {})
