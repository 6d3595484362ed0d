"""Subscriptions: notifications-engine's pkg/subscriptions/annotations_test.go (TestIterate,
TestGetDestinations), pkg/api/config.go's GetGlobalDestinations, label selectors, and Argo's
sendNotifications combination."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.notifications.config import parse_config
from rollout_workers.notifications.selectors import SelectorError, parse_selector
from rollout_workers.notifications.subscriptions import (
    AnnotationSubscription,
    Destination,
    annotation_destinations,
    annotation_subscriptions,
    destinations,
    parse_recipients,
    subscribe_annotation_key,
)

P = "notifications.argoproj.io"
DATA = """
 - trigger: [my-trigger1, my-trigger2, my-trigger3]
   destinations:
    - service: slack
      recipients:
       - recipient-1
       - recipient-2
"""
DATA_WITHOUT_TRIGGER = """
 - trigger: []
   destinations:
    - service: slack
      recipients:
       - recipient-1
       - recipient-2
"""
DATA_WITHOUT_DESTINATIONS = """
 - trigger: [my-trigger1, my-trigger2, my-trigger3]
"""
R12 = ("recipient-1", "recipient-2")

# TestIterate: (trigger, service, recipients) per annotation
ITERATE_CASES: list[tuple[str, dict[str, str], list[tuple[str, str, tuple[str, ...]]]]] = [
    (
        "TestIterate/subscribe.trigger.service",
        {f"{P}/subscribe.my-trigger.slack": "my-channel"},
        [("my-trigger", "slack", ("my-channel",))],
    ),
    (
        "TestIterate/subscribe..service",
        {f"{P}/subscribe..slack": "my-channel"},
        [("", "slack", ("my-channel",))],
    ),
    (
        "TestIterate/subscribe.service",
        {f"{P}/subscribe.slack": "my-channel"},
        [("", "slack", ("my-channel",))],
    ),
    (
        "TestIterate/subscriptions",
        {f"{P}/subscriptions": DATA},
        [(t, "slack", R12) for t in ("my-trigger1", "my-trigger2", "my-trigger3")],
    ),
    (
        "TestIterate/subscriptions without trigger",
        {f"{P}/subscriptions": DATA_WITHOUT_TRIGGER},
        [("", "slack", R12)],
    ),
    (
        "TestIterate/subscriptions without destinations",
        {f"{P}/subscriptions": DATA_WITHOUT_DESTINATIONS},
        [],
    ),
    ("TestIterate/random", {f"{P}/random": "my-channel"}, []),
    ("TestIterate/random empty", {f"{P}/random": ""}, []),
    (
        "empty value is one empty recipient",
        {f"{P}/subscribe.on-x.webhook": ""},
        [("on-x", "webhook", ("",))],
    ),
    (
        "blank recipients dropped",
        {f"{P}/subscribe.on-x.slack": " a ; ;b;"},
        [("on-x", "slack", ("a", "b"))],
    ),
    (
        "parts after the service are ignored",
        {f"{P}/subscribe.on-x.slack.extra": "a"},
        [("on-x", "slack", ("a",))],
    ),
    (
        "JSON field names ignore case",
        {f"{P}/subscriptions": "- Trigger: [t]\n  Destinations: [{Service: s, Recipients: [r]}]"},
        [("t", "s", ("r",))],
    ),
    ("other prefixes are not ours", {"example.com/subscribe.on-x.slack": "a"}, []),
]


@pytest.mark.parametrize(
    ("annotations", "want"), [c[1:] for c in ITERATE_CASES], ids=[c[0] for c in ITERATE_CASES]
)
def test_iterate(annotations: dict[str, str], want: list[tuple[str, str, tuple[str, ...]]]) -> None:
    subs, errors = annotation_subscriptions(annotations)
    assert errors == []
    assert [(s.trigger, s.service, s.recipients) for s in subs] == want
    assert all(s.key in annotations for s in subs)


BAD_LIST_CASES = [
    ("empty value", "", "subscription is not defined"),
    ("bad YAML", "- trigger: [a", ""),
    ("trigger is not a list", "- trigger: a\n  destinations: [{service: s}]", "[0].trigger"),
    ("not a list", "trigger: [a]", "expected a list"),
]


@pytest.mark.parametrize(
    ("value", "message"), [c[1:] for c in BAD_LIST_CASES], ids=[c[0] for c in BAD_LIST_CASES]
)
def test_bad_subscriptions_annotation_is_reported(value: str, message: str) -> None:
    key = f"{P}/subscriptions"
    # the engine would leak the first annotation's recipients into the bad one; we do not
    subs, errors = annotation_subscriptions({key: value, f"{P}/subscribe.on-x.slack": "a"})
    assert [e.key for e in errors] == [key] and message in errors[0].message
    assert subs == [AnnotationSubscription(f"{P}/subscribe.on-x.slack", "on-x", "slack", ("a",))]


def _d(service: str, recipient: str) -> list[Destination]:
    return [Destination(service, recipient)]


# TestGetDestinations
GET_DESTINATIONS_CASES: list[
    tuple[str, dict[str, str], list[str], dict[str, list[str]], dict[str, list[Destination]]]
] = [
    (
        "trigger given, no defaults",
        {f"{P}/subscribe.my-trigger.slack": "my-channel"},
        [],
        {},
        {"my-trigger": _d("slack", "my-channel")},
    ),
    (
        "trigger given, defaults ignored",
        {f"{P}/subscribe.my-trigger.slack": "my-channel"},
        ["trigger-a", "trigger-b", "trigger-c"],
        {},
        {"my-trigger": _d("slack", "my-channel")},
    ),
    (
        "no trigger, default triggers",
        {f"{P}/subscribe.slack": "my-channel"},
        ["trigger-a", "trigger-b", "trigger-c"],
        {},
        {t: _d("slack", "my-channel") for t in ("trigger-a", "trigger-b", "trigger-c")},
    ),
    (
        "no trigger, service default triggers win",
        {f"{P}/subscribe.slack": "my-channel"},
        ["trigger-a", "trigger-b", "trigger-c"],
        {"slack": ["trigger-d", "trigger-e"]},
        {t: _d("slack", "my-channel") for t in ("trigger-d", "trigger-e")},
    ),
    (
        "empty service default triggers still win",
        {f"{P}/subscribe.slack": "c"},
        ["trigger-a"],
        {"slack": []},
        {},
    ),
]


@pytest.mark.parametrize(
    ("annotations", "defaults", "service_defaults", "want"),
    [c[1:] for c in GET_DESTINATIONS_CASES],
    ids=[c[0] for c in GET_DESTINATIONS_CASES],
)
def test_get_destinations(
    annotations: dict[str, str],
    defaults: list[str],
    service_defaults: dict[str, list[str]],
    want: dict[str, list[Destination]],
) -> None:
    got = annotation_destinations(
        annotations, default_triggers=defaults, service_default_triggers=service_defaults
    )
    assert got == want


def test_subscribe_annotation_key_and_recipients() -> None:  # TestSubscribe
    assert subscribe_annotation_key("my-trigger", "slack") == f"{P}/subscribe.my-trigger.slack"
    assert parse_recipients("my-channel1;my-channel2") == ("my-channel1", "my-channel2")


# -- label selectors (apimachinery labels.Parse) ----------------------------------------------

SELECTOR_CASES: list[tuple[str, str, dict[str, str], bool]] = [
    ("empty matches all", "", {}, True),
    ("equals", "test=true", {"test": "true"}, True),
    ("double equals", "test==true", {"test": "false"}, False),
    ("not equals matches absent", "env!=prod", {}, True),
    ("in", "env in (a, b)", {"env": "b"}, True),
    ("notin", "env notin (a,b)", {"env": "a"}, False),
    ("exists", "canary", {"canary": ""}, True),
    ("does not exist", "!canary", {"canary": "x"}, False),
    ("greater than", "n>3", {"n": "4"}, True),
    ("less than, not a number", "n<3", {"n": "x"}, False),
    ("all must match", "a=1,b=2", {"a": "1", "b": "3"}, False),
    ("prefixed key", "app.kubernetes.io/name=x", {"app.kubernetes.io/name": "x"}, True),
    ("empty value", "a=", {"a": ""}, True),
]


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [c[1:] for c in SELECTOR_CASES],
    ids=[c[0] for c in SELECTOR_CASES],
)
def test_selector(selector: str, labels: dict[str, str], want: bool) -> None:
    assert parse_selector(selector).matches(labels) is want


@pytest.mark.parametrize(
    "selector",
    ["a in x", "a=b c", "a,", "=b", "a>x", "a in (x", "-a=b", "a=b!", "x/=y", "a=" + "v" * 64],
)
def test_bad_selector(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(selector)


# -- destinations(): ConfigMap subscriptions, then annotations (Argo's sendNotifications) -----

CONFIG = parse_config(
    {
        "defaultTriggers": "[on-rollout-completed]",
        "defaultTriggers.teams": "[on-rollout-aborted]",
        "subscriptions": (
            "- recipients: [slack:ops, 'webhook:']\n"
            "  triggers: [on-rollout-aborted]\n"
            "- recipients: [email:team@example.com, opsgenie]\n"
            "  selector: env=prod\n"
        ),
    },
    {},
)


def _obj(labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "r", "labels": labels, "annotations": annotations}}


DESTINATIONS_CASES: list[tuple[str, dict[str, Any], str, list[Destination]]] = [
    (
        "global, trigger listed",
        _obj({}, {}),
        "on-rollout-aborted",
        [Destination("slack", "ops"), Destination("webhook", "")],
    ),
    ("global, selector does not match", _obj({"env": "dev"}, {}), "on-rollout-completed", []),
    (
        "global, default triggers, selector matches",
        _obj({"env": "prod"}, {}),
        "on-rollout-completed",
        [Destination("email", "team@example.com"), Destination("opsgenie", "")],
    ),
    (
        "global then annotations",
        _obj({}, {f"{P}/subscribe.on-rollout-aborted.slack": "dev"}),
        "on-rollout-aborted",
        [Destination("slack", "ops"), Destination("webhook", ""), Destination("slack", "dev")],
    ),
    (
        "not deduplicated, as Argo",
        _obj({}, {f"{P}/subscribe.on-rollout-aborted.slack": "ops"}),
        "on-rollout-aborted",
        [Destination("slack", "ops"), Destination("webhook", ""), Destination("slack", "ops")],
    ),
    (
        "annotation, service default triggers",
        _obj({}, {f"{P}/subscribe.teams": "t"}),
        "on-rollout-aborted",
        [Destination("slack", "ops"), Destination("webhook", ""), Destination("teams", "t")],
    ),
    (
        "annotation, default triggers",
        _obj({}, {f"{P}/subscribe.slack": "c"}),
        "on-rollout-completed",
        [Destination("slack", "c")],
    ),
    ("no metadata", {}, "on-rollout-paused", []),
]


@pytest.mark.parametrize(
    ("obj", "trigger", "want"),
    [c[1:] for c in DESTINATIONS_CASES],
    ids=[c[0] for c in DESTINATIONS_CASES],
)
def test_destinations(obj: dict[str, Any], trigger: str, want: list[Destination]) -> None:
    assert CONFIG.errors == []
    assert destinations(CONFIG, obj, trigger) == want
