"""The JSONPath subset web metrics use, with Kubernetes' error messages."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.analysis.providers.jsonpath import JSONPathError, find_results

DOC: dict[str, Any] = {
    "data": {"ok": True, "rate": 0.5, "dotted.key": "x"},
    "items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}],
    "empty": [],
    "key": [{"key2": {"value": "1"}}],
    "nothing": None,
}

FOUND = [
    ("root", "{$}", [DOC]),
    ("root without $", "{.data.ok}", [True]),
    ("nested field", "{$.data.ok}", [True]),
    ("number", "{$.data.rate}", [0.5]),
    ("index", "{$.items[0]}", [{"name": "a", "v": 1}]),
    ("negative index", "{$.items[-1].name}", ["b"]),
    ("index then fields (Argo's test)", "{$.key[0].key2.value}", ["1"]),
    ("every element", "{$.items[*].v}", [1, 2]),
    ("every element of an empty list", "{$.empty[*]}", []),
    ("quoted key", "{$.data['dotted.key']}", ["x"]),
    ("double-quoted key", '{$["data"].ok}', [True]),
    ("null value", "{$.nothing}", [None]),
    ("surrounding blanks", "  { $.data.ok }  ", [True]),
]


@pytest.mark.parametrize(("path", "expected"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_found(path: str, expected: list[Any]) -> None:
    assert find_results(path, DOC) == expected


ERRORS = [
    ("missing field", "{$.data.missing}", "missing is not found"),
    ("field of a list", "{$.items.name}", "name is not found"),
    ("index out of bounds", "{$.items[5]}", "array index out of bounds: index 5, length 2"),
    ("index of a map", "{$.data[0]}", "map[string]interface {} is not array or slice"),
    ("no braces", "$.data.ok", "expected one {...} expression"),
    ("two expressions", "{.a}{.b}", "expected one {...} expression"),
    ("recursive descent", "{$..ok}", "recursive descent"),
    ("filter", "{$.items[?(@.v==1)]}", "unsupported JSONPath"),
    ("slice", "{$.items[0:1]}", "unsupported JSONPath"),
]


@pytest.mark.parametrize(("path", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors(path: str, message: str) -> None:
    with pytest.raises(JSONPathError, match=message.replace("[", r"\[").replace("{", r"\{")):
        find_results(path, DOC)
