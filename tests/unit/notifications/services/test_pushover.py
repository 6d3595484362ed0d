"""pushover: the form gregdel/pushover posts, its checks, and its answer handling."""

from __future__ import annotations

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.pushover import send
from tests.support.receiver import Answer, Receiver

APP = "a" * 30
USER = "u" * 29 + "1"


def _options(receiver: Receiver) -> dict[str, str]:
    return {"token": APP, "apiURL": receiver.url("/1")}


def test_posts_the_librarys_form(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer.json(200, {"status": 1, "request": "r"})
    send(_options(receiver), Notification("hello & bye"), USER, ctx)
    [req] = receiver.received()
    assert (req.method, req.path) == ("POST", "/1/messages.json")
    assert req.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert req.body.decode() == f"message=hello+%26+bye&priority=0&token={APP}&user={USER}"


# (id, token, user, message, error)
CHECKS = [
    ("empty token", "", USER, "m", "empty API token"),
    ("invalid token", "short", USER, "m", "invalid API token"),
    ("empty recipient", APP, "", "m", "empty recipient token"),
    ("invalid recipient", APP, "x" * 31, "m", "invalid recipient token"),
    ("empty message", APP, USER, "", "message empty"),
    ("long message", APP, USER, "é" * 1025, "message too long"),
]


@pytest.mark.parametrize("case", [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_library_checks_are_final(
    receiver: Receiver, ctx: SendContext, case: tuple[str, str, str, str]
) -> None:
    token, user, message, error = case
    with pytest.raises(SendError) as e:
        send({"token": token, "apiURL": receiver.url()}, Notification(message), user, ctx)
    assert e.value.final is True
    assert str(e.value) == f"pushover: {error}"
    assert receiver.received() == []


@pytest.mark.parametrize(
    ("answer", "final", "fragment"),
    [
        (
            Answer.json(400, {"status": 0, "errors": ["user identifier is invalid"]}),
            True,
            "user identifier",
        ),
        (Answer.json(200, {"status": 0}), True, "status is not 1"),
        (Answer(500, b"down"), False, "HTTP 500"),
        (
            Answer.json(429, {"status": 0, "errors": ["quota"]}, ("Retry-After", "3")),
            False,
            "quota",
        ),
        (Answer(200, b"<html>"), True, "not JSON"),
    ],
)
def test_answers(
    receiver: Receiver, ctx: SendContext, answer: Answer, final: bool, fragment: str
) -> None:
    receiver.respond = lambda _: answer
    with pytest.raises(SendError) as e:
        send(_options(receiver), Notification("m"), USER, ctx)
    assert e.value.final is final
    assert fragment in str(e.value)
    assert APP not in str(e.value)
