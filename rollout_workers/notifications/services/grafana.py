"""Grafana: an annotation, as the engine's ``grafana`` service creates it.

Options: ``apiUrl`` (Grafana's API root, e.g. ``https://grafana.example.com/api``), ``apiKey``
(sent as ``Authorization: Bearer``) and ``insecureSkipVerify``. The recipient is the
annotation's tags joined with ``|``. One POST to ``<apiUrl>/annotations`` (the path joined and
cleaned as Go's ``path.Join``) with ``{"time": <now, whole seconds, in ms>, "isRegion": false,
"tags": [...], "text": message}``; only a 200 counts as delivered.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import check_status, request

SERVICE = "grafana"


def calculate_annotation(message: str, recipient: str, now: float) -> dict[str, Any]:
    return {
        "time": int(now) * 1000,
        "isRegion": False,
        "tags": recipient.split("|"),
        "text": message,
    }


def annotations_url(api_url: str) -> str:
    parts = urlsplit(api_url)
    if not parts.scheme or not parts.netloc:
        raise config_error(SERVICE, "option 'apiUrl' must be an absolute URL")
    path = go_path_clean(posixpath.join(parts.path, "annotations"))
    if not path.startswith("/"):
        path = "/" + path
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def go_path_clean(path: str) -> str:
    """Go's ``path.Clean``: like ``posixpath.normpath``, but a leading ``//`` is one ``/``."""
    cleaned = posixpath.normpath(path) if path else "."
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    url = annotations_url(opts.text("apiUrl"))
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=url,
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {opts.text('apiKey')}",
        },
        json_body=calculate_annotation(notification.message, recipient, ctx.clock()),
        verify=not opts.flag("insecureSkipVerify"),
        follow_redirects=False,
    )
    check_status(response, service=SERVICE, ok=(200,))
