"""Mattermost: a post through the REST API, as the engine's ``mattermost`` service creates it.

Options (``service.mattermost[.<name>]``): ``apiURL`` (the server's base URL), ``token`` (a bot
or personal access token, sent as ``Authorization: Bearer``), ``insecureSkipVerify``. The
recipient is the channel id.

The request: ``POST <apiURL>/api/v4/posts`` with ``application/json``
``{"channel_id": <recipient>, "message": <message>, "props": {"attachments": [...]}}``, the
attachments being the template's ``mattermost.attachments`` JSON list (``[]`` without one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, transport
from rollout_workers.notifications.services.gojson import decode_list, marshal
from rollout_workers.notifications.services.options import Options, config_error, label

POSTS_PATH = "/api/v4/posts"


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("mattermost", ctx.service)
    opts = Options(where, options)
    api_url = opts.text("apiURL")
    if not api_url:
        raise config_error(where, "option 'apiURL' is not set")
    response = transport.request(
        ctx,
        service=where,
        method="POST",
        url=api_url + POSTS_PATH,
        data=calculate_body(notification, recipient, where),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {opts.text('token')}",
        },
        verify=not opts.flag("insecureSkipVerify"),
    )
    transport.check_status(response, service=where)


def calculate_body(notification: Notification, recipient: str, where: str = "mattermost") -> bytes:
    attachments: list[Any] | None = []
    text = (notification.blocks.get("mattermost") or {}).get("attachments") or ""
    if text:  # "null" stays null, as Go's json.Unmarshal leaves a nil slice
        attachments = decode_list(text, name="mattermost.attachments", where=where)
    # A Go map: keys sorted.
    return marshal(
        {
            "channel_id": recipient,
            "message": notification.message,
            "props": {"attachments": attachments},
        }
    )
