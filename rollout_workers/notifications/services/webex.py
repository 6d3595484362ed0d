"""Webex: a Markdown message to a person or a room, as the engine's ``webex`` service sends it.

Options: ``token`` (the bot's access token, sent as ``Authorization: Bearer``) and ``apiURL``
(default ``https://webexapis.com``, a trailing ``/`` dropped). The recipient is a person's
email when it looks like one (``\\S+@\\S+\\.\\S+``), else a room id. One POST to
``<apiURL>/v1/messages`` with ``{"toPersonEmail"|"roomId": recipient, "markdown": message}``
(empty fields left out); only a 200 counts as delivered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options
from rollout_workers.notifications.services.transport import check_status, request

SERVICE = "webex"
DEFAULT_API_URL = "https://webexapis.com"
# Go's \S: anything but ASCII space, \t, \n, \f, \r.
EMAIL = re.compile(r"^[^ \t\n\f\r]+@[^ \t\n\f\r]+\.[^ \t\n\f\r]+$")


def calculate_body(message: str, recipient: str) -> dict[str, str]:
    key = "toPersonEmail" if EMAIL.match(recipient) else "roomId"
    body = {key: recipient, "markdown": message}
    return {k: v for k, v in body.items() if v}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=f"{opts.base_url('apiURL', DEFAULT_API_URL)}/v1/messages",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {opts.text('token')}",
        },
        json_body=calculate_body(notification.message, recipient),
        follow_redirects=False,
    )
    check_status(response, service=SERVICE, ok=(200,))
