"""An HTTP server on 127.0.0.1 that records every request it receives: the stand-in for a
webhook endpoint, an incoming-webhook URL (Teams, Google Chat, Mattermost...) or a service's
API in notification tests.

Each request is answered by `respond(request)` (default: 200 with an empty JSON object); tests
set it to answer as the real service does, or to fail. `requests` lists what arrived, in order;
`wait_for(n)` polls until at least `n` have.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without the query
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.body.decode())


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)

    @classmethod
    def json(cls, status: int, value: Any, *headers: tuple[str, str]) -> Answer:
        return cls(
            status, json.dumps(value).encode(), (("Content-Type", "application/json"), *headers)
        )


class Receiver:
    def __init__(self, respond: Callable[[Request], Answer] | None = None) -> None:
        self.respond: Callable[[Request], Answer] = respond or (lambda _: Answer())
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers=dict(self.headers.items()),
                    body=self.rfile.read(length) if length else b"",
                )
                with receiver._lock:
                    receiver.requests.append(request)
                answer = receiver.respond(request)
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def received(self) -> list[Request]:
        with self._lock:
            return list(self.requests)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Request]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.received()
            if len(got) >= count:
                return got
            time.sleep(0.02)
        raise AssertionError(f"{len(self.received())} requests arrived, expected {count}")
