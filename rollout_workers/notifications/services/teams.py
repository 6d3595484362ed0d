"""Microsoft Teams through an Office 365 connector (incoming webhook): a MessageCard, as the
engine's ``teams`` service posts it.

Options (``service.teams[.<name>]``): ``recipientUrls``, a map from recipient to webhook URL; an
unknown recipient is a final error.

The body, POSTed as ``application/json``: the template's ``teams.template`` verbatim when set;
otherwise a MessageCard ``{"@type": "MessageCard", "context": "https://schema.org/extensions",
"title", "summary", "text", "themeColor"?, "potentialAction"?, "sections"?}`` (``context``
without ``@``, as the engine writes it). ``text`` is the message unless ``teams.text`` is set;
``sections`` and ``potentialAction`` are the JSON lists of those fields, and ``teams.facts`` (a
JSON list) is appended as one more section ``{"facts": [...]}``.

The connector answers ``1`` when it took the card; any other 2xx body is a final error, as in
the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, transport
from rollout_workers.notifications.services.gojson import Struct, decode_list, marshal
from rollout_workers.notifications.services.options import Options, label

CONTENT_TYPE = "application/json"


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("teams", ctx.service)
    url = Options(where, options).for_recipient("recipientUrls", recipient, what="webhook URL")
    body = calculate_body(notification, where)
    response = transport.request(
        ctx,
        service=where,
        method="POST",
        url=url,
        data=body,
        headers={"Content-Type": CONTENT_TYPE},
    )
    transport.check_status(response, service=where)
    if response.text != "1":
        raise SendError(
            f"{where}: the webhook did not accept the card: {transport.excerpt(response.text)}",
            final=True,
            status=response.status_code,
        )


def calculate_body(notification: Notification, where: str = "teams") -> bytes:
    block = notification.blocks.get("teams") or {}
    template = block.get("template") or ""
    if template:
        return str(template).encode()
    card = Struct(
        {
            "@type": "MessageCard",
            "context": "https://schema.org/extensions",
            "title": block.get("title") or "",
            "summary": block.get("summary") or "",
            "text": block.get("text") or notification.message,
        }
    )
    if block.get("themeColor"):
        card["themeColor"] = block["themeColor"]
    sections: list[Any] = []
    if block.get("sections"):
        sections = _list(block["sections"], "teams.sections", where)
    if block.get("facts"):
        sections.append({"facts": _list(block["facts"], "teams.facts", where)})
    if block.get("potentialAction"):
        actions = _list(block["potentialAction"], "teams.potentialAction", where)
        if actions:
            card["potentialAction"] = actions
    if sections:
        card["sections"] = sections
    return marshal(card)


def _list(text: Any, name: str, where: str) -> list[Any]:
    return decode_list(text, name=name, where=where) or []
