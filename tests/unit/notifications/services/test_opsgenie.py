"""opsgenie: opsgenie_test.go's send cases and the SDK's create-alert request."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.opsgenie import alerts_url, send
from tests.support.receiver import Answer, Receiver

ACCEPTED = Answer.json(202, {"result": "Request will be processed", "took": 0.1, "requestId": "r"})


def _options(receiver: Receiver) -> dict[str, Any]:
    # A host without "api" in it: the SDK speaks plain http to it (its own test hook).
    return {"apiUrl": f"127.0.0.1:{receiver.port}", "apiKeys": {"testRecipient": "testApiKey"}}


def _block(**fields: Any) -> dict[str, Any]:
    base = {f: "" for f in ("description", "alias", "note", "entity", "user", "priority")}
    return {**base, **fields}


def test_missing_api_key(receiver: Receiver, ctx: SendContext) -> None:
    n = Notification("Test message", {"opsgenie": _block(description="d")})
    with pytest.raises(SendError) as e:
        send({"apiUrl": "x", "apiKeys": {}}, n, "testRecipient", ctx)
    assert str(e.value) == "opsgenie: no API key configured for recipient 'testRecipient'"
    assert e.value.final is True


def test_missing_description(receiver: Receiver, ctx: SendContext) -> None:
    n = Notification("Test message", {"opsgenie": _block(priority="P1")})
    with pytest.raises(SendError) as e:
        send(_options(receiver), n, "testRecipient", ctx)
    assert str(e.value) == "opsgenie: opsgenie notification description is missing"
    assert receiver.received() == []


def test_empty_message_is_refused_as_the_sdk_does(receiver: Receiver, ctx: SendContext) -> None:
    with pytest.raises(SendError) as e:
        send(_options(receiver), Notification(""), "testRecipient", ctx)
    assert (str(e.value), e.value.final) == ("opsgenie: message can not be empty", True)


TEAM = [{"type": "team", "id": "testRecipient", "username": ""}]
# (name, opsgenie block or None, expected alert body)
SENDS: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = [
    (
        "WithMessageOnly",
        None,
        {"message": "Test message", "responders": TEAM, "source": "Argo CD"},
    ),
    (
        "WithDescriptionOnly",
        _block(description="Test Opsgenie alert: bar"),
        {
            "message": "Test message",
            "description": "Test Opsgenie alert: bar",
            "responders": TEAM,
            "source": "Argo CD",
        },
    ),
    (
        "WithDescriptionAndPriority",
        _block(description="d", priority="P1"),
        {
            "message": "Test message",
            "description": "d",
            "responders": TEAM,
            "source": "Argo CD",
            "priority": "P1",
        },
    ),
    (
        "WithAllFields",
        {
            **_block(
                description="d",
                alias="Test alias",
                priority="P1",
                note="Test note",
                entity="TestEntity",
                user="TestUser",
            ),
            "actions": ["action1", "action2"],
            "tags": ["tag1", "tag2"],
            "details": {"detail1": "value1"},
            "visibleTo": [
                {"type": "user", "id": "u1", "name": "", "username": ""},
                {"type": "team", "id": "", "name": "rocket_team", "username": ""},
                {"type": "user", "id": "", "name": "", "username": "trinity@opsgenie.com"},
            ],
        },
        {
            "message": "Test message",
            "alias": "Test alias",
            "description": "d",
            "responders": TEAM,
            "visibleTo": [
                {"type": "user", "id": "u1", "username": ""},
                {"type": "team", "name": "rocket_team", "username": ""},
                {"type": "user", "username": "trinity@opsgenie.com"},
            ],
            "actions": ["action1", "action2"],
            "tags": ["tag1", "tag2"],
            "details": {"detail1": "value1"},
            "entity": "TestEntity",
            "source": "Argo CD",
            "priority": "P1",
            "user": "TestUser",
            "note": "Test note",
        },
    ),
]


@pytest.mark.parametrize(("block", "body"), [c[1:] for c in SENDS], ids=[c[0] for c in SENDS])
def test_send(
    receiver: Receiver,
    ctx: SendContext,
    block: dict[str, Any] | None,
    body: dict[str, Any],
) -> None:
    receiver.respond = lambda _: ACCEPTED
    blocks = {} if block is None else {"opsgenie": block}
    send(_options(receiver), Notification("Test message", blocks), "testRecipient", ctx)
    [req] = receiver.received()
    assert (req.method, req.path) == ("POST", "/v2/alerts")
    assert req.headers["Authorization"] == "GenieKey testApiKey"
    assert req.headers["Content-Type"] == "application/json; charset=utf-8"
    assert req.headers["Accept"] == "application/json"
    assert req.json() == body


@pytest.mark.parametrize(
    ("api_url", "url"),
    [
        ("", "https://api.opsgenie.com/v2/alerts"),
        ("api.eu.opsgenie.com", "https://api.eu.opsgenie.com/v2/alerts"),
        ("localhost:8080", "http://localhost:8080/v2/alerts"),
        ("https://api.opsgenie.com/", "https://api.opsgenie.com/v2/alerts"),
    ],
)
def test_alerts_url(api_url: str, url: str) -> None:
    assert alerts_url(api_url) == url


@pytest.mark.parametrize(
    ("status", "final"), [(422, True), (401, True), (429, False), (500, False)]
)
def test_failures(receiver: Receiver, ctx: SendContext, status: int, final: bool) -> None:
    receiver.respond = lambda _: Answer.json(status, {"message": "no", "took": 0.0})
    with pytest.raises(SendError) as e:
        send(_options(receiver), Notification("m"), "testRecipient", ctx)
    assert (e.value.final, e.value.status) == (final, status)
    assert "testApiKey" not in str(e.value)
