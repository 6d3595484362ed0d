"""`authentication` of prometheus and web metrics against a real server on 127.0.0.1 that checks
what it receives: basic credentials, a bearer token from its own OAuth2 token endpoint (which
checks the client-credentials grant), and SigV4 signatures, recomputed on the server with botocore
from the received request and the test's fixed credentials. Cases after Argo's prometheus_test.go
(TestRunSuccessfulWithOAuth, TestRunErrorOAuthFailure, TestRunSuccessfulWithBasicAuth,
TestRunErrorBasicAuthFailure) and webmetric_test.go (the OAuth2 cases)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rollout_workers.analysis.providers import ProviderDeps
from rollout_workers.analysis.providers.prometheus import PrometheusProvider
from rollout_workers.analysis.providers.web import WebProvider
from rollout_workers.api.analysis import AnalysisPhase as P
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric
from tests.support.authserver import (
    ACCESS_KEY,
    ACCESS_TOKEN,
    BASIC,
    CLIENT_ID,
    CLIENT_SECRET,
    REGION,
    SECRET_KEY,
    SESSION_TOKEN,
    AuthServer,
)
from tests.unit.analysis.providers.stubs import NOW, stub_evaluator


@pytest.fixture
def server() -> Iterator[AuthServer]:
    srv = AuthServer()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(10)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fixed test credentials in the environment, and nothing else botocore could find."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


def run_of(metric: Metric) -> AnalysisRun:
    return AnalysisRun.from_dict(
        {"metadata": {"name": "r", "namespace": "ns"}, "spec": {"metrics": [metric.to_dict()]}}
    )


def prometheus(spec: dict[str, Any]) -> Measurement:
    metric = Metric.from_dict(
        {
            "name": "m",
            "provider": {"prometheus": {"query": "up", **spec}},
            "successCondition": "true",
        }
    )
    provider = PrometheusProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    return provider.run(run_of(metric), metric, NOW)


def web(spec: dict[str, Any]) -> Measurement:
    metric = Metric.from_dict({"name": "m", "provider": {"web": spec}, "successCondition": "true"})
    provider = WebProvider(ProviderDeps(clock=lambda: NOW), evaluator=stub_evaluator)
    return provider.run(run_of(metric), metric, NOW)


def oauth(server: AuthServer, path: str, *, scopes: bool = True) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tokenUrl": server.url(path),
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
    }
    if scopes:
        config["scopes"] = ["myFirstScope", "mySecondScope"]
    return {"oauth2": config}


# -- prometheus ------------------------------------------------------------------------------------

# (id, address path, authentication, phase, message start)
PROMETHEUS = [
    ("TestRunSuccessfulWithOAuth", "/bearer", lambda s: oauth(s, "/ok"), P.SUCCESSFUL, None),
    ("scopes are optional", "/bearer", lambda s: oauth(s, "/ok", scopes=False), P.SUCCESSFUL, None),
    (
        "client credentials in the form when the header is refused",
        "/bearer",
        lambda s: oauth(s, "/params-only"),
        P.SUCCESSFUL,
        None,
    ),
    ("token answered as a form", "/bearer", lambda s: oauth(s, "/form"), P.SUCCESSFUL, None),
    (
        "TestRunErrorOAuthFailure",
        "/bearer",
        lambda s: oauth(s, "/ko"),
        P.ERROR,
        "oauth2: cannot fetch token: 401 Unauthorized\nResponse: ",
    ),
    (
        "token endpoint error",
        "/bearer",
        lambda s: oauth(s, "/error"),
        P.ERROR,
        'oauth2: "invalid_client" "bad secret"',
    ),
    (
        "TestRunSuccessfulWithBasicAuth",
        "/basic",
        lambda s: {"basicAuth": {"username": BASIC[0], "password": BASIC[1]}},
        P.SUCCESSFUL,
        None,
    ),
    (
        "TestRunErrorBasicAuthFailure",
        "/basic",
        lambda s: {"basicAuth": {"username": "myuser", "password": "wrong"}},
        P.ERROR,
        "client_error: client error: 401",
    ),
    (
        "no authentication: the server's 401",
        "/bearer",
        lambda s: {},
        P.ERROR,
        "client_error: client error: 401",
    ),
]


@pytest.mark.parametrize(
    ("path", "auth", "phase", "message"),
    [c[1:] for c in PROMETHEUS],
    ids=[c[0] for c in PROMETHEUS],
)
def test_prometheus_authentication(
    server: AuthServer, path: str, auth: Any, phase: P, message: str | None
) -> None:
    m = prometheus({"address": server.url(path), "authentication": auth(server)})
    assert m.phase == phase, m.message
    if message is None:
        assert m.value == "[10]" and m.message is None
    else:
        assert message in (m.message or "")


def test_token_error_names_the_query(server: AuthServer) -> None:
    m = prometheus({"address": server.url("/bearer"), "authentication": oauth(server, "/ko")})
    assert (m.message or "").startswith(f'Get "{server.url("/bearer/api/v1/query")}?query=up')


def test_sigv4_signs_amazon_managed_prometheus(server: AuthServer, aws_env: None) -> None:
    spec = {
        "address": server.url("/aps-workspaces/ws-1"),
        "query": 'sum(rate(x{a="b c"}[5m])) / 2',
        "authentication": {"sigv4": {"region": REGION}},
        "headers": [{"key": "X-Scope", "value": "team"}],
    }
    m = prometheus(spec)
    assert server.problems == [""], server.problems
    assert (m.phase, m.value) == (P.SUCCESSFUL, "[10]")
    path, headers = server.seen[0]
    assert path == "/aps-workspaces/ws-1/api/v1/query"
    assert headers["X-Scope"] == "team"  # set after signing, as Argo's headers round tripper


def test_a_wrong_secret_is_refused_by_the_server(
    server: AuthServer, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server really checks: a signature made with another secret does not pass."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1"),
            "authentication": {"sigv4": {"region": REGION}},
        }
    )
    assert server.problems[0].startswith("signature mismatch")
    assert (m.phase, m.message) == (P.ERROR, "client_error: client error: 403")


def test_sigv4_signs_a_range_query(server: AuthServer, aws_env: None) -> None:
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1/"),
            "authentication": {"sigv4": {"region": REGION}},
            "rangeQuery": {"start": 'now() - duration("1h")', "end": "now()", "step": "5m"},
        }
    )
    assert server.problems == [""], server.problems
    assert m.phase == P.SUCCESSFUL
    assert server.seen[0][0] == "/aps-workspaces/ws-1/api/v1/query_range"


def test_sigv4_wins_over_oauth2(server: AuthServer, aws_env: None) -> None:
    """The SigV4 layer sits under the OAuth2 one in Argo's chain: its Authorization wins."""
    auth = {**oauth(server, "/ok"), "sigv4": {"region": REGION}}
    m = prometheus({"address": server.url("/aps-workspaces/ws-1"), "authentication": auth})
    assert server.problems == [""], server.problems
    assert m.phase == P.SUCCESSFUL
    assert len(server.token_requests) == 1


def test_sigv4_only_for_amazon_managed_prometheus(server: AuthServer, aws_env: None) -> None:
    """Argo skips SigV4 for an address without "aps-workspaces"; the 401 says so."""
    m = prometheus(
        {"address": server.url("/bearer"), "authentication": {"sigv4": {"region": REGION}}}
    )
    assert m.phase == P.ERROR
    assert (m.message or "").startswith("client_error: client error: 401 (authentication.sigv4")
    assert "Authorization" not in server.seen[0][1]


def test_sigv4_without_credentials(
    server: AuthServer, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1"),
            "authentication": {"sigv4": {"region": REGION}},
        }
    )
    assert m.phase == P.ERROR
    assert (m.message or "").startswith("could not get SigV4 credentials")
    assert server.seen == []


def team_profile(tmp_path: Path) -> None:
    (tmp_path / "credentials").write_text(
        f"[team]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        f"aws_session_token = {SESSION_TOKEN}\n"
    )


def test_sigv4_profile_and_region_from_the_chain(
    server: AuthServer, aws_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile of the shared credentials file, the region from the environment."""
    team_profile(tmp_path)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_REGION", REGION)
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1"),
            "authentication": {"sigv4": {"profile": "team"}},
        }
    )
    assert server.problems == [""], server.problems
    assert m.phase == P.SUCCESSFUL


SIGV4_ERRORS = [
    (
        "no region anywhere",
        "team",
        "region not configured in sigv4 or in default credentials chain",
    ),
    ("unknown profile", "nobody", "could not create new AWS session: "),
]


@pytest.mark.parametrize(
    ("profile", "message"), [c[1:] for c in SIGV4_ERRORS], ids=[c[0] for c in SIGV4_ERRORS]
)
def test_sigv4_configuration_errors(
    server: AuthServer, aws_env: None, tmp_path: Path, profile: str, message: str
) -> None:
    team_profile(tmp_path)
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1"),
            "authentication": {"sigv4": {"profile": profile}},
        }
    )
    assert m.phase == P.ERROR
    assert (m.message or "").startswith(message)
    assert server.seen == []


def test_empty_settings_are_no_authentication(server: AuthServer, aws_env: None) -> None:
    """Argo's zero values: an empty sigv4, oauth2 or basicAuth object configures nothing."""
    m = prometheus(
        {
            "address": server.url("/aps-workspaces/ws-1"),
            "authentication": {"sigv4": {}, "oauth2": {}, "basicAuth": {}},
        }
    )
    assert m.phase == P.ERROR  # the server wants a signature
    assert "Authorization" not in server.seen[0][1]
    assert server.token_requests == []


# -- web -------------------------------------------------------------------------------------------

WEB = [
    # webmetric_test.go: the OAuth2 cases
    ("OAuth2 token", "/bearer/web", lambda s: oauth(s, "/ok"), [], P.SUCCESSFUL, None),
    (
        "OAuth2 replaces an Authorization header",
        "/bearer/web",
        lambda s: oauth(s, "/ok"),
        [{"key": "Authorization", "value": "Bearer stale"}],
        P.SUCCESSFUL,
        None,
    ),
    (
        "OAuth2 failure",
        "/bearer/web",
        lambda s: oauth(s, "/ko"),
        [],
        P.ERROR,
        "oauth2: cannot fetch token: 401 Unauthorized",
    ),
    (
        "OAuth2 without clientSecret",
        "/bearer/web",
        lambda s: {"oauth2": {"tokenUrl": s.url("/ok"), "clientId": CLIENT_ID}},
        [],
        P.ERROR,
        "missing mandatory parameter in metric for OAuth2 setup",
    ),
    (
        "basic auth (an extension for web metrics)",
        "/basic/web",
        lambda s: {"basicAuth": {"username": BASIC[0], "password": BASIC[1]}},
        [],
        P.SUCCESSFUL,
        None,
    ),
    (
        "an Authorization header wins over basic auth",
        "/bearer/web",
        lambda s: {"basicAuth": {"username": BASIC[0], "password": BASIC[1]}},
        [{"key": "authorization", "value": f"Bearer {ACCESS_TOKEN}"}],
        P.SUCCESSFUL,
        None,
    ),
    (
        "basic auth without password",
        "/basic/web",
        lambda s: {"basicAuth": {"username": BASIC[0]}},
        [],
        P.ERROR,
        "missing mandatory parameter in metric for basic auth setup: password",
    ),
    (
        "no authentication: the server's 401",
        "/basic/web",
        lambda s: {},
        [],
        P.ERROR,
        "received non 2xx response code: 401",
    ),
]


@pytest.mark.parametrize("case", [c[1:] for c in WEB], ids=[c[0] for c in WEB])
def test_web_authentication(server: AuthServer, case: tuple[Any, ...]) -> None:
    path, auth, headers, phase, message = case
    m = web({"url": server.url(path), "authentication": auth(server), "headers": headers})
    assert m.phase == phase, m.message
    if message is None:
        assert m.value == '{"ok":true}'
    else:
        assert message in (m.message or "")
