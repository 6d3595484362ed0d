"""Mattermost: a post through the REST API, as the engine's ``mattermost`` service creates it.

Options (``service.mattermost[.<name>]``): ``apiURL`` (the server's base URL), ``token`` (a bot
or personal access token, sent as ``Authorization: Bearer``), ``insecureSkipVerify``. The
recipient is the channel id.

The request: ``POST <apiURL>/api/v4/posts`` with ``application/json``
``{"channel_id": <recipient>, "message": <message>, "props": {"attachments": [...]}}``, the
attachments being the template's ``mattermost.attachments`` JSON list (``[]`` without one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, transport
from rollout_workers.notifications.services.gojson import marshal
from rollout_workers.notifications.services.options import Options, label

POSTS_PATH = "/api/v4/posts"


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("mattermost", ctx.service)
    opts = Options(where, options)
    api_url = opts.text("apiURL")
    if not api_url:
        raise SendError(f"{where}: option 'apiURL' is not set", final=True)
    response = transport.request(
        ctx,
        label=where,
        method="POST",
        url=api_url + POSTS_PATH,
        data=calculate_body(notification, recipient, where),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {opts.text('token')}",
        },
        verify=not opts.flag("insecureSkipVerify"),
    )
    transport.check_status(response, label=where)


def calculate_body(notification: Notification, recipient: str, where: str = "mattermost") -> bytes:
    attachments: Any = []
    text = (notification.blocks.get("mattermost") or {}).get("attachments") or ""
    if text:
        try:
            attachments = json.loads(str(text))
        except ValueError as e:
            raise SendError(
                f"{where}: mattermost.attachments is not valid JSON: {e}", final=True
            ) from None
        if attachments is not None and not isinstance(attachments, list):
            raise SendError(f"{where}: mattermost.attachments must be a JSON list", final=True)
    # A Go map: keys sorted.
    return marshal(
        {
            "channel_id": recipient,
            "message": notification.message,
            "props": {"attachments": attachments},
        }
    )
