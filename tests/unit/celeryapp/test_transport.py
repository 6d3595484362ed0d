"""The transport's record of which host reserved a sync message: only sync messages with a
key, only on a worker host (whose transport options name it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rollout_workers.celeryapp.transport import KEY_HEADER, Channel

HELD = {"rollouts.sync": "rw:wq:rollouts:held"}


def _channel(host: str | None, held: dict[str, str] | None) -> Any:
    channel = Channel.__new__(Channel)  # no connection: only held_record is exercised
    channel.rollouts_host, channel.rollouts_held = host, held
    return channel


@pytest.mark.parametrize(
    ("name", "host", "held", "headers", "expected"),
    [
        ("a sync message on a worker host", "h:1", HELD,
         {"task": "rollouts.sync", KEY_HEADER: "ns/a"}, ("rw:wq:rollouts:held", "ns/a", "h:1")),
        ("not a worker host", None, None, {"task": "rollouts.sync", KEY_HEADER: "ns/a"}, None),
        ("another task", "h:1", HELD, {"task": "timers.tick"}, None),
        ("a sync message of an older sender, without the header", "h:1", HELD,
         {"task": "rollouts.sync"}, None),
        ("a key that is not a string", "h:1", HELD, {"task": "rollouts.sync", KEY_HEADER: 7}, None),
        ("no headers at all", "h:1", HELD, None, None),
    ],
)  # fmt: skip
def test_held_record(
    name: str, host: str | None, held: dict[str, str] | None, headers: Any, expected: object
) -> None:
    message = SimpleNamespace(headers=headers)
    assert _channel(host, held).held_record(message) == expected, name
