"""`insecure` of prometheus and web metrics against an HTTPS server on 127.0.0.1 whose
certificate is self-signed (tests/support/tls, made once with openssl, valid for 100 years):
without `insecure` the certificate is refused, with it the measurement is taken (Argo's
`insecure: true` sets InsecureSkipVerify)."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rollout_workers.analysis.providers import ProviderDeps
from rollout_workers.analysis.providers.prometheus import PrometheusProvider
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from tests.unit.analysis.providers.stubs import NOW, stub_evaluator

TLS = Path(__file__).parents[2] / "support" / "tls"
VECTOR = {
    "status": "success",
    "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, "10"]}]},
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        body = json.dumps(VECTOR if "/api/v1/query" in self.path else {"value": 10}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def https_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "self-signed.crt", TLS / "self-signed.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(10)


def measure(provider: str, spec: dict[str, Any]) -> Measurement:
    metric = Metric.from_dict(
        {"name": "m", "provider": {provider: spec}, "successCondition": "true"}
    )
    run = AnalysisRun.from_dict(
        {"metadata": {"name": "r", "namespace": "ns"}, "spec": {"metrics": [metric.to_dict()]}}
    )
    deps = ProviderDeps(clock=lambda: NOW)
    if provider == "prometheus":
        return PrometheusProvider(deps, evaluator=stub_evaluator).run(run, metric, NOW)
    return WebProvider(deps, evaluator=stub_evaluator).run(run, metric, NOW)


@pytest.mark.filterwarnings("error::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.parametrize(
    ("provider", "spec"),
    [
        pytest.param("prometheus", lambda url: {"address": url, "query": "up"}, id="prometheus"),
        pytest.param("web", lambda url: {"url": url + "/value", "jsonPath": "{$.value}"}, id="web"),
    ],
)
def test_insecure_skips_verifying_a_self_signed_certificate(
    https_url: str, provider: str, spec: Any
) -> None:
    refused = measure(provider, spec(https_url))
    assert refused.phase == P.ERROR
    assert "certificate" in (refused.message or "").lower(), refused.message
    taken = measure(provider, {**spec(https_url), "insecure": True})
    assert taken.phase == P.SUCCESSFUL, taken.message
