"""One HTTP request of a sender, and how its outcome maps to :class:`SendError`.

Every sender of this group goes through :func:`request` and :func:`check`, so they fail alike:

- no answer (connection refused, reset, timeout): not final;
- 429: not final, ``retry_after`` from a ``Retry-After`` header in seconds;
- 5xx: not final;
- any other answer the service does not count as success: final.

Messages are one line and name the service; they never carry a URL (Telegram's holds the bot
token) nor a header, only the host and what the service answered, cut short.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote_plus, urlsplit

import requests

from rollout_workers.notifications.services import SendContext, SendError

ANSWER_SNIPPET = 200


def request(
    ctx: SendContext,
    service: str,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    json_body: Any = None,
    data: bytes | str | None = None,
    auth: tuple[str, str] | None = None,
    timeout: float | None = None,
    verify: bool = True,
) -> requests.Response:
    """Send one request through the context's session; no answer is a retryable SendError."""
    try:
        return ctx.session.request(
            method,
            url,
            headers=dict(headers or {}),
            json=json_body,
            data=data,
            auth=auth,
            timeout=ctx.timeout if timeout is None else timeout,
            allow_redirects=False,
            verify=verify,
        )
    except requests.Timeout:
        raise SendError(f"{service}: no answer from {host_of(url)} in time", final=False) from None
    except requests.ConnectionError:
        raise SendError(f"{service}: cannot connect to {host_of(url)}", final=False) from None
    except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema) as e:
        raise SendError(f"{service}: invalid URL: {type(e).__name__}", final=True) from None
    except requests.RequestException as e:
        raise SendError(f"{service}: request failed: {type(e).__name__}", final=False) from None


def check(service: str, response: requests.Response, *, ok: Iterable[int] = (200,)) -> None:
    """Raise the SendError for an answer whose status is not one of ``ok``."""
    if response.status_code in set(ok):
        return
    raise status_error(service, response)


def status_error(service: str, response: requests.Response, detail: str = "") -> SendError:
    """The SendError for an answer the service did not accept (``detail``: what it said)."""
    status = response.status_code
    said = detail or snippet(response.text)
    message = f"{service}: {host_of(response.url)} answered HTTP {status}"
    if said:
        message += f": {said}"
    return SendError(
        message,
        final=not retryable(status),
        status=status,
        retry_after=retry_after(response) if status == 429 else None,
    )


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


def retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def snippet(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > ANSWER_SNIPPET:
        return one_line[:ANSWER_SNIPPET] + "..."
    return one_line


def host_of(url: str) -> str:
    try:
        return urlsplit(url).netloc.rpartition("@")[2] or "?"
    except ValueError:
        return "?"


def config_error(service: str, problem: str) -> SendError:
    """A configuration (or template) problem: final, retrying cannot help."""
    return SendError(f"{service}: {problem}", final=True)


def string_option(options: Mapping[str, Any], name: str, service: str) -> str:
    """An option the engine decodes into a Go string (absent or null is empty; a YAML scalar is
    taken as its string form, as sigs.k8s.io/yaml converts it)."""
    value = _scalar(options.get(name))
    if value is None:
        raise config_error(service, f"option {name!r} must be a string")
    return value


def string_map_option(options: Mapping[str, Any], name: str, service: str) -> dict[str, str]:
    """An option the engine decodes into a Go ``map[string]string``."""
    value = options.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise config_error(service, f"option {name!r} must be a map of strings")
    out = {}
    for key, item in value.items():
        text = _scalar(item)
        if text is None:
            raise config_error(service, f"option {name}.{key} must be a string")
        out[str(key)] = text
    return out


def _scalar(value: Any) -> str | None:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def urlencode_sorted(form: Mapping[str, str]) -> str:
    """A form body as Go's ``url.Values.Encode`` writes it: keys sorted, each ``QueryEscape``d
    (space as ``+``)."""
    return "&".join(f"{quote_plus(k)}={quote_plus(v)}" for k, v in sorted(form.items()))
