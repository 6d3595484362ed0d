"""The API server's connection pool taken once from the client's pool manager (kube/client.py)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest
import urllib3

from rollout_workers.kube.client import _Endpoint


class _Recorder(http.server.BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.paths.append(self.path)
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.paths = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _get(endpoint: _Endpoint, path: str) -> int:
    response = endpoint.urlopen("GET", path, preload_content=False)
    response.read()
    response.release_conn()
    return response.status


def test_requests_go_to_the_host_under_its_path(server: str) -> None:
    endpoint = _Endpoint(urllib3.PoolManager(), server + "/k8s/clusters/c-1/")
    assert _get(endpoint, "/api/v1/namespaces?limit=1") == 200
    assert _Recorder.paths == ["/k8s/clusters/c-1/api/v1/namespaces?limit=1"]


def test_a_pool_the_manager_closed_is_taken_again(server: str) -> None:
    manager = urllib3.PoolManager()
    endpoint = _Endpoint(manager, server)
    assert _get(endpoint, "/a") == 200
    manager.clear()  # closes its pools
    assert _get(endpoint, "/b") == 200
    assert _Recorder.paths == ["/a", "/b"]


def test_through_a_proxy_the_manager_sends_every_request(server: str) -> None:
    # The recorder stands in for the proxy: it is sent the absolute URL.
    endpoint = _Endpoint(urllib3.ProxyManager(server), "http://api.example:6443")
    assert _get(endpoint, "/version") == 200
    assert _Recorder.paths == ["http://api.example:6443/version"]
