"""Microsoft Teams through a Workflows (Power Automate) webhook: an Adaptive Card, as the
engine's ``teams-workflows`` service posts it.

This service is not in notifications-engine v0.5.0 (which Argo Rollouts v1.9.1 pins); it
follows the engine's later ``pkg/services/teams-workflows.go``, for Office 365 connectors being
retired. Template block: ``teams-workflows`` with the ``teams`` fields plus ``adaptiveCard``.

Options (``service.teams-workflows[.<name>]``): ``recipientUrls`` (recipient -> webhook URL) and
``insecureSkipVerify``. The URL must be https (http only for localhost and 127.x) and look like
a Workflows URL (``api.powerautomate.com``, ``api.powerplatform.com``, ``flow.microsoft.com``,
``webhook.office.com/workflows`` or a ``/powerautomate/`` path); otherwise the send fails, final.

The body, POSTed as ``application/json``, is ``{"type": "message", "attachments":
[{"contentType": "application/vnd.microsoft.card.adaptive", "content": <card>}]}``. The card is
``adaptiveCard`` as written (it must be valid JSON) when set; otherwise it is built: ``{"type":
"AdaptiveCard", "version": "1.4", "body": [...], "actions"?: [...]}`` where the body holds the
title (a large bolder TextBlock coloured with ``themeColor``), the text (the message unless
``text`` is set), a FactSet from ``facts`` (entries with a string ``name``), one FactSet per
section with ``facts``, and the actions are the ``OpenUri`` entries of ``potentialAction``
with a target URI, as ``Action.OpenUrl``. Any 2xx answer is delivered.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, transport
from rollout_workers.notifications.services.gojson import Struct, decode_list, marshal
from rollout_workers.notifications.services.options import Options, config_error, label

BLOCK = "teams-workflows"
CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
WORKFLOWS_URL = re.compile(
    r"(api\.(powerautomate|powerplatform)\.com|flow\.microsoft\.com"
    r"|webhook\.office\.com/workflows|/powerautomate/)",
    re.IGNORECASE,
)


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label(BLOCK, ctx.service)
    opts = Options(where, options)
    url = opts.for_recipient("recipientUrls", recipient, what="webhook URL")
    problem = url_problem(url)
    if problem:
        raise config_error(where, f"recipient {recipient!r}: {problem}")
    response = transport.request(
        ctx,
        service=where,
        method="POST",
        url=url,
        data=calculate_body(notification, where),
        headers={"Content-Type": "application/json"},
        verify=not opts.flag("insecureSkipVerify"),
    )
    transport.check_status(response, service=where)


def url_problem(url: str) -> str:
    """Why a URL is not a Workflows webhook URL; empty when it is one."""
    if not url:
        return "webhook URL cannot be empty"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "invalid webhook URL format"
    local = host in ("localhost", "127.0.0.1") or host.startswith("127.")
    if parts.scheme != "https" and not local:
        return "webhook URL must use HTTPS scheme"
    if parts.scheme not in ("https", "http"):
        return "webhook URL must use HTTP or HTTPS scheme"
    if not parts.netloc:
        return "webhook URL must have a valid host"
    if not WORKFLOWS_URL.search(url):
        return "webhook URL does not appear to be a Microsoft Teams Workflows URL"
    return ""


def calculate_body(notification: Notification, where: str = BLOCK) -> bytes:
    block = notification.blocks.get(BLOCK) or {}
    custom = str(block.get("adaptiveCard") or "").strip()
    if custom:
        try:
            card: Any = json.loads(custom)
        except ValueError as e:
            raise config_error(where, f"adaptiveCard is not valid JSON: {e}") from None
        # The engine keeps the card's bytes (json.RawMessage); re-encoding keeps its order.
        content = json.dumps(card, ensure_ascii=False, separators=(",", ":"))
    else:
        content = marshal(build_card(block, notification.message, where)).decode()
    envelope = Struct(
        {
            "type": "message",
            "attachments": [Struct({"contentType": CARD_CONTENT_TYPE, "content": _RAW})],
        }
    )
    return marshal(envelope).replace(json.dumps(_RAW).encode(), content.encode(), 1)


_RAW = "\x00raw-card\x00"  # stands for the card's bytes while the envelope is written


def build_card(block: Mapping[str, Any], message: str, where: str = BLOCK) -> Struct:
    body: list[Struct] = []
    title = str(block.get("title") or "")
    text = str(block.get("text") or "") or message
    if title:
        element = Struct({"type": "TextBlock", "text": title, "size": "Large", "weight": "Bolder"})
        if block.get("themeColor"):
            element["color"] = str(block["themeColor"])
        element["wrap"] = True
        body.append(element)
    if text:
        body.append(Struct({"type": "TextBlock", "text": text, "wrap": True}))
    facts = _json_list(block.get("facts"), "facts", where)
    fact_set = _fact_set(facts)
    if fact_set is not None:
        body.append(fact_set)
    for section in _json_list(block.get("sections"), "sections", where):
        if isinstance(section, dict) and isinstance(section.get("facts"), list):
            fact_set = _fact_set(section["facts"])
            if fact_set is not None:
                body.append(fact_set)
    card = Struct({"type": "AdaptiveCard", "version": "1.4", "body": body})
    actions = _json_list(block.get("potentialAction"), "potentialAction", where)
    if actions:
        open_urls = [a for a in (_open_url(action) for action in actions) if a is not None]
        if open_urls:
            card["actions"] = open_urls
    return card


def _fact_set(facts: list[Any]) -> Struct | None:
    entries = [
        Struct({"title": fact["name"], "value": go_value(fact.get("value", ""))})
        for fact in facts
        if isinstance(fact, dict) and isinstance(fact.get("name"), str)
    ]
    return Struct({"type": "FactSet", "facts": entries}) if entries else None


def _open_url(action: Any) -> Struct | None:
    if not isinstance(action, dict) or action.get("@type") != "OpenUri":
        return None
    url = ""
    targets = action.get("targets")
    if isinstance(targets, list) and targets and isinstance(targets[0], dict):
        uri = targets[0].get("uri")
        url = uri if isinstance(uri, str) else ""
    if not url:
        return None
    entry = Struct({"type": "Action.OpenUrl"})
    if isinstance(action.get("name"), str) and action["name"]:
        entry["title"] = action["name"]
    entry["url"] = url
    return entry


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v", v)`` of a value decoded from JSON (numbers are float64 in Go)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _go_float(float(value))
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_float(value: float) -> str:
    """%v of a float64: the shortest digits, in e-notation below 1e-4 or from 1e6 on."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    number = Decimal(repr(value)).normalize()
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    exp10 = len(digits) + exponent - 1
    if exp10 < -4 or exp10 >= 6:
        mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if digits[1:] else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return format(number, "f")


def _json_list(text: Any, name: str, where: str) -> list[Any]:
    return (decode_list(text, name=name, where=where) if text else None) or []
