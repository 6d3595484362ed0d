"""A web metrics endpoint for analysis tests: GET /<key>?... answers, as JSON, the value set
for `key`, or else the key itself read as a number (so a template can point at a fixed value),
and records the query string it was asked with."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class MetricsServer:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.queries: list[dict[str, list[str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                server.queries.append(parse_qs(parts.query))
                key = parts.path.strip("/")
                data = json.dumps(server.values[key] if key in server.values else float(key))
                body = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> MetricsServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
