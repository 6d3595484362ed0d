"""Which provider measures a metric (Argo Rollouts' `ProviderFactory.NewProvider`)."""

from __future__ import annotations

from rollout_workers.analysis.providers.base import Provider, ProviderDeps, UnknownProvider
from rollout_workers.analysis.providers.cloudwatch import CloudWatchProvider
from rollout_workers.analysis.providers.datadog import DatadogProvider
from rollout_workers.analysis.providers.evaluate import Evaluator
from rollout_workers.analysis.providers.graphite import GraphiteProvider
from rollout_workers.analysis.providers.influxdb import InfluxdbProvider
from rollout_workers.analysis.providers.job import JobProvider
from rollout_workers.analysis.providers.kayenta import KayentaProvider
from rollout_workers.analysis.providers.newrelic import NewRelicProvider
from rollout_workers.analysis.providers.plugin import PluginProvider, plugin_entry
from rollout_workers.analysis.providers.prometheus import PrometheusProvider
from rollout_workers.analysis.providers.skywalking import SkyWalkingProvider
from rollout_workers.analysis.providers.wavefront import WavefrontProvider
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import Metric
from rollout_workers.plugins import PluginNotEnabled


def provider_for(
    metric: Metric, deps: ProviderDeps, *, evaluator: Evaluator | None = None
) -> Provider:
    """The provider of `metric`; raises `UnknownProvider` when it names none this project
    implements (Argo's message: "no valid provider in metric 'x'") or a plugin that is not
    enabled (Argo's "... plugin NAME not configured in configmap"). Configuration errors of a
    known provider (a bad address, a negative timeout) are not raised: they come back as Error
    measurements from `run`, which is where Argo's controller ends up putting them too; so does
    an enabled plugin whose code cannot be loaded (`PluginLoadError`, raised here)."""
    provider = metric.provider
    # Argo's order of precedence when several are set.
    if provider.prometheus is not None:
        return PrometheusProvider(deps, evaluator=evaluator)
    if provider.job is not None:
        return JobProvider.from_deps(deps)
    if provider.kayenta is not None:
        return KayentaProvider(deps)
    if provider.web is not None:
        return WebProvider(deps, evaluator=evaluator)
    if provider.datadog is not None:
        return DatadogProvider(deps, evaluator=evaluator)
    if provider.wavefront is not None:
        return WavefrontProvider(deps, evaluator=evaluator)
    if provider.new_relic is not None:
        return NewRelicProvider(deps, evaluator=evaluator)
    if provider.cloud_watch is not None:
        return CloudWatchProvider(deps, evaluator=evaluator)
    if provider.graphite is not None:
        return GraphiteProvider(deps, evaluator=evaluator)
    if provider.influxdb is not None:
        return InfluxdbProvider(deps, evaluator=evaluator)
    if provider.skywalking is not None:
        return SkyWalkingProvider(deps, evaluator=evaluator)
    entry = plugin_entry(metric)
    if entry is not None:
        name, config = entry
        try:
            plugin = deps.metric_plugins.resolve(name)
        except PluginNotEnabled as err:
            raise UnknownProvider(str(err)) from None
        return PluginProvider(name, config, plugin, clock=deps.clock)
    # Iterating a model yields its extra (unmodelled) fields too; name them as the spec does.
    fields = type(provider).model_fields
    named = [
        (fields[name].alias or name) if name in fields else name
        for name, value in provider
        if value is not None
    ]
    if named:
        raise UnknownProvider(
            f"no valid provider in metric '{metric.name}': "
            f"provider {', '.join(sorted(named))} is not supported"
        )
    raise UnknownProvider(f"no valid provider in metric '{metric.name}'")
