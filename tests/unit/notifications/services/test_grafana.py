"""grafana: grafana_test.go's cases, and the annotation as Grafana's API takes it."""

from __future__ import annotations

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.grafana import annotations_url, send
from tests.support.receiver import Answer, Receiver

KEY = "something-secret-but-not-relevant-in-this-test"


def test_successfully_sends_notification(receiver: Receiver, ctx: SendContext) -> None:
    options = {"apiUrl": receiver.url("/api"), "apiKey": KEY, "insecureSkipVerify": True}
    send(options, Notification("Annotation description"), "tag1|tag2", ctx)
    [req] = receiver.received()
    assert (req.method, req.path) == ("POST", "/api/annotations")
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.headers["Content-Type"] == "application/json"
    assert req.json() == {
        "time": 1_700_000_000_000,
        "isRegion": False,
        "tags": ["tag1", "tag2"],
        "text": "Annotation description",
    }


def test_unsuccessfully_sends_notification(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer(500, b"oops")
    with pytest.raises(SendError) as e:
        send({"apiUrl": receiver.url(), "apiKey": KEY}, Notification(), "tag1|tag2", ctx)
    assert (e.value.final, e.value.status) == (False, 500)
    assert KEY not in str(e.value)


@pytest.mark.parametrize(
    ("api_url", "url"),
    [
        ("http://h", "http://h/annotations"),
        ("http://h/api/", "http://h/api/annotations"),
        ("http://h//api/../x?orgId=1", "http://h/x/annotations?orgId=1"),
    ],
)
def test_annotations_url_is_joined_as_go_path_join(api_url: str, url: str) -> None:
    assert annotations_url(api_url) == url


def test_forbidden_is_final(receiver: Receiver, ctx: SendContext) -> None:
    receiver.respond = lambda _: Answer(403, b"{}")
    with pytest.raises(SendError) as e:
        send({"apiUrl": receiver.url(), "apiKey": KEY}, Notification("m"), "t", ctx)
    assert (e.value.final, e.value.status) == (True, 403)
