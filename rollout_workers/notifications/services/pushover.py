"""Pushover: a message to a user or group key, as the engine's ``pushover`` service sends it
through gregdel/pushover v1.3.1.

Options: ``token`` (the application's API token). The recipient is the user (or group) key.
Both must be 30 ASCII letters or digits and the message must be 1 to 1024 characters, as the
library checks before sending; then one form POST to ``<apiURL>/messages.json`` with
``token``, ``user``, ``message`` and ``priority=0``. The answer is JSON: ``"status": 1`` is
delivered, anything else lists ``errors``; a 5xx is the library's "http error".

``apiURL`` (default ``https://api.pushover.net/1``) is this project's option, not the
engine's: the library's endpoint is a package variable there, so the engine cannot move it.
The library also fails a delivered message whose answer lacks its ``X-Limit-App-*`` headers;
this sender does not (the message was sent, a retry would send it twice).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import (
    encode_form,
    excerpt,
    request,
    retryable,
    status_error,
)

SERVICE = "pushover"
DEFAULT_API_URL = "https://api.pushover.net/1"
TOKEN = re.compile(r"^[A-Za-z0-9]{30}$")
MESSAGE_MAX_LENGTH = 1024


def calculate_form(token: str, user: str, message: str) -> dict[str, str]:
    """The library's checks, then the form it posts."""
    if not token:
        raise config_error(SERVICE, "empty API token")
    if not TOKEN.match(token):
        raise config_error(SERVICE, "invalid API token")
    if not user:
        raise config_error(SERVICE, "empty recipient token")
    if not TOKEN.match(user):
        raise config_error(SERVICE, "invalid recipient token")
    if not message:
        raise config_error(SERVICE, "message empty")
    if len(message) > MESSAGE_MAX_LENGTH:
        raise config_error(SERVICE, "message too long")
    return {"token": token, "user": user, "message": message, "priority": "0"}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    form = calculate_form(opts.text("token"), recipient, notification.message)
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=f"{opts.base_url('apiURL', DEFAULT_API_URL)}/messages.json",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        data=encode_form(form),
        follow_redirects=False,
    )
    if retryable(response.status_code):
        raise status_error(response, service=SERVICE)
    try:
        answer = response.json()
    except ValueError:
        raise status_error(response, service=SERVICE, detail="the answer is not JSON") from None
    if not isinstance(answer, dict) or answer.get("status") != 1:
        errors = answer.get("errors") if isinstance(answer, dict) else None
        detail = "; ".join(map(str, errors)) if isinstance(errors, list) else ""
        raise status_error(response, service=SERVICE, detail=excerpt(detail) or "status is not 1")
