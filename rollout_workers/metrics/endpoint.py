"""The `/metrics` HTTP endpoint (Argo's port 8090), and the pool-wide exposition it serves.

Only the leader watcher answers with the pool-wide series: every watcher replica reads the same
Redis, so two endpoints both serving them would double every sum in Prometheus. A standby
answers with its own process metrics only (`process_*`, `python_info`), so a ServiceMonitor can
scrape every replica and still count the pool once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis
from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import Collector

from rollout_workers.metrics.collector import PoolCollector, exposition

log = logging.getLogger(__name__)

PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_PROCESS: list[Collector] = [
    ProcessCollector(registry=None),
    PlatformCollector(registry=None),
]


def pool_exposition(client: redis.Redis, *, prefix: str, prune: bool = False) -> bytes:
    """The whole pool's series, read from Redis now (what `rollouts metrics` prints; the
    leader also prunes the series of deleted objects)."""
    return exposition([PoolCollector(client, prefix=prefix, prune=prune)])


def process_exposition() -> bytes:
    return exposition(_PROCESS)


class MetricsEndpoint:
    """Serves `render()` at /metrics on a background thread."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes]) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != PATH:
                    self.send_error(404, f"not found; metrics are at {PATH}")
                    return
                try:
                    body = endpoint.render()
                except redis.RedisError as err:
                    log.warning("metrics scrape failed: %s", err)
                    self.send_error(503, f"Redis unavailable: {err}")
                    return
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.render = render
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])

    def start(self) -> MetricsEndpoint:
        threading.Thread(target=self.httpd.serve_forever, name="metrics", daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
