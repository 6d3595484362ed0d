"""The value of a rollout's field named by an analysis argument's `valueFrom.fieldRef.fieldPath`.

A rollout passes its own fields to the AnalysisRuns and Experiments it creates this way, e.g.
`spec.template.spec.containers[0].image` or `metadata.labels['app']`. Argo Rollouts resolves the
path in two ways, chosen by its prefix (utils/analysis/factory.go,
BuildArgumentsForRolloutAnalysisRun), and both are reproduced here because their results and
errors differ:

- a path starting with `metadata` goes to Kubernetes' `fieldpath.ExtractFieldPathAsString`:
  only `metadata.name`, `.namespace`, `.uid`, `.labels`, `.annotations` and
  `metadata.labels['k']` / `metadata.annotations['k']`; a missing label or annotation is "", and
  a whole map is `k="v"` lines, sorted;
- any other path is Argo's `extractValueFromRollout`: the path is split at every run of `.`, `[`
  and `]`, each piece is a map key or, inside a list, a decimal index. The value must be a
  primitive, printed with Go's `%v` over the rollout's JSON (numbers are float64s: `3`,
  `1e+06`). A bracketed key keeps its quotes there (`spec.selector.matchLabels['app']` looks up
  the key `'app'`), as in Argo.
"""

from __future__ import annotations

import re
from typing import Any

from rollout_workers.expr.values import format_float
from rollout_workers.objects import Obj

_SEPARATORS = re.compile(r"[.\[\]]+")
#: strconv.Atoi: an optional sign and ASCII digits, nothing else.
_GO_INT = re.compile(r"[+-]?[0-9]+")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_METADATA_FIELDS = ("name", "namespace", "uid")
_GO_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t"}
_GO_ESCAPES |= {"\v": r"\v", "\\": r"\\", '"': r"\""}


class FieldPathError(ValueError):
    """The path names no primitive field of the rollout; the message is Argo's."""


def is_metadata_path(path: str) -> bool:
    """Whether Argo resolves `path` with Kubernetes' fieldpath (it only checks the prefix)."""
    return path.startswith("metadata")


def metadata_field(obj: Obj, path: str) -> str:
    """Kubernetes' `fieldpath.ExtractFieldPathAsString` on an object; raises FieldPathError."""
    meta = obj.get("metadata") or {}
    head, subscript = _split_subscript(path)
    if subscript is not None:
        if head not in ("metadata.labels", "metadata.annotations"):
            raise FieldPathError(f"fieldPath {go_quote(path)} does not support subscript")
        # Annotation keys are checked case-insensitively, label keys as they are.
        key = subscript.lower() if head == "metadata.annotations" else subscript
        problem = _qualified_name_error(key)
        if problem:
            raise FieldPathError(f"invalid key subscript in {path}: {problem}")
        values = meta.get(head.removeprefix("metadata.")) or {}
        return str(values.get(subscript, ""))
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.removeprefix("metadata.")) or {}
        return "\n".join(f"{k}={go_quote(str(values[k]))}" for k in sorted(values))
    field = path.removeprefix("metadata.")
    if path.startswith("metadata.") and field in _METADATA_FIELDS:
        return str(meta.get(field) or "")
    raise FieldPathError(f"unsupported fieldPath: {path}")


def rollout_value(obj: Obj, path: str) -> str:
    """Argo's `extractValueFromRollout`: the primitive at `path`; raises FieldPathError."""
    current: Any = obj
    for section in _SEPARATORS.split(path):
        if not section:
            continue  # a path ending with a separator leaves an empty last piece
        if isinstance(current, list):
            if not _GO_INT.fullmatch(section) or not -(2**63) <= int(section) < 2**63:
                raise FieldPathError(f"invalid index '{section}'")
            index = int(section)
            if index >= len(current) or index < 0:
                # Go would panic on a negative index; out of range is what it means.
                raise FieldPathError(f"index {index} out of range")
            current = current[index]
        elif isinstance(current, dict):
            current = current.get(section)
        else:
            raise FieldPathError(f"invalid path {path} in rollout")
    if current is None:
        raise FieldPathError(f"invalid path {path} in rollout")
    if isinstance(current, list | dict):
        raise FieldPathError(f"path {path} in rollout must terminate in a primitive value")
    return _go_value(current)


def _go_value(value: Any) -> str:
    """Go's `%v` of a value decoded from JSON into `any` (every number a float64)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_float(float(value))
    return str(value)


def _split_subscript(path: str) -> tuple[str, str | None]:
    """fieldpath.SplitMaybeSubscriptedPath: `metadata.labels['k']` is (`metadata.labels`, k)."""
    if not path.endswith("']"):
        return path, None
    head, sep, subscript = path[:-2].partition("['")
    if not sep or not head:
        return path, None
    return head, subscript


def _qualified_name_error(value: str) -> str:
    """apimachinery's IsQualifiedName, its first complaint ("" when the key is valid)."""
    parts = value.split("/")
    if len(parts) > 2:
        return "a qualified name must consist of a name with an optional DNS subdomain prefix"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _LABEL_NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return ""


def go_quote(text: str) -> str:
    """Go's `%q` of a string."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
