"""alertmanager: alertmanager_test.go's send cases, on a cluster of loopback receivers."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.alertmanager import send, target_urls
from tests.support.receiver import Answer, Receiver
from tests.unit.notifications.services.conftest import free_port

ALERT = {
    "labels": {"alertname": "TestSend"},
    "annotations": None,
    "generatorURL": "",
    "startsAt": "2025-01-02T03:04:05Z",
}


@pytest.fixture
def cluster() -> Iterator[list[Receiver]]:
    receivers = [Receiver().start() for _ in range(2)]
    yield receivers
    for r in receivers:
        r.stop()


def _targets(receivers: list[Receiver]) -> list[str]:
    return [f"127.0.0.1:{r.port}" for r in receivers]


def test_not_exist(ctx: SendContext) -> None:
    with pytest.raises(SendError) as e:
        send({}, Notification(), "", ctx)
    assert (str(e.value), e.value.final) == (
        "alertmanager: notification alertmanager no config",
        True,
    )


def test_no_labels(ctx: SendContext) -> None:
    with pytest.raises(SendError) as e:
        send({}, Notification(blocks={"alertmanager": {**ALERT, "labels": {}}}), "", ctx)
    assert str(e.value) == "alertmanager: alertmanager at least one label pair required"


def test_defaults() -> None:
    assert target_urls({}) == ["http://127.0.0.1:9093/api/v2/alerts"]
    assert target_urls({"targets": ["a:1"], "scheme": "https", "apiPath": "/x"}) == [
        "https://a:1/x"
    ]


def test_every_target_gets_the_alert_with_basic_auth(
    cluster: list[Receiver], ctx: SendContext
) -> None:
    options: dict[str, Any] = {
        "targets": _targets(cluster),
        "basicAuth": {"username": "user", "password": "pass"},
        "bearerToken": "ignored-when-basic",
    }
    send(options, Notification(blocks={"alertmanager": ALERT}), "", ctx)
    for r in cluster:
        [req] = r.received()
        assert (req.method, req.path) == ("POST", "/api/v2/alerts")
        assert req.headers["Content-Type"] == "application/json"
        assert req.headers["Authorization"] == "Basic " + base64.b64encode(b"user:pass").decode()
        assert req.json() == [ALERT]


def test_bearer_token(receiver: Receiver, ctx: SendContext) -> None:
    options = {"targets": _targets([receiver]), "bearerToken": "tok", "apiPath": "/p"}
    send(options, Notification(blocks={"alertmanager": ALERT}), "", ctx)
    [req] = receiver.received()
    assert (req.path, req.headers["Authorization"]) == ("/p", "Bearer tok")


def test_one_target_answering_is_enough(cluster: list[Receiver], ctx: SendContext) -> None:
    cluster[0].respond = lambda _: Answer(500, b"down")
    targets = [*_targets(cluster), f"127.0.0.1:{free_port()}"]
    send({"targets": targets}, Notification(blocks={"alertmanager": ALERT}), "", ctx)
    assert [len(r.received()) for r in cluster] == [1, 1]


@pytest.mark.parametrize(
    ("statuses", "final"), [((400, 401), True), ((400, 503), False), ((400, 429), False)]
)
def test_all_targets_failing(
    cluster: list[Receiver], ctx: SendContext, statuses: tuple[int, int], final: bool
) -> None:
    for r, status in zip(cluster, statuses, strict=True):
        r.respond = lambda _, s=status: Answer.json(s, {}, ("Retry-After", "4"))  # type: ignore[misc]
    with pytest.raises(SendError) as e:
        send({"targets": _targets(cluster)}, Notification(blocks={"alertmanager": ALERT}), "", ctx)
    assert e.value.final is final
    assert "no events were successfully received by alertmanager" in str(e.value)
    assert [len(r.received()) for r in cluster] == [1, 1]
    assert e.value.retry_after == (4.0 if 429 in statuses else None)


def test_no_target_reachable_is_retryable(ctx: SendContext) -> None:
    targets = [f"127.0.0.1:{free_port()}"]
    with pytest.raises(SendError) as e:
        send({"targets": targets}, Notification(blocks={"alertmanager": ALERT}), "", ctx)
    assert e.value.final is False
