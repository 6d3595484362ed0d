"""How prometheus and web metric requests authenticate: `authentication.basicAuth`, `.oauth2` and
`.sigv4`, as Argo Rollouts applies them (metricproviders/prometheus/prometheus.go
NewPrometheusAPI, metricproviders/webmetric/webmetric.go NewWebMetricHttpClient).

Argo builds one Go `http.RoundTripper` chain per measurement. Reproduced here as the headers
each layer leaves on the request, outermost first:

1. oauth2 (`tokenUrl` set; prometheus and web): a client-credentials token is fetched for the
   measurement and sent as `Authorization: Bearer <token>`. `clientId` and `clientSecret` are
   mandatory: "missing mandatory parameter in metric for OAuth2 setup".
2. sigv4 (prometheus only, and only when the address contains `aps-workspaces`, Amazon Managed
   Prometheus): the request is signed for service `aps`, replacing any Authorization header.
3. basicAuth (prometheus, Argo after 1.9; web too in this project, which Argo accepts but
   ignores): `Authorization: Basic ...` unless a layer above set Authorization. Both fields are
   mandatory once one is set: "missing mandatory parameter in metric for basic auth setup:
   username" (or password).
4. the metric's `headers`, set last, so a header named Authorization wins over everything.

The client-credentials grant is a plain form POST written after golang.org/x/oauth2's
clientcredentials, which Argo uses, rather than a library: its few rules are easy to state and a
library would differ from them (requests-oauthlib/oauthlib reject a token without
`token_type`, which Go reads as Bearer, and do not probe the two ways of sending the client's
credentials). The rules: `grant_type=client_credentials` and the space-joined `scope` (when
scopes are given) are posted as a form; the client's id and secret go first in an HTTP Basic
header (each URL-query-escaped), and if the server answers that with an error, once more as
`client_id`/`client_secret` form fields. The answer is JSON, or a form for `text/plain` and
form content types; an error status or an `error` field is an error, reported as Go reports it
(`oauth2: "invalid_client" "bad secret"`, or `oauth2: cannot fetch token: 401 Unauthorized` and
the body); a token type of bearer, mac or basic is capitalised, and an empty one is Bearer.
Like Argo, a token is fetched for each measurement (Argo builds a new client for each one).

SigV4 uses botocore: its credential chain (environment, shared credentials/config files with
`profile`, web identity, container and instance metadata) stands for the AWS SDK's, `roleArn` is
assumed through STS, and `SigV4Auth` signs. The region is `region`, else the chain's
(`AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's config); neither is
an error ("region not configured in sigv4 or in default credentials chain"), as are missing
credentials ("could not get SigV4 credentials: ..."). (Argo's signer uses `region` alone, so a
region only found in the chain gives it an unusable signature; here it signs.) Credentials are
cached per worker for a few minutes; botocore refreshes those that expire (assumed roles, web
identity) itself.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlencode

import urllib3

from rollout_workers.api.analysis import Authentication, OAuth2Config

#: Amazon Managed Prometheus addresses contain this; SigV4 is applied to those only (Argo).
AMP_ADDRESS_MARK = "aps-workspaces"
SIGV4_SERVICE = "aps"
CREDENTIALS_TTL_SECONDS = 300.0

#: Sends one request and returns the response: (method, url, headers, body, timeout).
Sender = Callable[[str, str, dict[str, str], bytes | None, float], urllib3.BaseHTTPResponse]


class AuthError(Exception):
    """Authentication is misconfigured or could not be obtained; the measurement is an Error
    with this message."""


def basic_credentials(auth: Authentication | None) -> tuple[str, str] | None:
    """The basicAuth username and password, None when unset; raises AuthError (Argo's
    messages) when only one is given."""
    basic = auth.basic_auth if auth is not None else None
    username = (basic.username or "") if basic is not None else ""
    password = (basic.password or "") if basic is not None else ""
    if not username and not password:
        return None
    if not username:
        raise AuthError("missing mandatory parameter in metric for basic auth setup: username")
    if not password:
        raise AuthError("missing mandatory parameter in metric for basic auth setup: password")
    return username, password


def basic_header(username: str, password: str) -> str:
    """Go's `Request.SetBasicAuth`."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def oauth2_config(auth: Authentication | None) -> OAuth2Config | None:
    """The OAuth2 settings when `tokenUrl` is set; raises AuthError when the client's id or
    secret is missing (Argo's message)."""
    oauth = auth.oauth2 if auth is not None else None
    if oauth is None or not oauth.token_url:
        return None
    if not oauth.client_id or not oauth.client_secret:
        raise AuthError("missing mandatory parameter in metric for OAuth2 setup")
    return oauth


def fetch_token(send: Sender, oauth: OAuth2Config, *, timeout: float) -> str:
    """The `Authorization` value of a client-credentials token; raises AuthError with
    golang.org/x/oauth2's message."""
    assert oauth.token_url and oauth.client_id and oauth.client_secret
    form: dict[str, str] = {"grant_type": "client_credentials"}
    if oauth.scopes:
        form["scope"] = " ".join(oauth.scopes)
    in_header = basic_header(
        quote_plus(oauth.client_id, safe=""), quote_plus(oauth.client_secret, safe="")
    )
    try:
        return _token_request(send, oauth.token_url, form, {"Authorization": in_header}, timeout)
    except AuthError:
        # The server may want the credentials in the form instead (oauth2's AuthStyleAutoDetect).
        params = {**form, "client_id": oauth.client_id, "client_secret": oauth.client_secret}
        return _token_request(send, oauth.token_url, params, {}, timeout)


def _token_request(
    send: Sender, url: str, form: dict[str, str], headers: dict[str, str], timeout: float
) -> str:
    headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    response = send("POST", url, headers, urlencode(form).encode(), timeout)
    body = response.data[: 1 << 20]
    failed = not 200 <= response.status <= 299
    content_type = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    fields: dict[str, Any]
    if content_type in ("application/x-www-form-urlencoded", "text/plain"):
        fields = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
    else:
        try:
            decoded = json.loads(body)
        except ValueError as err:
            if failed:
                raise AuthError(_status_error(response, body)) from None
            raise AuthError(f"oauth2: cannot parse json: {err}") from None
        fields = decoded if isinstance(decoded, dict) else {}
    code = str(fields.get("error") or "")
    if code:
        message = f"oauth2: {_go_quote(code)}"
        for key in ("error_description", "error_uri"):
            if fields.get(key):
                message += f" {_go_quote(str(fields[key]))}"
        raise AuthError(message)
    if failed:
        raise AuthError(_status_error(response, body))
    token = str(fields.get("access_token") or "")
    if not token:
        raise AuthError("oauth2: server response missing access_token")
    kind = str(fields.get("token_type") or "")
    # oauth2.Token.Type(): these three capitalised, an empty type is Bearer, others as sent.
    kind = {"bearer": "Bearer", "mac": "MAC", "basic": "Basic", "": "Bearer"}.get(
        kind.lower(), kind
    )
    return f"{kind} {token}"


def _status_error(response: urllib3.BaseHTTPResponse, body: bytes) -> str:
    status = f"{response.status} {response.reason or ''}".strip()
    return f"oauth2: cannot fetch token: {status}\nResponse: {body.decode(errors='replace')}"


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def sigv4_applies(address: str, auth: Authentication | None) -> bool:
    """Argo signs only Amazon Managed Prometheus addresses, and only with some sigv4 field set."""
    sigv4 = auth.sigv4 if auth is not None else None
    configured = sigv4 is not None and bool(sigv4.region or sigv4.profile or sigv4.role_arn)
    return configured and AMP_ADDRESS_MARK in address


# -- SigV4 ---------------------------------------------------------------------------------------


@dataclass
class _Cached:
    credentials: Any
    region: str
    expires: float


@dataclass
class AwsCredentials:
    """Resolved AWS credentials per (profile, roleArn, region), kept a few minutes so that a
    measurement does not walk the credential chain (files, metadata endpoints) each time."""

    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, str, str], _Cached] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, *, region: str, profile: str, role_arn: str) -> tuple[Any, str]:
        """botocore credentials and the signing region; raises AuthError."""
        key = (profile, role_arn, region)
        now = self.clock()
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None and cached.expires > now:
                return cached.credentials, cached.region
        credentials, resolved_region = _resolve(region=region, profile=profile, role_arn=role_arn)
        with self._lock:
            self._entries[key] = _Cached(
                credentials, resolved_region, now + CREDENTIALS_TTL_SECONDS
            )
        return credentials, resolved_region


def _resolve(*, region: str, profile: str, role_arn: str) -> tuple[Any, str]:
    import botocore.exceptions
    import botocore.session
    from botocore.credentials import AssumeRoleCredentialFetcher, DeferredRefreshableCredentials

    try:
        session = botocore.session.Session(profile=profile or None)
        # The AWS SDK for Go (Argo's) reads AWS_REGION; botocore's chain reads
        # AWS_DEFAULT_REGION and the profile's config.
        chain_region = session.get_config_variable("region") or os.environ.get("AWS_REGION")
        resolved_region = region or str(chain_region or "")
    except botocore.exceptions.BotoCoreError as err:
        raise AuthError(f"could not create new AWS session: {err}") from None
    try:
        credentials = session.get_credentials()
    except botocore.exceptions.ProfileNotFound as err:
        raise AuthError(f"could not create new AWS session: {err}") from None
    except Exception as err:  # a provider of the chain failing (metadata endpoints, files)
        raise AuthError(f"could not get SigV4 credentials: {err}") from None
    if credentials is None:
        raise AuthError(
            "could not get SigV4 credentials: no valid providers in chain (environment, "
            "shared credentials and config files, web identity, container or instance metadata)"
        )
    if not resolved_region:
        raise AuthError("region not configured in sigv4 or in default credentials chain")
    if role_arn:
        fetcher = AssumeRoleCredentialFetcher(
            client_creator=session.create_client,
            source_credentials=credentials,
            role_arn=role_arn,
            extra_args={"RoleSessionName": str(time.time_ns())},
        )
        credentials = DeferredRefreshableCredentials(
            method="assume-role", refresh_using=fetcher.fetch_credentials
        )
    return credentials, resolved_region


def sigv4_headers(
    cache: AwsCredentials,
    auth: Authentication,
    *,
    method: str,
    url: str,
    body: bytes | None,
) -> dict[str, str]:
    """The headers that sign `method url` for service `aps` (Authorization, X-Amz-Date, and
    X-Amz-Security-Token for temporary credentials); raises AuthError."""
    import botocore.exceptions
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    sigv4 = auth.sigv4
    assert sigv4 is not None
    credentials, region = cache.resolve(
        region=sigv4.region or "", profile=sigv4.profile or "", role_arn=sigv4.role_arn or ""
    )
    request = AWSRequest(method=method, url=url, data=body or b"")
    try:
        frozen = credentials.get_frozen_credentials()
        SigV4Auth(frozen, SIGV4_SERVICE, region).add_auth(request)
    except botocore.exceptions.BotoCoreError as err:
        raise AuthError(f"failed to sign request: {err}") from None
    except botocore.exceptions.ClientError as err:  # the STS call of an assumed role
        raise AuthError(f"failed to sign request: {err}") from None
    return {str(k): str(v) for k, v in request.headers.items()}


# -- AWS API clients (CloudWatch metrics, ELBv2 for the ALB router) ------------------------------

#: The environment every AWS client is built from; a client is kept per combination (and per
#: service's own endpoint variable).
_AWS_ENVIRONMENT = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_ROLE_ARN",
)
#: Bounds of one call: no retries (the next measurement, or reconcile, is the retry).
AWS_CONNECT_TIMEOUT_SECONDS = 10.0
AWS_READ_TIMEOUT_SECONDS = 30.0


@dataclass
class AwsClients:
    """boto3 clients of one AWS service, built as the AWS SDK's default configuration is (Argo's
    `config.LoadDefaultConfig`): credentials from the chain, the region from `AWS_REGION`, else
    `AWS_DEFAULT_REGION` or the profile's config, the endpoint from the service's own variable
    (`AWS_ENDPOINT_URL_CLOUDWATCH`, `AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2`) or
    `AWS_ENDPOINT_URL` when set. Building one loads the service model, so a client is kept a
    few minutes (botocore clients are thread-safe; refreshable credentials refresh themselves)."""

    service: str
    """boto3's name of the service (`cloudwatch`, `elbv2`)."""
    title: str
    """The SDK's name of the service, for messages (`CloudWatch`)."""
    endpoint_variable: str
    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str | None, ...], tuple[Any, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> Any:
        """A client of the service; raises AuthError when no region is configured."""
        names = (*_AWS_ENVIRONMENT, self.endpoint_variable)
        key = tuple(os.environ.get(name) for name in names)
        now = self.clock()
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None and cached[1] > now:
                return cached[0]
        client = _aws_client(self.service, self.title)
        with self._lock:
            self._entries[key] = (client, now + CREDENTIALS_TTL_SECONDS)
        return client


def cloudwatch_clients() -> AwsClients:
    return AwsClients("cloudwatch", "CloudWatch", "AWS_ENDPOINT_URL_CLOUDWATCH")


def elbv2_clients() -> AwsClients:
    return AwsClients(
        "elbv2", "Elastic Load Balancing v2", "AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2"
    )


def _aws_client(service: str, title: str) -> Any:
    import boto3.session
    import botocore.config
    import botocore.exceptions

    try:
        session = boto3.session.Session()
        # The AWS SDK for Go reads AWS_REGION first; botocore does not read it at all.
        region = os.environ.get("AWS_REGION") or session.region_name
        if not region:
            raise AuthError(
                "an AWS region is required, but was not found (set AWS_REGION in the "
                "controller's environment)"
            )
        config = botocore.config.Config(
            connect_timeout=AWS_CONNECT_TIMEOUT_SECONDS,
            read_timeout=AWS_READ_TIMEOUT_SECONDS,
            retries={"total_max_attempts": 1},
        )
        return session.client(service, region_name=region, config=config)
    except botocore.exceptions.BotoCoreError as err:
        raise AuthError(f"could not create a {title} client: {err}") from None


def go_sdk_error(err: Any, operation: str) -> str:
    """A botocore error worded as the AWS SDK for Go words it: `operation error CloudWatch:
    GetMetricData, https response error StatusCode: 400, RequestID: ..., api error Code:
    Message` for an API error (a ClientError), `<operation>, <error>` for any other."""
    response = getattr(err, "response", None)
    if not isinstance(response, dict):
        return f"{operation}, {err}"
    error = response.get("Error") or {}
    meta = response.get("ResponseMetadata") or {}
    return (
        f"{operation}, https response error StatusCode: {meta.get('HTTPStatusCode', 0)}, "
        f"RequestID: {meta.get('RequestId', '')}, api error {error.get('Code', '')}: "
        f"{error.get('Message', '')}"
    )
