"""pagerdutyv2: pagerdutyv2_test.go's cases and the Events API v2 request."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.pagerdutyv2 import calculate_event, send
from tests.support.receiver import Answer, Receiver

FULL = {
    "summary": "test-app failed to deploy",
    "severity": "error",
    "source": "test-app",
    "component": "test-component",
    "group": "platform",
    "class": "test-class",
    "url": "https://www.example.com/",
}
ACCEPTED = Answer.json(202, {"status": "success", "message": "Event processed"})


def test_builds_event_with_full_payload() -> None:
    assert calculate_event("routing-key", FULL) == {
        "routing_key": "routing-key",
        "event_action": "trigger",
        "client": "ArgoCD",
        "client_url": "https://www.example.com/",
        "payload": {
            "summary": "test-app failed to deploy",
            "source": "test-app",
            "severity": "error",
            "component": "test-component",
            "group": "platform",
            "class": "test-class",
        },
    }


def test_empty_optional_fields_are_left_out() -> None:
    block = {**FULL, "component": "", "group": "", "class": "", "url": ""}
    event = calculate_event("k", block)
    assert "client_url" not in event
    assert set(event["payload"]) == {"summary", "source", "severity"}


def _send(receiver: Receiver, ctx: SendContext, n: Notification, recipient: str) -> None:
    options: dict[str, Any] = {"serviceKeys": {"test-service": "key"}, "apiURL": receiver.url()}
    send(options, n, recipient, ctx)


def test_posts_to_enqueue(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: ACCEPTED
    _send(receiver, ctx, Notification("message", {"pagerdutyv2": FULL}), "test-service")
    [req] = receiver.received()
    assert (req.method, req.path) == ("POST", "/v2/enqueue")
    assert req.headers["Content-Type"] == "application/json"
    assert req.json() == calculate_event("key", FULL)


@pytest.mark.parametrize(
    ("notification", "recipient", "message"),
    [
        (Notification("message"), "test-service", "pagerdutyv2: no config found for pagerdutyv2"),
        (
            Notification("message", {"pagerdutyv2": FULL}),
            "other",
            "pagerdutyv2: no API key configured for recipient 'other'",
        ),
    ],
    ids=["missing config", "missing apiKey"],
)
def test_config_errors_are_final(
    receiver: Receiver, ctx: SendContext, notification: Notification, recipient: str, message: str
) -> None:
    with pytest.raises(SendError) as e:
        _send(receiver, ctx, notification, recipient)
    assert (str(e.value), e.value.final) == (message, True)
    assert receiver.received() == []


@pytest.mark.parametrize(
    ("status", "final"), [(200, True), (400, True), (429, False), (502, False)]
)
def test_only_202_is_delivered(
    receiver: Receiver, ctx: SendContext, status: int, final: bool
) -> None:
    receiver.respond = lambda _: Answer.json(status, {"status": "invalid event"})
    with pytest.raises(SendError) as e:
        _send(receiver, ctx, Notification("m", {"pagerdutyv2": FULL}), "test-service")
    assert (e.value.final, e.value.status) == (final, status)
