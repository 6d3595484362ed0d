"""Metric provider plugins (`provider.plugin`): an enabled plugin measures through the run's
reconcile as Argo's RPC plugin provider does (Run, Resume, Terminate, GarbageCollect, Type,
GetMetadata), with its config; its failures are Error measurements; one that is not enabled
ends the run at once (tests/unit/analysis/test_controller.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.analysis.controller import reconcile
from rollout_workers.analysis.providers import ProviderDeps, provider_for
from rollout_workers.analysis.providers.plugin import (
    ENTRY_POINT_GROUP,
    MetricContext,
    MetricPluginRegistry,
    MetricProviderPlugin,
    PluginProvider,
)
from rollout_workers.api.analysis import AnalysisPhase, AnalysisRun, Measurement, Metric
from rollout_workers.timefmt import format_time

Obj = dict[str, Any]
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
PLUGIN = "acme/metric"
CONFIG = {"query": "rate(errors[5m])", "address": "http://metrics"}


@dataclass
class FakeMetrics:
    """Answers each Run from a script of phases ("Running" starts an asynchronous measurement
    that the next Resume completes); records calls with the config they were given."""

    phases: list[str] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    answer: Any = None  # replaces every answer (a bad plugin)

    def _call(self, what: str, context: MetricContext, extra: Any = None) -> None:
        assert (context.name, context.config, context.metric.name) == (PLUGIN, CONFIG, "m")
        assert context.run.metadata.name == "r"
        context.config["query"] = "changed"  # a copy: the next call gets the metric's again
        self.calls.append((what, extra))

    def run(self, context: MetricContext) -> Measurement:
        self._call("run", context)
        if self.answer is not None:
            return self.answer  # type: ignore[no-any-return]
        phase = AnalysisPhase(self.phases.pop(0))
        stamp = format_time(context.now)
        finished = None if phase == AnalysisPhase.RUNNING else stamp
        return Measurement(phase=phase, started_at=stamp, finished_at=finished, value="0.1")

    def resume(self, context: MetricContext, measurement: Measurement) -> Measurement:
        self._call("resume", context, measurement.phase)
        stamp = format_time(context.now)
        return measurement.model_copy(
            update={"phase": AnalysisPhase.SUCCESSFUL, "finished_at": stamp, "value": "0.2"}
        )

    def terminate(self, context: MetricContext, measurement: Measurement) -> Measurement:
        self._call("terminate", context)
        return measurement.model_copy(update={"phase": AnalysisPhase.SUCCESSFUL})

    def garbage_collect(self, context: MetricContext, limit: int) -> None:
        self._call("garbage_collect", context, limit)

    def type(self) -> str:
        return "AcmeMetrics"

    def metadata(self, metric: Metric, config: Obj) -> dict[str, str]:
        return {"query": str(config["query"])}


def plugin_run(spec: Obj | None = None, **metric: Any) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisRun",
            "metadata": {"name": "r", "namespace": "d"},
            "spec": {
                "metrics": [{"name": "m", "provider": {"plugin": {PLUGIN: CONFIG}}, **metric}],
                **(spec or {}),
            },
        }
    )


class _NoSecrets:
    def read(self, namespace: str, name: str, key: str) -> str:
        raise AssertionError("no secret expected")


def deps_with(plugin: Any) -> ProviderDeps:
    registry = MetricPluginRegistry()
    registry.preload({PLUGIN: plugin})
    return ProviderDeps(metric_plugins=registry, clock=lambda: T0)


def reconcile_at(run: AnalysisRun, deps: ProviderDeps, now: dt.datetime) -> tuple[Any, Any]:
    outcome, wake = reconcile(
        run, now=now, providers=lambda m: provider_for(m, deps), secrets=_NoSecrets()
    )
    return run.model_copy(update={"status": outcome.status}), wake


def test_the_plugin_measures_with_its_config_and_its_metadata_is_kept() -> None:
    plugin = FakeMetrics(phases=["Successful", "Successful"])
    deps = deps_with(plugin)
    run, wake = reconcile_at(plugin_run(interval="1m", count=2), deps, T0)
    assert wake == T0 + dt.timedelta(minutes=1)
    run, wake = reconcile_at(run, deps, wake)
    assert run.status.phase == "Successful" and wake is None
    [result] = run.status.metric_results
    assert (result.count, result.successful) == (2, 2)
    assert result.metadata == {"query": CONFIG["query"]}
    assert [m.value for m in result.measurements] == ["0.1", "0.1"]
    assert [c[0] for c in plugin.calls] == ["run", "run"]
    assert provider_for(plugin_run().spec.metrics[0], deps).type() == "AcmeMetrics"


def test_a_running_measurement_is_resumed_then_terminated_runs_stop() -> None:
    plugin = FakeMetrics(phases=["Running"])
    deps = deps_with(plugin)
    run, _ = reconcile_at(plugin_run(), deps, T0)
    assert run.status.metric_results[0].measurements[0].phase == "Running"
    run, _ = reconcile_at(run, deps, T0 + dt.timedelta(seconds=10))
    assert run.status.phase == "Successful"
    assert plugin.calls == [("run", None), ("resume", "Running")]
    # A terminating run's measurement in flight is terminated, not resumed.
    plugin = FakeMetrics(phases=["Running"])
    deps = deps_with(plugin)
    run, _ = reconcile_at(plugin_run(), deps, T0)
    run = run.model_copy(update={"spec": run.spec.model_copy(update={"terminate": True})})
    run, _ = reconcile_at(run, deps, T0 + dt.timedelta(seconds=10))
    assert [c[0] for c in plugin.calls] == ["run", "terminate"]
    assert run.status.metric_results[0].measurements[0].message == "Metric Terminated"


def test_older_measurements_are_garbage_collected_through_the_plugin() -> None:
    plugin = FakeMetrics(phases=["Successful"] * 3)
    deps = deps_with(plugin)
    run = plugin_run(
        {"measurementRetention": [{"metricName": "m", "limit": 1}]}, interval="1m", count=3
    )
    now = T0
    for _ in range(3):
        run, wake = reconcile_at(run, deps, now)
        now = wake or now
    assert ("garbage_collect", 1) in plugin.calls
    assert run.status is not None and run.status.metric_results is not None
    assert len(run.status.metric_results[0].measurements or []) == 1


BAD_ANSWERS: list[tuple[str, Any, str]] = [
    # (name, what the plugin does, the Error measurement's message)
    ("raises", RuntimeError("metrics backend down"), "metrics backend down"),
    (
        "returns no measurement",
        {"phase": "Successful"},
        "metric provider plugin acme/metric returned no measurement: {'phase': 'Successful'}",
    ),
]


@pytest.mark.parametrize(
    ("answer", "message"), [pytest.param(*case[1:], id=case[0]) for case in BAD_ANSWERS]
)
def test_a_failing_plugin_is_an_error_measurement(answer: Any, message: str) -> None:
    if isinstance(answer, Exception):

        class Raising(FakeMetrics):
            def run(self, context: MetricContext) -> Measurement:
                raise answer

        plugin: FakeMetrics = Raising()
    else:
        plugin = FakeMetrics(answer=answer)
    run, wake = reconcile_at(plugin_run(), deps_with(plugin), T0)
    [measurement] = run.status.metric_results[0].measurements
    assert (measurement.phase, measurement.message) == ("Error", message)
    assert measurement.finished_at == format_time(T0)
    assert run.status.phase == "Running" and wake == T0 + dt.timedelta(seconds=10)


def test_an_enabled_plugin_that_cannot_be_loaded_is_measured_as_an_error_as_argo() -> None:
    """Argo's errors past the ConfigMap lookup (starting, dispensing, pinging the plugin) are
    NewProvider errors too, recorded as Error measurements and retried."""

    def broken(name: str) -> Any:
        raise ImportError("no module named acme")

    registry = MetricPluginRegistry(enabled=frozenset({PLUGIN}), loader=broken)
    run, wake = reconcile_at(plugin_run(), ProviderDeps(metric_plugins=registry), T0)
    [measurement] = run.status.metric_results[0].measurements
    assert (measurement.phase, measurement.message) == (
        "Error",
        "unable to load metric provider plugin (acme/metric): no module named acme",
    )
    assert wake == T0 + dt.timedelta(seconds=10)


def test_the_registry_makes_the_plugin_from_its_entry_point_class() -> None:
    registry = MetricPluginRegistry(enabled=frozenset({PLUGIN}), loader=lambda name: FakeMetrics)
    plugin = registry.resolve(PLUGIN)
    assert isinstance(plugin, MetricProviderPlugin) and registry.resolve(PLUGIN) is plugin
    assert ENTRY_POINT_GROUP == "rollout_workers.metric_providers"
    provider = provider_for(plugin_run().spec.metrics[0], ProviderDeps(metric_plugins=registry))
    assert isinstance(provider, PluginProvider)
