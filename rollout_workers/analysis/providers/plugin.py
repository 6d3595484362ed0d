"""Metric provider plugins: a metric's `provider.plugin: {<name>: <config>}` measured by code
outside the controller.

Argo Rollouts runs each metric provider plugin as a separate binary over RPC (its
RpcMetricProvider: Run, Resume, Terminate, GarbageCollect, Type, GetMetadata), listed in the
`argo-rollouts-config` ConfigMap's `metricProviderPlugins`. Here a plugin is a Python object
published under the `rollout_workers.metric_providers` entry point group and enabled by name in
settings (`plugins.metric`, `ROLLOUTS_PLUGINS_METRIC`); see rollout_workers/plugins.py.

`MetricProviderPlugin` is what a plugin implements: Argo's calls, shaped as this project's
providers (analysis/providers/base.py) are, with the metric's plugin config handed over in a
`MetricContext`. The rules are the providers' rules:

- a call returns quickly: a measurement that takes a while comes back Running from `run` and is
  looked at again by `resume` on a later reconcile (a workqueue timer; set `resume_at` to say
  when), never by waiting;
- the measured system failing is an Error measurement with a message (a call that raises is
  one too, with the exception's text);
- time is `context.now`; the run and metric are copies (changing them changes nothing); the
  metric's `{{args.*}}` are already resolved.

`PluginProvider` adapts an enabled plugin to the `Provider` interface the analysis reconcile
drives. A metric naming a plugin that is not enabled is refused when its run starts (the run
ends Error with Argo's "not configured in configmap" message), not measured as an error again
and again.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from rollout_workers.api.analysis import AnalysisPhase, AnalysisRun, Measurement, Metric
from rollout_workers.objects import Obj
from rollout_workers.plugins import PluginKind, PluginLoadError, PluginNotEnabled, PluginRegistry
from rollout_workers.timefmt import format_time

ENTRY_POINT_GROUP = "rollout_workers.metric_providers"


@dataclass(frozen=True)
class MetricContext:
    """What one call is about: the run and the metric (copies, arguments resolved), the
    plugin's name and its config (`provider.plugin[name]`), and the time of the reconcile."""

    run: AnalysisRun
    metric: Metric
    name: str
    config: Obj
    now: dt.datetime


@runtime_checkable
class MetricProviderPlugin(Protocol):
    """A metric provider plugin (Argo's RpcMetricProvider)."""

    def run(self, context: MetricContext) -> Measurement:
        """Start a measurement: a completed one, or a Running one to `resume` later."""
        ...

    def resume(self, context: MetricContext, measurement: Measurement) -> Measurement:
        """Look at a Running measurement again; return it unchanged while it still runs."""
        ...

    def terminate(self, context: MetricContext, measurement: Measurement) -> Measurement:
        """Stop a Running measurement because the run is terminating."""
        ...

    def garbage_collect(self, context: MetricContext, limit: int) -> None:
        """Delete what older measurements left behind, keeping the newest `limit`."""
        ...

    def type(self) -> str:
        """The provider's type name (Argo's Type)."""
        ...

    def metadata(self, metric: Metric, config: Obj) -> dict[str, str]:
        """What to store in the metric result's metadata when it is first created (Argo's
        GetMetadata)."""
        ...


METRIC_PLUGINS = PluginKind(
    noun="metric provider plugin",
    group=ENTRY_POINT_GROUP,
    setting="ROLLOUTS_PLUGINS_METRIC",
    protocol=MetricProviderPlugin,
    # Argo's chain of wrapped errors: NewProvider, NewRpcPlugin, GetMetricPlugin,
    # startPluginSystem, down to the ConfigMap lookup.
    prefix=(
        "failed to create plugin: unable to get metric plugin: unable to start plugin system: "
    ),
)


class UnknownMetricPlugin(PluginNotEnabled):
    """A metric names a provider plugin that is not enabled (Argo: not in the ConfigMap)."""

    kind = METRIC_PLUGINS


@dataclass
class MetricPluginRegistry(PluginRegistry[MetricProviderPlugin]):
    """The enabled metric provider plugins of this process, loaded lazily by name."""

    KIND: ClassVar[PluginKind] = METRIC_PLUGINS
    NOT_ENABLED: ClassVar[type[PluginNotEnabled]] = UnknownMetricPlugin
    LOAD_ERROR: ClassVar[type[PluginLoadError]] = PluginLoadError


def plugin_entry(metric: Metric) -> tuple[str, Obj] | None:
    """The plugin a metric names and its config (validation allows exactly one), or None."""
    for name, config in (metric.provider.plugin or {}).items():
        return str(name), dict(config) if isinstance(config, dict) else {}
    return None


class PluginProvider:
    """An enabled plugin as a `Provider` for one metric."""

    def __init__(
        self,
        name: str,
        config: Obj,
        plugin: MetricProviderPlugin,
        *,
        clock: Callable[[], dt.datetime],
    ) -> None:
        self.name, self.config, self.plugin, self.clock = name, config, plugin, clock

    def _context(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> MetricContext:
        return MetricContext(
            run=run.model_copy(deep=True),
            metric=metric.model_copy(deep=True),
            name=self.name,
            config=copy.deepcopy(self.config),
            now=now,
        )

    def _checked(
        self, answer: object, *, started: Measurement | None, now: dt.datetime
    ) -> Measurement:
        """The plugin's answer, or an Error measurement saying why it is not one."""
        if isinstance(answer, Measurement) and answer.phase in set(AnalysisPhase):
            return answer
        base = started or Measurement(phase=AnalysisPhase.ERROR, started_at=format_time(now))
        return base.model_copy(
            update={
                "phase": AnalysisPhase.ERROR,
                "message": f"metric provider plugin {self.name} returned no measurement: "
                f"{answer!r}",
                "finished_at": base.finished_at or format_time(now),
            }
        )

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        answer = self.plugin.run(self._context(run, metric, now))
        return self._checked(answer, started=None, now=now)

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        answer = self.plugin.resume(self._context(run, metric, now), measurement.model_copy())
        return self._checked(answer, started=measurement, now=now)

    def terminate(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        answer = self.plugin.terminate(self._context(run, metric, now), measurement.model_copy())
        return self._checked(answer, started=measurement, now=now)

    def garbage_collect(self, run: AnalysisRun, metric: Metric, limit: int) -> None:
        self.plugin.garbage_collect(self._context(run, metric, self.clock()), limit)

    def type(self) -> str:
        return self.plugin.type()

    def metadata(self, metric: Metric) -> dict[str, str]:
        found = self.plugin.metadata(metric.model_copy(deep=True), copy.deepcopy(self.config))
        return {str(k): str(v) for k, v in (found or {}).items()}
