"""Rocket.Chat: a chat message, as the engine's ``rocketchat`` service posts it through the
Rocket.Chat Go SDK's REST client.

Options: ``serverUrl``, ``email`` and ``password`` (the bot user's login), ``alias``, ``icon``
(an emoji such as ``:rocket:``; anything else is ignored with a warning) and ``avatar`` (an
http(s) URL; likewise). The recipient is a channel when it starts with ``#`` or ``@``, else a
room id. Two requests, both to ``<scheme>://<host>:<port><path>/api/v1/`` (the port written out,
80 or 443 by default, as the SDK builds it):

1. ``login``: a form POST of ``user=<email>&password=<password>``; the answer's
   ``data.authToken`` and ``data.userId`` authenticate the next request
   (``X-Auth-Token``, ``X-User-Id``).
2. ``chat.postMessage``: a JSON POST of ``roomId``/``channel``, ``text``, ``alias``, ``emoji``,
   ``avatar`` and ``attachments`` (the rendered ``rocketchat.attachments`` decoded into the
   SDK's attachment type, so unknown keys are dropped and ``collapsed``/``short``/
   ``is_webview``/``msg_in_chat_window`` always written), empty ones left out.

An answer counts as delivered when it is a 200 whose JSON says ``"success": true`` (or
``"status": "success"``); ``error`` or ``message`` says why not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options, config_error, is_emoji
from rollout_workers.notifications.services.transport import (
    encode_form,
    excerpt,
    is_http_url,
    request,
    status_error,
)

SERVICE = "rocketchat"
log = logging.getLogger(__name__)

# The SDK's models.Attachment (and its nested types), in field order: JSON name -> kind.
# "str"/"bool" are omitempty unless the name is in ALWAYS; a tuple is a list of that type.
STR, BOOL = "str", "bool"
ACTION = (
    ("type", STR),
    ("text", STR),
    ("url", STR),
    ("image_url", STR),
    ("is_webview", BOOL),
    ("webview_height_ratio", STR),
    ("msg", STR),
    ("msg_in_chat_window", BOOL),
    ("msg_processing_type", STR),
)
FIELD = (("short", BOOL), ("title", STR), ("value", STR))
ATTACHMENT: tuple[tuple[str, Any], ...] = (
    ("color", STR),
    ("text", STR),
    ("ts", STR),
    ("thumb_url", STR),
    ("message_link", STR),
    ("collapsed", BOOL),
    ("author_name", STR),
    ("author_link", STR),
    ("author_icon", STR),
    ("title", STR),
    ("title_link", STR),
    ("title_link_download", STR),
    ("image_url", STR),
    ("audio_url", STR),
    ("video_url", STR),
    ("actions", ACTION),
    ("button_alignment", STR),
    ("fields", FIELD),
)
ALWAYS = frozenset({"collapsed", "short", "is_webview", "msg_in_chat_window"})


class _Shape(ValueError):
    pass


def decode_attachments(text: str) -> list[dict[str, Any]]:
    """``json.Unmarshal`` of the rendered attachments into ``[]models.Attachment`` and back
    out as ``json.Marshal`` writes them (Go matches keys case-insensitively)."""
    if not text:
        return []
    try:
        value = json.loads(text)
        if value is None:
            return []
        if not isinstance(value, list):
            raise _Shape("expected a list")
        return [_decode({} if item is None else item, ATTACHMENT) for item in value]
    except (ValueError, _Shape) as e:
        raise config_error(
            SERVICE, f"failed to unmarshal attachments {excerpt(text)!r}: {e}"
        ) from None


def _decode(value: Any, schema: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Shape("expected an object")
    out: dict[str, Any] = {}
    for name, kind in schema:
        found = None
        for key, item in value.items():  # the last matching key wins, as in Go
            if key.lower() == name.lower():
                found = (item,)
        item = found[0] if found else None
        if kind == STR:
            if item is not None and not isinstance(item, str):
                raise _Shape(f"{name}: expected a string")
            if item or name in ALWAYS:
                out[name] = item or ""
        elif kind == BOOL:
            if item is not None and not isinstance(item, bool):
                raise _Shape(f"{name}: expected a bool")
            if item or name in ALWAYS:
                out[name] = bool(item)
        else:
            if item is not None and not isinstance(item, list):
                raise _Shape(f"{name}: expected a list")
            if item:
                out[name] = [_decode({} if v is None else v, kind) for v in item]
    return out


def api_base(server_url: str) -> str:
    """The SDK's ``NewClient`` + ``getUrl``."""
    try:
        parts = urlsplit(server_url)
        port = parts.port
    except ValueError as e:
        raise config_error(SERVICE, f"invalid serverUrl: {e}") from None
    scheme = "https" if parts.scheme == "https" else "http"
    port_text = str(port) if port is not None else ("443" if scheme == "https" else "80")
    host = parts.hostname or ""
    # Go keeps "scheme:rest" without a slash as an opaque URL: no host, no path.
    path = parts.path if parts.path.startswith("/") else ""
    return f"{scheme}://{host}:{port_text}{path}/api/v1"


def calculate_message(
    options: Mapping[str, Any], notification: Notification, recipient: str
) -> dict[str, Any]:
    opts = Options(SERVICE, options)
    target = "channel" if recipient.startswith(("#", "@")) else "roomId"
    message: dict[str, Any] = {
        "roomId": "",
        "channel": "",
        "text": notification.message,
        "alias": opts.text("alias"),
        "emoji": "",
        "avatar": "",
    }
    message[target] = recipient
    icon = opts.text("icon")
    if icon:
        if is_emoji(icon):
            message["emoji"] = icon
        else:
            log.warning("rocketchat: icon %r is not a valid emoji", icon)
    avatar = opts.text("avatar")
    if avatar:
        if is_http_url(avatar):
            message["avatar"] = avatar
        else:
            log.warning("rocketchat: avatar %r is not a valid URL", avatar)
    block = notification.blocks.get("rocketchat")
    if block is not None:
        message["attachments"] = decode_attachments(block.get("attachments") or "")
    return {k: v for k, v in message.items() if v}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    base = api_base(opts.text("serverUrl"))
    message = calculate_message(options, notification, recipient)
    form = {"user": opts.text("email"), "password": opts.text("password")}
    login = _answer(
        request(
            ctx,
            service=SERVICE,
            method="POST",
            url=f"{base}/login",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            data=encode_form(form),
            follow_redirects=False,
        ),
        "login",
    )
    data = _go_field(login, "data")
    if not isinstance(data, dict):
        data = {}
    auth = {
        "X-Auth-Token": str(_go_field(data, "authToken") or ""),
        "X-User-Id": str(_go_field(data, "userID") or ""),
    }
    posted = _answer(
        request(
            ctx,
            service=SERVICE,
            method="POST",
            url=f"{base}/chat.postMessage",
            headers={"Content-Type": "application/json", **auth},
            json_body=message,
            follow_redirects=False,
        ),
        "chat.postMessage",
    )
    if posted.get("success") is not True:
        raise config_error(SERVICE, f"chat.postMessage failed: {posted.get('error') or ''}")


def _go_field(value: Mapping[str, Any], name: str) -> Any:
    found = None
    for key, item in value.items():
        if key.lower() == name.lower():
            found = item
    return found


def _answer(response: requests.Response, call: str) -> dict[str, Any]:
    """The SDK's ``doRequest`` + ``Status.OK``: the decoded answer, or the SendError."""
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        what = "request error" if response.status_code != 200 else "the answer is not JSON"
        raise status_error(response, service=SERVICE, call=call, detail=what)
    problem = _status_problem(answer)
    if problem is None:
        return answer
    raise status_error(response, service=SERVICE, call=call, detail=excerpt(problem))


def _status_problem(answer: Mapping[str, Any]) -> str | None:
    if answer.get("success") is True:
        return None
    if answer.get("error"):
        return str(answer["error"])
    if answer.get("status") == "success":
        return None
    if answer.get("message"):
        return f"status: {answer.get('status') or ''}, message: {answer['message']}"
    return "got false response"
