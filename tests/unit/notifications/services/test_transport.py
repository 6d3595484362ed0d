"""The shared HTTP helpers of the senders: failure mapping, Retry-After, form encoding."""

from __future__ import annotations

import pytest
import requests

from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.transport import (
    check_status,
    encode_form,
    host_of,
    request,
    retry_after,
)
from rollout_workers.notifications.services.webhook import go_retryable
from tests.support.receiver import Answer, Receiver


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        (None, None),
        ("-1", None),
        ("nan", None),
        ("inf", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
    ],
    ids=["seconds", "fraction", "absent", "negative", "nan", "infinite", "http date"],
)
def test_retry_after(value: str | None, seconds: float | None) -> None:
    assert retry_after(value) == seconds


def test_encode_form_sorts_keys_and_keeps_the_order_of_one_keys_values() -> None:
    pairs = [("b", "2"), ("a", "x y"), ("b", "1"), ("c", "&=/")]
    assert encode_form(pairs) == "a=x+y&b=2&b=1&c=%26%3D%2F"
    assert encode_form({"z": "", "a": "é"}) == "a=%C3%A9&z="


def test_host_of_drops_user_information() -> None:
    assert host_of("https://user:pw@h.example:8443/p?token=t") == "h.example:8443"
    assert host_of("not a url") == "?"


@pytest.mark.parametrize(
    ("status", "final_default", "final_webhook"),
    [(400, True, True), (429, False, False), (500, False, False), (501, False, True)],
)
def test_status_mapping(
    receiver: Receiver, ctx: SendContext, status: int, final_default: bool, final_webhook: bool
) -> None:
    receiver.respond = lambda _: Answer(status, b"no", (("Retry-After", "3"),))
    response = request(ctx, service="svc", method="POST", url=receiver.url("/secret?key=k"))
    for retry, final in ((None, final_default), (go_retryable, final_webhook)):
        with pytest.raises(SendError) as e:
            if retry is None:
                check_status(response, service="svc")
            else:
                check_status(response, service="svc", call="POST", retry=retry)
        assert (e.value.final, e.value.status) == (final, status)
        assert e.value.retry_after == (3.0 if status == 429 else None)
        assert str(e.value).startswith("svc: ") and f"HTTP {status}" in str(e.value)
        assert "secret" not in str(e.value) and "key=k" not in str(e.value)


def test_no_answer_is_not_final(closed_port: int, ctx: SendContext) -> None:
    with pytest.raises(SendError) as e:
        request(ctx, service="svc", method="GET", url=f"http://127.0.0.1:{closed_port}/t?k=s")
    assert e.value.final is False
    assert "could not connect" in str(e.value) and "k=s" not in str(e.value)


def test_a_request_that_cannot_be_built_is_final() -> None:
    with requests.Session() as session, pytest.raises(SendError) as e:
        request(SendContext(session=session), service="svc", method="GET", url="no-scheme")
    assert e.value.final is True
