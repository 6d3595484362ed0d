"""The web provider against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rollout_workers.analysis.providers import ProviderDeps, SecretError
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from tests.unit.analysis.providers.stubs import NOW, NOW_TEXT, stub_evaluator

METRICS_BODY = {"data": {"ok": True, "rate": 0.5}, "items": [{"v": 3}, {"v": 4}]}


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        return None

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.seen.append(("GET", self.path, dict(self.headers), b""))
        if self.path == "/metrics":
            self._reply(200, json.dumps(METRICS_BODY).encode())
        elif self.path == "/headers":
            self._reply(200, json.dumps({"auth": self.headers.get("Authorization")}).encode())
        elif self.path == "/slow":
            self.server.release.wait(10)  # the client gives up first; the test releases us
            self._reply(200, b"{}")
        elif self.path == "/text":
            self._reply(200, b"test: notJson", "text/plain")
        elif self.path.startswith("/status/"):
            self._reply(int(self.path.rsplit("/", 1)[1]), b'{"error": "nope"}')
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/metrics")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._reply(404, b"")

    def _write(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((method, self.path, dict(self.headers), body))
        answer = {
            "method": method,
            "body": body.decode(),
            "contentType": self.headers.get("Content-Type"),
        }
        self._reply(200, json.dumps(answer).encode())

    def do_POST(self) -> None:
        self._write("POST")

    def do_PUT(self) -> None:
        self._write("PUT")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    thread.join(10)


class FakeSecrets:
    def __init__(self, data: dict[tuple[str, str, str], str]) -> None:
        self.data = data

    def read(self, namespace: str, name: str, key: str) -> str:
        try:
            return self.data[(namespace, name, key)]
        except KeyError:
            raise SecretError(f"key '{key}' does not exist in secret '{name}'") from None


def measure(
    web: dict[str, Any], *, deps: ProviderDeps | None = None, **conditions: str
) -> Measurement:
    metric = Metric.from_dict({"name": "web", "provider": {"web": web}, **conditions})
    run = AnalysisRun.from_dict(
        {
            "metadata": {"name": "r", "namespace": "ns", "uid": "u"},
            "spec": {"metrics": [metric.to_dict()]},
        }
    )
    provider = WebProvider(deps or ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    return provider.run(run, metric, NOW)


def test_get_with_json_path(server: Server) -> None:
    m = measure(
        {"url": f"{server.url}/metrics", "jsonPath": "{$.data.ok}"},
        successCondition="result == true",
    )
    assert m.to_dict() == {
        "phase": "Successful",
        "value": "true",
        "startedAt": NOW_TEXT,
        "finishedAt": NOW_TEXT,
    }
    assert server.seen[0][:2] == ("GET", "/metrics")


GETS = [
    (
        "whole document",
        "{$}",
        '{"data":{"ok":true,"rate":0.5},"items":[{"v":3},{"v":4}]}',
        "true",
        P.SUCCESSFUL,
    ),
    ("number failing", "{$.data.rate}", "0.5", "result >= 0.9", P.FAILED),
    ("index", "{$.items[1].v}", "4", "result > 0", P.SUCCESSFUL),
    ("every element keeps the first, as Argo", "{$.items[*].v}", "3", "result > 0", P.SUCCESSFUL),
]


@pytest.mark.parametrize(
    ("path", "value", "success", "phase"), [c[1:] for c in GETS], ids=[c[0] for c in GETS]
)
def test_json_paths(server: Server, path: str, value: str, success: str, phase: P) -> None:
    m = measure({"url": f"{server.url}/metrics", "jsonPath": path}, successCondition=success)
    assert (m.phase, m.value) == (phase, value)


def test_json_path_without_match_is_an_error(server: Server) -> None:
    m = measure(
        {"url": f"{server.url}/metrics", "jsonPath": "{$.data.missing}"}, successCondition="true"
    )
    assert (m.phase, m.message) == (
        P.ERROR,
        "Could not find JSONPath in body: missing is not found",
    )


def test_post_json_body(server: Server) -> None:
    m = measure(
        {
            "url": f"{server.url}/echo",
            "method": "POST",
            "jsonBody": {"key": "value", "n": 1},
            "jsonPath": "{$}",
        },
    )
    assert m.phase == P.SUCCESSFUL
    assert json.loads(m.value or "") == {
        "method": "POST",
        "body": '{"key":"value","n":1}',
        "contentType": "application/json",
    }


def test_put_string_body(server: Server) -> None:
    m = measure(
        {"url": f"{server.url}/echo", "method": "PUT", "body": "plain", "jsonPath": "{$.body}"}
    )
    assert (m.phase, m.value) == (P.SUCCESSFUL, '"plain"')
    assert server.seen[0][0] == "PUT"


def test_headers_from_values_and_a_secret(server: Server) -> None:
    deps = ProviderDeps(
        clock=lambda: NOW, secrets=FakeSecrets({("ns", "creds", "token"): "Bearer s3cret"})
    )
    headers = [
        {"key": "X-Plain", "value": "v"},
        {
            "key": "Authorization",
            "value": "",
            "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}},
        },
    ]
    m = measure(
        {"url": f"{server.url}/headers", "headers": headers, "jsonPath": "{$.auth}"}, deps=deps
    )
    assert (m.phase, m.value) == (P.SUCCESSFUL, '"Bearer s3cret"')
    assert server.seen[0][2]["X-Plain"] == "v"


def test_missing_secret_key_is_an_error(server: Server) -> None:
    deps = ProviderDeps(clock=lambda: NOW, secrets=FakeSecrets({}))
    headers = [
        {"key": "A", "value": "", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope"}}}
    ]
    m = measure({"url": f"{server.url}/headers", "headers": headers}, deps=deps)
    assert (m.phase, m.message) == (P.ERROR, "key 'nope' does not exist in secret 'creds'")
    assert server.seen == []


def test_timeout(server: Server) -> None:
    m = measure({"url": f"{server.url}/slow", "timeoutSeconds": 1}, successCondition="true")
    assert m.phase == P.ERROR
    assert m.message == f'Get "{server.url}/slow": timeout after 1s (Client.Timeout exceeded)'


@pytest.mark.parametrize("status", [300, 404, 503])
def test_non_2xx_is_an_error(server: Server, status: int) -> None:
    m = measure({"url": f"{server.url}/status/{status}"}, successCondition="true")
    assert (m.phase, m.message, m.value) == (
        P.ERROR,
        f"received non 2xx response code: {status}",
        None,
    )


def test_non_json_body_is_successful_as_is(server: Server) -> None:
    m = measure({"url": f"{server.url}/text", "jsonPath": "{$.x}"}, successCondition="false")
    assert (m.phase, m.value) == (P.SUCCESSFUL, "test: notJson")


def test_redirects_are_followed(server: Server) -> None:
    m = measure({"url": f"{server.url}/redirect", "jsonPath": "{$.data.rate}"})
    assert (m.phase, m.value) == (P.SUCCESSFUL, "0.5")


def test_connection_refused_is_an_error() -> None:
    srv = Server()  # bound, never served, then closed: nobody listens on the port
    url = srv.url
    srv.server_close()
    m = measure({"url": f"{url}/metrics"}, successCondition="true")
    assert m.phase == P.ERROR
    assert (m.message or "").startswith(f'Get "{url}/metrics": ')
