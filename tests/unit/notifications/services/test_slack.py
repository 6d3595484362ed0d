"""The Slack sender against a local Web API stand-in; cases from the engine's slack_test.go
and util/slack/client_test.go."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services import slack as slack_sender
from rollout_workers.notifications.services.options import is_emoji
from rollout_workers.notifications.services.registry import send
from rollout_workers.notifications.services.slack import Threads, delivery_policy, send_with
from rollout_workers.notifications.services.transport import is_http_url
from tests.support.receiver import Answer
from tests.support.slackapi import SlackAPI

TOKEN = "xoxb-something-token"


@pytest.fixture
def api() -> Iterator[SlackAPI]:
    with SlackAPI(TOKEN) as a:
        yield a


@pytest.fixture(autouse=True)
def fresh_threads() -> Iterator[None]:
    slack_sender.THREADS.thread_ts.clear()
    slack_sender.THREADS.channel_ids.clear()
    yield


def service(api: SlackAPI, **options: Any) -> Service:
    return Service("slack", "slack", {"token": TOKEN, "apiURL": api.api_url, **options})


def slack_block(**fields: Any) -> dict[str, Any]:
    return {"slack": {"username": "", "icon": "", "attachments": "", "blocks": "", **fields}}


@pytest.mark.parametrize(
    "case",
    [
        (
            "only message",
            {},
            Notification(message="Annotation description"),
            {"channel": "test-channel", "text": "Annotation description"},
        ),
        (
            "attachments",
            {},
            Notification(
                message="Attachments description",
                blocks=slack_block(attachments='[{"pretext": "pre-hello", "text": "text-world"}]'),
            ),
            {
                "channel": "test-channel",
                "text": "Attachments description",
                "attachments": '[{"pretext":"pre-hello","text":"text-world"}]',
            },
        ),
        (
            "blocks",
            {},
            Notification(
                message="Attachments description",
                blocks=slack_block(
                    blocks='[{"type": "section", "text": {"type": "plain_text", "text": "Hi"}}]'
                ),
            ),
            {
                "channel": "test-channel",
                "text": "Attachments description",
                "attachments": "[]",
                "blocks": '[{"type":"section","text":{"type":"plain_text","text":"Hi"}}]',
            },
        ),
        (
            "username and icon: no set",
            {},
            Notification(message="test"),
            {"channel": "test-channel", "text": "test"},
        ),
        (
            "username and icon: service config",
            {"username": "foo", "icon": ":smile:"},
            Notification(message="test"),
            {"channel": "test-channel", "text": "test", "username": "foo", "icon_emoji": ":smile:"},
        ),
        (
            "username and icon: service config and template",
            {"username": "foo", "icon": ":smile:"},
            Notification(
                message="test", blocks=slack_block(username="template set", icon=":wink:")
            ),
            {
                "channel": "test-channel",
                "text": "test",
                "username": "template set",
                "icon_emoji": ":wink:",
                "attachments": "[]",
            },
        ),
        (
            "icon url",
            {"icon": "https://example.com/argo.png"},
            Notification(message="test"),
            {"channel": "test-channel", "text": "test", "icon_url": "https://example.com/argo.png"},
        ),
        (
            "invalid icon dropped, unfurl disabled",
            {"icon": "favicon.ico", "disableUnfurl": True},
            Notification(message="test"),
            {
                "channel": "test-channel",
                "text": "test",
                "unfurl_links": "false",
                "unfurl_media": "false",
            },
        ),
    ],
)
def test_post_message_form(
    api: SlackAPI,
    ctx: SendContext,
    case: tuple[str, dict[str, Any], Notification, dict[str, str]],
) -> None:
    name, options, notification, form = case
    send(service(api, **options), notification, "test-channel", ctx)
    ((method, sent),) = api.calls()
    assert method == "chat.postMessage", name
    assert sent == form, name
    (request,) = api.receiver.received()
    assert request.method == "POST"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"].startswith("application/x-www-form-urlencoded")


def test_valid_icon_emoji_and_url() -> None:
    # TestValidIconEmoji, TestValidIconURL
    assert is_emoji(":slack:") and is_emoji(":chart_with_upwards_trend:")
    assert not is_emoji("http://lorempixel.com/48/48")
    assert is_http_url("http://lorempixel.com/48/48") and is_http_url("https://lorempixel.com/48")
    for bad in ("favicon.ico", "ftp://favicon.ico", "ftp://lorempixel.com/favicon.ico"):
        assert not is_http_url(bad)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Post", "Post"),
        ("PostAndUpdate", "PostAndUpdate"),
        ("Update", "Update"),
        ("Error", "Post"),
        (None, "Post"),
    ],
)
def test_delivery_policy(value: Any, expected: str) -> None:
    # TestDeliveryPolicy_UnmarshalJSON
    assert delivery_policy(value) == expected


# TestThreadedClient: (known thread ts, grouping key, policy) -> calls, remembered threads.
THREADED = {
    "Post, basic": (None, "", "Post", ["chat.postMessage"], {}),
    "Post, no parent, with grouping": (None, "group", "Post", ["chat.postMessage"], "first"),
    "Post, with parent, with grouping": ("9.2", "group", "Post", ["chat.postMessage"], "9.2"),
    "PostAndUpdate, no parent. First post should not be updated": (
        None, "group", "PostAndUpdate", ["chat.postMessage"], "first"),
    "PostAndUpdate, with parent. First post should be updated": (
        "9.2", "group", "PostAndUpdate", ["chat.postMessage", "chat.update"], "9.2"),
    "Update, no parent. Only call should be post": (
        None, "group", "Update", ["chat.postMessage"], "first"),
    "Update, with parent. Only call should be update": (
        "9.2", "group", "Update", ["chat.update"], "9.2"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(THREADED))
def test_threaded_client(api: SlackAPI, ctx: SendContext, case: str) -> None:
    known, key, policy, methods, remembered = THREADED[case]
    api.channel_ids["channel"] = "C-ID"
    threads = Threads()
    if known:
        threads.remember("channel", key, known)
        threads.remember_channel("channel", "C-ID")
    notification = Notification(
        message="m", blocks=slack_block(groupingKey=key, deliveryPolicy=policy)
    )
    ctx.service = "slack"
    send_with(service(api).options, notification, "channel", ctx, threads)
    calls = api.calls()
    assert [m for m, _ in calls] == methods
    if known:
        for method, form in calls:
            assert form["thread_ts"] == known
            assert form["channel"] == ("C-ID" if method == "chat.update" else "channel")
            if method == "chat.update":
                assert (form["ts"], form["as_user"]) == (known, "true")
    expected = (
        {}
        if not remembered
        else {("channel", key): "1700000000.000001" if remembered == "first" else remembered}
    )
    assert threads.thread_ts == expected


def test_grouped_notifications_thread_under_the_first_and_broadcast(
    api: SlackAPI, ctx: SendContext
) -> None:
    grouped = Notification(message="m", blocks=slack_block(groupingKey="rollout-a"))
    send(service(api), grouped, "deploys", ctx)
    broadcast = Notification(
        message="n", blocks=slack_block(groupingKey="rollout-a", notifyBroadcast=True)
    )
    send(service(api), broadcast, "deploys", ctx)
    first, second = (form for _, form in api.calls())
    assert "thread_ts" not in first
    assert second["thread_ts"] == "1700000000.000001"
    assert second["reply_broadcast"] == "true"


@pytest.mark.parametrize(
    ("answer", "final", "retry_after"),
    [
        (Answer.json(200, {"ok": False, "error": "channel_not_found"}), True, None),
        (Answer.json(200, {"ok": False, "error": "internal_error"}), False, None),
        (
            Answer.json(429, {"ok": False, "error": "ratelimited"}, ("Retry-After", "30")),
            False,
            30.0,
        ),
        (Answer(500, b"<html>oops</html>", (("Content-Type", "text/html"),)), False, None),
        (Answer.json(404, {"ok": False, "error": "unknown_method"}), True, None),
    ],
)
def test_failures(
    api: SlackAPI, ctx: SendContext, answer: Answer, final: bool, retry_after: float | None
) -> None:
    api.fail_next.append(answer)
    with pytest.raises(SendError) as caught:
        send(service(api), Notification(message="m"), "c", ctx)
    assert (caught.value.final, caught.value.retry_after) == (final, retry_after)
    assert len(api.calls()) == 1  # no retry inside the sender
    assert TOKEN not in str(caught.value)


def test_invalid_token_is_final(api: SlackAPI, ctx: SendContext) -> None:
    with pytest.raises(SendError) as caught:
        send(Service("slack", "slack", {"token": "wrong", "apiURL": api.api_url}),
             Notification(message="m"), "c", ctx)  # fmt: skip
    assert caught.value.final is True
    assert "invalid_auth" in str(caught.value)


def test_invalid_attachments_json_is_final(api: SlackAPI, ctx: SendContext) -> None:
    with pytest.raises(SendError) as caught:
        send(
            service(api), Notification(message="m", blocks=slack_block(attachments="[{")), "c", ctx
        )
    assert caught.value.final is True
    assert "slack.attachments is not valid JSON" in str(caught.value)
    assert api.calls() == []


def test_connection_refused_is_not_final(closed_port: int, ctx: SendContext) -> None:
    options = {"token": TOKEN, "apiURL": f"http://127.0.0.1:{closed_port}/api/"}
    with pytest.raises(SendError) as caught:
        send(Service("slack", "slack", options), Notification(message="m"), "c", ctx)
    assert caught.value.final is False
