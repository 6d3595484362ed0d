"""Label and field selectors in the API server's query syntax.

``labelSelector`` supports the equality forms (``a=b``, ``a==b``, ``a!=b``), the set forms
(``a in (x,y)``, ``a notin (x)``), existence (``a``, ``!a``) and the numeric ``a>1`` / ``a<1``;
``fieldSelector`` supports ``=``, ``==`` and ``!=`` on ``metadata.name``, ``metadata.namespace``
and the few extra fields each type registers. Parse errors raise ``ValueError`` with the text a
real server puts in its 400 BadRequest. Parsing happens once per request; matching is a few dict
lookups per object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KEY_RE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a label selector."""

    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        if op in ("!=", "notin"):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if op == "gt" else number < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if not self.requirements:
            return True
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def _check_key(key: str, text: str) -> None:
    if not key or len(key) > 316 or not _KEY_RE.match(key):
        raise ValueError(f"unable to parse requirement: invalid label key {key!r} in {text!r}")


def _check_value(value: str, text: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise ValueError(f"unable to parse requirement: invalid label value {value!r} in {text!r}")


def _split_clauses(text: str) -> list[str]:
    """Split at commas that are not inside ``( )``."""
    clauses: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unable to parse requirement: unbalanced ')' in {text!r}")
        if ch == "," and depth == 0:
            clauses.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ValueError(f"unable to parse requirement: unbalanced '(' in {text!r}")
    clauses.append("".join(current))
    return clauses


_SET_RE = re.compile(r"^\s*(?P<key>\S+?)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_CMP_RE = re.compile(r"^\s*(?P<key>[^\s=!<>]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s=!<>]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s=!<>(),]+)\s*$")


def _parse_clause(clause: str, text: str) -> Requirement:
    m = _SET_RE.match(clause)
    if m:
        key = m.group("key")
        _check_key(key, text)
        values = tuple(v.strip() for v in m.group("values").split(","))
        if values == ("",):
            raise ValueError(
                f"unable to parse requirement: for 'in', 'notin' operators, values set "
                f"can't be empty in {text!r}"
            )
        for v in values:
            _check_value(v, text)
        return Requirement(key, m.group("op"), tuple(sorted(set(values))))
    m = _CMP_RE.match(clause)
    if m:
        key, op, value = m.group("key"), m.group("op"), m.group("value")
        _check_key(key, text)
        if op in (">", "<"):
            try:
                int(value)
            except ValueError:
                raise ValueError(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must "
                    f"be an integer in {text!r}"
                ) from None
            return Requirement(key, "gt" if op == ">" else "lt", (value,))
        _check_value(value, text)
        return Requirement(key, "!=" if op == "!=" else "=", (value,))
    m = _EXISTS_RE.match(clause)
    if m:
        key = m.group("key")
        _check_key(key, text)
        return Requirement(key, "!" if m.group("neg") else "exists")
    raise ValueError(f"unable to parse requirement: found {clause.strip()!r} in {text!r}")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query value; ``ValueError`` when it is malformed."""
    if text is None or not text.strip():
        return LabelSelector()
    return LabelSelector(tuple(_parse_clause(c, text) for c in _split_clauses(text)))


def selector_from_label_selector_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` (matchLabels / matchExpressions) to a selector.

    A nil or empty selector matches everything here; callers that need "matches nothing" for a
    nil selector check for None themselves.
    """
    if not selector:
        return LabelSelector()
    reqs: list[Requirement] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        reqs.append(Requirement(str(key), "=", (str(value),)))
    for expr in selector.get("matchExpressions") or []:
        op = str(expr.get("operator", ""))
        key = str(expr.get("key", ""))
        values = tuple(sorted(str(v) for v in expr.get("values") or []))
        mapped = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(op)
        if mapped is None:
            raise ValueError(f"{op!r} is not a valid label selector operator")
        reqs.append(Requirement(key, mapped, values))
    return LabelSelector(tuple(reqs))


def format_label_selector(selector: LabelSelector) -> str:
    """The canonical string form (used for the scale subresource's ``status.selector``)."""
    parts: list[str] = []
    for r in selector.requirements:
        if r.op == "=":
            parts.append(f"{r.key}={r.values[0]}")
        elif r.op == "!=":
            parts.append(f"{r.key}!={r.values[0]}")
        elif r.op in ("in", "notin"):
            parts.append(f"{r.key} {r.op} ({','.join(r.values)})")
        elif r.op == "exists":
            parts.append(r.key)
        elif r.op == "!":
            parts.append(f"!{r.key}")
        else:
            parts.append(f"{r.key}{'>' if r.op == 'gt' else '<'}{r.values[0]}")
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    path: tuple[str, ...]
    value: str
    negate: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        current: Any = obj
        for part in self.path:
            current = current.get(part) if isinstance(current, Mapping) else None
            if current is None:
                break
        if current is None:
            actual = ""
        elif isinstance(current, bool):
            actual = "true" if current else "false"
        else:
            actual = str(current)
        return (actual != self.value) if self.negate else (actual == self.value)


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact_name(self) -> str | None:
        """The name when the selector pins ``metadata.name=X`` (used to avoid a full scan)."""
        for r in self.requirements:
            if r.path == ("metadata", "name") and not r.negate:
                return r.value
        return None


_FIELD_RE = re.compile(r"^\s*(?P<field>[A-Za-z0-9_.]+)\s*(?P<op>==|=|!=)\s*(?P<value>.*?)\s*$")


def parse_field_selector(text: str | None, *, supported: tuple[str, ...] = ()) -> FieldSelector:
    """Parse a ``fieldSelector`` query value; ``ValueError`` on bad syntax or unknown fields."""
    if text is None or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    allowed = {"metadata.name", "metadata.namespace", *supported}
    for clause in text.split(","):
        m = _FIELD_RE.match(clause)
        if not m:
            raise ValueError(f"invalid selector: {text!r}; can't understand {clause!r}")
        name = m.group("field")
        if name not in allowed:
            raise ValueError(f"field label not supported: {name}")
        reqs.append(
            FieldRequirement(tuple(name.split(".")), m.group("value"), m.group("op") == "!=")
        )
    return FieldSelector(tuple(reqs))
