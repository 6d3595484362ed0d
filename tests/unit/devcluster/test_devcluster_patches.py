"""Merge patch (RFC 7386), JSON patch (RFC 6902) and the strategic merge patch subset."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster.patches import (
    PatchApplyError,
    PatchDecodeError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

# The RFC 7386 appendix examples, plus nested deletes.
MERGE_CASES: list[tuple[str, Any, Any, Any]] = [
    ("replace scalar", {"a": "b"}, {"a": "c"}, {"a": "c"}),
    ("add key", {"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ("null deletes", {"a": "b"}, {"a": None}, {}),
    ("delete one of two", {"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ("list replaces", {"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ("scalar to list", {"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ("nested", {"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ("lists not merged", {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ("non-dict target", ["a", "b"], {"a": "b"}, {"a": "b"}),
    ("nested null in new key", {}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ("delete missing key", {"e": None}, {"a": 1}, {"e": None, "a": 1}),
]


@pytest.mark.parametrize(
    ("target", "patch", "expected"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES]
)
def test_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before  # inputs are never mutated


DOC = {"spec": {"replicas": 1, "list": ["a", "b"]}, "metadata": {"labels": {"a/b": "x"}}}

JSON_PATCH_CASES: list[tuple[str, list[Any], Any]] = [
    (
        "add key",
        [{"op": "add", "path": "/spec/paused", "value": True}],
        {**DOC, "spec": {**DOC["spec"], "paused": True}},
    ),
    (
        "append",
        [{"op": "add", "path": "/spec/list/-", "value": "c"}],
        {**DOC, "spec": {"replicas": 1, "list": ["a", "b", "c"]}},
    ),
    (
        "insert",
        [{"op": "add", "path": "/spec/list/0", "value": "z"}],
        {**DOC, "spec": {"replicas": 1, "list": ["z", "a", "b"]}},
    ),
    (
        "replace",
        [{"op": "replace", "path": "/spec/replicas", "value": 3}],
        {**DOC, "spec": {"replicas": 3, "list": ["a", "b"]}},
    ),
    (
        "remove",
        [{"op": "remove", "path": "/spec/list/0"}],
        {**DOC, "spec": {"replicas": 1, "list": ["b"]}},
    ),
    (
        "escaped key",
        [{"op": "replace", "path": "/metadata/labels/a~1b", "value": "y"}],
        {**DOC, "metadata": {"labels": {"a/b": "y"}}},
    ),
    (
        "test then replace",
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 2},
        ],
        {**DOC, "spec": {"replicas": 2, "list": ["a", "b"]}},
    ),
    (
        "move",
        [{"op": "move", "from": "/spec/replicas", "path": "/spec/count"}],
        {**DOC, "spec": {"count": 1, "list": ["a", "b"]}},
    ),
    (
        "copy",
        [{"op": "copy", "from": "/spec/replicas", "path": "/spec/count"}],
        {**DOC, "spec": {"replicas": 1, "count": 1, "list": ["a", "b"]}},
    ),
]


@pytest.mark.parametrize(
    ("ops", "expected"), [c[1:] for c in JSON_PATCH_CASES], ids=[c[0] for c in JSON_PATCH_CASES]
)
def test_json_patch(ops: list[Any], expected: Any) -> None:
    before = copy.deepcopy(DOC)
    assert json_patch(DOC, ops) == expected
    assert before == DOC


APPLY_ERRORS: list[tuple[str, list[Any]]] = [
    ("test fails", [{"op": "test", "path": "/spec/replicas", "value": 2}]),
    ("test type differs", [{"op": "test", "path": "/spec/replicas", "value": True}]),
    ("test missing path", [{"op": "test", "path": "/nope", "value": 1}]),
    ("remove missing", [{"op": "remove", "path": "/spec/nope"}]),
    ("replace missing", [{"op": "replace", "path": "/spec/nope", "value": 1}]),
    ("index out of range", [{"op": "add", "path": "/spec/list/5", "value": 1}]),
    ("bad index", [{"op": "remove", "path": "/spec/list/x"}]),
]


@pytest.mark.parametrize("ops", [c[1] for c in APPLY_ERRORS], ids=[c[0] for c in APPLY_ERRORS])
def test_json_patch_apply_errors(ops: list[Any]) -> None:
    with pytest.raises(PatchApplyError):
        json_patch(DOC, ops)


@pytest.mark.parametrize(
    "ops",
    [
        {"op": "add"},
        [{"path": "/a"}],
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "add", "path": "/a"}],
    ],
    ids=["not a list", "no op", "unknown op", "add without value"],
)
def test_json_patch_decode_errors(ops: Any) -> None:
    with pytest.raises(PatchDecodeError):
        json_patch(DOC, ops)


POD_SPEC = {
    "containers": [
        {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "proxy:1"},
    ],
    "volumes": [{"name": "data", "emptyDir": {}}],
}

SMP_CASES: list[tuple[str, Any, Any]] = [
    (
        "container merged by name",
        {"containers": [{"name": "app", "image": "app:2"}]},
        {
            **POD_SPEC,
            "containers": [
                {"name": "app", "image": "app:2", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "proxy:1"},
            ],
        },
    ),
    (
        "container added",
        {"containers": [{"name": "new", "image": "x:1"}]},
        {**POD_SPEC, "containers": [*POD_SPEC["containers"], {"name": "new", "image": "x:1"}]},
    ),
    (
        "container deleted by directive",
        {"containers": [{"name": "sidecar", "$patch": "delete"}]},
        {**POD_SPEC, "containers": [POD_SPEC["containers"][0]]},
    ),
    (
        "set element order",
        {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "app:3"}],
        },
        {
            **POD_SPEC,
            "containers": [
                {"name": "sidecar", "image": "proxy:1"},
                {"name": "app", "image": "app:3", "ports": [{"containerPort": 80}]},
            ],
        },
    ),
    (
        "map replaced by directive",
        {"volumes": [{"name": "data", "$patch": "delete"}], "nodeSelector": {"$patch": "replace"}},
        {"containers": POD_SPEC["containers"], "volumes": [], "nodeSelector": {}},
    ),
    ("null deletes", {"volumes": None}, {"containers": POD_SPEC["containers"]}),
    (
        "unknown list replaced",
        {"args": ["a"]},
        {**POD_SPEC, "args": ["a"]},
    ),
]


@pytest.mark.parametrize(
    ("patch", "expected"), [c[1:] for c in SMP_CASES], ids=[c[0] for c in SMP_CASES]
)
def test_strategic_merge_patch(patch: Any, expected: Any) -> None:
    before = copy.deepcopy(POD_SPEC)
    assert strategic_merge_patch(POD_SPEC, patch) == expected
    assert before == POD_SPEC


def test_strategic_merge_patch_finalizers_merge_and_delete() -> None:
    meta = {"finalizers": ["a"]}
    merged = strategic_merge_patch(meta, {"finalizers": ["b"]})
    assert merged == {"finalizers": ["a", "b"]}
    assert strategic_merge_patch(merged, {"$deleteFromPrimitiveList/finalizers": ["a"]}) == {
        "finalizers": ["b"]
    }
