"""Kayenta metrics against a local server speaking Kayenta's canary API (cases from Argo's
kayenta_test.go): `run` looks the config up and starts a judgement, later reconciles `resume`
it until Kayenta says it is complete; nothing waits in between."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.analysis.providers import kayenta
from rollout_workers.analysis.providers.base import ProviderDeps
from rollout_workers.analysis.providers.factory import provider_for
from rollout_workers.analysis.providers.kayenta import KayentaProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import Measurement, Metric
from tests.support.metricapis_b import (
    KAYENTA_ACCOUNTS,
    KayentaServer,
    canary_execution,
    stalled_server,
)
from tests.support.receiver import Answer, Receiver
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, analysis_run, metric

CONFIG_ID = "bf9795c0-170f-403e-bb7f-fef3f9a44d42"  # ValidationCanaryConfigTest3
LATER = NOW + dt.timedelta(seconds=15)
LATER_TEXT = "2024-05-01T12:00:15Z"


def scope_detail(hash_: str, **times: str) -> dict[str, Any]:
    return {
        "scope": f"app=guestbook and rollouts-pod-template-hash={hash_}",
        "step": 60,
        "region": "us-=west-2",
        **times,
    }


WINDOW = {"start": "2019-03-29T01:08:34Z", "end": "2019-03-29T01:38:34Z"}


def spec(address: str, **overrides: Any) -> dict[str, Any]:
    """Argo's buildMetric()."""
    return {
        "address": address,
        "application": "guestbook",
        "canaryConfigName": "ValidationCanaryConfigTest3",
        **KAYENTA_ACCOUNTS,
        "threshold": {"pass": 90, "marginal": 75},
        "scopes": [
            {
                "name": "default",
                "controlScope": scope_detail("xxxx", **WINDOW),
                "experimentScope": scope_detail("yyyy", **WINDOW),
            }
        ],
        **overrides,
    }


def kayenta_metric(address: str, *, interval: str | None = None, **overrides: Any) -> Metric:
    fields: dict[str, Any] = {"provider": {"kayenta": spec(address, **overrides)}}
    if interval is not None:
        fields["interval"] = interval
    return metric("mann-whitney", **fields)


@pytest.fixture
def server() -> Iterator[KayentaServer]:
    with KayentaServer() as running:
        yield running


def provider(m: Metric) -> KayentaProvider:
    found = provider_for(m, ProviderDeps(clock=lambda: NOW))
    assert isinstance(found, KayentaProvider) and found.type() == "Kayenta"
    assert found.metadata(m) == {}
    return found


# TestRunSuccessfully
def test_run_starts_a_judgement_and_leaves_it_running(server: KayentaServer) -> None:
    m = kayenta_metric(server.url())
    measurement = provider(m).run(analysis_run(), m, NOW)
    assert measurement == Measurement(
        phase=P.RUNNING,
        started_at=NOW_TEXT,
        metadata={"canaryExecutionId": "01DS50WVHAWSTAQACJKB1VKD00"},
        resume_at=LATER_TEXT,
    )
    lookup, start = server.receiver.received()
    assert (lookup.method, lookup.path, lookup.query) == (
        "GET",
        "/canaryConfig",
        {"application": ["guestbook"], "configurationAccountName": ["intuit-kayenta"]},
    )
    assert (start.method, start.path) == ("POST", f"/canary/{CONFIG_ID}")
    # Argo's expectedBody.
    assert server.bodies == [
        {
            "scopes": {
                "default": {
                    "controlScope": {
                        "scope": "app=guestbook and rollouts-pod-template-hash=xxxx",
                        "location": "us-=west-2",
                        "step": 60,
                        **WINDOW,
                    },
                    "experimentScope": {
                        "scope": "app=guestbook and rollouts-pod-template-hash=yyyy",
                        "location": "us-=west-2",
                        "step": 60,
                        **WINDOW,
                    },
                }
            },
            "thresholds": {"pass": 90, "marginal": 75},
        }
    ]


def test_a_judgement_is_polled_by_later_reconciles_until_complete(server: KayentaServer) -> None:
    m = kayenta_metric(server.url())
    p = provider(m)
    running = p.run(analysis_run(), m, NOW)
    execution_id = (running.metadata or {})["canaryExecutionId"]
    # TestResumeIncompleteStatus: still running, looked at again 15 s later.
    still = p.resume(analysis_run(), m, running, LATER)
    assert still == running.model_copy(update={"resume_at": "2024-05-01T12:00:30Z"})
    server.finish(execution_id, canary_execution(95.7))
    done = p.resume(analysis_run(), m, still, LATER + dt.timedelta(seconds=15))
    assert (done.phase, done.value, done.finished_at) == (
        P.SUCCESSFUL,
        "95",
        "2024-05-01T12:00:30Z",
    )
    assert done.metadata == {"canaryExecutionId": execution_id}
    assert [r.path for r in server.receiver.received()] == [
        "/canaryConfig",
        f"/canary/{CONFIG_ID}",
        f"/canary/{execution_id}",
        f"/canary/{execution_id}",
    ]


SCORES = [
    # TestResumeSuccessfully, TestResumeFailure, TestResumeInconclusive
    ("successful", 100.0, "100", P.SUCCESSFUL),
    ("at the pass threshold", 90.0, "90", P.SUCCESSFUL),
    ("inconclusive", 80.0, "80", P.INCONCLUSIVE),
    ("at the marginal threshold", 75.0, "75", P.INCONCLUSIVE),
    ("failed", 60.0, "60", P.FAILED),
    ("truncated as Go's int()", 74.9, "74", P.FAILED),
]


@pytest.mark.parametrize(
    ("score", "value", "phase"), [c[1:] for c in SCORES], ids=[c[0] for c in SCORES]
)
def test_scores(server: KayentaServer, score: float, value: str, phase: P) -> None:
    server.finish("01DS50WVHAWSTAQACJKB1VKDQB", canary_execution(score))
    m = kayenta_metric(server.url(), successCondition="false")  # conditions are not used
    running = Measurement(
        phase=P.RUNNING, metadata={"canaryExecutionId": "01DS50WVHAWSTAQACJKB1VKDQB"}
    )
    measurement = provider(m).resume(analysis_run(), m, running, NOW)
    assert (measurement.phase, measurement.value, measurement.finished_at) == (
        phase,
        value,
        NOW_TEXT,
    )


RESUME_ERRORS = [
    # TestResumeMissingScore
    ("missing score", {"complete": True, "result": {"judgeResult": {}}}, "Missing Score"),
    # TestResumeMissingCompleteStatus
    (
        "missing complete status",
        {"result": {"judgeResult": {"score": {"score": 80.0}}}},
        "Missing Complete Status",
    ),
    (
        "complete is not a bool",
        {"complete": "yes"},
        ".complete accessor error: yes is of the type string, expected bool",
    ),
    (
        "the score is not a number",
        {"complete": True, "result": {"judgeResult": {"score": {"score": "high"}}}},
        ".result.judgeResult.score.score accessor error: high is of the type string, "
        "expected float64",
    ),
]


@pytest.mark.parametrize(
    ("answer", "message"), [c[1:] for c in RESUME_ERRORS], ids=[c[0] for c in RESUME_ERRORS]
)
def test_resume_errors(server: KayentaServer, answer: dict[str, Any], message: str) -> None:
    server.finish("exec-1", answer)
    m = kayenta_metric(server.url())
    running = Measurement(phase=P.RUNNING, metadata={"canaryExecutionId": "exec-1"})
    measurement = provider(m).resume(analysis_run(), m, running, NOW)
    assert (measurement.phase, measurement.message, measurement.finished_at) == (
        P.ERROR,
        message,
        NOW_TEXT,
    )


# TestResumeBadResponse
def test_resume_with_a_bad_response(server: KayentaServer) -> None:
    server.read_status = 500
    m = kayenta_metric(server.url())
    running = Measurement(phase=P.RUNNING, metadata={"canaryExecutionId": "exec-1"})
    measurement = provider(m).resume(analysis_run(), m, running, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, "Invalid Response")


RUN_ERRORS = [
    # TestRunBadLookupResponse
    ("bad lookup response", {"lookup_status": 500}, {}, "Invalid Response: HTTP 500"),
    # TestRunBadJobResponse
    ("bad job response", {"start_status": 500}, {}, "Invalid Response"),
    (
        "no config of that name",
        {},
        {"canaryConfigName": "Nope"},
        "Canary config not found",
    ),
    (
        "another application has no configs",
        {},
        {"application": "other"},
        "Canary config not found",
    ),
]


@pytest.mark.parametrize(
    ("server_fields", "overrides", "message"),
    [c[1:] for c in RUN_ERRORS],
    ids=[c[0] for c in RUN_ERRORS],
)
def test_run_errors(
    server: KayentaServer, server_fields: dict[str, int], overrides: dict[str, Any], message: str
) -> None:
    for name, value in server_fields.items():
        setattr(server, name, value)
    m = kayenta_metric(server.url(), **overrides)
    measurement = provider(m).run(analysis_run(), m, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)
    assert measurement.started_at == NOW_TEXT and measurement.finished_at == NOW_TEXT


ANSWER_ERRORS = [
    # TestRunInvalidLookupResponse
    (
        "lookup answers an object",
        {"this is bad": "yee"},
        None,
        "json: cannot unmarshal object into a list of canary configs",
    ),
    # TestRunEmptyExecutionId
    ("empty execution id", None, {"canaryExecutionId": ""}, "Invalid canaryExecutionId"),
    ("no execution id", None, {}, "Invalid canaryExecutionId"),
]


@pytest.mark.parametrize(
    ("lookup", "start", "message"),
    [c[1:] for c in ANSWER_ERRORS],
    ids=[c[0] for c in ANSWER_ERRORS],
)
def test_unusable_answers(lookup: Any, start: Any, message: str) -> None:
    def answer(request: Any) -> Answer:
        if request.path == "/canaryConfig":
            configs = [{"id": CONFIG_ID, "name": "ValidationCanaryConfigTest3"}]
            return Answer.json(200, configs if lookup is None else lookup)
        return Answer.json(200, start)

    with Receiver(answer) as receiver:
        m = kayenta_metric(receiver.url())
        measurement = provider(m).run(analysis_run(), m, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)


def without(side: str, field: str) -> dict[str, Any]:
    detail = scope_detail("xxxx" if side == "controlScope" else "yyyy", **WINDOW)
    del detail[field]
    other = "experimentScope" if side == "controlScope" else "controlScope"
    return {
        "name": "default",
        side: detail,
        other: scope_detail("yyyy" if side == "controlScope" else "xxxx", **WINDOW),
    }


# TestRunStartAndEndMismatched
@pytest.mark.parametrize(
    ("scope", "message"),
    [
        (
            without("controlScope", "start"),
            "controlScope.start and experimentScope.start must both be set or be empty",
        ),
        (
            without("experimentScope", "start"),
            "controlScope.start and experimentScope.start must both be set or be empty",
        ),
        (
            without("controlScope", "end"),
            "controlScope.end and experimentScope.end must both be set or be empty",
        ),
        (
            without("experimentScope", "end"),
            "controlScope.end and experimentScope.end must both be set or be empty",
        ),
    ],
)
def test_start_and_end_mismatched(
    server: KayentaServer, scope: dict[str, Any], message: str
) -> None:
    m = kayenta_metric(server.url(), scopes=[scope])
    measurement = provider(m).run(analysis_run(), m, NOW)
    assert (measurement.phase, measurement.message) == (P.ERROR, message)
    assert [r.method for r in server.receiver.received()] == ["GET"]  # no judgement started


def no_window() -> list[dict[str, Any]]:
    return [
        {
            "name": "default",
            "controlScope": scope_detail("xxxx"),
            "experimentScope": scope_detail("yyyy"),
        }
    ]


# TestRunStartAndEndOmitted, TestRunLookback
@pytest.mark.parametrize(
    ("lookback", "start"),
    [(False, "2024-05-01T11:55:00Z"), (True, "2024-05-01T11:30:00Z")],
    ids=["one interval back", "lookback from the run's start"],
)
def test_an_omitted_window_is_filled_in(server: KayentaServer, lookback: bool, start: str) -> None:
    m = kayenta_metric(server.url(), interval="5m", scopes=no_window(), lookback=lookback)
    run = analysis_run(status={"phase": "Running", "startedAt": "2024-05-01T11:30:00Z"})
    measurement = provider(m).run(run, m, NOW)
    assert measurement.phase == P.RUNNING
    (body,) = server.bodies
    for side in body["scopes"]["default"].values():
        assert (side["start"], side["end"]) == (start, NOW_TEXT)


def test_an_omitted_start_needs_an_interval(server: KayentaServer) -> None:
    m = kayenta_metric(server.url(), scopes=no_window())
    measurement = provider(m).run(analysis_run(), m, NOW)
    assert (measurement.phase, measurement.message) == (
        P.ERROR,
        'Invalid duration "": time: invalid duration ""',
    )


def test_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kayenta, "TIMEOUT_SECONDS", 0.2)
    with stalled_server() as url:
        m = kayenta_metric(url)
        measurement = provider(m).run(analysis_run(), m, NOW)
    assert measurement.phase == P.ERROR
    assert measurement.message == (
        f'Get "{url}/canaryConfig?application=guestbook&configurationAccountName=intuit-kayenta"'
        ": timeout after 0.2s (Client.Timeout exceeded)"
    )


def test_terminate_and_garbage_collect_leave_the_judgement_alone(server: KayentaServer) -> None:
    m = kayenta_metric(server.url())
    running = Measurement(phase=P.RUNNING, metadata={"canaryExecutionId": "x"})
    p = provider(m)
    assert p.terminate(analysis_run(), m, copy.deepcopy(running), NOW) == running
    assert p.garbage_collect(analysis_run(), m, 0) is None
    assert server.receiver.received() == []
