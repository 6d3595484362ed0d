"""Metric providers: how one measurement of a metric is taken (web, prometheus, job, kayenta,
cloudWatch, influxdb, skywalking).

`provider_for(metric, deps)` picks the provider; every provider implements `Provider`
(base.py). `evaluate.calculate_phase` turns a measured value into a phase by the metric's
success and failure conditions.
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
