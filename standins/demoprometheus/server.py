"""The demo Prometheus' HTTP API, and where it records itself in the state dir.

- `GET/POST /api/v1/query` (`query`, `time`): Prometheus' instant query, `{"status": "success",
  "data": {"resultType": "vector", "result": [{"metric": {...}, "value": [<time>, "<value>"]}]}}`;
  a query outside the supported subset is `400 {"status": "error", "errorType": "bad_data"}`.
- `GET /metrics/<name>?<label>=<value>...`: the one series with that name and those labels,
  `{"value": 0.99, "labels": {...}}`; 404 if there is none, 400 if several (add labels).
- `PUT /metrics/<name>?<label>=<value>...` with `{"value": <number>}` sets a value by hand (it
  overrides the derived series whose labels include those); `DELETE` removes it again.
- `GET /metrics`: every series in Prometheus' text exposition format. `GET /-/healthy`: 200.
- Datadog's `GET /api/v1/query` (told from Prometheus' by its `DD-API-KEY` header) and
  `POST /api/v2/query/scalar` over the same series (`datadog.py`), for the `datadog` provider.
- `<any method> /hooks/<name>`: a webhook receiver for notifications (the local stack's
  `service.webhook` target): it keeps the last 1,000 requests; `GET /hooks` lists them, oldest
  first, as `[{"time", "method", "path", "body"}]`.

The answers are computed by pure functions (`instant_query`, `web_get`, `web_put`) over the
series of the moment; the handler only moves bytes. Series derived from the cluster are read
afresh on each request (a ReplicaSet list), so they follow the rollouts without a watch.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import math
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from demoprometheus import datadog
from demoprometheus.query import (
    Number,
    QueryError,
    parse,
    valid_label_name,
    valid_metric_name,
)
from demoprometheus.series import (
    Rule,
    Series,
    exposition,
    format_value,
    merge,
    replicaset_series,
)
from rollout_workers import staterecords
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import KubeError
from rollout_workers.kube.resources import REPLICASETS
from rollout_workers.objects import Obj

log = logging.getLogger(__name__)

RECORD = "demo-prometheus.json"

#: Where derived series come from; raises `SourceUnavailable` when it cannot say.
Source = Callable[[], list[Series]]
Reply = tuple[int, Obj]


class SourceUnavailable(RuntimeError):
    pass


class Store:
    """The hand-set series, and the source of the derived ones."""

    def __init__(self, derive: Source | None = None) -> None:
        self.derive = derive
        self._manual: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
        self._lock = threading.Lock()

    def put(self, series: Series) -> None:
        with self._lock:
            self._manual[series.identity] = series

    def delete(self, name: str, labels: Mapping[str, str]) -> bool:
        with self._lock:
            return self._manual.pop(Series.of(name, labels, 0).identity, None) is not None

    def all(self) -> list[Series]:
        derived = self.derive() if self.derive is not None else []
        with self._lock:
            manual = list(self._manual.values())
        return merge(derived, manual)


def cluster_source(kube: Kube, rules: Sequence[Rule], namespace: str | None = None) -> Source:
    """Series derived from the cluster's ReplicaSets (all namespaces unless one is given)."""

    def derive() -> list[Series]:
        try:
            items, _ = kube.list(REPLICASETS, namespace=namespace)
        except KubeError as err:
            raise SourceUnavailable(f"cannot list ReplicaSets: {err}") from None
        return replicaset_series(items, rules)

    return derive


# -- the answers --------------------------------------------------------------------------------


def prometheus_error(status: int, error_type: str, message: str) -> Reply:
    return status, {"status": "error", "errorType": error_type, "error": message}


def instant_query(params: Mapping[str, str], *, store: Store, now: float) -> Reply:
    """Prometheus' `/api/v1/query` over the store's series."""
    at = now
    if params.get("time"):
        try:
            at = parse_time(params["time"])
        except ValueError:
            return prometheus_error(
                400,
                "bad_data",
                f'invalid parameter "time": cannot parse "{params["time"]}" to a valid timestamp',
            )
    try:
        expr = parse(params.get("query", ""))
    except QueryError as err:
        return prometheus_error(400, "bad_data", str(err))
    stamp: float | int = int(at) if at == int(at) else round(at, 3)
    if isinstance(expr, Number):
        data: Obj = {"resultType": "scalar", "result": [stamp, format_value(expr.value)]}
        return 200, {"status": "success", "data": data}
    try:
        matched = expr.select(store.all())
    except SourceUnavailable as err:
        return prometheus_error(503, "unavailable", str(err))
    result = [{"metric": s.label_map(), "value": [stamp, format_value(s.value)]} for s in matched]
    return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}


def parse_time(text: str) -> float:
    """Unix seconds or RFC 3339, as Prometheus accepts them; raises ValueError."""
    try:
        value = float(text)
    except ValueError:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            raise ValueError(text) from None
        return parsed.timestamp()
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _selection(name: str, params: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The labels named in the query string, or an error message."""
    if not valid_metric_name(name):
        return {}, f"invalid metric name {name!r}"
    bad = [k for k in params if not valid_label_name(k)]
    if bad:
        return {}, f"invalid label name {bad[0]!r}"
    return dict(params), None


def _describe(name: str, labels: Mapping[str, str]) -> str:
    inner = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def web_get(name: str, params: Mapping[str, str], *, store: Store) -> Reply:
    """The one series called `name` whose labels include `params`."""
    labels, problem = _selection(name, params)
    if problem:
        return 400, {"error": problem}
    try:
        everything = store.all()
    except SourceUnavailable as err:
        return 503, {"error": str(err)}
    matched = [
        s
        for s in everything
        if s.name == name and all(dict(s.labels).get(k, "") == v for k, v in labels.items())
    ]
    if not matched:
        return 404, {"error": f"no series {_describe(name, labels)}"}
    if len(matched) > 1:
        return 400, {
            "error": f"{len(matched)} series match {_describe(name, labels)}; "
            "add labels to choose one",
            "series": [dict(s.labels) for s in matched],
        }
    return 200, {"value": matched[0].value, "labels": dict(matched[0].labels)}


def web_put(name: str, params: Mapping[str, str], body: bytes, *, store: Store) -> Reply:
    """Set the series `name{params}` to the body's `value`."""
    labels, problem = _selection(name, params)
    if problem:
        return 400, {"error": problem}
    try:
        payload = json.loads(body or b"null")
    except ValueError:
        payload = None
    value = payload.get("value") if isinstance(payload, dict) else None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(float(value))
    ):
        return 400, {"error": 'expected a JSON body {"value": <finite number>}'}
    store.put(Series.of(name, labels, float(value)))
    return 200, {"value": float(value), "labels": labels}


def web_delete(name: str, params: Mapping[str, str], *, store: Store) -> Reply:
    labels, problem = _selection(name, params)
    if problem:
        return 400, {"error": problem}
    if not store.delete(name, labels):
        return 404, {"error": f"no hand-set series {_describe(name, labels)}"}
    return 200, {"deleted": _describe(name, labels)}


# -- HTTP ---------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    server: DemoPrometheus
    protocol_version = "HTTP/1.1"  # keep-alive, as the providers' connection pools expect

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    def _params(self, extra: bytes = b"") -> dict[str, str]:
        query = urlsplit(self.path).query
        params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        if extra:  # a form body wins over the URL, as Go's Request.FormValue
            form = parse_qs(extra.decode(errors="replace"), keep_blank_values=True)
            params.update({k: v[-1] for k, v in form.items()})
        return params

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, reply: Reply) -> None:
        status, payload = reply
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _route(self, method: str) -> None:
        body = self._body()
        path = urlsplit(self.path).path
        store = self.server.store
        if path in ("/api/v1/query", "/api/v2/query/scalar") and datadog.API_KEY_HEADER in (
            self.headers
        ):
            self._json(self._datadog(path, method, body))
        elif path == "/api/v1/query" and method in ("GET", "POST"):
            form = method == "POST" and self.headers.get_content_type() == (
                "application/x-www-form-urlencoded"
            )
            params = self._params(body if form else b"")
            self._json(instant_query(params, store=store, now=self.server.clock()))
        elif path == "/metrics" and method == "GET":
            try:
                text = exposition(store.all())
            except SourceUnavailable as err:
                self._json((503, {"error": str(err)}))
                return
            self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path.startswith("/metrics/") and method in ("GET", "PUT", "DELETE"):
            name, params = path.removeprefix("/metrics/"), self._params()
            if method == "GET":
                self._json(web_get(name, params, store=store))
            elif method == "PUT":
                self._json(web_put(name, params, body, store=store))
            else:
                self._json(web_delete(name, params, store=store))
        elif path.startswith("/hooks/"):
            self.server.hooks.append(
                {"time": self.server.clock(), "method": method, "path": path,
                 "body": body.decode(errors="replace")}
            )  # fmt: skip
            self._json((200, {}))
        elif path == "/hooks" and method == "GET":
            self._send(200, json.dumps(list(self.server.hooks)).encode(), "application/json")
        elif path == "/-/healthy" and method == "GET":
            self._send(200, b"Demo Prometheus is Healthy.\n", "text/plain; charset=utf-8")
        else:
            self._json((404, {"error": f"no such endpoint: {method} {path}"}))

    def _datadog(self, path: str, method: str, body: bytes) -> Reply:
        if not datadog.authorized({k.upper(): v for k, v in self.headers.items()}):
            return datadog.errors(403, "Forbidden")
        try:
            series = self.server.store.all()
        except SourceUnavailable as err:
            return datadog.errors(503, str(err))
        if path == "/api/v1/query" and method == "GET":
            return datadog.v1_query(self._params(), series=series)
        if path == "/api/v2/query/scalar" and method == "POST":
            try:
                request = json.loads(body or b"null")
            except ValueError:
                return datadog.errors(400, "Invalid JSON body")
            return datadog.v2_scalar(request, series=series)
        return datadog.errors(405, f"{method} is not allowed on {path}")

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")


#: Webhook requests the server keeps (the newest).
HOOKS_KEPT = 1000


class DemoPrometheus(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        store: Store,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.clock = clock
        self.hooks: collections.deque[dict[str, Any]] = collections.deque(maxlen=HOOKS_KEPT)
        super().__init__((host, port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> threading.Thread:
        """Serve on a daemon thread; `shutdown()` then `server_close()` stop it."""
        thread = threading.Thread(target=self.serve_forever, args=(0.1,), daemon=True)
        thread.start()
        return thread


# -- the record in the state dir ----------------------------------------------------------------


def record(state_dir: Path, url: str) -> Path:
    """Write this process's URL and pid where `rollouts up` and others look for them."""
    return staterecords.write(state_dir, RECORD, url=url)


def unrecord(state_dir: Path) -> None:
    staterecords.remove(state_dir, RECORD)


def healthy(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/healthy", timeout=timeout) as response:
            return int(response.status) == 200
    except OSError:
        return False


def recorded_url(state_dir: Path) -> str | None:
    """The URL of the demo Prometheus recorded in `state_dir`, if it is alive and answers."""
    url = staterecords.live_url(state_dir, RECORD)
    return url if url and healthy(url) else None
