"""webex: the engine's webex_test.go cases against a real loopback server."""

from __future__ import annotations

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.webex import EMAIL, send
from tests.support.receiver import Answer, Receiver
from tests.unit.notifications.services.conftest import free_port

TOKEN = "NRAK-5F2FIVA5UTA4FFDD11XCXVA7WPJ"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("test@test.com", True),
        ("test.test@test.com", True),
        ("notAnEmail", False),
        ("notAnEmail@", False),
    ],
)
def test_valid_email(text: str, valid: bool) -> None:
    assert bool(EMAIL.match(text)) is valid


@pytest.mark.parametrize(
    ("recipient", "body"),
    [
        ("test@test.com", {"toPersonEmail": "test@test.com", "markdown": "message"}),
        ("roomId123", {"roomId": "roomId123", "markdown": "message"}),
    ],
    ids=["successful attempt - email", "successful attempt - room"],
)
def test_send(receiver: Receiver, ctx: SendContext, recipient: str, body: object) -> None:
    options = {"token": TOKEN, "apiURL": receiver.url("/")}
    send(options, Notification(message="message"), recipient, ctx)
    [req] = receiver.received()
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["Content-Type"] == "application/json"
    assert req.headers["Authorization"] == f"Bearer {TOKEN}"
    assert req.json() == body


@pytest.mark.parametrize(
    ("status", "final"), [(401, True), (404, True), (201, True), (500, False), (503, False)]
)
def test_non_200_fails(receiver: Receiver, ctx: SendContext, status: int, final: bool) -> None:
    receiver.respond = lambda _: Answer.json(status, {"message": "nope"})
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": receiver.url()}, Notification("m"), "a@b.co", ctx)
    assert (e.value.final, e.value.status) == (final, status)
    assert str(e.value).startswith("webex: ")
    assert TOKEN not in str(e.value)


def test_429_carries_retry_after(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer.json(429, {}, ("Retry-After", "7"))
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": receiver.url()}, Notification("m"), "room", ctx)
    assert (e.value.final, e.value.retry_after) == (False, 7.0)


def test_no_answer_is_retryable(ctx: SendContext) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": url}, Notification("m"), "room", ctx)
    assert e.value.final is False
    assert "could not connect" in str(e.value)
