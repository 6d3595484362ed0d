"""Stand-ins for the metric services of the kayenta, influxdb and skywalking providers, and an
AWS emulator for cloudWatch: HTTP servers on 127.0.0.1 that speak each service's documented API,
check what they receive (credentials, parameters, the query's time window) and answer with the
documented shapes. Every one records what it received (`Receiver.requests`).

- `InfluxServer`: InfluxDB v2's `POST /api/v2/query?org=..` with `Authorization: Token ..` and
  a JSON body (`query`, `type: flux`, an annotated-CSV `dialect`); answers annotated CSV for the
  queries it knows, `{"code": "invalid", "message": "compilation failed: ..."}` (400) for
  others, `unauthorized` (401) for a wrong token and `not found` (404) for an unknown org.
- `SkyWalkingServer`: the OAP server's `POST /graphql` with `{"query", "variables":
  {"duration": {"start", "end", "step"}}}`; the duration must be minute times
  (`2024-05-01 1155`) and step `MINUTE`, else a GraphQL error. Answers `{"data": ...}`.
- `KayentaServer`: `GET /canaryConfig?application=..&configurationAccountName=..` (the configs of
  the application), `POST /canary/<config id>?application=..&metricsAccountName=..&
  configurationAccountName=..&storageAccountName=..` (checks the body's scopes and thresholds and
  starts an execution) and `GET /canary/<execution id>` (incomplete until `finish`).
- `moto_server()`: moto's ThreadedMotoServer (AWS API emulator) on a free loopback port.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.support.receiver import Answer, Receiver, Request


def _error(status: int, code: str, message: str) -> Answer:
    return Answer.json(status, {"code": code, "message": message})


# -- InfluxDB ----------------------------------------------------------------------------------

INFLUX_TOKEN = "ABCDEFG01234"
INFLUX_ORG = "test-org"

#: Argo's influxdb_test.go table (TestRunSuccessfully): two records of one table.
INFLUX_TWO_RECORDS = """\
#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string,string,string
#group,false,false,true,true,false,false,true,true,true,true
#default,_result,,,,,,,,,
,result,table,_start,_stop,_time,_value,_field,_measurement,a,b
,,0,2020-02-17T22:19:49.747562847Z,2020-02-18T22:19:49.747562847Z,2020-02-18T10:34:08.135814545Z,1.0,f,test,1,adsfasdf
,,0,2020-02-17T22:19:49.747562847Z,2020-02-18T22:19:49.747562847Z,2020-02-18T22:08:44.850214724Z,6.6,f,test,1,adsfasdf

"""


def influx_table(datatype: str, *values: str, tables: int = 1) -> str:
    """An annotated CSV answer with `values` as `_value` (of Flux type `datatype`), spread
    over `tables` tables."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["#datatype", "string", "long", "dateTime:RFC3339", datatype, "string"])
    writer.writerow(["#group", "false", "false", "false", "false", "true"])
    writer.writerow(["#default", "_result", "", "", "", ""])
    writer.writerow(["", "result", "table", "_time", "_value", "_field"])
    for index, value in enumerate(values):
        table = index * tables // max(len(values), 1)
        writer.writerow(["", "", str(table), f"2024-05-01T11:5{index % 10}:00Z", value, "f"])
    return out.getvalue() + "\n"


@dataclass
class InfluxServer:
    """InfluxDB's query API; `results` maps a Flux query to its annotated CSV answer."""

    results: dict[str, str] = field(default_factory=dict)
    token: str = INFLUX_TOKEN
    org: str = INFLUX_ORG

    def __post_init__(self) -> None:
        self.receiver = Receiver(self.respond)

    def respond(self, request: Request) -> Answer:
        if request.method != "POST" or request.path != "/api/v2/query":
            return _error(404, "not found", "path not found")
        if request.headers.get("Authorization") != f"Token {self.token}":
            return _error(401, "unauthorized", "unauthorized access")
        if request.query.get("org") != [self.org]:
            org = (request.query.get("org") or [""])[0]
            return _error(404, "not found", f'organization name "{org}" not found')
        body = request.json()
        dialect = body.get("dialect") or {}
        if body.get("type", "flux") != "flux" or not dialect.get("header", True):
            return _error(400, "invalid", f"unsupported query: {body}")
        if set(dialect.get("annotations") or []) != {"datatype", "group", "default"}:
            return _error(400, "invalid", f"expected the three CSV annotations: {dialect}")
        query = body.get("query")
        if query not in self.results:
            message = f"compilation failed: error at @1:1-1:4: undefined identifier {query}"
            return _error(400, "invalid", message)
        return Answer(200, self.results[query].encode(), (("Content-Type", "text/csv"),))

    def __enter__(self) -> InfluxServer:
        self.receiver.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.stop()

    def url(self) -> str:
        return self.receiver.url()


# -- SkyWalking --------------------------------------------------------------------------------

_MINUTE = re.compile(r"\d{4}-\d{2}-\d{2} \d{4}")


@dataclass
class SkyWalkingServer:
    """SkyWalking's GraphQL endpoint; `data` is what every valid query gets (as `data`)."""

    data: Any = None
    errors: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.receiver = Receiver(self.respond)

    def respond(self, request: Request) -> Answer:
        if request.method != "POST" or request.path != "/graphql":
            return Answer(404, b"404 page not found", (("Content-Type", "text/plain"),))
        if not request.headers.get("Content-Type", "").startswith("application/json"):
            return Answer.json(200, {"errors": [{"message": "expected a JSON body"}]})
        body = request.json()
        duration = (body.get("variables") or {}).get("duration") or {}
        problems = [
            f"{name} is not a minute time: {duration.get(name)!r}"
            for name in ("start", "end")
            if not _MINUTE.fullmatch(str(duration.get(name)))
        ]
        if duration.get("step") != "MINUTE":
            problems.append(f"step must be MINUTE, got {duration.get('step')!r}")
        if not body.get("query"):
            problems.append("no query")
        if problems:
            return Answer.json(200, {"errors": [{"message": "; ".join(problems)}]})
        if self.errors:
            return Answer.json(200, {"data": None, "errors": self.errors})
        return Answer.json(200, {"data": self.data})

    def __enter__(self) -> SkyWalkingServer:
        self.receiver.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.stop()

    def url(self) -> str:
        return self.receiver.url()


# -- Kayenta -----------------------------------------------------------------------------------

#: The canary configs of Argo's kayenta_test.go (configIdLookupResponse), all of "guestbook".
KAYENTA_CONFIGS = [
    ("69a6c352-7033-4ca1-858b-02497e5cc672", "ValidationCanaryConfigWF"),
    ("99d93685-4f70-4e8b-aa6d-6c47bdb4ab94", "ValidationCanaryConfigTest"),
    ("bf9795c0-170f-403e-bb7f-fef3f9a44d42", "ValidationCanaryConfigTest3"),
    ("872bb4d3-3309-48e6-9203-2a456a5c2ce7", "ValidationCanaryConfigTest2"),
]
KAYENTA_ACCOUNTS = {
    "metricsAccountName": "wavefront-prod",
    "configurationAccountName": "intuit-kayenta",
    "storageAccountName": "intuit-s3",
}
_SCOPE_FIELDS = {"scope", "location", "step", "start", "end"}


@dataclass
class KayentaServer:
    """Kayenta's canary API for application `guestbook` and the accounts of KAYENTA_ACCOUNTS.
    Executions stay incomplete until `finish(id, score)`; `lookup_status`/`start_status`/
    `read_status` make the three endpoints fail."""

    application: str = "guestbook"
    executions: dict[str, dict[str, Any]] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lookup_status: int = 200
    start_status: int = 200
    read_status: int = 200

    def __post_init__(self) -> None:
        self.receiver = Receiver(self.respond)
        self._lock = threading.Lock()

    def finish(self, execution_id: str, answer: dict[str, Any]) -> None:
        with self._lock:
            self.executions[execution_id] = answer

    def respond(self, request: Request) -> Answer:
        if request.method == "GET" and request.path == "/canaryConfig":
            return self._lookup(request)
        if request.method == "POST" and request.path.startswith("/canary/"):
            return self._start(request, request.path.removeprefix("/canary/"))
        if request.method == "GET" and request.path.startswith("/canary/"):
            return self._read(request.path.removeprefix("/canary/"))
        return Answer.json(404, {"error": "Not Found", "path": request.path})

    def _lookup(self, request: Request) -> Answer:
        if self.lookup_status != 200:
            return Answer.json(self.lookup_status, {"error": "lookup failed"})
        account = KAYENTA_ACCOUNTS["configurationAccountName"]
        if request.query.get("configurationAccountName") != [account]:
            return Answer.json(400, {"message": f"no configuration account {request.query}"})
        if request.query.get("application") != [self.application]:
            return Answer.json(200, [])
        return Answer.json(
            200,
            [
                {"id": id_, "name": name, "applications": [self.application]}
                for id_, name in KAYENTA_CONFIGS
            ],
        )

    def _start(self, request: Request, config_id: str) -> Answer:
        if self.start_status != 200:
            return Answer.json(self.start_status, {"error": "start failed"})
        if config_id not in {id_ for id_, _ in KAYENTA_CONFIGS}:
            return Answer.json(404, {"message": f"no canary config {config_id}"})
        expected = {"application": [self.application]}
        expected.update({k: [v] for k, v in KAYENTA_ACCOUNTS.items()})
        if request.query != expected:
            return Answer.json(400, {"message": f"wrong parameters {request.query}"})
        if not request.headers.get("Content-Type", "").startswith("application/json"):
            return Answer.json(415, {"message": "Content type not supported"})
        body = request.json()
        problem = _execution_request_problem(body)
        if problem:
            return Answer.json(400, {"message": problem})
        with self._lock:
            self.bodies.append(body)
            execution_id = f"01DS50WVHAWSTAQACJKB1VKD{len(self.executions):02d}"
            self.executions[execution_id] = {"complete": False}
        return Answer.json(200, {"canaryExecutionId": execution_id})

    def _read(self, execution_id: str) -> Answer:
        if self.read_status != 200:
            return Answer.json(self.read_status, {"error": "read failed"})
        with self._lock:
            answer = self.executions.get(execution_id)
        if answer is None:
            return Answer.json(404, {"message": f"no execution {execution_id}"})
        return Answer.json(200, answer)

    def __enter__(self) -> KayentaServer:
        self.receiver.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.stop()

    def url(self) -> str:
        return self.receiver.url()


def _execution_request_problem(body: Any) -> str:
    """Why a CanaryAnalysisExecutionRequest is malformed ("" when it is fine)."""
    if not isinstance(body, dict) or set(body) != {"scopes", "thresholds"}:
        return f"expected scopes and thresholds, got {body!r}"
    thresholds = body["thresholds"]
    if not isinstance(thresholds, dict) or set(thresholds) != {"pass", "marginal"}:
        return f"bad thresholds {thresholds!r}"
    for name, scope in body["scopes"].items():
        if set(scope) != {"controlScope", "experimentScope"}:
            return f"scope {name}: expected controlScope and experimentScope, got {scope!r}"
        for side in scope.values():
            if not set(side) <= _SCOPE_FIELDS or not {"scope", "location", "step"} <= set(side):
                return f"scope {name}: bad scope detail {side!r}"
    return ""


def canary_execution(score: float) -> dict[str, Any]:
    """A finished execution, as Kayenta's `GET /canary/<id>` answers it."""
    return {"complete": True, "result": {"judgeResult": {"score": {"score": score}}}}


# -- AWS ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's AWS emulator on a free loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def point_aws_at(monkeypatch: Any, endpoint: str, *, region: str, endpoint_variable: str) -> None:
    """The controller's AWS environment, and only it, pointed at a fresh emulator: moto reset,
    no profile or shared files, test credentials, `region`, and `endpoint_variable` (the
    service's AWS_ENDPOINT_URL_<SERVICE>) set to `endpoint`."""
    import urllib3

    urllib3.PoolManager().request("POST", f"{endpoint}/moto-api/reset")
    for name in ("AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", region)
    monkeypatch.setenv(endpoint_variable, endpoint)


@contextlib.contextmanager
def stalled_server() -> Iterator[str]:
    """A loopback port that accepts connections (the kernel completes the handshake) and never
    answers: a service that hangs. Yields its base URL."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
