"""Structural pruning (apiextensions-apiserver's algorithm), as a table of named cases."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster.pruning import calculate_pruned

PRESERVE = "x-kubernetes-preserve-unknown-fields"


def obj(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, **fields}


def root(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


STRING = {"type": "string"}
OBJECT_OF_A = {"type": "object", "properties": {"a": STRING}}

# (name, schema, object in, object out, pruned paths)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "unknown top-level field",
        root(spec=OBJECT_OF_A),
        obj(spec={"a": "x"}, extra=1),
        obj(spec={"a": "x"}),
        ["extra"],
    ),
    (
        "root apiVersion, kind and metadata survive a schema without them",
        {"type": "object", "properties": {}},
        obj(),
        obj(),
        [],
    ),
    (
        "unknown metadata fields go by ObjectMeta, not by the schema",
        {"type": "object", "properties": {"metadata": {"type": "object"}}},
        obj(metadata={"name": "w", "labels": {"a": "b"}, "bogus": 1}),
        obj(metadata={"name": "w", "labels": {"a": "b"}}),
        ["metadata.bogus"],
    ),
    (
        "nested unknown field",
        root(spec={"type": "object", "properties": {"inner": OBJECT_OF_A}}),
        obj(spec={"inner": {"a": "x", "b": "y"}}),
        obj(spec={"inner": {"a": "x"}}),
        ["spec.inner.b"],
    ),
    (
        "array items collapse their index",
        root(
            spec={"type": "object", "properties": {"xs": {"type": "array", "items": OBJECT_OF_A}}}
        ),
        obj(spec={"xs": [{"a": "1", "z": 1}, {"a": "2", "z": 2}, {"a": "3"}]}),
        obj(spec={"xs": [{"a": "1"}, {"a": "2"}, {"a": "3"}]}),
        ["spec.xs[].z"],
    ),
    (
        "scalar arrays are never pruned",
        root(spec={"type": "object", "properties": {"xs": {"type": "array", "items": STRING}}}),
        obj(spec={"xs": ["a", "b"]}),
        obj(spec={"xs": ["a", "b"]}),
        [],
    ),
    (
        "map values pruned by additionalProperties, keys as *",
        root(spec={"type": "object", "additionalProperties": OBJECT_OF_A}),
        obj(spec={"k1": {"a": "x", "b": 1}, "k2": {"a": "y"}}),
        obj(spec={"k1": {"a": "x"}, "k2": {"a": "y"}}),
        ["spec.*.b"],
    ),
    (
        "map of strings keeps every key",
        root(labels={"type": "object", "additionalProperties": STRING}),
        obj(labels={"a": "1", "b": "2"}),
        obj(labels={"a": "1", "b": "2"}),
        [],
    ),
    (
        "preserve-unknown-fields keeps unknown keys at its level",
        root(spec={"type": "object", PRESERVE: True}),
        obj(spec={"any": {"deep": [1, {"x": 2}]}}),
        obj(spec={"any": {"deep": [1, {"x": 2}]}}),
        [],
    ),
    (
        "preserve-unknown-fields still prunes inside known properties",
        root(spec={"type": "object", PRESERVE: True, "properties": {"known": OBJECT_OF_A}}),
        obj(spec={"other": 1, "known": {"a": "x", "b": "y"}}),
        obj(spec={"other": 1, "known": {"a": "x"}}),
        ["spec.known.b"],
    ),
    (
        "preserve-unknown-fields at the root keeps everything",
        {"type": "object", PRESERVE: True},
        obj(spec={"x": 1}, top=2),
        obj(spec={"x": 1}, top=2),
        [],
    ),
    (
        "int-or-string keeps either",
        root(spec={"type": "object", "properties": {"n": {"x-kubernetes-int-or-string": True}}}),
        obj(spec={"n": "25%"}),
        obj(spec={"n": "25%"}),
        [],
    ),
    (
        "embedded resource keeps apiVersion, kind and ObjectMeta metadata",
        root(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {}}},
            }
        ),
        obj(
            template={
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "nope": 1},
                "spec": {"x": 1},
                "junk": 1,
            }
        ),
        obj(template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}),
        ["template.junk", "template.metadata.nope", "template.spec.x"],
    ),
    (
        "embedded resource with preserve-unknown-fields",
        root(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                PRESERVE: True,
            }
        ),
        obj(template={"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {"y": 1}}),
        obj(template={"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"y": 1}}),
        ["template.metadata.x"],
    ),
    (
        "an object where no schema applies loses its keys",
        root(xs={"type": "array"}),
        obj(xs=[{"a": 1}, 2]),
        obj(xs=[{}, 2]),
        ["xs[].a"],
    ),
    (
        "nulls and matching values stay",
        root(spec={"type": "object", "nullable": True}),
        obj(spec=None),
        obj(spec=None),
        [],
    ),
]


@pytest.mark.parametrize(
    ("schema", "given", "expected", "paths"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_calculate_pruned(
    schema: dict[str, Any], given: dict[str, Any], expected: dict[str, Any], paths: list[str]
) -> None:
    before = copy.deepcopy(given)
    out, pruned = calculate_pruned(given, schema)
    assert out == expected
    assert pruned == paths
    assert given == before  # the input is never mutated


def test_exact_paths_name_indices_and_keys() -> None:
    schema = root(
        xs={"type": "array", "items": OBJECT_OF_A},
        m={"type": "object", "additionalProperties": OBJECT_OF_A},
    )
    given = obj(xs=[{"a": "1"}, {"a": "2", "z": 1}], m={"k": {"z": 1}})
    assert calculate_pruned(given, schema)[1] == ["m.*.z", "xs[].z"]
    assert calculate_pruned(given, schema, exact=True)[1] == ["m.k.z", "xs[1].z"]


def test_unchanged_objects_are_returned_as_is() -> None:
    given = obj(spec={"a": "x"})
    out, pruned = calculate_pruned(given, root(spec=OBJECT_OF_A))
    assert out is given and pruned == []


def test_no_schema_prunes_nothing() -> None:
    given = obj(anything=1)
    assert calculate_pruned(given, None) == (given, [])
