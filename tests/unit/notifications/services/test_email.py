"""The email sender against a real SMTP server (aiosmtpd) on loopback; cases from the engine's
email_test.go."""

from __future__ import annotations

import email
import socket
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.email import parse_to
from rollout_workers.notifications.services.registry import send


class Inbox:
    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []
        self.reject_with: str | None = None

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        if self.reject_with:
            return self.reject_with
        self.envelopes.append(envelope)
        return "250 OK"

    def messages(self) -> list[Message]:
        return [email.message_from_bytes(bytes(e.content or b"")) for e in self.envelopes]


def authenticator(server: Any, session: Session, envelope: Envelope, mechanism: str,
                  auth_data: Any) -> AuthResult:  # fmt: skip
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"argo",
        b"s3cret",
    )
    return AuthResult(success=ok, handled=False)  # unhandled: the server answers 535


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    with socket.socket() as probe:  # aiosmtpd's Controller cannot bind port 0 itself
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=port,
        authenticator=authenticator,
        auth_require_tls=False,  # loopback: net/smtp allows credentials in clear to localhost
    )
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def mail_service(port: int | str, **options: Any) -> Service:
    base = {"host": "127.0.0.1", "port": port, "from": "argo@x.io"}
    return Service("email", "email", {**base, **options})


def test_subject_body_from_and_to(smtp: tuple[Inbox, int], ctx: SendContext) -> None:
    inbox, port = smtp
    notification = Notification(
        message="the message", blocks={"email": {"subject": "Rollout healthy", "body": "all good"}}
    )
    send(mail_service(port), notification, " a@x.io  , b@x.io", ctx)
    (envelope,) = inbox.envelopes
    assert envelope.mail_from == "argo@x.io"
    assert envelope.rcpt_tos == ["a@x.io", "b@x.io"]
    (message,) = inbox.messages()
    assert message["From"] == "argo@x.io"
    assert message["To"] == "a@x.io, b@x.io"
    assert message["Subject"] == "Rollout healthy"
    assert message.get_content_type() == "text/plain"
    assert message.get_payload(decode=True).decode().strip() == "all good"  # type: ignore[union-attr]


def test_body_falls_back_to_the_message_and_html(smtp: tuple[Inbox, int], ctx: SendContext) -> None:
    inbox, port = smtp
    send(mail_service(port, html=True), Notification(message="<b>hi</b>"), "a@x.io", ctx)
    (message,) = inbox.messages()
    assert message["Subject"] == ""
    assert message.get_content_type() == "text/html"
    assert message.get_payload(decode=True).decode().strip() == "<b>hi</b>"  # type: ignore[union-attr]


def test_authenticates_with_username_and_password(
    smtp: tuple[Inbox, int], ctx: SendContext
) -> None:
    inbox, port = smtp
    send(mail_service(port, username="argo", password="s3cret"), Notification(message="m"),
         "a@x.io", ctx)  # fmt: skip
    assert len(inbox.envelopes) == 1


def test_wrong_password_is_final_and_not_logged(smtp: tuple[Inbox, int], ctx: SendContext) -> None:
    _, port = smtp
    with pytest.raises(SendError) as caught:
        send(mail_service(port, username="argo", password="wrong-pw"), Notification(message="m"),
             "a@x.io", ctx)  # fmt: skip
    assert caught.value.final is True
    assert "authentication failed" in str(caught.value)
    assert "wrong-pw" not in str(caught.value)


@pytest.mark.parametrize(("reply", "final"), [("554 no thanks", True), ("451 try later", False)])
def test_rejected_message(
    smtp: tuple[Inbox, int], ctx: SendContext, reply: str, final: bool
) -> None:
    inbox, port = smtp
    inbox.reject_with = reply
    with pytest.raises(SendError) as caught:
        send(mail_service(port), Notification(message="m"), "a@x.io", ctx)
    assert caught.value.final is final
    assert reply.split(maxsplit=1)[0] in str(caught.value)


def test_connection_refused_is_not_final(closed_port: int, ctx: SendContext) -> None:
    with pytest.raises(SendError) as caught:
        send(mail_service(closed_port), Notification(message="m"), "a@x.io", ctx)
    assert caught.value.final is False


@pytest.mark.parametrize(
    ("options", "recipient", "problem"),
    [
        ({"host": ""}, "a@x.io", "option 'host' is not set"),
        ({"from": ""}, "a@x.io", "option 'from' is not set"),
        ({}, " , ", "no recipient address"),
        ({"port_": "many"}, "a@x.io", "option 'port' must be an integer"),
    ],
)
def test_bad_options_are_final(
    ctx: SendContext, options: dict[str, Any], recipient: str, problem: str
) -> None:
    with pytest.raises(SendError) as caught:
        port = options.pop("port_", 25)
        send(mail_service(port, **options), Notification(message="m"), recipient, ctx)
    assert caught.value.final is True
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("recipient", "expected"),
    [
        ("email1@email.com", ["email1@email.com"]),
        (" email1@email.com ", ["email1@email.com"]),
        (
            " email1@email.com  , email2@email.com,email3@email.com",
            ["email1@email.com", "email2@email.com", "email3@email.com"],
        ),
    ],
)
def test_parse_to(recipient: str, expected: list[str]) -> None:
    # TestParseTo
    assert parse_to(recipient) == expected
