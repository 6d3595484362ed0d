"""One HTTP request of a sender, and what its outcome means for delivery.

Every HTTP sender goes through :func:`request` and then :func:`check_status` (or builds its
error with :func:`status_error` when the service says more than its status), so that failures
map the same way everywhere:

- no answer (refused, reset, timed out) or another transport failure: not final;
- a TLS failure or a request that cannot be built (malformed URL, bad header): final, the next
  attempt would fail the same way (go-retryablehttp does not retry certificate errors either);
- a 429: not final, ``retry_after`` from its ``Retry-After`` header in seconds;
- a 5xx: not final (a sender may narrow this: the webhook follows go-retryablehttp, for which
  501 is final);
- any other answer the service does not count as success: final.

Messages are one line and name the service; they never carry the URL (incoming-webhook URLs of
Teams, Google Chat and Slack hold their secret in the path or the query, Telegram's holds the
bot token, a webhook's query often a token) nor a header, only the host and a short excerpt of
what the service answered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any
from urllib.parse import quote_plus, urlsplit

import requests

from rollout_workers.notifications.services import SendContext, SendError

MAX_BODY_IN_ERROR = 200
SUCCESS = range(200, 300)


def request(
    ctx: SendContext,
    *,
    service: str,
    method: str,
    url: str,
    data: bytes | str | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    auth: tuple[str, str] | None = None,
    verify: bool = True,
    timeout: float | None = None,
    follow_redirects: bool = True,
) -> requests.Response:
    """Send one request through the context's session (``timeout``: the context's unless
    given); a failure to get an answer is a :class:`SendError`. ``json_body`` is written by
    requests (``", "`` separators, ASCII only); a sender that must write Go's bytes passes
    ``data`` from :mod:`.gojson` instead."""
    host = host_of(url)
    seconds = ctx.timeout if timeout is None else timeout
    try:
        return ctx.session.request(
            method,
            url,
            data=data,
            json=json_body,
            headers=dict(headers or {}),
            auth=auth,
            verify=verify,
            timeout=seconds,
            allow_redirects=follow_redirects,
        )
    except requests.exceptions.SSLError:
        raise SendError(f"{service}: TLS handshake with {host} failed", final=True) from None
    except (
        requests.exceptions.MissingSchema,
        requests.exceptions.InvalidSchema,
        requests.exceptions.InvalidURL,
        requests.exceptions.InvalidHeader,
    ) as e:
        raise SendError(f"{service}: invalid request ({type(e).__name__})", final=True) from None
    except requests.exceptions.Timeout:
        raise SendError(
            f"{service}: no answer from {host} within {seconds:g}s", final=False
        ) from None
    except requests.exceptions.ConnectionError:
        raise SendError(f"{service}: could not connect to {host}", final=False) from None
    except requests.exceptions.RequestException as e:
        raise SendError(f"{service}: request failed ({type(e).__name__})", final=False) from None


def retryable(status: int) -> bool:
    """Whether another attempt could help after an answer with this status: 429 or 5xx."""
    return status == 429 or status >= 500


def check_status(
    response: requests.Response,
    *,
    service: str,
    call: str = "",
    ok: Container[int] = SUCCESS,
    retry: Callable[[int], bool] = retryable,
) -> None:
    """Nothing when the answer's status is one of ``ok`` (any 2xx unless given); otherwise
    the :func:`status_error`."""
    if response.status_code in ok:
        return
    raise status_error(response, service=service, call=call, retry=retry)


def status_error(
    response: requests.Response,
    *,
    service: str,
    call: str = "",
    detail: str = "",
    retry: Callable[[int], bool] = retryable,
) -> SendError:
    """The SendError for an answer the service did not accept: ``call`` names the request
    when a send makes several, ``detail`` is what the service said (else the start of the
    body), ``retry`` says which statuses are worth another attempt."""
    status = response.status_code
    said = detail or excerpt(response.text)
    target = f"{call} to {host_of(response.url)}" if call else host_of(response.url)
    message = f"{service}: {target} answered HTTP {status}"
    if said:
        message += f": {said}"
    return SendError(
        message,
        final=not retry(status),
        status=status,
        retry_after=retry_after(response.headers.get("Retry-After")) if status == 429 else None,
    )


def retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds; None when absent, negative or an HTTP date."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def excerpt(text: str) -> str:
    """The start of an answer's body on one line, for an error message."""
    one_line = " ".join(text.split())
    if len(one_line) > MAX_BODY_IN_ERROR:
        return one_line[:MAX_BODY_IN_ERROR] + "..."
    return one_line


def host_of(url: str) -> str:
    """The host (and port) of a URL, without user information: what an error may show."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2] or "?"
    except ValueError:
        return "?"


def is_http_url(text: str) -> bool:
    """An absolute http(s) URL with a host."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def encode_form(values: Mapping[str, str] | Iterable[tuple[str, str]]) -> str:
    """A form body or a query as Go's ``url.Values.Encode`` writes it: keys sorted (the values
    of one key in their order), each ``QueryEscape``d (space as ``+``)."""
    pairs = sorted(values.items() if isinstance(values, Mapping) else values, key=lambda kv: kv[0])
    return "&".join(f"{quote_plus(k)}={quote_plus(v)}" for k, v in pairs)
