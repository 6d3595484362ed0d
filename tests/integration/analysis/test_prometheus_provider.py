"""The prometheus provider against a local server speaking `/api/v1/query` with canned JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from rollout_workers.analysis.providers import ProviderDeps
from rollout_workers.analysis.providers.prometheus import PrometheusProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, stub_evaluator


def success(result_type: str, result: Any, **extra: Any) -> tuple[int, dict[str, Any]]:
    return 200, {
        "status": "success",
        "data": {"resultType": result_type, "result": result},
        **extra,
    }


def vector(*values: str) -> list[dict[str, Any]]:
    return [{"metric": {"i": str(i)}, "value": [1714564800, v]} for i, v in enumerate(values)]


CANNED: dict[str, tuple[int, Any]] = {
    "scalar10": success("scalar", [1714564800, "10"]),
    "vector": success("vector", vector("10", "11")),
    "empty": success("vector", []),
    "nan": success("scalar", [1714564800, "NaN"]),
    "matrix": success("matrix", [{"metric": {}, "values": [[1714564800, "1"]]}]),
    "range": success(
        "matrix",
        [
            {"metric": {"pod": "a"}, "values": [[1714561200, "11"], [1714564800, "12"]]},
            {"metric": {"pod": "b"}, "values": [[1714561200, "13"], [1714564800, "14"]]},
        ],
    ),
    "warned": success("scalar", [1714564800, "10"], warnings=["w1", "w2"]),
    "bad": (400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}),
    "down": (503, "Service Unavailable"),
}


class Handler(BaseHTTPRequestHandler):
    server: PromServer

    def log_message(self, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.seen.append((url.path, params, dict(self.headers)))
        status, payload = CANNED.get(
            params.get("query", ""),
            (400, {"status": "error", "errorType": "bad_data", "error": "unknown"}),
        )
        if url.path == "/prefix/api/v1/query_range":
            status, payload = CANNED["range"]
        elif url.path != "/prefix/api/v1/query":
            status, payload = 404, "404 page not found"
        body = json.dumps(payload).encode() if isinstance(payload, dict) else str(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class PromServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, dict[str, str], dict[str, str]]] = []

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/prefix"


@pytest.fixture
def prom() -> Iterator[PromServer]:
    srv = PromServer()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(10)


def measure(
    spec: dict[str, Any], *, deps: ProviderDeps | None = None, **conditions: str
) -> Measurement:
    metric = Metric.from_dict({"name": "prom", "provider": {"prometheus": spec}, **conditions})
    run = AnalysisRun.from_dict(
        {
            "metadata": {"name": "r", "namespace": "ns", "uid": "u"},
            "spec": {"metrics": [metric.to_dict()]},
        }
    )
    provider = PrometheusProvider(deps or ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    return provider.run(run, metric, NOW)


CASES = [
    ("scalar", "scalar10", "result == 10", "result != 10", P.SUCCESSFUL, "10", None),
    ("vector", "vector", "10 in result", "len(result) != 2", P.SUCCESSFUL, "[10,11]", None),
    ("empty vector", "empty", "len(result) == 0", "", P.SUCCESSFUL, "[]", None),
    ("NaN", "nan", "result >= 0.9", "result < 0.9", P.INCONCLUSIVE, "NaN", None),
    # Argo's processResponse flattens a matrix, whatever the query.
    ("matrix", "matrix", "true", "", P.SUCCESSFUL, "[1]", None),
    ("API error", "bad", "true", "", P.ERROR, None, "bad_data: parse error at char 4"),
    ("server down", "down", "true", "", P.ERROR, None, "server_error: server error: 503"),
]


@pytest.mark.parametrize("case", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_queries(prom: PromServer, case: tuple[str, str, str, P, str | None, str | None]) -> None:
    query, success, failure, phase, value, message = case
    m = measure(
        {"address": prom.address, "query": query},
        successCondition=success,
        failureCondition=failure,
    )
    assert (m.phase, m.value, m.message) == (phase, value, message)
    assert m.started_at == m.finished_at == NOW_TEXT


def test_request_carries_query_time_and_headers(prom: PromServer) -> None:
    m = measure(
        {
            "address": prom.address + "/",
            "query": "scalar10",
            "headers": [{"key": "X-Scope-OrgID", "value": "team"}],
        },
        successCondition="true",
    )
    assert m.phase == P.SUCCESSFUL
    path, params, headers = prom.seen[0]
    assert path == "/prefix/api/v1/query"
    assert params == {"query": "scalar10", "time": "1714564800"}
    assert headers["X-Scope-OrgID"] == "team"


def test_warnings_go_to_metadata(prom: PromServer) -> None:
    m = measure({"address": prom.address, "query": "warned"}, successCondition="result == 10")
    assert m.metadata == {"warnings": '"w1", "w2"'}


def test_default_address(prom: PromServer) -> None:
    deps = ProviderDeps(clock=lambda: NOW, prometheus_address=prom.address)
    m = measure({"query": "scalar10"}, deps=deps, successCondition="result == 10")
    assert (m.phase, m.value) == (P.SUCCESSFUL, "10")


def test_wrong_path_is_a_client_error(prom: PromServer) -> None:
    m = measure(
        {"address": prom.address.removesuffix("/prefix"), "query": "scalar10"},
        successCondition="true",
    )
    assert (m.phase, m.message) == (P.ERROR, "client_error: client error: 404")


def test_range_query_sends_start_end_and_step(prom: PromServer) -> None:
    """TestRunSuccessfullyWithRangeQuery, against a server: the window is evaluated at the
    measurement's time and sent as Unix seconds; the matrix is flattened."""
    m = measure(
        {
            "address": prom.address,
            "query": 'sum(rate(http_requests_total{code=~"5.."}[5m]))',
            "rangeQuery": {"start": 'now() - duration("1h")', "end": "now()", "step": "1m"},
        },
        successCondition="true",
    )
    path, params, _ = prom.seen[0]
    assert path == "/prefix/api/v1/query_range"
    assert params == {
        "query": 'sum(rate(http_requests_total{code=~"5.."}[5m]))',
        "start": "1714561200",
        "end": "1714564800",
        "step": "60",
    }
    assert (m.phase, m.value) == (P.SUCCESSFUL, "[11,12,13,14]")
