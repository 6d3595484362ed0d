"""Which provider a metric gets, and the error for the ones this project does not measure."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.analysis.providers import ProviderDeps, UnknownProvider, provider_for
from rollout_workers.kube.writer import RecordingWriter
from tests.unit.analysis.providers.stubs import metric
from tests.unit.analysis.providers.test_job import RecordedJobs

WRITER = RecordingWriter()
DEPS = ProviderDeps(writer=WRITER, jobs=RecordedJobs(WRITER))

KNOWN = [
    ("web", {"web": {"url": "http://x"}}, "Web"),
    ("prometheus", {"prometheus": {"query": "up"}}, "Prometheus"),
    ("job", {"job": {"spec": {}}}, "Job"),
    (
        "prometheus before web, as Argo",
        {"web": {"url": "http://x"}, "prometheus": {}},
        "Prometheus",
    ),
    ("datadog", {"datadog": {"query": "q"}}, "Datadog"),
    ("wavefront", {"wavefront": {"query": "q"}}, "Wavefront"),
    ("newRelic", {"newRelic": {"query": "q"}}, "NewRelic"),
    ("graphite", {"graphite": {"query": "q"}}, "Graphite"),
    (
        "web, datadog, wavefront, newRelic, graphite: Argo's order",
        {"graphite": {}, "newRelic": {"query": "q"}, "wavefront": {}, "datadog": {}},
        "Datadog",
    ),
    (
        "wavefront before newRelic",
        {"graphite": {}, "newRelic": {"query": "q"}, "wavefront": {}},
        "Wavefront",
    ),
    ("newRelic before graphite", {"graphite": {}, "newRelic": {"query": "q"}}, "NewRelic"),
    ("web before datadog", {"datadog": {}, "web": {"url": "http://x"}}, "Web"),
    ("kayenta", {"kayenta": {}}, "Kayenta"),
    ("cloudWatch", {"cloudWatch": {"metricDataQueries": []}}, "CloudWatch"),
    ("influxdb", {"influxdb": {"query": "q"}}, "Influxdb"),
    ("skywalking", {"skywalking": {"query": "q"}}, "skywalking"),
    ("kayenta before web, as Argo", {"web": {"url": "http://x"}, "kayenta": {}}, "Kayenta"),
    ("web before cloudWatch, as Argo", {"cloudWatch": {}, "web": {"url": "http://x"}}, "Web"),
    ("cloudWatch before influxdb, as Argo", {"influxdb": {}, "cloudWatch": {}}, "CloudWatch"),
    ("influxdb before skywalking, as Argo", {"skywalking": {}, "influxdb": {}}, "Influxdb"),
]


@pytest.mark.parametrize(("provider", "kind"), [c[1:] for c in KNOWN], ids=[c[0] for c in KNOWN])
def test_known(provider: dict[str, Any], kind: str) -> None:
    assert provider_for(metric("x", provider=provider), DEPS).type() == kind


UNKNOWN = [
    ("none", {}, "no valid provider in metric 'x'"),
    (
        "a plugin that is not enabled (Argo's NewProvider error)",
        {"plugin": {"argoproj-labs/sample": {}}},
        "failed to create plugin: unable to get metric plugin: unable to start plugin system: "
        "unable to find plugin (argoproj-labs/sample): plugin argoproj-labs/sample not "
        "configured in configmap (here: an entry point named argoproj-labs/sample in the "
        "rollout_workers.metric_providers group, enabled by listing the name in "
        "ROLLOUTS_PLUGINS_METRIC)",
    ),
    (
        "unmodelled",
        {"opsmx": {}},
        "no valid provider in metric 'x': provider opsmx is not supported",
    ),
]


@pytest.mark.parametrize(
    ("provider", "message"), [c[1:] for c in UNKNOWN], ids=[c[0] for c in UNKNOWN]
)
def test_unknown(provider: dict[str, Any], message: str) -> None:
    with pytest.raises(UnknownProvider) as err:
        provider_for(metric("x", provider=provider), DEPS)
    assert str(err.value) == message


def test_job_metrics_need_a_writer_and_a_reader() -> None:
    with pytest.raises(ValueError, match="writer"):
        provider_for(metric("x", provider={"job": {"spec": {}}}), ProviderDeps())
