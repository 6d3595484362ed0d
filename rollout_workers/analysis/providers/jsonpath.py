"""The subset of Kubernetes' JSONPath (`k8s.io/client-go/util/jsonpath`) that web metrics use.

Argo's web provider parses `jsonPath` with the Kubernetes template syntax, takes the results of
the first expression and keeps the first of them. Supported here, inside one `{...}`:

- `$` (or `@`, or nothing) for the root: `{$}`, `{.data}`;
- fields: `{$.a.b}`, `{$['a.b']}`, `{$["a"]}`;
- indexes, negative from the end: `{$.a[0]}`, `{$.a[-1]}`;
- every element: `{$.a[*].b}`.

Errors use the Kubernetes messages (`x is not found`, `array index out of bounds: index 3,
length 2`). Slices, filters, recursive descent (`..`), unions, `range` and text outside the braces
are not supported: they raise `JSONPathError` when parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class JSONPathError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Index:
    index: int


@dataclass(frozen=True)
class Every:
    pass


Step = Field | Index | Every

_NAME = re.compile(r"[A-Za-z0-9_\-/]+")
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_EVERY = re.compile(r"\[\s*\*\s*\]")
_QUOTED = re.compile(r"""\[\s*(?:'([^']*)'|"([^"]*)")\s*\]""")


def parse(path: str) -> list[Step]:
    """The steps of `{...}`; raises `JSONPathError` for anything outside the subset."""
    text = path.strip()
    if not (text.startswith("{") and text.endswith("}")) or text.count("{") != 1:
        raise JSONPathError(f"unsupported JSONPath {path!r}: expected one {{...}} expression")
    inner = text[1:-1].strip()
    pos = 1 if inner[:1] in ("$", "@") else 0
    steps: list[Step] = []
    while pos < len(inner):
        rest = inner[pos:]
        if rest.startswith(".."):
            raise JSONPathError(f"unsupported JSONPath {path!r}: recursive descent")
        if rest.startswith("."):
            name = _NAME.match(inner, pos + 1)
            if name is None:
                raise JSONPathError(f"unsupported JSONPath {path!r} at {rest!r}")
            steps.append(Field(name.group()))
            pos = name.end()
            continue
        if m := _INDEX.match(inner, pos):
            steps.append(Index(int(m.group(1))))
        elif m := _EVERY.match(inner, pos):
            steps.append(Every())
        elif m := _QUOTED.match(inner, pos):
            steps.append(Field(m.group(1) if m.group(1) is not None else m.group(2)))
        else:
            raise JSONPathError(f"unsupported JSONPath {path!r} at {rest!r}")
        pos = m.end()
    return steps


def find_results(path: str, data: Any) -> list[Any]:
    """Every value `path` selects in `data`, in document order."""
    current = [data]
    for step in parse(path):
        current = [out for value in current for out in _apply(step, value)]
    return current


def _apply(step: Step, value: Any) -> list[Any]:
    if isinstance(step, Field):
        if isinstance(value, dict) and step.name in value:
            return [value[step.name]]
        raise JSONPathError(f"{step.name} is not found")
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_type(value)} is not array or slice")
    if isinstance(step, Every):
        return list(value)
    index = step.index + len(value) if step.index < 0 else step.index
    if not 0 <= index < len(value):
        raise JSONPathError(f"array index out of bounds: index {step.index}, length {len(value)}")
    return [value[index]]


def _go_type(value: Any) -> str:
    """The Go type name Kubernetes' message would show for a decoded JSON value."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "interface {}"
