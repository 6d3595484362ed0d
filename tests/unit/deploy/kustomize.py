"""A small kustomize, for CI machines without kubectl: exactly the features deploy/ uses.

Supported: `resources` (files and directories), `components`, `namespace`, `patches` (strategic
merge, including `$patch: delete`, and JSON 6902; from `path` or inline `patch`; with or without
a `target` of group/version/kind/name/labelSelector), `images` (newName/newTag). Anything else in
a kustomization fails loudly, so deploy/ cannot outgrow this without a test noticing; the
parity test (`test_kustomize_parity.py`) checks the output against `kubectl kustomize` where
kubectl is installed.

Order within one kustomization, as kustomize's: resources, then components (each applied to
what has accumulated), then patches, namespace, images.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

SUPPORTED = {"apiVersion", "kind", "resources", "components", "namespace", "patches", "images"}

#: Kinds deploy/ uses that are not namespaced (the namespace transformer leaves them alone).
CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
}

#: Strategic-merge list keys of the fields deploy/'s patches touch; other lists are replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}


class KustomizeError(Exception):
    pass


def build(directory: Path) -> list[Obj]:
    """The objects `kubectl kustomize directory` prints (in the order accumulated)."""
    return _build(directory, kind="Kustomization", objects=[])


def _load_kustomization(directory: Path) -> Obj:
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    data: Obj = yaml.safe_load(path.read_text()) or {}
    unknown = set(data) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{path}: fields this renderer does not support: {sorted(unknown)}")
    return data


def _build(directory: Path, *, kind: str, objects: list[Obj]) -> list[Obj]:
    k = _load_kustomization(directory)
    if k.get("kind", "Kustomization") != kind:
        raise KustomizeError(f"{directory}: expected a {kind}, found {k.get('kind')}")
    for entry in k.get("resources") or []:
        path = directory / entry
        if path.is_dir():
            objects.extend(_build(path, kind="Kustomization", objects=[]))
        else:
            objects.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    for entry in k.get("components") or []:
        objects = _build(directory / entry, kind="Component", objects=objects)
    for patch in k.get("patches") or []:
        objects = apply_patch(objects, patch, directory)
    if "namespace" in k:
        objects = [set_namespace(o, k["namespace"]) for o in objects]
    for image in k.get("images") or []:
        objects = [set_image(o, image) for o in objects]
    return objects


# -- patches -----------------------------------------------------------------------------------


def apply_patch(objects: list[Obj], entry: Obj, directory: Path) -> list[Obj]:
    text = (directory / entry["path"]).read_text() if "path" in entry else entry["patch"]
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    target = entry.get("target")
    if len(docs) == 1 and isinstance(docs[0], list):  # JSON 6902
        ops = docs[0]
        if target is None:
            raise KustomizeError("a JSON 6902 patch needs a target")
        return [json6902(o, ops) if matches(o, target) else o for o in objects]
    for doc in docs:
        selector = target or _id_of(doc)
        found = [o for o in objects if matches(o, selector)]
        if not found:
            raise KustomizeError(f"patch target {selector} matches nothing")
        if doc.get("$patch") == "delete":
            objects = [o for o in objects if not any(o is f for f in found)]
        else:
            objects = [
                strategic_merge(o, doc) if any(o is f for f in found) else o for o in objects
            ]
    return objects


def _id_of(doc: Obj) -> Obj:
    group, _, version = str(doc["apiVersion"]).rpartition("/")
    return {
        "group": group,
        "version": version,
        "kind": doc["kind"],
        "name": doc["metadata"]["name"],
    }


def matches(obj: Obj, target: Obj) -> bool:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    meta = obj.get("metadata") or {}
    if "group" in target and target["group"] != group:
        return False
    if "version" in target and target["version"] != version:
        return False
    if "kind" in target and target["kind"] != obj.get("kind"):
        return False
    if "name" in target and target["name"] != meta.get("name"):
        return False
    if "labelSelector" in target:
        labels = meta.get("labels") or {}
        for term in str(target["labelSelector"]).split(","):
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
    return True


def strategic_merge(obj: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, dict) and isinstance(obj, dict):
        out = dict(obj)
        for key, value in patch.items():
            if key == "$patch":
                continue
            if value is None:
                out.pop(key, None)
            else:
                out[key] = strategic_merge(out.get(key), value, key)
        return out
    if isinstance(patch, list) and isinstance(obj, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        merged = list(obj)
        for item in patch:
            index = next((i for i, o in enumerate(merged) if o.get(key) == item.get(key)), None)
            if index is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[index] = strategic_merge(merged[index], item)
        return merged
    return copy.deepcopy(patch)


def json6902(obj: Obj, ops: list[Obj]) -> Obj:
    out = copy.deepcopy(obj)
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]
        ]
        node: Any = out
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        kind = op["op"]
        if kind == "test":
            current = node[int(last)] if isinstance(node, list) else node.get(last)
            if current != op["value"]:
                raise KustomizeError(f"test failed at {op['path']}: {current!r} != {op['value']!r}")
        elif kind == "remove":
            del node[int(last) if isinstance(node, list) else last]
        elif kind in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if isinstance(node, list):
                if last == "-":
                    node.append(value)
                elif kind == "add":
                    node.insert(int(last), value)
                else:
                    node[int(last)] = value
            else:
                if kind == "replace" and last not in node:
                    raise KustomizeError(f"replace of a missing path {op['path']}")
                node[last] = value
        else:
            raise KustomizeError(f"JSON 6902 op {kind} is not supported here")
    return out


# -- namespace and images ----------------------------------------------------------------------


def set_namespace(obj: Obj, namespace: str) -> Obj:
    out = copy.deepcopy(obj)
    kind = out.get("kind")
    if kind == "Namespace":
        out["metadata"]["name"] = namespace
    elif kind not in CLUSTER_SCOPED:
        out["metadata"]["namespace"] = namespace
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        for subject in out.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
                subject["namespace"] = namespace
    return out


def set_image(obj: Obj, image: Obj) -> Obj:
    out = copy.deepcopy(obj)
    spec = ((out.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
        name = str(container.get("image", "")).split("@", maxsplit=1)[0]
        if ":" in name.rsplit("/", maxsplit=1)[-1]:  # a tag, not a registry's port
            name = name.rsplit(":", maxsplit=1)[0]
        if name == image["name"]:
            new = image.get("newName", image["name"])
            tag = image.get("newTag")
            container["image"] = f"{new}:{tag}" if tag else new
    return out
