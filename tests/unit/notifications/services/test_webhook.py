"""The webhook sender against a recording server; cases from the engine's webhook_test.go."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import RetryPolicy, SendContext, SendError
from rollout_workers.notifications.services.registry import retry_policy, send
from rollout_workers.notifications.services.webhook import calculate_request, canonical_header
from tests.support.receiver import Answer, Receiver


def hook(url: str, name: str = "test", **options: Any) -> Service:
    return Service(name=name, type="webhook", options={"url": url, **options})


def webhook_block(name: str, **fields: str) -> dict[str, Any]:
    return {"webhook": {name: {"method": "", "path": "", "body": "", **fields}}}


def test_successfully_sends_notification(receiver: Receiver, ctx: SendContext) -> None:
    # TestWebhook_SuccessfullySendsNotification
    service = hook(
        receiver.url(),
        basicAuth={"username": "testUsername", "password": "testPassword"},
        headers=[{"name": "testHeader", "value": "testHeaderValue"}],
        insecureSkipVerify=True,
    )
    notification = Notification(blocks=webhook_block("test", body="hello world", method="POST"))
    send(service, notification, "test", ctx)
    (request,) = receiver.received()
    assert request.method == "POST"
    assert request.body == b"hello world"
    assert request.headers["Testheader"] == "testHeaderValue"  # Go canonicalizes the name
    expected = base64.b64encode(b"testUsername:testPassword").decode()
    assert request.headers["Authorization"] == f"Basic {expected}"
    assert "Content-Type" not in request.headers


def test_with_no_overrides_sends_a_get_with_the_message(
    receiver: Receiver, ctx: SendContext
) -> None:
    # TestWebhook_WithNoOverrides_SuccessfullySendsNotification, with a message
    service = hook(receiver.url("/hooks"), headers=[{"name": "testHeader", "value": "v"}])
    send(service, Notification(message="rollout healthy"), "", ctx)
    (request,) = receiver.received()
    assert (request.method, request.path, request.body) == ("GET", "/hooks", b"rollout healthy")
    assert request.headers["Testheader"] == "v"


def test_a_block_for_another_service_name_is_ignored(receiver: Receiver, ctx: SendContext) -> None:
    service = hook(receiver.url(), name="github")
    notification = Notification(
        message="the message", blocks=webhook_block("jenkins", body="other", method="POST")
    )
    send(service, notification, "", ctx)
    (request,) = receiver.received()
    assert (request.method, request.body) == ("GET", b"the message")


def test_sub_path(receiver: Receiver, ctx: SendContext) -> None:
    # TestWebhook_SubPath
    service = hook(receiver.url("/subpath1"))
    send(service, Notification(blocks=webhook_block("test", body="x", method="POST")), "", ctx)
    send(
        service,
        Notification(blocks=webhook_block("test", body="x", method="POST", path="/subpath2")),
        "",
        ctx,
    )
    assert [r.path for r in receiver.received()] == ["/subpath1", "/subpath1/subpath2"]


@pytest.mark.parametrize(
    ("name", "url", "block", "expected"),
    [
        ("no block: GET of the message", "http://h/a", None, ("GET", "http://h/a", "msg")),
        (
            "block body replaces the message, even empty",
            "http://h/a",
            {"method": "", "path": "", "body": ""},
            ("GET", "http://h/a", ""),
        ),
        (
            "method and path",
            "http://h/a/",
            {"method": "PUT", "path": "//b/c", "body": "{}"},
            ("PUT", "http://h/a/b/c", "{}"),
        ),
        (
            "path with a query",
            "http://h",
            {"method": "POST", "path": "repos/x/statuses/abc?x=1", "body": ""},
            ("POST", "http://h/repos/x/statuses/abc?x=1", ""),
        ),
    ],
)
def test_calculate_request(
    name: str, url: str, block: dict[str, str] | None, expected: tuple[str, str, str]
) -> None:
    assert calculate_request(url=url, message="msg", block=block) == expected, name


def test_a_later_header_replaces_an_earlier_one_and_basic_auth_wins(
    receiver: Receiver, ctx: SendContext
) -> None:
    service = hook(
        receiver.url(),
        headers=[
            {"name": "Content-Type", "value": "text/plain"},
            {"name": "content-type", "value": "application/json"},
            {"name": "Authorization", "value": "Bearer nope"},
        ],
        basicAuth={"username": "u", "password": "p"},
    )
    send(service, Notification(message="{}"), "", ctx)
    (request,) = receiver.received()
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"].startswith("Basic ")


@pytest.mark.parametrize(
    ("status", "final"),
    [(400, True), (404, True), (501, True), (500, False), (502, False), (503, False)],
)
def test_failure_statuses(receiver: Receiver, ctx: SendContext, status: int, final: bool) -> None:
    receiver.respond = lambda _: Answer(status, b"nope")
    with pytest.raises(SendError) as caught:
        send(hook(receiver.url("/secret-path?token=abc")), Notification(message="m"), "", ctx)
    assert caught.value.final is final
    assert caught.value.status == status
    assert "webhook service 'test'" in str(caught.value)
    assert "abc" not in str(caught.value)


def test_429_carries_retry_after(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer(429, b"slow down", (("Retry-After", "7"),))
    with pytest.raises(SendError) as caught:
        send(hook(receiver.url()), Notification(message="m"), "", ctx)
    assert (caught.value.final, caught.value.status, caught.value.retry_after) == (False, 429, 7.0)


def test_connection_refused_is_not_final(closed_port: int, ctx: SendContext) -> None:
    with pytest.raises(SendError) as caught:
        send(hook(f"http://127.0.0.1:{closed_port}/x"), Notification(message="m"), "", ctx)
    assert caught.value.final is False


def test_one_attempt_per_send(receiver: Receiver, ctx: SendContext) -> None:
    # The engine's retries (TestWebhookService_Send_Retry) belong to delivery, not the sender.
    receiver.respond = lambda _: Answer(500)
    with pytest.raises(SendError):
        send(hook(receiver.url()), Notification(message="m"), "", ctx)
    assert len(receiver.received()) == 1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({}, "option 'url' is not set"),
        ({"url": "not a url"}, "invalid request"),
        ({"url": "http://h", "headers": "x"}, "option 'headers'"),
        ({"url": "http://h", "basicAuth": "x"}, "option 'basicAuth'"),
    ],
)
def test_bad_options_are_final(ctx: SendContext, options: dict[str, Any], problem: str) -> None:
    with pytest.raises(SendError) as caught:
        send(Service("test", "webhook", options), Notification(message="m"), "", ctx)
    assert caught.value.final is True
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, RetryPolicy(attempts=4, wait_min=1.0, wait_max=5.0)),
        ({"retryMax": 0}, RetryPolicy(attempts=4, wait_min=1.0, wait_max=5.0)),
        ({"retryMax": 1}, RetryPolicy(attempts=2, wait_min=1.0, wait_max=5.0)),
        ({"retryMax": -1}, RetryPolicy(attempts=1, wait_min=1.0, wait_max=5.0)),
        (
            {"retryMax": "5", "retryWaitMin": "500ms", "retryWaitMax": "1m30s"},
            RetryPolicy(attempts=6, wait_min=0.5, wait_max=90.0),
        ),
        (  # a number is nanoseconds, as Go decodes a time.Duration
            {"retryWaitMin": 2_000_000_000, "retryWaitMax": 10_000_000_000},
            RetryPolicy(attempts=4, wait_min=2.0, wait_max=10.0),
        ),
        (
            {"retryMax": "many", "retryWaitMin": "soon", "retryWaitMax": "0s"},
            RetryPolicy(attempts=4, wait_min=1.0, wait_max=5.0),
        ),
    ],
)
def test_retry_policy(options: dict[str, Any], expected: RetryPolicy) -> None:
    assert retry_policy(Service("hook", "webhook", options)) == expected


def test_retry_policy_of_other_services_is_the_default() -> None:
    assert retry_policy(Service("slack", "slack", {"retryMax": 9})) == RetryPolicy()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("testHeader", "Testheader"),
        ("x-api-key", "X-Api-Key"),
        ("Content-Type", "Content-Type"),
        ("odd header", "odd header"),
    ],
)
def test_canonical_header(name: str, expected: str) -> None:
    assert canonical_header(name) == expected
