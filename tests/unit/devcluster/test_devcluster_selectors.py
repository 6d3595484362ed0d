"""Label and field selector parsing and matching, as tables of named cases."""

from __future__ import annotations

import pytest

from devcluster.selectors import (
    format_label_selector,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector_object,
)

LABELS = {"app": "web", "tier": "front", "track": "stable", "n": "5"}

MATCH_CASES = [
    ("empty", "", True),
    ("equality", "app=web", True),
    ("double equals", "app==web", True),
    ("equality mismatch", "app=api", False),
    ("not equal", "app!=api", True),
    ("not equal on missing key", "missing!=x", True),
    ("not equal mismatch", "app!=web", False),
    ("in", "tier in (front,back)", True),
    ("in with spaces", "tier in ( back , front )", True),
    ("in mismatch", "tier in (back)", False),
    ("in on missing key", "missing in (x)", False),
    ("notin", "tier notin (back)", True),
    ("notin mismatch", "tier notin (front)", False),
    ("notin on missing key", "missing notin (x)", True),
    ("exists", "app", True),
    ("exists missing", "missing", False),
    ("does not exist", "!missing", True),
    ("does not exist present", "!app", False),
    ("greater than", "n>3", True),
    ("less than", "n<3", False),
    ("conjunction", "app=web,tier in (front),!missing,track!=canary", True),
    ("conjunction one fails", "app=web,tier notin (front)", False),
    ("prefixed key", "argo-rollouts.argoproj.io/controller-instance-id", False),
    ("prefixed key absent", "!argo-rollouts.argoproj.io/controller-instance-id", True),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in MATCH_CASES], ids=[c[0] for c in MATCH_CASES]
)
def test_label_selector_matches(text: str, expected: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is expected


BAD_SELECTORS = [
    ("unbalanced paren", "tier in (a,b"),
    ("empty set", "tier in ()"),
    ("bad key", "-app=web"),
    ("bad value", "app=we b"),
    ("non-numeric gt", "n>x"),
    ("garbage", "app=web=x"),
]


@pytest.mark.parametrize("text", [c[1] for c in BAD_SELECTORS], ids=[c[0] for c in BAD_SELECTORS])
def test_label_selector_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="unable to parse requirement"):
        parse_label_selector(text)


def test_selector_object_conversion_and_format() -> None:
    selector = selector_from_label_selector_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "track", "operator": "In", "values": ["stable", "canary"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web", "track": "other"})
    assert format_label_selector(selector) == "app=web,track in (canary,stable),!gone"
    assert parse_label_selector(format_label_selector(selector)) == selector


def test_selector_object_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError, match="not a valid"):
        selector_from_label_selector_object(
            {"matchExpressions": [{"key": "a", "operator": "Near"}]}
        )


FIELD_CASES = [
    ("name", "metadata.name=web", True),
    ("name double equals", "metadata.name==web", True),
    ("name mismatch", "metadata.name=api", False),
    ("name not equal", "metadata.name!=api", True),
    ("namespace", "metadata.namespace=prod", True),
    ("both", "metadata.name=web,metadata.namespace=dev", False),
    ("type field", "status.phase=Running", True),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in FIELD_CASES], ids=[c[0] for c in FIELD_CASES]
)
def test_field_selector_matches(text: str, expected: bool) -> None:
    obj = {"metadata": {"name": "web", "namespace": "prod"}, "status": {"phase": "Running"}}
    assert parse_field_selector(text, supported=("status.phase",)).matches(obj) is expected


def test_field_selector_rejects_unsupported_field() -> None:
    with pytest.raises(ValueError, match=r"field label not supported: spec\.replicas"):
        parse_field_selector("spec.replicas=1")


def test_field_selector_exact_name() -> None:
    assert parse_field_selector("metadata.name=web").exact_name() == "web"
    assert parse_field_selector("metadata.name!=web").exact_name() is None
