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
from rollout_workers.notifications.services.calls import (
    config_error,
    request,
    retryable,
    snippet,
    status_error,
    string_option,
    urlencode_sorted,
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
    api_url = string_option(options, "apiURL", SERVICE).removesuffix("/") or DEFAULT_API_URL
    form = calculate_form(string_option(options, "token", SERVICE), recipient, notification.message)
    response = request(
        ctx,
        SERVICE,
        "POST",
        f"{api_url}/messages.json",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        data=urlencode_sorted(form),
    )
    if retryable(response.status_code):
        raise status_error(SERVICE, response)
    try:
        answer = response.json()
    except ValueError:
        raise status_error(SERVICE, response, "the answer is not JSON") from None
    if not isinstance(answer, dict) or answer.get("status") != 1:
        errors = answer.get("errors") if isinstance(answer, dict) else None
        detail = "; ".join(map(str, errors)) if isinstance(errors, list) else ""
        raise status_error(SERVICE, response, snippet(detail) or "status is not 1")
