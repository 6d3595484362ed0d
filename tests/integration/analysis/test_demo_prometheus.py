"""The demo Prometheus over HTTP, with series derived from a real (embedded) API server's
ReplicaSets, measured by the real prometheus and web providers and the real condition
evaluator, exactly as the AnalysisRun controller measures deploy/examples/' templates
(Prometheus, and Datadog through the server's Datadog-compatible API)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demoprometheus.series import Rule
from demoprometheus.server import DemoPrometheus, Store, cluster_source
from devcluster.server import run_in_thread
from rollout_workers.analysis.providers import ProviderDeps
from rollout_workers.analysis.providers.datadog import DatadogProvider
from rollout_workers.analysis.providers.prometheus import PrometheusProvider
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from rollout_workers.kube import manifests
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.resources import REPLICASETS
from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.registry import send
from rollout_workers.settings import Settings
from tests.support.metricapis import FakeSecrets
from tests.unit.analysis.providers.stubs import NOW

NS = "metrics"
QUERY = 'demo_success_rate{app="web",rollouts_pod_template_hash="%s"}'


def replicaset(name: str, image: str) -> dict[str, Any]:
    labels = {"app": "web", "rollouts-pod-template-hash": name}
    return {
        "metadata": {"name": f"web-{name}", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    cluster = run_in_thread(ready_delay=0.1)
    kubeconfig = cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")
    settings = Settings(kubeconfig=Path(kubeconfig))
    client = Kube(api_client(settings), settings.kube)
    manifests.ensure_namespace(client, NS)
    for name, image in (("good", "demo:green"), ("bad", "demo:flaky-yellow"), ("own", "demo:x")):
        client.create(REPLICASETS, NS, replicaset(name, image))
    deadline = time.monotonic() + 30
    while any(
        not (rs.get("status") or {}).get("availableReplicas")
        for rs in client.list(REPLICASETS, namespace=NS)[0]
    ):
        assert time.monotonic() < deadline, "the ReplicaSets never became available"
        time.sleep(0.05)
    yield client
    cluster.stop()


@pytest.fixture
def server(kube: Kube) -> Iterator[DemoPrometheus]:
    srv = DemoPrometheus(store=Store(cluster_source(kube, [Rule("*:x", 0.9)], NS)))
    thread = srv.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(10)


def measure(provider: dict[str, Any], deps: ProviderDeps, **conditions: str) -> Measurement:
    metric = Metric.from_dict({"name": "m", "provider": provider, **conditions})
    run = AnalysisRun.from_dict(
        {"metadata": {"name": "r", "namespace": NS}, "spec": {"metrics": [metric.to_dict()]}}
    )
    kind = PrometheusProvider if "prometheus" in provider else WebProvider
    return kind(deps).run(run, metric, NOW)  # the real sandboxed evaluator


def prometheus(server: DemoPrometheus, query: str) -> Measurement:
    deps = ProviderDeps(prometheus_address=server.url)  # as `rollouts up` sets it
    return measure(
        {"prometheus": {"query": query}},
        deps,
        successCondition="result[0] >= 0.95",
        failureLimit="0",
    )


def test_prometheus_provider_measures_each_version(server: DemoPrometheus) -> None:
    good, bad = prometheus(server, QUERY % "good"), prometheus(server, QUERY % "bad")
    assert (good.phase, good.value) == (P.SUCCESSFUL, "[0.99]")
    assert (bad.phase, bad.value) == (P.FAILED, "[0.6]")
    own = prometheus(server, QUERY % "own")
    assert own.value == "[0.9]"  # a --success-rate rule before the defaults


def test_prometheus_provider_reports_what_the_server_cannot_answer(server: DemoPrometheus) -> None:
    m = prometheus(server, "rate(demo_success_rate[5m])")
    assert m.phase == P.ERROR
    assert m.message is not None
    assert m.message.startswith('bad_data: 1:1: parse error: function or aggregation "rate"')
    none = prometheus(server, QUERY % "gone")
    assert none.phase == P.ERROR  # an empty vector has no result[0]


def test_web_provider_with_json_path(server: DemoPrometheus) -> None:
    url = f"{server.url}/metrics/demo_error_rate?app=web&rollouts_pod_template_hash="
    deps = ProviderDeps()
    ok = measure({"web": {"url": url + "good", "jsonPath": "{$.value}"}}, deps,
                 successCondition="result <= 0.05")  # fmt: skip
    assert (ok.phase, ok.value) == (P.SUCCESSFUL, "0.01")
    bad = measure({"web": {"url": url + "bad", "jsonPath": "{$.value}"}}, deps,
                  successCondition="result <= 0.05")  # fmt: skip
    assert (bad.phase, bad.value) == (P.FAILED, "0.4")
    both = measure({"web": {"url": f"{server.url}/metrics/demo_error_rate?app=web"}}, deps)
    assert (both.phase, both.message) == (P.ERROR, "received non 2xx response code: 400")


def http(method: str, url: str, body: bytes | None = None, **headers: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status, data = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, data = err.code, err.read()
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode()


def test_hand_set_series_over_http(server: DemoPrometheus) -> None:
    where = f"{server.url}/metrics/demo_success_rate?app=web&rollouts_pod_template_hash=bad"
    assert http("PUT", where, b'{"value": 0.98}')[0] == 200
    assert prometheus(server, QUERY % "bad").phase == P.SUCCESSFUL
    form = urllib.parse.urlencode({"query": QUERY % "bad"}).encode()
    status, body = http("POST", f"{server.url}/api/v1/query", form,
                        **{"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert (status, body["data"]["result"][0]["value"][1]) == (200, "0.98")
    status, text = http("GET", f"{server.url}/metrics")
    assert status == 200
    assert 'demo_success_rate{app="web",image="demo:flaky-yellow",namespace="metrics"' in text
    assert http("DELETE", where)[0] == 200
    assert prometheus(server, QUERY % "bad").phase == P.FAILED
    assert http("GET", f"{server.url}/nowhere")[0] == 404


def test_webhook_notifications_are_kept_and_listed(server: DemoPrometheus) -> None:
    """The local stack's webhook target: what the webhook sender sends is listed at /hooks."""
    service = Service("demo", "webhook", {"url": f"{server.url}/hooks/demo"})
    send(service, Notification(message="Rollout web has been completed."), "", SendContext())
    with urllib.request.urlopen(f"{server.url}/hooks", timeout=5) as answer:
        (hook,) = json.loads(answer.read())
    assert (hook["method"], hook["path"], hook["body"]) == (
        "GET", "/hooks/demo", "Rollout web has been completed."
    )  # fmt: skip


def datadog(server: DemoPrometheus, spec: dict[str, Any]) -> Measurement:
    """The datadog provider with the Secret the demo creates: the server as its address."""
    secret = {"address": server.url, "api-key": "demo", "app-key": "demo"}
    deps = ProviderDeps(namespace="argo-rollouts", secrets=FakeSecrets({
        ("argo-rollouts", "datadog"): secret}))  # fmt: skip
    metric = Metric.from_dict({"name": "m", "provider": {"datadog": spec},
                               "successCondition": "default(result, 0) >= 0.95"})  # fmt: skip
    run = AnalysisRun.from_dict(
        {"metadata": {"name": "r", "namespace": NS}, "spec": {"metrics": [metric.to_dict()]}}
    )
    return DatadogProvider(deps).run(run, metric, NOW)


DD_QUERY = "avg:demo.success_rate{app:web,rollouts_pod_template_hash:%s}"


def test_datadog_provider_measures_each_version_through_both_apis(server: DemoPrometheus) -> None:
    for spec in ({"query": DD_QUERY % "good"},
                 {"apiVersion": "v2", "query": DD_QUERY % "good"},
                 {"apiVersion": "v2", "queries": {"a": DD_QUERY % "good", "b": DD_QUERY % "bad"},
                  "formula": "(a + b) / 2 + 0.2"}):  # fmt: skip
        good = datadog(server, spec)
        assert good.phase == P.SUCCESSFUL, (spec, good.message)
    assert datadog(server, {"query": DD_QUERY % "good"}).value == "0.99"
    bad = datadog(server, {"apiVersion": "v2", "query": DD_QUERY % "bad"})
    assert (bad.phase, bad.value) == (P.FAILED, "0.6")
    every = datadog(server, {"query": "max:demo.success_rate{app:web}"})
    assert every.value == "0.99"
    none = datadog(server, {"query": DD_QUERY % "gone"})
    assert (none.phase, none.value) == (P.FAILED, "[]")  # no data: default(result, 0)


def test_datadog_requests_need_keys_and_a_query_the_server_reads(server: DemoPrometheus) -> None:
    status, body = http("GET", f"{server.url}/api/v1/query?query=x&from=1&to=2", **{
        "DD-API-KEY": "k"})  # fmt: skip
    assert (status, body) == (403, {"errors": ["Forbidden"]})
    m = datadog(server, {"query": "rate(demo.success_rate)"})
    assert m.phase == P.ERROR
    assert m.message == (
        'received non 2xx response code: 400 {"errors": ["Error parsing query: unable to parse '
        'rate(demo.success_rate)"]}'
    )
    status, body = http("GET", f"{server.url}/api/v1/query?query=up")  # no key: Prometheus'
    assert (status, body["status"]) == (200, "success")
