"""rocketchat: rocketchat_test.go's cases and the SDK's login + chat.postMessage."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.options import is_emoji
from rollout_workers.notifications.services.rocketchat import api_base, decode_attachments, send
from rollout_workers.notifications.services.transport import is_http_url
from tests.support.receiver import Answer, Receiver, Request

LOGIN = {"status": "success", "data": {"authToken": "tok", "userId": "uid"}}


@pytest.mark.parametrize(
    ("icon", "valid"),
    [
        (":slack:", True),
        (":chart_with_upwards_trend:", True),
        ("http://lorempixel.com/48/48", False),
        # Go's regexp: "." does not match a newline and "$" is the end of the text.
        (":a\nb:", False),
        (":slack:\n", False),
        ("::", False),
    ],
)
def test_valid_emoji(icon: str, valid: bool) -> None:
    assert is_emoji(icon) is valid


@pytest.mark.parametrize(
    ("url", "valid"),
    [
        ("http://lorempixel.com/48/48", True),
        ("https://lorempixel.com/48/48", True),
        ("favicon.ico", False),
        ("ftp://favicon.ico", False),
        ("ftp://lorempixel.com/favicon.ico", False),
    ],
)
def test_valid_avatar_url(url: str, valid: bool) -> None:
    assert is_http_url(url) is valid


@pytest.mark.parametrize(
    ("server", "base"),
    [
        ("https://chat.example.com", "https://chat.example.com:443/api/v1"),
        ("http://chat.example.com/sub", "http://chat.example.com:80/sub/api/v1"),
        ("chat.example.com:3000", "http://:80/api/v1"),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000/api/v1"),
    ],
)
def test_api_base_as_the_sdk_builds_it(server: str, base: str) -> None:
    assert api_base(server) == base


def test_attachments_decode_into_the_sdks_type() -> None:
    text = (
        '[{"title": "t", "Color": "#fff", "unknown": 1,'
        ' "fields": [{"title": "a", "value": "b"}], "actions": [{"type": "button"}]}]'
    )
    assert decode_attachments(text) == [
        {
            "color": "#fff",
            "collapsed": False,
            "title": "t",
            "actions": [{"type": "button", "is_webview": False, "msg_in_chat_window": False}],
            "fields": [{"short": False, "title": "a", "value": "b"}],
        }
    ]


@pytest.mark.parametrize("text", ["{", '{"a": 1}', '[{"title": 3}]'])
def test_bad_attachments_are_final(text: str) -> None:
    with pytest.raises(SendError) as e:
        decode_attachments(text)
    assert e.value.final is True
    assert "failed to unmarshal attachments" in str(e.value)


def _server(posted: dict[str, Any]) -> Any:
    def respond(request: Request) -> Answer:
        if request.path.endswith("/login"):
            return Answer.json(200, LOGIN)
        return Answer.json(200, posted)

    return respond


@pytest.mark.parametrize(
    ("recipient", "target"), [("#general", "channel"), ("@bob", "channel"), ("ROOM1", "roomId")]
)
def test_login_then_post_message(
    receiver: Receiver, ctx: SendContext, recipient: str, target: str
) -> None:
    receiver.respond = _server({"success": True})
    options = {
        "serverUrl": receiver.url(),
        "email": "bot@example.com",
        "password": "p w",
        "alias": "Argo",
        "icon": ":rocket:",
        "avatar": "not a url",
    }
    blocks = {"rocketchat": {"attachments": '[{"text": "x"}]'}}
    send(options, Notification("hello", blocks), recipient, ctx)
    login, post = receiver.received()
    assert (login.method, login.path) == ("POST", "/api/v1/login")
    assert login.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert login.body == b"password=p+w&user=bot%40example.com"
    assert (post.method, post.path) == ("POST", "/api/v1/chat.postMessage")
    assert (post.headers["X-Auth-Token"], post.headers["X-User-Id"]) == ("tok", "uid")
    assert post.headers["Content-Type"] == "application/json"
    assert post.json() == {
        target: recipient,
        "text": "hello",
        "alias": "Argo",
        "emoji": ":rocket:",
        "attachments": [{"text": "x", "collapsed": False}],
    }


def test_no_block_no_attachments(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = _server({"success": True})
    send({"serverUrl": receiver.url()}, Notification("m"), "R", ctx)
    assert receiver.received()[1].json() == {"roomId": "R", "text": "m"}


@pytest.mark.parametrize(
    "case",
    [
        (
            Answer.json(401, {"status": "error", "message": "Unauthorized"}),
            None,
            True,
            "Unauthorized",
        ),
        (
            Answer.json(429, {"success": False, "error": "too many requests"}),
            None,
            False,
            "too many",
        ),
        (Answer(503, b"<html>"), None, False, "request error"),
        (None, {"success": False, "error": "room not found"}, True, "room not found"),
    ],
)
def test_failures(
    receiver: Receiver,
    ctx: SendContext,
    case: tuple[Answer | None, dict[str, Any] | None, bool, str],
) -> None:
    login, posted, final, fragment = case

    def respond(request: Request) -> Answer:
        if request.path.endswith("/login"):
            return login or Answer.json(200, LOGIN)
        return Answer.json(200, posted or {})

    receiver.respond = respond
    options = {"serverUrl": receiver.url(), "email": "e", "password": "secret-pw"}
    with pytest.raises(SendError) as e:
        send(options, Notification("m"), "R", ctx)
    assert e.value.final is final
    assert fragment in str(e.value)
    assert "secret-pw" not in str(e.value)
