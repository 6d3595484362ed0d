"""Every write a reconcile makes, behind one small interface.

The real writer goes to the API server through `kube.Kube`. Every update carries the
resourceVersion it was computed from as a precondition (a merge patch with
`metadata.resourceVersion`), so a worker whose lease was taken over while it stalled gets a 409
and stops instead of overwriting newer work. The recording writer keeps the calls for unit
tests, in argo-rollouts' style ("seed objects, run one sync, assert the recorded actions").
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import AlreadyExists, Conflict, NotFound
from rollout_workers.objects import Obj


class Writer(Protocol):
    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj:
        """The object as the API server has it now (for a write that lost a race)."""
        ...

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj: ...

    def patch(
        self, resource: r.Resource, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj: ...

    def delete(
        self, resource: r.Resource, namespace: str, name: str, *, propagation: str | None = None
    ) -> None: ...


def fenced(patch: Obj, resource_version: str | None) -> Obj:
    """The patch with a resourceVersion precondition (409 Conflict if the object moved on)."""
    if not resource_version:
        return patch
    out = copy.deepcopy(patch)
    out.setdefault("metadata", {})["resourceVersion"] = resource_version
    return out


def patch_fenced(
    writer: Writer,
    resource: r.Resource,
    namespace: str,
    base: Obj,
    patch: Obj,
    *,
    unchanged: Callable[[Obj, Obj], bool],
) -> Obj:
    """`patch` on the object `base`, fenced by base's resourceVersion.

    A 409 means the object moved on since `base` was read. When what moved is nothing the
    patch was computed from (`unchanged(base, newest)`: typically the bookkeeping another
    controller keeps in the status, as a ReplicaSet controller stamps observedGeneration on a
    ReplicaSet just created), the patch is sent once more, fenced by the newest version.
    Otherwise the 409 stands: the caller's decision was made on an object that is no more.
    """
    meta = base.get("metadata") or {}
    name = str(meta.get("name", ""))
    try:
        return writer.patch(resource, namespace, name, fenced(patch, meta.get("resourceVersion")))
    except Conflict:
        newest = writer.get(resource, namespace, name)
        if not unchanged(base, newest):
            raise
    version = (newest.get("metadata") or {}).get("resourceVersion")
    return writer.patch(resource, namespace, name, fenced(patch, version))


#: Called after each successful write with (resource plural, namespace/name, resourceVersion).
OnWritten = Callable[[str, str, str], None]
#: Called after each delete (the object is gone) with (resource plural, namespace/name).
OnDeleted = Callable[[str, str], None]


class KubeWriter:
    def __init__(
        self, kube: Kube, on_written: OnWritten | None = None, on_deleted: OnDeleted | None = None
    ) -> None:
        self.kube = kube
        self._on_written, self._on_deleted = on_written, on_deleted

    def _written(self, resource: r.Resource, namespace: str, obj: Obj) -> Obj:
        if self._on_written is not None:
            meta = obj.get("metadata") or {}
            key = f"{namespace}/{meta.get('name', '')}"
            self._on_written(resource.plural, key, str(meta.get("resourceVersion", "")))
        return obj

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj:
        return self.kube.get(resource, namespace, name)

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
        return self._written(resource, namespace, self.kube.create(resource, namespace, body))

    def patch(
        self, resource: r.Resource, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj:
        if status:
            written = self._patch_status(resource, namespace, name, patch)
        else:
            written = self.kube.patch(resource, namespace, name, patch)
        return self._written(resource, namespace, written)

    def _patch_status(self, resource: r.Resource, namespace: str, name: str, patch: Obj) -> Obj:
        """A status merge patch where the served API takes it: the `/status` subresource when
        the type's CRD declares one, else the object itself (Argo's AnalysisRun and Experiment
        CRDs declare none). The patch holds only `status` and the resourceVersion fence, so on
        the main resource it changes nothing else.

        Discovery is trusted until a write contradicts it: a 404 from `/status` may mean the CRD
        lost its status subresource (or the object is gone: then the main resource says 404
        too), and a main-resource write that the server took as a no-op means the CRD gained
        one and dropped our status (our status patches are never empty)."""
        unexpected = set(patch) - {"status", "metadata"}
        if unexpected:
            raise ValueError(f"a status patch holds only status, not {sorted(unexpected)}")
        discovery = self.kube.discovery
        if discovery.has_subresource(resource, "status"):
            try:
                return self.kube.patch(resource, namespace, name, patch, subresource="status")
            except NotFound:
                discovery.forget(resource)
                if discovery.has_subresource(resource, "status"):
                    raise
        written = self.kube.patch(resource, namespace, name, patch)
        fence = (patch.get("metadata") or {}).get("resourceVersion")
        if fence and str((written.get("metadata") or {}).get("resourceVersion")) == str(fence):
            discovery.forget(resource)
            if discovery.has_subresource(resource, "status"):
                return self.kube.patch(resource, namespace, name, patch, subresource="status")
        return written

    def delete(
        self, resource: r.Resource, namespace: str, name: str, *, propagation: str | None = None
    ) -> None:
        with contextlib.suppress(NotFound):
            self.kube.delete(resource, namespace, name, propagation=propagation)
        if self._on_deleted is not None:
            self._on_deleted(resource.plural, f"{namespace}/{name}")


@dataclass
class Action:
    verb: str  # create | patch | patch-status
    resource: str
    namespace: str
    name: str
    body: Obj


@dataclass
class RecordingWriter:
    """Records actions and answers as an API server would (merge-applied, rv bumped)."""

    objects: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    _rv: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def seed(self, resource: r.Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        self.objects[(resource.plural, meta.get("namespace", ""), meta["name"])] = obj

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj:
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        return copy.deepcopy(found)

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if "generateName" in meta and "name" not in meta:
            meta["name"] = f"{meta['generateName']}{len(self.actions)}"
        self.actions.append(Action("create", resource.plural, namespace, meta["name"], body))
        if (resource.plural, namespace, meta["name"]) in self.objects:
            raise AlreadyExists(409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" exists')
        meta.update(namespace=namespace, resourceVersion=str(next(self._rv)))
        meta.setdefault("uid", f"uid-{meta['name']}")
        self.objects[(resource.plural, namespace, meta["name"])] = obj
        return copy.deepcopy(obj)

    def patch(
        self, resource: r.Resource, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj:
        verb = "patch-status" if status else "patch"
        self.actions.append(Action(verb, resource.plural, namespace, name, patch))
        current = self.objects.get((resource.plural, namespace, name), {"metadata": {"name": name}})
        merged = _merge(current, {k: v for k, v in patch.items() if k != "metadata"})
        meta_patch = {
            k: v for k, v in (patch.get("metadata") or {}).items() if k != "resourceVersion"
        }
        merged["metadata"] = _merge(current.get("metadata") or {}, meta_patch)
        merged["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[(resource.plural, namespace, name)] = merged
        return copy.deepcopy(merged)

    def delete(
        self, resource: r.Resource, namespace: str, name: str, *, propagation: str | None = None
    ) -> None:
        body = {"propagationPolicy": propagation} if propagation else {}
        self.actions.append(Action("delete", resource.plural, namespace, name, body))
        self.objects.pop((resource.plural, namespace, name), None)

    def verbs(self) -> list[str]:
        return [f"{a.verb} {a.resource}" for a in self.actions]


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out
