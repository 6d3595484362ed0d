"""The generic webhook: one HTTP request per notification, as the engine's ``webhook`` service.

Options (``service.webhook.<name>``): ``url``, ``headers`` (a list of ``{name, value}``, set in
order so a later one wins), ``basicAuth`` (``{username, password}``, which replaces any
``Authorization`` header), ``insecureSkipVerify``, and the retry settings read by
:func:`webhook_retry_policy`.

The request: by default a ``GET`` of ``url`` whose body is the notification's message. When the
notification has a ``webhook.<name>`` block for *this service's name* (``webhook.github`` for
``service.webhook.github``), its ``body`` replaces the message (an empty body stays empty), its
``method`` replaces ``GET`` when set, and a non-empty ``path`` is joined to ``url`` with exactly
one slash. Blocks for other names are ignored. No ``Content-Type`` is sent unless a header sets
one. The recipient (what follows ``<name>:`` in a subscription, usually empty) is not used.

Outcomes follow the engine's go-retryablehttp client: any 2xx is delivered; no answer, a 429
or a 5xx other than 501 is retried; everything else (501 included) is final.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import RetryPolicy, SendContext, SendError, transport
from rollout_workers.notifications.services.options import Options, config_error, label

DEFAULT_RETRY_MAX = 3
DEFAULT_WAIT_MIN = 1.0
DEFAULT_WAIT_MAX = 5.0

_DURATION = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("webhook", ctx.service)
    opts = Options(where, options)
    url = opts.text("url")
    if not url:
        raise config_error(where, "option 'url' is not set")
    method, url, body = calculate_request(
        url=url, message=notification.message, block=_block(notification, ctx.service, where)
    )
    transport.check_status(
        transport.request(
            ctx,
            service=where,
            method=method,
            url=url,
            data=body.encode(),
            headers=_headers(opts),
            auth=opts.basic_auth(),
            verify=not opts.flag("insecureSkipVerify"),
        ),
        service=where,
        call=method,
        retry=go_retryable,
    )


def go_retryable(status: int) -> bool:
    """go-retryablehttp's ``DefaultRetryPolicy``: 429, and 5xx except 501 Not Implemented."""
    return status == 429 or (status >= 500 and status != 501)


def calculate_request(
    *, url: str, message: str, block: Mapping[str, str] | None
) -> tuple[str, str, str]:
    """(method, url, body) of the request, from the service's url, the message and this
    service's ``webhook.<name>`` block when there is one."""
    method, body = "GET", message
    if block is not None:
        body = block.get("body") or ""
        method = block.get("method") or method
        path = block.get("path") or ""
        if path:
            url = url.rstrip("/") + "/" + path.lstrip("/")
    return method, url, body


def webhook_retry_policy(options: Mapping[str, Any]) -> RetryPolicy:
    """Attempts and waits as the engine configures go-retryablehttp: ``retryMax`` retries after
    the first attempt (a zero or absent value means 3), ``retryWaitMin`` and ``retryWaitMax``
    (zero or absent: 1s and 5s). A duration may be a Go duration string (``"2s"``, as the
    engine's docs write it) or a number of nanoseconds (what Go's ``time.Duration`` decodes).
    An unreadable value falls back to its default here; the send reports nothing about it."""
    opts = Options("webhook", options)
    try:
        retry_max = opts.integer("retryMax")
    except SendError:
        retry_max = 0
    if retry_max == 0:
        retry_max = DEFAULT_RETRY_MAX
    wait_min = _duration(options.get("retryWaitMin")) or DEFAULT_WAIT_MIN
    wait_max = _duration(options.get("retryWaitMax")) or DEFAULT_WAIT_MAX
    return RetryPolicy(attempts=max(1, retry_max + 1), wait_min=wait_min, wait_max=wait_max)


def _duration(value: Any) -> float | None:
    """Seconds of a Go duration string or of a nanosecond count; None when zero or unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = float(value) / 1e9
        return seconds if seconds > 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    text = text.lstrip("+-")
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    seconds = sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return seconds if seconds > 0 else None


def _block(notification: Notification, service: str, where: str) -> Mapping[str, str] | None:
    blocks = notification.blocks.get("webhook") or {}
    block = blocks.get(service)
    if block is None:
        return None
    if not isinstance(block, Mapping):
        raise config_error(where, f"template block webhook.{service} is not a map")
    return block


def _headers(opts: Options) -> dict[str, str]:
    headers: dict[str, str] = {}
    entries = opts.raw("headers") or []
    if not isinstance(entries, list):
        raise opts.invalid("headers", "a list of {name, value}")
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise opts.invalid("headers", "a list of {name, value}")
        name, value = entry.get("name"), entry.get("value")
        if not isinstance(name, str) or not isinstance(value, str | type(None)):
            raise opts.invalid("headers", "a list of {name, value}")
        # Go's Header.Set: the name canonicalized, a later entry replacing an earlier one.
        headers[canonical_header(name)] = value or ""
    return headers


def canonical_header(name: str) -> str:
    """Go's ``CanonicalMIMEHeaderKey``: ``x-api-key`` -> ``X-Api-Key``; a name with characters
    outside letters, digits and ``-`` is left as it is."""
    if not name or not all(c.isascii() and (c.isalnum() or c == "-") for c in name):
        return name
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))
