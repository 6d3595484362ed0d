"""PagerDuty (Events API v2): a ``trigger`` event, as the engine's ``pagerdutyv2`` service sends
it through go-pagerduty's ``ManageEventWithContext``.

Options: ``serviceKeys``, a map from recipient to the integration's routing key; a recipient
with no key is an error. The rendered ``pagerdutyv2`` block (``summary``, ``severity``,
``source``, ``component``, ``group``, ``class``, ``url``) is required. One POST to
``<apiURL>/v2/enqueue`` with ``{"routing_key", "event_action": "trigger", "client": "ArgoCD",
"client_url": url, "payload": {"summary", "source", "severity", "component", "group",
"class"}}`` (``client_url`` and the last three left out when empty); only a 202 counts as
delivered.

``apiURL`` (default ``https://events.pagerduty.com``) is this project's option, not the
engine's: the library's endpoint is a constant there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import check_status, request

SERVICE = "pagerdutyv2"
DEFAULT_API_URL = "https://events.pagerduty.com"


def calculate_event(routing_key: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's ``buildEvent``."""
    payload = {
        "summary": block.get("summary", ""),
        "source": block.get("source", ""),
        "severity": block.get("severity", ""),
    }
    for name in ("component", "group", "class"):
        if block.get(name):
            payload[name] = block[name]
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "client": "ArgoCD",
    }
    if block.get("url"):
        event["client_url"] = block["url"]
    event["payload"] = payload
    return event


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    key = opts.for_recipient("serviceKeys", recipient, what="API key")
    block = notification.blocks.get("pagerdutyv2")
    if block is None:
        raise config_error(SERVICE, "no config found for pagerdutyv2")
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=f"{opts.base_url('apiURL', DEFAULT_API_URL)}/v2/enqueue",
        headers={"Content-Type": "application/json"},
        json_body=calculate_event(key, block),
        follow_redirects=False,
    )
    check_status(response, service=SERVICE, ok=(202,))
