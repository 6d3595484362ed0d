"""Opsgenie: an alert for a team, as the engine's ``opsgenie`` service creates it through
opsgenie-go-sdk-v2.

Options: ``apiUrl`` (the API host, default ``api.opsgenie.com``; ``api.eu.opsgenie.com`` in
the EU) and ``apiKeys``, a map from recipient (the team) to its integration's API key; a
recipient with no key is an error. The request is the SDK's ``CreateAlertRequest``: a POST to
``https://<apiUrl>/v2/alerts`` (``http://`` when the host does not contain ``api``, as the
SDK does for its tests) with ``Authorization: GenieKey <key>`` and the JSON alert: ``message``,
``source: "Argo CD"``, ``responders: [{"type": "team", "id": <recipient>, "username": ""}]``
and, from the rendered ``opsgenie`` block, ``description`` (required when the block is there),
``priority``, ``alias``, ``note``, ``actions``, ``tags``, ``details``, ``entity``,
``visibleTo`` and ``user``, each left out when empty. A responder's ``type`` and ``username``
are always written (the SDK's tags spell ``omitempty`` with a space, so Go ignores it). An
empty message is an error, as the SDK checks. Any status below 400 counts as delivered.

Unlike the SDK, an ``apiUrl`` that starts with ``http://`` or ``https://`` is taken as the
base URL (the SDK would build ``https://https://...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import request, status_error

SERVICE = "opsgenie"
DEFAULT_API_URL = "api.opsgenie.com"
SOURCE = "Argo CD"


def alerts_url(api_url: str) -> str:
    host = api_url or DEFAULT_API_URL
    if host.startswith(("http://", "https://")):
        return host.removesuffix("/") + "/v2/alerts"
    scheme = "https" if "api" in host else "http"
    return f"{scheme}://{host}/v2/alerts"


def _responder(value: Mapping[str, Any]) -> dict[str, str]:
    out = {"type": str(value.get("type", ""))}
    for name in ("name", "id"):
        if value.get(name):
            out[name] = str(value[name])
    out["username"] = str(value.get("username", ""))
    return out


def calculate_alert(
    message: str, block: Mapping[str, Any] | None, recipient: str
) -> dict[str, Any]:
    """The SDK's ``CreateAlertRequest`` as the engine fills it, in its JSON field order."""
    if block is not None and not block.get("description"):
        raise config_error(SERVICE, "opsgenie notification description is missing")
    block = block or {}
    if not message:
        raise config_error(SERVICE, "message can not be empty")
    fields: dict[str, Any] = {
        "message": message,
        "alias": block.get("alias"),
        "description": block.get("description"),
        "responders": [_responder({"type": "team", "id": recipient})],
        "visibleTo": [_responder(r) for r in block.get("visibleTo") or []],
        "actions": block.get("actions"),
        "tags": block.get("tags"),
        "details": block.get("details"),
        "entity": block.get("entity"),
        "source": SOURCE,
        "priority": block.get("priority"),
        "user": block.get("user"),
        "note": block.get("note"),
    }
    return {k: v for k, v in fields.items() if k == "message" or v}


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    opts = Options(SERVICE, options)
    key = opts.for_recipient("apiKeys", recipient, what="API key")
    alert = calculate_alert(notification.message, notification.blocks.get("opsgenie"), recipient)
    response = request(
        ctx,
        service=SERVICE,
        method="POST",
        url=alerts_url(opts.text("apiUrl")),
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "Accept": "application/json",
            "Authorization": f"GenieKey {key}",
        },
        json_body=alert,
        follow_redirects=False,
    )
    if response.status_code >= 400:
        raise status_error(response, service=SERVICE)
