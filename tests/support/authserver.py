"""A metrics server on 127.0.0.1 behind authentication, which checks what it receives: basic
credentials, a bearer token from its own OAuth2 token endpoint (which checks the
client-credentials grant), and SigV4 signatures, recomputed on the server with botocore from the
received request and fixed test credentials. It answers Prometheus' `/api/v1/query` (a vector)
and `/api/v1/query_range` (a matrix, once start, end and step check out), and `.../web` for web
metrics. The first part of the path says which authentication it expects: `aps-workspaces`
(SigV4, as Amazon Managed Prometheus), `basic`, `bearer`, or anything else for none."""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ACCESS_TOKEN = "MyAccessToken"
CLIENT_ID, CLIENT_SECRET = "some Id", "my/Secret"
BASIC = ("myuser", "mypassword")
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = (
    "AKIDEXAMPLE",
    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "tok",
)
REGION = "eu-west-1"
VECTOR = {
    "status": "success",
    "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, "10"]}]},
}
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<sig>[0-9a-f]+)"
)


def sigv4_problem(method: str, host: str, path: str, headers: dict[str, str]) -> str:
    """Why the request's SigV4 signature is wrong ("" when it is right): the signature is
    computed again with botocore over the received request."""
    match = _AUTH.fullmatch(headers.get("Authorization", ""))
    if match is None:
        return f"no SigV4 Authorization header: {headers.get('Authorization')!r}"
    if (match["key"], match["region"], match["service"]) != (ACCESS_KEY, REGION, "aps"):
        return f"wrong credential scope: {match.group(0)}"
    if headers.get("X-Amz-Security-Token") != SESSION_TOKEN:
        return "the session token is not sent"
    signed = match["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return f"host and x-amz-date must be signed, not only {signed}"
    lowered = {k.lower(): v for k, v in headers.items()}
    request = AWSRequest(
        method=method,
        url=f"http://{host}{path}",
        headers={name: lowered[name] for name in signed if name != "host"},
        data=b"",
    )
    request.context["timestamp"] = lowered["x-amz-date"]
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "aps", REGION)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return "" if expected == match["sig"] else f"signature mismatch for:\n{canonical}"


def range_answer(query: dict[str, list[str]]) -> tuple[int, Any]:
    """A matrix of one series, 10 then 11, once start < end and step are given."""
    try:
        start, end = float(query["start"][0]), float(query["end"][0])
        step = query["step"][0]
    except (KeyError, ValueError):
        return 400, {"status": "error", "errorType": "bad_data", "error": "start/end/step"}
    if not start < end or not step:
        return 400, {"status": "error", "errorType": "bad_data", "error": "empty range"}
    series = {"metric": {}, "values": [[start, "10"], [end, "11"]]}
    return 200, {"status": "success", "data": {"resultType": "matrix", "result": [series]}}


class Handler(BaseHTTPRequestHandler):
    server: AuthServer

    def log_message(self, *args: Any) -> None:
        return None

    def reply(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """The OAuth2 token endpoint; the path says how it behaves."""
        form = {
            k: v[0]
            for k, v in parse_qs(
                self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            ).items()
        }
        self.server.token_requests.append((self.path, dict(self.headers), form))
        auth = self.headers.get("Authorization", "")
        in_header = ""
        if auth.startswith("Basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            in_header = f"{unquote_plus(user)}:{unquote_plus(password)}"
        in_form = f"{form.get('client_id')}:{form.get('client_secret')}"
        client_ok = f"{CLIENT_ID}:{CLIENT_SECRET}" in (in_header, in_form)
        grant_ok = (
            self.headers.get("Content-Type") == "application/x-www-form-urlencoded"
            and form.get("grant_type") == "client_credentials"
            and form.get("scope") in (None, "myFirstScope mySecondScope")
        )
        if self.path == "/ko":
            self.reply(401, b"")
        elif self.path == "/error":
            self.reply(400, {"error": "invalid_client", "error_description": "bad secret"})
        elif not (grant_ok and client_ok):
            self.reply(401, {"error": "unauthorized_client"})
        elif self.path == "/params-only" and in_header:
            # Like Google's: the credentials must be in the form, so the header try fails.
            self.reply(401, {"error": "invalid_client"})
        elif self.path == "/form":
            body = f"access_token={ACCESS_TOKEN}&token_type=bearer&expires_in=3599".encode()
            self.reply(200, body, "text/plain; charset=utf-8")
        else:
            self.reply(
                200, {"token_type": "Bearer", "expires_in": 3599, "access_token": ACCESS_TOKEN}
            )

    def do_GET(self) -> None:
        """Prometheus (and a web metric) behind the authentication the path's first part names."""
        url = urlsplit(self.path)
        self.server.seen.append((url.path, dict(self.headers)))
        mode = url.path.split("/")[1]
        auth = self.headers.get("Authorization", "")
        if mode == "aps-workspaces":
            problem = sigv4_problem("GET", self.headers["Host"], self.path, dict(self.headers))
        elif mode == "basic":
            token = base64.b64encode(":".join(BASIC).encode()).decode()
            problem = "" if auth == f"Basic {token}" else f"not basic auth: {auth!r}"
        elif mode == "bearer":
            problem = "" if auth == f"Bearer {ACCESS_TOKEN}" else f"no bearer token: {auth!r}"
        else:
            problem = ""
        self.server.problems.append(problem)
        if problem:
            self.reply(403 if mode == "aps-workspaces" else 401, {"error": problem})
        elif url.path.endswith("/web"):
            self.reply(200, {"ok": True})
        elif url.path.endswith("/api/v1/query_range"):
            self.reply(*range_answer(parse_qs(url.query)))
        else:
            self.reply(200, VECTOR)


class AuthServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.problems: list[str] = []
        self.token_requests: list[tuple[str, dict[str, str], dict[str, str]]] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def start(self) -> AuthServer:
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


#: The environment under which the server's SigV4 check passes, and nothing else botocore could
#: find is used (no config files, no instance metadata).
def aws_environment(config_dir: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": SESSION_TOKEN,
        "AWS_CONFIG_FILE": f"{config_dir}/config",
        "AWS_SHARED_CREDENTIALS_FILE": f"{config_dir}/credentials",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
