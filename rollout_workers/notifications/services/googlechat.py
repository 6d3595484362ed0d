"""Google Chat through an incoming webhook, as the engine's ``googlechat`` service posts it.

Options (``service.googlechat[.<name>]``): ``webhooks``, a map from recipient to webhook URL; an
unknown recipient is a final error.

The body, POSTed as ``application/json``: ``{"text": ...}`` with the message when the template
has neither ``googlechat.cards`` nor ``googlechat.cardsV2``; otherwise ``text`` is empty and
``cards`` (legacy cards) and/or ``cardsV2`` are set from those fields, which are YAML (or JSON)
lists. Each ``cardsV2`` entry is wrapped as ``{"card": ..., "cardId": <new UUID>}``. A
``googlechat.threadKey`` adds the query parameters ``threadKey`` and
``messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD`` to the webhook URL (its query
re-encoded with keys sorted, as Go's ``url.Values.Encode``).

The webhook answers a JSON object; one with an ``error`` fails the send (final unless its
``code`` or the HTTP status is 429 or 5xx). The cards are sent as written rather than decoded
into the Chat API's structs and written back, which would drop fields those structs lack.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import yaml

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, transport
from rollout_workers.notifications.services.gojson import Struct, marshal
from rollout_workers.notifications.services.options import Options, label

REPLY_OPTION = "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"


class _StringTimestamps(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml reads it into JSON: a date stays a string."""


_StringTimestamps.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("googlechat", ctx.service)
    url = Options(where, options).for_recipient("webhooks", recipient, what="webhook URL")
    block = notification.blocks.get("googlechat") or {}
    body = calculate_body(notification, where)
    response = transport.request(
        ctx,
        service=where,
        method="POST",
        url=calculate_url(url, str(block.get("threadKey") or "")),
        data=body,
        headers={"Content-Type": "application/json"},
    )
    error = _answer_error(response)
    if error is not None:
        code = error.get("code")
        status = response.status_code
        retry = transport.retryable(status) or (isinstance(code, int) and transport.retryable(code))
        raise SendError(
            f"{where}: error with message: code={code} status={error.get('status')} "
            f"message={transport.excerpt(str(error.get('message') or ''))}",
            final=not retry,
            status=status,
            retry_after=transport.retry_after(response.headers.get("Retry-After"))
            if status == 429
            else None,
        )
    transport.check_status(response, service=where)


def calculate_url(url: str, thread_key: str) -> str:
    if not thread_key:
        return url
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True)]
    query += [("threadKey", thread_key), ("messageReplyOption", REPLY_OPTION)]
    return urlunsplit(parts._replace(query=transport.encode_form(query)))


def calculate_body(
    notification: Notification, where: str = "googlechat", new_id: Any = uuid.uuid4
) -> bytes:
    block = notification.blocks.get("googlechat") or {}
    cards, cards_v2 = block.get("cards") or "", block.get("cardsV2") or ""
    message = Struct({"text": ""})
    if not cards and not cards_v2:
        message["text"] = notification.message
        return marshal(message)
    if cards:
        message["cards"] = _yaml_list(cards, "googlechat.cards", where)
    if cards_v2:
        message["cardsV2"] = [
            Struct({"card": card, "cardId": str(new_id())})
            for card in _yaml_list(cards_v2, "googlechat.cardsV2", where)
        ]
    return marshal(message)


def _yaml_list(text: Any, name: str, where: str) -> list[Any]:
    try:
        value = yaml.load(str(text), Loader=_StringTimestamps)  # a SafeLoader
    except yaml.YAMLError as e:
        reason = " ".join(str(e).split())
        raise SendError(f"{where}: {name} is not valid YAML: {reason}", final=True) from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise SendError(f"{where}: {name} must be a list of cards", final=True)
    return value


def _answer_error(response: Any) -> dict[str, Any] | None:
    try:
        data = response.json()
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error: dict[str, Any] = data["error"]
        return error
    return None
