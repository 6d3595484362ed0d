"""Liveness and readiness endpoints of the long-running processes (watcher, worker, beat).

Each process serves `GET /healthz` (liveness: restart me if this fails) and `GET /readyz`
(readiness) on `health.port` (8080, as Argo Rollouts' healthz port; 0 turns it off). The answer
is 200 or 503 with one line saying why. A check is a function of in-process state (heartbeats
stamped by the process' own loops) plus, at most, one bounded Redis round trip; no probe calls
Celery's remote control, which is slow and loads the broker.

A port that cannot be bound is logged and the process keeps running: the kubelet's probes then
fail, which is where an operator looks, and a second process on a laptop does not die of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Status:
    ok: bool
    reason: str

    @classmethod
    def good(cls, reason: str) -> Status:
        return cls(True, reason)

    @classmethod
    def bad(cls, reason: str) -> Status:
        return cls(False, reason)


Check = Callable[[], Status]


class Heartbeat:
    """The monotonic time a loop last made progress; read by the probe thread."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._last = clock()

    def beat(self) -> None:
        self._last = self._clock()

    def age(self) -> float:
        return max(0.0, self._clock() - self._last)


def guarded(check: Check) -> Check:
    """A check that raises is a failing check, not a crashed probe thread."""

    def run() -> Status:
        try:
            return check()
        except Exception as err:
            return Status.bad(f"check failed: {type(err).__name__}: {err}")

    return run


class HealthServer:
    """`/healthz` and `/readyz` from a daemon thread."""

    def __init__(self, *, address: str, port: int, live: Check, ready: Check) -> None:
        self.address, self.requested_port = address, port
        self._checks = {"/healthz": guarded(live), "/readyz": guarded(ready)}
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else 0

    def start(self) -> HealthServer:
        checks = self._checks

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                check = checks.get(self.path.split("?", 1)[0])
                if check is None:
                    code, body = 404, "not found: /healthz or /readyz"
                else:
                    status = check()
                    code, body = (200 if status.ok else 503), status.reason
                data = (body.replace("\n", " ") + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the log

        try:
            self._server = ThreadingHTTPServer((self.address, self.requested_port), Handler)
        except OSError as err:
            log.error(
                "health endpoints off: cannot listen on %s:%d: %s",
                self.address,
                self.requested_port,
                err,
            )
            return self
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="health endpoints", daemon=True
        ).start()
        log.info("health endpoints on http://%s:%d/healthz and /readyz", self.address, self.port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def serve(*, address: str, port: int, live: Check, ready: Check) -> HealthServer | None:
    """Start the endpoints unless the port is 0."""
    if not port:
        return None
    return HealthServer(address=address, port=port, live=live, ready=ready).start()
