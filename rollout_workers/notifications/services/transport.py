"""One HTTP request of a sender, and what its outcome means for delivery.

Every HTTP sender goes through :func:`request` and :func:`check_status`, so that failures map
the same way everywhere: no answer (refused, reset, timed out) or a 429 or 5xx answer is worth
another attempt; a TLS verification failure, a malformed URL or another 4xx is not. Messages
name the service and the problem on one line. They never carry the URL: incoming-webhook URLs
(Teams, Google Chat, Slack) hold their secret in the path or the query, and a webhook's query
often holds a token.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

import requests

from rollout_workers.notifications.services import SendContext, SendError

MAX_BODY_IN_ERROR = 200


def request(
    ctx: SendContext,
    *,
    label: str,
    method: str,
    url: str,
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    auth: tuple[str, str] | None = None,
    verify: bool = True,
) -> requests.Response:
    """Send one request through the context's session; a failure to get an answer is a
    :class:`SendError`."""
    host = urlsplit(url).hostname or "?"
    try:
        return ctx.session.request(
            method,
            url,
            data=data,
            headers=dict(headers or {}),
            auth=auth,
            verify=verify,
            timeout=ctx.timeout,
        )
    except requests.exceptions.SSLError:
        # go-retryablehttp does not retry certificate errors either: the next attempt fails
        # the same way.
        raise SendError(f"{label}: TLS handshake with {host} failed", final=True) from None
    except (
        requests.exceptions.MissingSchema,
        requests.exceptions.InvalidSchema,
        requests.exceptions.InvalidURL,
        requests.exceptions.InvalidHeader,
    ) as e:
        raise SendError(f"{label}: invalid request ({type(e).__name__})", final=True) from None
    except requests.exceptions.Timeout:
        raise SendError(
            f"{label}: no answer from {host} within {ctx.timeout:g}s", final=False
        ) from None
    except requests.exceptions.ConnectionError:
        raise SendError(f"{label}: could not connect to {host}", final=False) from None


def check_status(
    response: requests.Response, *, label: str, retry_statuses: frozenset[int] | None = None
) -> None:
    """A 2xx answer is delivered; otherwise a :class:`SendError` quoting the start of the
    body. Not final: 429 (with ``Retry-After`` seconds) and 5xx, or ``retry_statuses`` when
    given (the webhook client's own list)."""
    status = response.status_code
    if 200 <= status < 300:
        return
    if retry_statuses is not None:
        final = status not in retry_statuses and status != 429
    else:
        final = status != 429 and status < 500
    raise SendError(
        f"{label}: answered {status}" + (f": {body}" if (body := excerpt(response.text)) else ""),
        final=final,
        status=status,
        retry_after=retry_after(response.headers.get("Retry-After")) if status == 429 else None,
    )


def retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds; None when absent or an HTTP date."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(0.0, seconds)


def excerpt(text: str) -> str:
    """The start of an answer's body on one line, for an error message."""
    one_line = " ".join(text.split())
    if len(one_line) > MAX_BODY_IN_ERROR:
        return one_line[:MAX_BODY_IN_ERROR] + "..."
    return one_line
