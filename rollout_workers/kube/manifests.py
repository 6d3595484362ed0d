"""Applying YAML manifests (create, or merge-patch what exists), as `kubectl apply` would for
the kinds this project knows."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import AlreadyExists

NAMESPACES = r.Resource("namespaces", "", "v1", "Namespace", namespaced=False)
KNOWN = {
    (res.api_version, res.kind): res
    for res in (
        *r.WATCHED.values(),
        r.EVENTS,
        r.PODS,
        NAMESPACES,
        r.DEPLOYMENTS,
        r.PODTEMPLATES,
        r.CONFIGMAPS,
        r.SECRETS,
        *(res for versions in r.ROUTER_OBJECTS.values() for res in versions),
    )
}


class UnknownKind(ValueError):
    pass


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def resource_of(obj: dict[str, Any]) -> r.Resource:
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    if key not in KNOWN:
        raise UnknownKind(f"cannot apply {key[1]} ({key[0]}): unknown kind")
    return KNOWN[key]


def apply(kube: Kube, obj: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """Create `obj`, or merge-patch it onto the existing object of the same name."""
    resource = resource_of(obj)
    ns = (obj.get("metadata") or {}).get("namespace") or namespace
    ns = ns if resource.namespaced else None
    try:
        return kube.create(resource, ns, obj)
    except AlreadyExists:
        return kube.patch(resource, ns, obj["metadata"]["name"], obj)


def ensure_namespace(kube: Kube, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        kube.create(NAMESPACES, None, {"metadata": {"name": name}})
