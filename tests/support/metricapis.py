"""Stand-ins for the HTTP APIs of Datadog, New Relic's NerdGraph, Graphite and Wavefront, on
127.0.0.1, for the metric providers' tests.

Each server checks a request as the real service would before answering it: the credentials
(Datadog's `DD-API-KEY` and `DD-APPLICATION-KEY`, NerdGraph's `Api-Key`, Wavefront's bearer
token), the query and the time window (against `now`, the measurement time the test uses), the
request body's shape (Datadog's `scalar_request`, the GraphQL query and its variables). A
request that fails a check is answered as the service answers it (403 or 401 for bad
credentials, 400 for a malformed request) and the reason is appended to `problems`, which a
test asserts is empty. A request that passes is answered with `answer` (status and JSON or raw
bytes), which each test sets to a response shape from the service's documentation.

`MetricAPI(tls=True)` serves HTTPS with tests/support/tls's self-signed certificate (Wavefront
is only reached over HTTPS); `trusting_pool()` is a urllib3 pool that trusts it.
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import urllib3

from rollout_workers.analysis.providers.base import SecretKeyMissing
from rollout_workers.kube.errors import NotFound

TLS = Path(__file__).parent / "tls"
DD_API_KEY = "0123456789abcdef0123456789abcdef"
DD_APP_KEY = "0123456789abcdef0123456789abcdef01234567"
NR_API_KEY = "NRAK-ABCDEFG01234"
NR_ACCOUNT = 12345
WF_TOKEN = "wf-token-1"
AGGREGATORS = {"avg", "min", "max", "sum", "last", "percentile", "mean", "l2norm", "area"}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Expect:
    """What a well-formed request carries, set by each test."""

    now: int = 0
    """The measurement's time, Unix seconds."""
    interval: int = 300
    """Datadog: the window's length, seconds."""
    aggregator: str = "last"
    queries: dict[str, str] = field(default_factory=dict)
    """Datadog v2: the named queries (v1: `{"query": q}`); NerdGraph: `{"query": q}`."""
    formula: str = ""
    nrql_timeout: int = 5
    graphite: dict[str, list[str]] = field(default_factory=dict)
    """Graphite: the query parameters besides `format=json`."""


class MetricAPI(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *, tls: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tls = tls
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(TLS / "self-signed.crt", TLS / "self-signed.key")
            self.socket = context.wrap_socket(self.socket, server_side=True)
        self.expect = Expect()
        self.answer: tuple[int, Any] = (200, {})
        self.seen: list[Seen] = []
        self.problems: list[str] = []
        self.delay = threading.Event()
        """Set: requests hang until it is cleared (or 5 s pass), to test timeouts."""

    @property
    def address(self) -> str:
        """`127.0.0.1:<port>`."""
        return f"127.0.0.1:{self.server_address[1]}"

    def url(self, path: str = "") -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}{path}"

    def start(self) -> MetricAPI:
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        self.delay.clear()
        self.shutdown()
        self.server_close()


class FakeSecrets:
    """A `SecretReader` over `{(namespace, name): {key: value}}`, failing as the real one does:
    NotFound for an absent Secret, SecretKeyMissing for an absent key."""

    def __init__(self, secrets: dict[tuple[str, str], dict[str, str]]) -> None:
        self.secrets = secrets
        self.reads: list[tuple[str, str, str]] = []

    def read(self, namespace: str, name: str, key: str) -> str:
        self.reads.append((namespace, name, key))
        if (namespace, name) not in self.secrets:
            raise NotFound(404, "NotFound", f'secrets "{name}" not found')
        data = self.secrets[(namespace, name)]
        if key not in data:
            raise SecretKeyMissing(f"key '{key}' does not exist in secret '{name}'")
        return data[key]


def trusting_pool() -> urllib3.PoolManager:
    """A pool that trusts the self-signed certificate of `MetricAPI(tls=True)`."""
    return urllib3.PoolManager(ca_certs=str(TLS / "self-signed.crt"))


class _Handler(BaseHTTPRequestHandler):
    server: MetricAPI

    def log_message(self, *args: Any) -> None:
        return None

    def _reply(self, status: int, payload: Any) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (a timeout test)

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        seen = Seen(
            self.command,
            parts.path,
            parse_qs(parts.query, keep_blank_values=True),
            dict(self.headers.items()),
            self.rfile.read(length) if length else b"",
        )
        self.server.seen.append(seen)
        if self.server.delay.is_set():
            for _ in range(100):
                if not self.server.delay.is_set():
                    break
                threading.Event().wait(0.05)
        route = {
            ("GET", "/api/v1/query"): _datadog_v1,
            ("POST", "/api/v2/query/scalar"): _datadog_v2,
            ("POST", "/graphql"): _nerdgraph,
            ("GET", "/render"): _graphite,
            ("GET", "/api/v2/chart/api"): _wavefront,
        }.get((self.command, parts.path))
        if route is None:
            self.server.problems.append(f"no such endpoint: {self.command} {parts.path}")
            self._reply(404, {"errors": ["Not Found"]})
            return
        rejection = route(seen, self.server.expect)
        if rejection is not None:
            status, problem, payload = rejection
            self.server.problems.append(problem)
            self._reply(status, payload)
            return
        self._reply(*self.server.answer)

    do_GET = do_POST = _handle


Rejection = tuple[int, str, Any] | None


def _one(seen: Seen, name: str) -> str | None:
    values = seen.query.get(name)
    return values[0] if values and len(values) == 1 else None


def _datadog_keys(seen: Seen) -> Rejection:
    # Datadog answers a request with wrong keys 403 {"errors": ["Forbidden"]}.
    if (seen.headers.get("DD-API-KEY"), seen.headers.get("DD-APPLICATION-KEY")) != (
        DD_API_KEY,
        DD_APP_KEY,
    ):
        return 403, f"wrong Datadog keys: {seen.headers}", {"errors": ["Forbidden"]}
    if seen.headers.get("Content-Type") != "application/json":
        return 400, "Content-Type is not application/json", {"errors": ["Bad Request"]}
    return None


def _datadog_v1(seen: Seen, expect: Expect) -> Rejection:
    """`GET /api/v1/query?from=<s>&to=<s>&query=<q>` (Datadog's "Query timeseries points")."""
    rejected = _datadog_keys(seen)
    if rejected is not None:
        return rejected
    window = (_one(seen, "from"), _one(seen, "to"))
    wanted = (str(expect.now - expect.interval), str(expect.now))
    if window != wanted:
        return 400, f"window {window} is not {wanted}", {"errors": ["invalid from/to"]}
    if _one(seen, "query") != expect.queries.get("query"):
        return 400, f"query {seen.query.get('query')}", {"errors": ["invalid query"]}
    return None


def _datadog_v2(seen: Seen, expect: Expect) -> Rejection:
    """`POST /api/v2/query/scalar` with a `scalar_request` (Datadog's "Query scalar data across
    multiple products"): times in milliseconds, every query a metrics query."""
    rejected = _datadog_keys(seen)
    if rejected is not None:
        return rejected
    try:
        data = seen.json()["data"]
        attributes = data["attributes"]
        queries = {q["name"]: q for q in attributes["queries"]}
        formulas = [f["formula"] for f in attributes.get("formulas") or []]
    except (ValueError, KeyError, TypeError) as err:
        return 400, f"not a scalar request: {err!r}", {"errors": ["malformed request"]}
    checks = [
        (data.get("type") == "scalar_request", f"type {data.get('type')}"),
        (
            (attributes["from"], attributes["to"])
            == ((expect.now - expect.interval) * 1000, expect.now * 1000),
            f"window {attributes['from']}..{attributes['to']}",
        ),
        (
            {k: q.get("query") for k, q in queries.items()} == expect.queries,
            f"queries {queries}",
        ),
        (
            all(q.get("data_source") == "metrics" for q in queries.values()),
            "data_source is not metrics",
        ),
        (
            all(q.get("aggregator") == expect.aggregator in AGGREGATORS for q in queries.values()),
            f"aggregators {[q.get('aggregator') for q in queries.values()]}",
        ),
        (formulas == ([expect.formula] if expect.formula else []), f"formulas {formulas}"),
    ]
    for ok, problem in checks:
        if not ok:
            return 400, problem, {"errors": [problem]}
    return None


def _nerdgraph(seen: Seen, expect: Expect) -> Rejection:
    """NerdGraph: `POST /graphql` with `{"query", "variables"}` and the user key in `Api-Key`;
    a bad key is answered as NerdGraph does, with a GraphQL error."""
    if seen.headers.get("Api-Key") != NR_API_KEY:
        error = {
            "message": "Invalid API key",
            "extensions": {"errorClass": "UNAUTHENTICATED", "error_code": "BAD_API_KEY"},
        }
        return 401, f"wrong Api-Key {seen.headers.get('Api-Key')}", {"errors": [error]}
    try:
        request = seen.json()
        query, variables = request["query"], request["variables"]
    except (ValueError, KeyError, TypeError) as err:
        return 400, f"not a GraphQL request: {err!r}", {"errors": [{"message": "bad request"}]}
    problem = ""
    if "nrql(query: $query, timeout: $timeout)" not in query or "$accountId: Int!" not in query:
        problem = f"not the NRQL query: {query}"
    elif variables != {
        "accountId": NR_ACCOUNT,
        "query": expect.queries.get("query"),
        "timeout": expect.nrql_timeout,
    }:
        problem = f"variables {variables}"
    if problem:
        return 200, problem, {"data": None, "errors": [{"message": problem}]}
    return None


def _graphite(seen: Seen, expect: Expect) -> Rejection:
    """Graphite's render API: `format=json` and the query's parameters."""
    params = {k: v for k, v in seen.query.items() if k != "format"}
    if seen.query.get("format") != ["json"] or params != expect.graphite:
        return 400, f"render parameters {seen.query}", b"Bad Request: invalid parameters"
    return None


def _wavefront(seen: Seen, expect: Expect) -> Rejection:
    """Wavefront's chart API: a bearer token, the point nearest `now` (`s` and `e` both `now`
    in milliseconds, one point, series outside the window included)."""
    if seen.headers.get("Authorization") != f"Bearer {WF_TOKEN}":
        return 401, f"wrong token {seen.headers.get('Authorization')}", {"message": "Unauthorized"}
    wanted = {
        "q": expect.queries.get("query"),
        "s": str(expect.now * 1000),
        "e": str(expect.now * 1000),
        "g": "s",
        "p": "1",
        "i": "true",
        "strict": "false",
    }
    got = {k: _one(seen, k) for k in wanted}
    if got != wanted:
        return 400, f"chart parameters {got} are not {wanted}", {"message": "bad query"}
    return None
