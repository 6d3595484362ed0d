"""The three PATCH formats the API server accepts, as pure functions on JSON values.

- JSON merge patch (RFC 7386): objects merge recursively, ``null`` deletes, anything else
  (lists included) replaces.
- JSON patch (RFC 6902): add, remove, replace, move, copy, test; a failed ``test`` or a bad path
  raises ``PatchApplyError`` (the server answers 422), a malformed document ``PatchDecodeError``
  (400).
- Strategic merge patch, the subset that kubectl and the typed clients send for built-in types:
  a merge patch where lists of objects with a known merge key (containers by ``name``, ports by
  ``containerPort``, conditions by ``type``...) merge element-wise, ``$patch: delete|replace``,
  ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>`` and ``$retainKeys``. Lists
  without a known merge key are replaced, as in a merge patch.

Inputs are never mutated; results share unchanged subtrees with the input, so callers must treat
both as immutable.

``apply_patch`` picks the format by the request's media type and fails as the server does: 400
for a malformed patch, 422 for one that cannot apply, 415 for another media type and for a
strategic merge patch to a custom resource.
"""

from __future__ import annotations

import copy
from typing import Any

from devcluster import errors
from devcluster.errors import JSONDict
from devcluster.resources import ResourceType

JSON = Any

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class PatchDecodeError(ValueError):
    """The patch document itself is malformed (HTTP 400)."""


class PatchApplyError(ValueError):
    """The patch is well formed but cannot be applied to this object (HTTP 422)."""


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, JSON] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- RFC 6902 -------------------------------------------------------------------------------


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _parse_pointer(pointer: Any) -> list[str]:
    if not isinstance(pointer, str):
        raise PatchDecodeError(f"invalid JSON pointer {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchApplyError(f"JSON pointer must start with '/': {pointer!r}")
    return [_unescape(t) for t in pointer[1:].split("/")]


def _index(container: list[JSON], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token.startswith("0") and token != "0"):
        raise PatchApplyError(f"invalid array index {token!r}")
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise PatchApplyError(f"array index {idx} out of bounds")
    return idx


def _get(doc: JSON, tokens: list[str]) -> JSON:
    current = doc
    for token in tokens:
        if isinstance(current, dict):
            if token not in current:
                raise PatchApplyError(f"missing path element {token!r}")
            current = current[token]
        elif isinstance(current, list):
            current = current[_index(current, token, allow_end=False)]
        else:
            raise PatchApplyError(f"cannot descend into a scalar at {token!r}")
    return current


def _parent(doc: JSON, tokens: list[str]) -> tuple[JSON, str]:
    if not tokens:
        raise PatchApplyError("the operation needs a non-root path")
    return _get(doc, tokens[:-1]), tokens[-1]


def _add(doc: JSON, tokens: list[str], value: JSON) -> JSON:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchApplyError(f"cannot add to a scalar at {last!r}")
    return doc


def _remove(doc: JSON, tokens: list[str]) -> JSON:
    parent, last = _parent(doc, tokens)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchApplyError(f"unable to remove nonexistent key {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    raise PatchApplyError(f"cannot remove from a scalar at {last!r}")


def json_patch(target: JSON, operations: JSON) -> JSON:
    """RFC 6902 JSON patch."""
    if not isinstance(operations, list):
        raise PatchDecodeError(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchDecodeError(f"invalid JSON patch operation {op!r}")
        kind = op["op"]
        tokens = _parse_pointer(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchDecodeError(f"operation {kind!r} needs a value")
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            if not tokens:
                doc = copy.deepcopy(op["value"])
                continue
            parent, last = _parent(doc, tokens)
            if isinstance(parent, dict):
                if last not in parent:
                    raise PatchApplyError(
                        f"replace operation does not apply: doc is missing key: {op['path']}"
                    )
                parent[last] = copy.deepcopy(op["value"])
            elif isinstance(parent, list):
                parent[_index(parent, last, allow_end=False)] = copy.deepcopy(op["value"])
            else:
                raise PatchApplyError(f"cannot replace in a scalar at {last!r}")
        elif kind in ("move", "copy"):
            source = _parse_pointer(op.get("from"))
            if kind == "move":
                if tokens[: len(source)] == source and len(tokens) > len(source):
                    raise PatchApplyError("cannot move a value into one of its children")
                value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, tokens, value)
        elif kind == "test":
            try:
                actual = _get(doc, tokens)
            except PatchApplyError:
                raise PatchApplyError(
                    f"testing value {op['path']} failed: the path does not exist"
                ) from None
            if actual != op["value"] or type(actual) is not type(op["value"]):
                raise PatchApplyError(f"testing value {op['path']} failed")
        else:
            raise PatchDecodeError(f"unsupported JSON patch operation {kind!r}")
    return doc


# --- strategic merge patch (subset) ---------------------------------------------------------

# Merge keys of the list fields kubectl and typed clients patch most; by field name, which is
# unambiguous enough for the types this server serves.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ownerReferences": "uid",
    "conditions": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "tolerations": "key",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
# Primitive lists with patchStrategy "merge".
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})
_PORT_KEYS = ("containerPort", "port")


def _merge_key_for(field: str, items: list[JSON]) -> str | None:
    if field == "ports":
        for key in _PORT_KEYS:
            if all(isinstance(i, dict) and key in i for i in items):
                return key
        return None
    return MERGE_KEYS.get(field)


def _merge_list(field: str, original: JSON, patch: list[JSON]) -> list[JSON]:
    base = original if isinstance(original, list) else []
    if field in MERGE_PRIMITIVE_LISTS:
        merged = list(base)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged
    key = _merge_key_for(field, [*base, *patch])
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [strategic_merge_patch(None, i) if isinstance(i, dict) else i for i in patch]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [
            strategic_merge_patch(None, i)
            for i in patch
            if not (isinstance(i, dict) and i.get("$patch") == "replace")
        ]
    result = [dict(i) if isinstance(i, dict) else i for i in base]
    for item in patch:
        wanted = item.get(key)
        idx = next(
            (n for n, cur in enumerate(result) if isinstance(cur, dict) and cur.get(key) == wanted),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                result.pop(idx)
            continue
        if idx is None:
            result.append(strategic_merge_patch(None, item))
        else:
            result[idx] = strategic_merge_patch(result[idx], item)
    return result


def _order(items: list[JSON], order: list[JSON], field: str) -> list[JSON]:
    key = _merge_key_for(field, items)
    if key is None:
        return items
    position = {(o.get(key) if isinstance(o, dict) else o): n for n, o in enumerate(order)}
    ranked = sorted(
        enumerate(items),
        key=lambda pair: (
            position.get(pair[1].get(key) if isinstance(pair[1], dict) else pair[1], len(order)),
            pair[0],
        ),
    )
    return [item for _, item in ranked]


def strategic_merge_patch(target: JSON, patch: JSON) -> JSON:
    """Apply a strategic merge patch (the subset described in the module docstring)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    result: dict[str, JSON] = (
        {} if directive == "replace" or not isinstance(target, dict) else dict(target)
    )
    orders: dict[str, list[JSON]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if isinstance(value, list):
                orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _order(result[field], order, field)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def apply_patch(rt: ResourceType, target: JSONDict, patch_type: str, patch: Any) -> Any:
    """``patch`` applied to ``target`` (as ``rt`` serves it) in the format ``patch_type`` names."""
    try:
        if patch_type == JSON_PATCH:
            return json_patch(target, patch)
        if patch_type == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise PatchDecodeError("a merge patch must be a JSON object")
            return merge_patch(target, patch)
        if patch_type == STRATEGIC_MERGE_PATCH:
            if rt.custom:
                raise errors.unsupported_media_type(patch_type)
            if not isinstance(patch, dict):
                raise PatchDecodeError("a strategic merge patch must be a JSON object")
            return strategic_merge_patch(target, patch)
    except PatchDecodeError as exc:
        raise errors.bad_request(str(exc)) from None
    except PatchApplyError as exc:
        raise errors.unprocessable(str(exc)) from None
    raise errors.unsupported_media_type(patch_type)
