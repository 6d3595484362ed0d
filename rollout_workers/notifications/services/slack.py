"""Slack: ``chat.postMessage`` (and ``chat.update``) through the Web API, as the engine's
``slack`` service (slack-go) calls them.

Options (``service.slack[.<name>]``): ``token``, ``apiURL`` (default ``https://slack.com/api/``),
``username``, ``icon``, ``insecureSkipVerify``, ``disableUnfurl``; ``signingSecret`` and
``channels`` are read by the engine's bot, not by the sender. The recipient is the channel
(a name or an id).

The form the engine posts: ``channel``, ``text`` (the message), ``username`` (the template's,
else the service's), ``icon_emoji`` for ``:name:`` or ``icon_url`` for an http(s) URL (the
template's icon, else the service's; anything else is dropped), and, when the notification has
a ``slack`` block, ``attachments`` (``[]`` when empty) and ``blocks`` (when given), both JSON
strings parsed and written back compactly; ``unfurl_links``/``unfurl_media`` ``false`` with
``disableUnfurl``; ``thread_ts`` and ``reply_broadcast`` for grouping.

Grouping: a notification with ``groupingKey`` is threaded under the first message posted with
that key to that recipient. Like the engine, this process remembers those first messages in
memory (:class:`Threads`, keyed by recipient and grouping key, not by service), so a restart or
another worker process starts new threads. ``deliveryPolicy``: ``Post`` (default) always posts,
in the thread when there is one; ``Update`` posts the first message and afterwards only updates
it with ``chat.update``; ``PostAndUpdate`` posts in the thread and updates the first message.

Deviations from slack-go's bytes: the token travels as ``Authorization: Bearer`` (Slack accepts
it there or in the form); attachments and blocks are sent as the user wrote them rather than
decoded into slack-go's structs and written back (which drops unknown fields and adds
``"blocks":null``).

Outcomes: ``ok: true`` is delivered; a 429 or ``ratelimited`` is retried after ``Retry-After``;
a 5xx, no answer or Slack's transient errors (``internal_error``, ``fatal_error``,
``service_unavailable``, ``request_timeout``) are retried; any other ``error`` is final.
"""

from __future__ import annotations

import json
import ssl
import threading
import urllib.error
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web import WebClient

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, transport
from rollout_workers.notifications.services.gojson import decode_list
from rollout_workers.notifications.services.options import Options, config_error, is_emoji, label
from rollout_workers.notifications.services.transport import is_http_url

DEFAULT_API_URL = "https://slack.com/api/"
POST, UPDATE, POST_AND_UPDATE = "Post", "Update", "PostAndUpdate"
TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


@dataclass
class Threads:
    """The engine's ``slackState``: per recipient, the ts of the first message posted with each
    grouping key, and the channel id Slack answered for the recipient (``chat.update`` needs
    the id, not the name)."""

    thread_ts: dict[tuple[str, str], str] = field(default_factory=dict)
    channel_ids: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ts(self, recipient: str, grouping_key: str) -> str:
        with self.lock:
            return self.thread_ts.get((recipient, grouping_key), "")

    def remember(self, recipient: str, grouping_key: str, ts: str) -> None:
        with self.lock:
            self.thread_ts[(recipient, grouping_key)] = ts

    def channel(self, recipient: str) -> str:
        with self.lock:
            return self.channel_ids.get(recipient, recipient)

    def remember_channel(self, recipient: str, channel_id: str) -> None:
        with self.lock:
            self.channel_ids[recipient] = channel_id


THREADS = Threads()
"""This process's memory of threads, shared by every Slack service as in the engine."""


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    send_with(options, notification, recipient, ctx, THREADS)


def send_with(
    options: Mapping[str, Any],
    notification: Notification,
    recipient: str,
    ctx: SendContext,
    threads: Threads,
) -> None:
    """:func:`send` with the thread memory given (tests give their own)."""
    where = label("slack", ctx.service)
    opts = Options(where, options)
    fields = calculate_message(options=opts, notification=notification)
    block = notification.blocks.get("slack") or {}
    grouping_key = str(block.get("groupingKey") or "")
    broadcast = block.get("notifyBroadcast") is True
    policy = delivery_policy(block.get("deliveryPolicy"))
    client = _client(opts, ctx)

    ts = threads.ts(recipient, grouping_key) if grouping_key else ""
    if ts:
        fields["thread_ts"] = ts
    if not ts or policy in (POST, POST_AND_UPDATE):
        post = dict(fields, channel=recipient)
        if broadcast:
            post["reply_broadcast"] = "true"
        answer = _call(client, "chat.postMessage", post, where)
        if grouping_key and not ts:
            threads.remember(recipient, grouping_key, str(answer.get("ts") or ""))
        threads.remember_channel(recipient, str(answer.get("channel") or recipient))
    if ts and policy in (UPDATE, POST_AND_UPDATE):
        update = dict(fields, channel=threads.channel(recipient), ts=ts, as_user="true")
        _call(client, "chat.update", update, where)


def calculate_message(*, options: Options, notification: Notification) -> dict[str, str]:
    """The form fields of the message, the channel and threading aside (``buildMessageOptions``
    in the engine)."""
    block = notification.blocks.get("slack")
    fields = {"text": notification.message}
    username = (block or {}).get("username") or options.text("username")
    if username:
        fields["username"] = username
    icon = (block or {}).get("icon") or options.text("icon")
    if icon:
        if is_emoji(icon):
            fields["icon_emoji"] = icon
        elif is_http_url(icon):
            fields["icon_url"] = icon
        # else: the engine logs a warning and sends no icon.
    if block is not None:
        fields["attachments"] = _json_list(block.get("attachments"), "attachments", options.label)
        blocks = block.get("blocks")
        if blocks:
            fields["blocks"] = _json_list(blocks, "blocks", options.label)
    if options.flag("disableUnfurl"):
        fields["unfurl_links"] = "false"
        fields["unfurl_media"] = "false"
    return fields


def delivery_policy(value: Any) -> str:
    """The engine's ``DeliveryPolicy.FromString``: anything but the three names is Post."""
    return value if value in (POST, UPDATE, POST_AND_UPDATE) else POST


def _json_list(text: Any, name: str, where: str) -> str:
    if not text:
        return "[]"
    value = decode_list(text, name=f"slack.{name}", where=where)
    if value is None:
        raise config_error(where, f"slack.{name} must be a JSON list")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _client(opts: Options, ctx: SendContext) -> WebClient:
    tls: ssl.SSLContext | None = None
    if opts.flag("insecureSkipVerify"):
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    return WebClient(
        token=opts.text("token") or None,
        base_url=opts.text("apiURL") or DEFAULT_API_URL,
        timeout=max(1, round(ctx.timeout)),
        ssl=tls,
        retry_handlers=[],  # one attempt: delivery owns retries
    )


def _call(client: WebClient, method: str, fields: dict[str, str], where: str) -> dict[str, Any]:
    try:
        response = client.api_call(method, data=fields)
    except SlackApiError as e:
        raise _api_error(e, method, where) from None
    except TimeoutError:
        raise SendError(f"{where}: {method}: no answer in time", final=False) from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, ssl.SSLError):
            raise SendError(f"{where}: {method}: TLS handshake failed", final=True) from None
        raise SendError(f"{where}: {method}: could not connect", final=False) from None
    except (ConnectionError, OSError):
        raise SendError(f"{where}: {method}: could not connect", final=False) from None
    data = response.data
    return data if isinstance(data, dict) else {}


def _api_error(e: SlackApiError, method: str, where: str) -> SendError:
    response = e.response
    status = int(getattr(response, "status_code", 0) or 0)
    data = getattr(response, "data", None)
    error = str(data.get("error") or "") if isinstance(data, dict) else ""
    headers = getattr(response, "headers", None) or {}
    retry_after = None
    if status == 429 or error == "ratelimited":
        retry_after = transport.retry_after(
            headers.get("Retry-After") or headers.get("retry-after")
        )
    final = status != 429 and status < 500 and error not in TRANSIENT_ERRORS
    detail = error or f"HTTP {status}"
    return SendError(
        f"{where}: {method} failed: {transport.excerpt(detail)}",
        final=final,
        status=status or None,
        retry_after=retry_after,
    )
