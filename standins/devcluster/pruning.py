"""Structural pruning of custom resources, as apiextensions-apiserver does on every write.

A real API server drops every field of a custom resource that the version's ``openAPIV3Schema``
does not declare, unless ``x-kubernetes-preserve-unknown-fields: true`` allows unknown fields at
that level. The controller must not rely on a field surviving that the CRD lacks, so the
devcluster prunes exactly as the real server does and reports what it dropped (the paths feed
``GET /_devcluster/pruned``). This follows ``pkg/apiserver/schema/pruning/algorithm.go``:

- at the resource root ``apiVersion``, ``kind`` and ``metadata`` are kept whatever the schema
  says; the schema never prunes ``metadata``, only the ObjectMeta rules do (unknown metadata
  keys are dropped, as the server's ObjectMeta coercion does);
- ``x-kubernetes-embedded-resource: true`` keeps the embedded object's ``apiVersion``, ``kind``
  and ``metadata`` (metadata by the same ObjectMeta rules);
- ``properties`` name the known keys; ``additionalProperties`` with a schema prunes every map
  value by it; ``x-kubernetes-preserve-unknown-fields: true`` keeps unknown keys but still prunes
  the known ones by their schemas;
- a map (or list of maps) where no schema applies loses all its keys; scalars are never pruned
  (``x-kubernetes-int-or-string`` is a scalar either way); ``items`` prunes list elements.

Pruned paths are dotted (``spec.x``, ``status.y[].z``): list indices collapse to ``[]`` and
``additionalProperties`` keys to ``*``, so a path names a schema location, not one value; with
``exact=True`` they name the values (``status.y[2].z``, ``spec.labels.app``), as the server's
warnings and strict errors do.
Pure functions, no I/O; the input is never mutated.
"""

from __future__ import annotations

from typing import Any

JSONDict = dict[str, Any]

PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"
_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
#: metav1.ObjectMeta's JSON fields: what survives in ``metadata``.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def calculate_pruned(
    obj: JSONDict, schema: JSONDict | None, *, exact: bool = False
) -> tuple[JSONDict, list[str]]:
    """Prune a whole custom resource by its version's ``openAPIV3Schema``.

    Returns the pruned copy and the pruned paths (sorted, without duplicates). ``schema=None``
    prunes nothing (a type without a schema)."""
    if schema is None:
        return obj, []
    pruned = _Pruned(exact=exact)
    # The root is treated as an embedded resource, as PruneWithOptions does.
    out = _prune(obj, {**schema, EMBEDDED_RESOURCE: True}, path="", pruned=pruned)
    return out, sorted(pruned)


class _Pruned(set[str]):
    """The pruned paths, and how list indices and map keys are written in them."""

    def __init__(self, *, exact: bool) -> None:
        super().__init__()
        self.exact = exact

    def item(self, path: str, index: int) -> str:
        return f"{path}[{index}]" if self.exact else f"{path}[]"

    def key(self, path: str, key: str) -> str:
        return _join(path, key if self.exact else "*")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune_meta(meta: Any, path: str, pruned: _Pruned) -> Any:
    if not isinstance(meta, dict):
        return meta
    unknown = meta.keys() - OBJECT_META_FIELDS
    if not unknown:
        return meta
    pruned.update(_join(path, k) for k in unknown)
    return {k: v for k, v in meta.items() if k not in unknown}


def _prune(value: Any, schema: JSONDict | None, *, path: str, pruned: _Pruned) -> Any:
    if schema is not None and schema.get(PRESERVE_UNKNOWN):
        return _skip_prune(value, schema, path=path, pruned=pruned)
    if isinstance(value, dict):
        if schema is None:
            if value:
                pruned.update(_join(path, k) for k in value)
                return {}
            return value
        keep = _ROOT_FIELDS if schema.get(EMBEDDED_RESOURCE) else frozenset()
        return _prune_object(value, schema, path=path, pruned=pruned, keep=keep)
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        item_schema = items if isinstance(items, dict) else None
        return _same_or_new_list(
            value,
            [
                _prune(v, item_schema, path=pruned.item(path, i), pruned=pruned)
                for i, v in enumerate(value)
            ],
        )
    return value


def _prune_object(
    value: JSONDict, schema: JSONDict, *, path: str, pruned: _Pruned, keep: frozenset[str]
) -> JSONDict:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    out: JSONDict = {}
    changed = False
    for key, item in value.items():
        if key in keep and _kept_meta_field(key, item):
            new = _prune_meta(item, _join(path, key), pruned) if key == "metadata" else item
        elif key in properties:
            new = _prune(item, properties[key], path=_join(path, key), pruned=pruned)
        elif additional is not None and additional is not False:
            sub = additional if isinstance(additional, dict) else None
            new = _prune(item, sub, path=pruned.key(path, key), pruned=pruned)
        else:
            pruned.add(_join(path, key))
            changed = True
            continue
        changed = changed or new is not item
        out[key] = new
    return out if changed else value


def _kept_meta_field(key: str, value: Any) -> bool:
    # An embedded apiVersion/kind is kept only when it is a string; metadata when an object.
    if key == "metadata":
        return isinstance(value, dict)
    return isinstance(value, str)


def _skip_prune(value: Any, schema: JSONDict, *, path: str, pruned: _Pruned) -> Any:
    """Inside ``x-kubernetes-preserve-unknown-fields``: unknown keys stay, known ones are
    pruned by their own schemas."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        embedded = bool(schema.get(EMBEDDED_RESOURCE))
        out: JSONDict = {}
        changed = False
        for key, item in value.items():
            new = item
            if embedded and key in _ROOT_FIELDS:
                if key == "metadata":
                    new = _prune_meta(item, _join(path, key), pruned)
            elif key in properties:
                new = _prune(item, properties[key], path=_join(path, key), pruned=pruned)
            elif isinstance(additional, dict):
                new = _prune(item, additional, path=pruned.key(path, key), pruned=pruned)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return value
        return _same_or_new_list(
            value,
            [
                _skip_prune(v, items, path=pruned.item(path, i), pruned=pruned)
                for i, v in enumerate(value)
            ],
        )
    return value


def _same_or_new_list(old: list[Any], new: list[Any]) -> list[Any]:
    return old if all(a is b for a, b in zip(old, new, strict=True)) else new
