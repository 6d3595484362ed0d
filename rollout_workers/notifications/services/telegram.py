"""Telegram: a Markdown message from a bot, as the engine's ``telegram`` service sends it
through OvyFlash/telegram-bot-api.

Options: ``token`` (the bot token). The recipient is a chat id when it starts with ``-``
(``-100123``, or ``-100123|7`` for thread 7 of a forum chat), else a public channel's name
(``@`` is prepended). The library first calls ``getMe`` (creating the bot client checks the
token), then ``sendMessage``; both are form POSTs to ``<apiURL>/bot<token>/<method>``, and the
form is what the library writes for a ``MessageConfig``: ``chat_id``, ``text``,
``parse_mode=Markdown``, ``message_thread_id`` when not 0, and its always-present
``business_connection_id=``, ``entities=null``, ``link_preview_options={}``,
``reply_parameters={"message_id":0}``. The answer is JSON: ``"ok": true`` is delivered, else
``error_code``, ``description`` and, for 429, ``parameters.retry_after``.

``apiURL`` (default ``https://api.telegram.org``) is this project's option, not the engine's
(the engine always uses the library's default endpoint). The URL carries the token, so no
message here ever shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import requests

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import (
    encode_form,
    excerpt,
    host_of,
    request,
    retry_after,
    retryable,
)

SERVICE = "telegram"
DEFAULT_API_URL = "https://api.telegram.org"
GO_INT = re.compile(r"^[+-]?[0-9]+$")
INT64 = 2**63
INT = 2**63  # Go's int on the 64-bit platforms the controller runs on


def calculate_message_form(message: str, recipient: str) -> dict[str, str]:
    """``buildTelegramMessageOptions`` and the library's ``MessageConfig`` params."""
    form: dict[str, str] = {"business_connection_id": ""}
    if recipient.startswith("-"):
        chat, _, thread = recipient.partition("|")
        chat_id = _go_int(chat, INT64, "chat id")
        if chat_id:
            form["chat_id"] = str(chat_id)
        if "|" in recipient:
            thread_id = _go_int(thread.split("|")[0], INT, "thread id")
            if thread_id:
                form["message_thread_id"] = str(thread_id)
    else:
        form["chat_id"] = "@" + recipient
    form["reply_parameters"] = json.dumps({"message_id": 0}, separators=(",", ":"))
    if message:
        form["text"] = message
    form["parse_mode"] = "Markdown"
    form["entities"] = "null"
    form["link_preview_options"] = "{}"
    return form


def _go_int(text: str, bound: int, what: str) -> int:
    if not GO_INT.match(text) or not -bound <= int(text) < bound:
        raise config_error(SERVICE, f"recipient's {what} {text!r} is not a number")
    return int(text)


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    api_url = opts.base_url("apiURL", DEFAULT_API_URL)
    token = opts.text("token")
    form = calculate_message_form(notification.message, recipient)
    _call(ctx, f"{api_url}/bot{token}/getMe", {}, "getMe")
    _call(ctx, f"{api_url}/bot{token}/sendMessage", form, "sendMessage")


def _call(ctx: SendContext, url: str, form: Mapping[str, str], method: str) -> None:
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=url,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        data=encode_form(form),
        follow_redirects=False,
    )
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("ok") is True:
        return
    raise _answer_error(response, answer, method)


def _answer_error(response: requests.Response, answer: Any, method: str) -> SendError:
    status = response.status_code
    code = status
    description = ""
    wait = None
    if isinstance(answer, dict):
        if isinstance(answer.get("error_code"), int):
            code = answer["error_code"]
        description = str(answer.get("description") or "")
        parameters = answer.get("parameters")
        if isinstance(parameters, dict) and isinstance(parameters.get("retry_after"), int):
            wait = float(parameters["retry_after"])
    else:
        description = "the answer is not JSON"
    if wait is None and code == 429:
        wait = retry_after(response.headers.get("Retry-After"))
    message = f"{SERVICE}: {method} to {host_of(response.url)} failed with {code}"
    if description:
        message += f": {excerpt(description)}"
    final = not (retryable(status) or retryable(code))
    return SendError(message, final=final, status=status, retry_after=wait if code == 429 else None)
