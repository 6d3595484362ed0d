"""state: notifications-engine's pkg/controller/state_test.go as tables, Argo's send rule, and
the send-once keys."""

from __future__ import annotations

import json

import pytest

from rollout_workers.notifications.state import (
    NOTIFIED_ANNOTATION,
    NotificationsState,
    should_send,
    state_item_key,
)
from rollout_workers.notifications.subscriptions import Destination
from rollout_workers.notifications.triggers import ConditionResult, condition_key

DEST = Destination("slack", "my-channel")


def test_truncate() -> None:  # TestNotificationState_Truncate
    state = NotificationsState({str(i): i for i in range(5)})
    state.truncate(3)
    assert state == {"2": 2, "3": 3, "4": 4}


# TestSetAlreadyNotified and TestSetAlreadyNotified_OncePerItem: (once_per, notified, changed,
# key present after) applied in sequence to one state.
SEQUENCES: list[tuple[str, str, list[tuple[bool, bool, bool]]]] = [
    (
        "plain",
        "",
        [(True, True, True), (True, False, True), (False, True, False)],
    ),
    (
        "once-per",
        "abc",
        [(True, True, True), (False, False, True), (True, False, True)],
    ),
    ("forget-unknown", "", [(False, False, False)]),
]


@pytest.mark.parametrize(
    ("once_per", "steps"), [s[1:] for s in SEQUENCES], ids=[s[0] for s in SEQUENCES]
)
def test_set_already_notified(once_per: str, steps: list[tuple[bool, bool, bool]]) -> None:
    state = NotificationsState()
    result = ConditionResult(key="0", triggered=True, templates=(), once_per=once_per)
    key = (
        f"{once_per}:app-synced:0:slack:my-channel" if once_per else "app-synced:0:slack:my-channel"
    )
    for i, (notified, changed, present) in enumerate(steps):
        got = state.set_already_notified("app-synced", result, DEST, notified, now=100 + i)
        assert (got, key in state) == (changed, present), i


# (id, trigger, condition key, once_per, self-config namespace, want)
KEYS: list[tuple[str, str, str, str, str | None, str]] = [
    ("plain", "on-deployed", "[0].abc", "", None, "on-deployed:[0].abc:slack:my-channel"),
    (
        "once-per",
        "on-deployed",
        "[0].abc",
        "rev1",
        None,
        "rev1:on-deployed:[0].abc:slack:my-channel",
    ),
    ("self-config", "t", "[1].x", "", "team-ns", "team-ns:t:[1].x:slack:my-channel"),
    ("self-config-once-per", "t", "[1].x", "v", "ns", "v:ns:t:[1].x:slack:my-channel"),
]


@pytest.mark.parametrize(
    ("trigger", "ckey", "once_per", "ns", "want"), [k[1:] for k in KEYS], ids=[k[0] for k in KEYS]
)
def test_state_item_key(trigger: str, ckey: str, once_per: str, ns: str | None, want: str) -> None:
    result = ConditionResult(key=ckey, triggered=True, templates=(), once_per=once_per)
    assert state_item_key(trigger, result, DEST, ns) == want


def test_persist_and_read_back() -> None:
    state = NotificationsState({f"k{i:03}": i for i in range(105)})
    annotations = state.persist({"other": "x"})
    assert annotations["other"] == "x"
    stored = json.loads(annotations[NOTIFIED_ANNOTATION])
    assert len(stored) == 100 and min(stored.values()) == 5
    assert annotations[NOTIFIED_ANNOTATION].startswith('{"k005":5,"k006":6')
    assert NotificationsState.from_annotation(annotations[NOTIFIED_ANNOTATION]) == stored
    assert NOTIFIED_ANNOTATION not in NotificationsState().persist(annotations)


@pytest.mark.parametrize("value", [None, "", "not json", "[1]", '{"a": "x"}', '{"a": true}'])
def test_bad_annotation_is_empty_state(value: str | None) -> None:
    assert NotificationsState.from_annotation(value) == {}


# (id, when, triggered, send) Argo's sendNotifications rule.
SEND: list[tuple[str, str, bool, bool]] = [
    ("triggered", "true", True, True),
    ("not-triggered", "false", False, False),
    ("empty-when-always-sends", "", False, True),
]


@pytest.mark.parametrize(
    ("when", "triggered", "send"), [s[1:] for s in SEND], ids=[s[0] for s in SEND]
)
def test_should_send(when: str, triggered: bool, send: bool) -> None:
    result = ConditionResult(key=condition_key(0, when), triggered=triggered, templates=())
    assert should_send(result) is send
