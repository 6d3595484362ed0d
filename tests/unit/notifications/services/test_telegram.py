"""telegram: telegram_test.go's recipient table, and the library's getMe + sendMessage."""

from __future__ import annotations

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.telegram import calculate_message_form, send
from tests.support.receiver import Answer, Receiver, Request

TOKEN = "123:secret-token"
ALWAYS = {
    "business_connection_id": "",
    "entities": "null",
    "link_preview_options": "{}",
    "reply_parameters": '{"message_id":0}',
    "parse_mode": "Markdown",
}

# (name, recipient, the recipient's params)
RECIPIENTS = [
    ("Message to chat", "-123456", {"chat_id": "-123456"}),
    ("Message to chat with thread", "-123456|1", {"chat_id": "-123456", "message_thread_id": "1"}),
    ("Message to channel", "123456", {"chat_id": "@123456"}),
]


@pytest.mark.parametrize(
    ("recipient", "params"), [c[1:] for c in RECIPIENTS], ids=[c[0] for c in RECIPIENTS]
)
def test_build_message_options(recipient: str, params: dict[str, str]) -> None:
    assert calculate_message_form("Test message", recipient) == {
        **ALWAYS,
        **params,
        "text": "Test message",
    }


@pytest.mark.parametrize("recipient", ["-12x", "-1|y", "-1|", "-99999999999999999999"])
def test_bad_chat_or_thread_id_is_final(recipient: str) -> None:
    with pytest.raises(SendError) as e:
        calculate_message_form("m", recipient)
    assert e.value.final is True


def _ok(request: Request) -> Answer:
    return Answer.json(200, {"ok": True, "result": {"id": 1}})


def test_get_me_then_send_message(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = _ok
    send({"token": TOKEN, "apiURL": receiver.url()}, Notification("hi *there*"), "-42|3", ctx)
    get_me, message = receiver.received()
    assert (get_me.method, get_me.path, get_me.body) == ("POST", f"/bot{TOKEN}/getMe", b"")
    assert (message.method, message.path) == ("POST", f"/bot{TOKEN}/sendMessage")
    assert message.headers["Content-Type"] == "application/x-www-form-urlencoded"
    form = {k: v[0] for k, v in message.form().items()}
    form.setdefault("business_connection_id", "")  # parse_qs drops empty values
    assert form == {
        **ALWAYS,
        "chat_id": "-42",
        "message_thread_id": "3",
        "text": "hi *there*",
    }
    assert message.body.decode().startswith("business_connection_id=&chat_id=-42&")


def test_bad_token_fails_at_get_me(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer.json(
        401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
    )
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": receiver.url()}, Notification("m"), "chan", ctx)
    assert (e.value.final, e.value.status) == (True, 401)
    assert "getMe" in str(e.value) and "Unauthorized" in str(e.value)
    assert TOKEN not in str(e.value)
    assert len(receiver.received()) == 1


def test_flood_wait_is_retryable_after_its_seconds(receiver: Receiver, ctx: SendContext) -> None:
    def respond(request: Request) -> Answer:
        if request.path.endswith("/getMe"):
            return _ok(request)
        return Answer.json(
            429,
            {
                "ok": False,
                "error_code": 429,
                "description": "Too Many Requests: retry after 12",
                "parameters": {"retry_after": 12},
            },
        )

    receiver.respond = respond
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": receiver.url()}, Notification("m"), "chan", ctx)
    assert (e.value.final, e.value.retry_after) == (False, 12.0)


@pytest.mark.parametrize(
    ("answer", "final"),
    [
        (Answer.json(400, {"ok": False, "error_code": 400, "description": "chat not found"}), True),
        (Answer(502, b"<html>bad gateway</html>"), False),
    ],
)
def test_send_message_failures(
    receiver: Receiver, ctx: SendContext, answer: Answer, final: bool
) -> None:
    receiver.respond = lambda r: _ok(r) if r.path.endswith("/getMe") else answer
    with pytest.raises(SendError) as e:
        send({"token": TOKEN, "apiURL": receiver.url()}, Notification("m"), "chan", ctx)
    assert e.value.final is final
