"""The AnalysisRun controller with a scripted provider: measurements over time, limits,
termination, provider errors, TTL. Recorded writes, fixed clock (argo-rollouts' style)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rollout_workers.analysis.controller import AnalysisRunController, reconcile
from rollout_workers.analysis.providers import ProviderDeps, UnknownProvider, provider_for
from rollout_workers.api.analysis import AnalysisPhase, AnalysisRun, Measurement, Metric
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.timefmt import format_time

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


class _NoSecrets:
    def read(self, namespace: str, name: str, key: str) -> str:
        raise AssertionError("no secret expected")


NO_SECRETS = _NoSecrets()


class Scripted:
    """A provider whose measurements come from a list of phases (or exceptions)."""

    def __init__(self, phases: list[str]) -> None:
        self.phases = list(phases)
        self.calls: list[str] = []

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        self.calls.append("run")
        phase = self.phases.pop(0)
        if phase == "raise":
            raise RuntimeError("provider blew up")
        finished = None if phase == "Running" else format_time(now)
        return Measurement(
            phase=AnalysisPhase(phase), started_at=format_time(now), finished_at=finished, value="1"
        )

    def resume(
        self, run: AnalysisRun, metric: Metric, m: Measurement, now: dt.datetime
    ) -> Measurement:
        self.calls.append("resume")
        return m.model_copy(update={"phase": AnalysisPhase(self.phases.pop(0))})

    def terminate(
        self, run: AnalysisRun, metric: Metric, m: Measurement, now: dt.datetime
    ) -> Measurement:
        self.calls.append("terminate")
        return m.model_copy(update={"phase": AnalysisPhase.SUCCESSFUL})

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        self.calls.append(f"gc {limit}")

    def metadata(self, metric: Metric) -> dict[str, str]:
        return {}


def new_run(**metric: Any) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {
                "metrics": [{"name": "m", "provider": {"web": {"url": "http://x"}}, **metric}]
            },
        }
    )


def drive(
    run: AnalysisRun, provider: Scripted, *, max_steps: int = 20
) -> tuple[AnalysisRun, list[str], dt.datetime]:
    """Reconcile at each wake-up time until the run completes (as the Redis timers would)."""
    now, events = T0, []
    for _ in range(max_steps):
        outcome, wake = reconcile(run, now=now, providers=lambda m: provider, secrets=NO_SECRETS)
        events += [reason for reason, _, _ in outcome.events]
        run = run.model_copy(update={"status": outcome.status})
        if run.status is not None and run.status.phase in (
            "Successful",
            "Failed",
            "Error",
            "Inconclusive",
        ):
            return run, events, now
        assert wake is not None, "a running run must ask to be woken"
        now = max(wake, now)
    raise AssertionError("never completed")


def test_three_successful_measurements_ten_seconds_apart() -> None:
    run, events, end = drive(new_run(interval="10s", count=3), Scripted(["Successful"] * 3))
    assert run.status is not None
    assert run.status.phase == "Successful"
    result = run.status.metric_results[0]  # type: ignore[index]
    assert (result.count, result.successful, len(result.measurements or [])) == (3, 3, 3)
    assert end == T0 + dt.timedelta(seconds=20)
    assert run.status.completed_at == format_time(end)
    assert "MetricSuccessful" in events and "AnalysisRunSuccessful" in events
    assert run.status.run_summary is not None and run.status.run_summary.successful == 1


def test_failure_over_limit_fails_the_run() -> None:
    run, events, _ = drive(
        new_run(interval="5s", count=5, failureLimit=1),
        Scripted(["Successful", "Failed", "Failed"]),
    )
    assert run.status is not None and run.status.phase == "Failed"
    assert run.status.message == 'Metric "m" assessed Failed due to failed (2) > failureLimit (1)'
    assert "AnalysisRunFailed" in events


def test_consecutive_errors_error_the_run_and_retry_every_10s() -> None:
    provider = Scripted(["raise"] * 5)
    run, _, end = drive(new_run(interval="1m", count=3), provider)
    assert run.status is not None and run.status.phase == "Error"
    assert end == T0 + dt.timedelta(seconds=40)  # error retries every 10s, not every minute
    assert "consecutiveErrors (5) > consecutiveErrorLimit (4)" in (run.status.message or "")


def test_async_measurement_is_resumed_not_rerun() -> None:
    provider = Scripted(["Running", "Running", "Successful"])
    run = new_run()
    outcome, _ = reconcile(run, now=T0, providers=lambda m: provider, secrets=NO_SECRETS)
    run = run.model_copy(update={"status": outcome.status})
    assert run.status is not None and run.status.phase == "Running"
    for _ in range(2):
        outcome, _ = reconcile(run, now=T0, providers=lambda m: provider, secrets=NO_SECRETS)
        run = run.model_copy(update={"status": outcome.status})
    assert provider.calls == ["run", "resume", "resume"]
    assert run.status is not None and run.status.phase == "Successful"


def test_terminate_stops_an_indefinite_metric_successfully() -> None:
    provider = Scripted(["Successful"] * 3)
    run = new_run(interval="10s")
    outcome, _ = reconcile(run, now=T0, providers=lambda m: provider, secrets=NO_SECRETS)
    run = run.model_copy(update={"status": outcome.status})
    run.spec.terminate = True
    outcome, wake = reconcile(
        run, now=T0 + dt.timedelta(seconds=30), providers=lambda m: provider, secrets=NO_SECRETS
    )
    assert outcome.status.phase == "Successful" and outcome.status.message == "Run Terminated"
    assert wake is None and provider.calls == ["run"]


def test_unresolved_argument_is_an_error() -> None:
    run = AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {
                "metrics": [{"name": "m", "provider": {"web": {"url": "http://{{args.host}}"}}}],
                "args": [{"name": "host"}],
            },
        }
    )
    outcome, wake = reconcile(run, now=T0, providers=lambda m: Scripted([]), secrets=NO_SECRETS)
    assert outcome.status.phase == "Error" and wake is None
    assert (
        outcome.status.message
        == "Unable to resolve metric arguments: failed to resolve {{args.host}}"
    )


def plugin_run(name: str = "acme/metric", **metric: Any) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {
                "metrics": [{"name": "m", "provider": {"plugin": {name: {"query": "q"}}}, **metric}]
            },
        }
    )


NOT_ENABLED = (
    "failed to create plugin: unable to get metric plugin: unable to start plugin system: "
    "unable to find plugin (acme/metric): plugin acme/metric not configured in configmap (here: "
    "an entry point named acme/metric in the rollout_workers.metric_providers group, enabled by "
    "listing the name in ROLLOUTS_PLUGINS_METRIC)"
)


def _raising(error: Exception) -> Any:
    def make(metric: Metric) -> Any:
        raise error

    return make


PROVIDER_ERROR_CASES: list[tuple[str, AnalysisRun, Any, str, str]] = [
    # (name, run, provider factory, run phase and message, the measurement's message)
    (
        "Argo TestFailedToCreateProviderError: an error making the provider is an Error "
        "measurement, retried",
        new_run(),
        _raising(RuntimeError("failed to create provider")),
        "Running: ",
        "failed to create provider",
    ),
    (
        "a plugin that is not enabled: the run ends Error at once, with Argo's NewProvider error",
        plugin_run(),
        lambda m: provider_for(m, ProviderDeps()),
        'Error: Metric "m" assessed Error due to no provider to measure it: '
        f'"Error Message: {NOT_ENABLED}"',
        "",
    ),
    (
        "a metric with an initialDelay is refused before its first measurement is due",
        plugin_run(initialDelay="5m"),
        lambda m: provider_for(m, ProviderDeps()),
        'Error: Metric "m" assessed Error due to no provider to measure it: '
        f'"Error Message: {NOT_ENABLED}"',
        "",
    ),
    (
        "an unknown provider the validation lets through is refused the same way",
        new_run(),
        _raising(UnknownProvider("no valid provider in metric 'm'")),
        'Error: Metric "m" assessed Error due to no provider to measure it: '
        "\"Error Message: no valid provider in metric 'm'\"",
        "",
    ),
]


@pytest.mark.parametrize(
    ("run", "providers", "expected", "measured"),
    [pytest.param(*case[1:], id=case[0]) for case in PROVIDER_ERROR_CASES],
)
def test_a_provider_that_cannot_be_made(
    run: AnalysisRun, providers: Any, expected: str, measured: str
) -> None:
    outcome, wake = reconcile(run, now=T0, providers=providers, secrets=NO_SECRETS)
    status = outcome.status
    assert f"{status.phase}: {status.message or ''}" == expected
    measurements = [m for r in status.metric_results or [] for m in r.measurements or []]
    if measured:
        assert [(m.phase, m.message) for m in measurements] == [("Error", measured)]
        assert wake == T0 + dt.timedelta(seconds=10)
        return
    assert measurements == [] and wake is None
    assert status.completed_at == format_time(T0)
    assert outcome.events == [("AnalysisRunError", "Analysis Completed. Result: Error", True)]


def test_the_rollouts_step_analysis_aborts_on_the_errored_run() -> None:
    """The run errored at once aborts the rollout at its analysis step, with the run's message,
    as Argo's does for an errored run."""
    from rollout_workers.api.analysis import AnalysisTemplateSpec
    from tests.unit.rollout.onesync import NS, OneSync
    from tests.unit.rollout.test_controller import rollout

    template = AnalysisTemplateSpec.from_dict(
        {"metrics": [{"name": "m", "provider": {"plugin": {"acme/metric": {}}}}]}
    )
    steps = [{"setWeight": 50}, {"analysis": {"templates": [{"templateName": "t"}]}}]
    sim = OneSync(
        rollout(strategy={"canary": {"steps": steps}}, replicas=2),
        template_lookup=lambda name, cluster: template if name == "t" else None,
    )
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    (obj,) = sim.of(r.ANALYSISRUNS).values()
    outcome, _ = reconcile(
        AnalysisRun.from_dict(obj),
        now=T0,
        providers=lambda m: provider_for(m, ProviderDeps()),
        secrets=NO_SECRETS,
    )
    assert outcome.status.phase == "Error"
    sim.writer.patch(
        r.ANALYSISRUNS,
        NS,
        obj["metadata"]["name"],
        {"status": outcome.status.to_dict()},
        status=True,
    )
    sim.settle()
    assert sim.status["abort"] is True
    aborted = next(c for c in sim.status["conditions"] if c["type"] == "Progressing")
    assert aborted["reason"] == "RolloutAborted"
    assert aborted["message"] == f"Rollout aborted update to revision 2: {outcome.status.message}"


def test_measurement_retention_trims_and_garbage_collects() -> None:
    provider = Scripted(["Successful"] * 12)
    run, _, _ = drive(new_run(interval="1s", count=12), provider)
    result = run.status.metric_results[0]  # type: ignore[union-attr,index]
    assert len(result.measurements or []) == 10 and result.count == 12
    assert "gc 10" in provider.calls


class _Runs:
    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def get(self, key: str) -> dict[str, Any] | None:
        return self.obj


class _Fresh:
    def stale(self, plural: str, items: dict[str, str]) -> list[str]:
        return []


class _Lease:
    def lost(self) -> bool:
        return False

    def check(self) -> None:
        return None


def test_ttl_deletes_a_completed_run_when_it_expires() -> None:
    from rollout_workers.keys import ObjectKey
    from rollout_workers.reconcile.handlers import SyncRequest

    done = format_time(T0)
    obj = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": "r", "namespace": "d", "resourceVersion": "5"},
        "spec": {
            "metrics": [{"name": "m", "provider": {"web": {"url": "x"}}}],
            "ttlStrategy": {"secondsAfterCompletion": 60},
        },
        "status": {"phase": "Successful", "completedAt": done},
    }
    writer = RecordingWriter()
    clock = [T0 + dt.timedelta(seconds=30)]
    controller = AnalysisRunController(
        runs=_Runs(obj),
        written=_Fresh(),
        writer=writer,  # type: ignore[arg-type]
        providers=lambda m: Scripted([]),
        secrets=NO_SECRETS,
        clock=lambda: clock[0],
    )
    request = SyncRequest("analysisruns", ObjectKey("d/r"), _Lease())
    assert controller.sync(request).delay == 30.0 and writer.actions == []
    clock[0] = T0 + dt.timedelta(seconds=61)
    controller.sync(request)
    assert [(a.verb, a.resource) for a in writer.actions] == [("delete", r.ANALYSISRUNS.plural)]


@pytest.mark.parametrize(
    ("ttl", "phase", "after"),
    [
        pytest.param({"secondsAfterCompletion": 60}, "Successful", 60, id="completion"),
        pytest.param(
            {"secondsAfterCompletion": 60, "secondsAfterSuccess": 10}, "Successful", 10,
            id="success-wins-for-a-success",
        ),
        pytest.param(
            {"secondsAfterCompletion": 60, "secondsAfterFailure": 5}, "Failed", 5,
            id="failure-wins-for-a-failure",
        ),
        pytest.param(
            {"secondsAfterSuccess": 10, "secondsAfterFailure": 5}, "Error", None,
            id="error-only-by-completion",
        ),
        pytest.param({"secondsAfterFailure": 5}, "Successful", None, id="failure-not-success"),
        pytest.param({"secondsAfterSuccess": 10}, "Running", None, id="not-completed"),
    ],
)  # fmt: skip
def test_ttl_strategy_by_phase(ttl: dict[str, int], phase: str, after: int | None) -> None:
    """Argo's garbage collection of completed runs (TestGarbageCollect...TTL): the phase's own
    setting wins over secondsAfterCompletion."""
    from rollout_workers.analysis.controller import ttl_expiry
    from rollout_workers.api.analysis import AnalysisRun

    run = AnalysisRun.from_dict(
        {
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {"metrics": [{"name": "m", "provider": {"web": {"url": "x"}}}],
                     "ttlStrategy": ttl},
            "status": {"phase": phase, "completedAt": format_time(T0)},
        }
    )  # fmt: skip
    expected = None if after is None else T0 + dt.timedelta(seconds=after)
    assert ttl_expiry(run) == expected
