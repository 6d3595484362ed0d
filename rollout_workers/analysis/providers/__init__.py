"""Metric providers: how one measurement of a metric is taken (prometheus, job, kayenta, web,
datadog, wavefront, newRelic, cloudWatch, graphite, influxdb, skywalking).

`provider_for(metric, deps)` picks the provider; every provider implements `Provider`
(base.py). `evaluate.calculate_phase` turns a measured value into a phase by the metric's
success and failure conditions. The providers that measure in one request (datadog,
wavefront, newRelic, cloudWatch, graphite, influxdb, skywalking) share `InstantProvider`
(instant.py); kayenta, which starts a judgement and reads it on later reconciles, shares only
`BaseProvider` (base.py). A metric's `provider.plugin` is measured by an enabled metric
provider plugin (plugin.py: the protocol a plugin implements, and its registry).
"""

from rollout_workers.analysis.providers.base import (
    JobReader,
    KubeSecretReader,
    Provider,
    ProviderDeps,
    SecretError,
    SecretReader,
    UnknownProvider,
)
from rollout_workers.analysis.providers.factory import provider_for

__all__ = [
    "JobReader",
    "KubeSecretReader",
    "Provider",
    "ProviderDeps",
    "SecretError",
    "SecretReader",
    "UnknownProvider",
    "provider_for",
]
