"""`spec.workloadRef`: the pod template (and selector) taken from a Deployment, ReplicaSet or
PodTemplate, as Argo's `rollout/templateref.go` resolves it.

Resolution happens in memory on a copy of the rollout read from the cache, before validation
and reconcile: `spec.template` becomes the workload's pod template, `spec.selector` the
workload's selector when the rollout names none, and the `rollout.argoproj.io/workload-generation`
annotation the workload's `metadata.generation`. Nothing resolved is written back except that
annotation (Argo patches it when the workload changes) and `status.workloadObservedGeneration`
(set from it by the status patch). Since the template comes from the workload, a change of the
workload's pod template is a new pod-template hash, hence a new revision, exactly as an edit of
`spec.template` would be.

The workload is read from the watcher's cache; its reflector starts on demand (watcher/ondemand.py)
and wakes the referencing rollouts (cache index `wl`, watcher/eventkeys.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.objects import Obj

WORKLOAD_GENERATION = "rollout.argoproj.io/workload-generation"
TEMPLATE_NOT_EMPTY_MESSAGE = "template must be empty for workload reference rollout"
UNSUPPORTED_MESSAGE = "workload of type {group}/{kind} is not supported"

#: Where each supported kind keeps its pod template and selector (Argo's `infoByGroupKind`).
TEMPLATE_PATHS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    ("", "PodTemplate"): (("template",), None),
    ("apps", "Deployment"): (("spec", "template"), ("spec", "selector")),
    ("apps", "ReplicaSet"): (("spec", "template"), ("spec", "selector")),
}

#: Reads one object of a type from the cache by `namespace/name` (None: absent).
Get = Callable[[r.Resource, str], Obj | None]


class ResolveError(Exception):
    """The workloadRef cannot be resolved: an InvalidSpec condition with this message."""


class NotListed(Exception):
    """The workload's type has not been listed into the cache yet: look again shortly."""


@dataclass(frozen=True)
class Resolved:
    obj: Obj  # the rollout with the workload's template, selector and generation annotation
    workload: Obj  # the referenced object as cached
    resource: r.Resource  # the cache it came from
    generation: str  # the workload's metadata.generation
    stored_generation: str | None  # the workload-generation annotation as the rollout has it


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def empty_template(template: Any) -> bool:
    """Argo's `RolloutSpec.EmptyTemplate`: no labels and no annotations."""
    meta = (template or {}).get("metadata") if isinstance(template, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return not meta.get("labels") and not meta.get("annotations")


def not_found_message(resource: r.Resource, key: str) -> str:
    """The NotFound error of Argo's dynamic lister (`Get("namespace/name")`)."""
    group_resource = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    return f'{group_resource} "{key}" not found'


def resolve(obj: Obj, get: Get, *, listed: Callable[[r.Resource], bool]) -> Resolved | None:
    """The rollout with its workloadRef resolved, or None when it has no workloadRef.

    Raises ResolveError (Argo's messages) and NotListed (the type's cache is not ready yet).
    `obj` is never modified.
    """
    spec = obj.get("spec") or {}
    ref = spec.get("workloadRef")
    if not isinstance(ref, dict):
        return None
    # Argo: on first resolution TemplateResolvedFromRef is false, so the template must be empty.
    if not empty_template(spec.get("template")):
        raise ResolveError(TEMPLATE_NOT_EMPTY_MESSAGE)
    group, kind = group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or "")
    if (group, kind) not in TEMPLATE_PATHS:
        raise ResolveError(UNSUPPORTED_MESSAGE.format(group=group, kind=kind))
    template_path, selector_path = TEMPLATE_PATHS[(group, kind)]
    meta = obj.get("metadata") or {}
    key = f"{meta.get('namespace', '')}/{ref.get('name', '')}"
    caches = r.WORKLOADS[(group, kind)]
    workload, source = None, caches[0]
    for resource in caches:
        if not listed(resource):
            raise NotListed(resource.cache_name)
        workload = get(resource, key)
        if workload is not None:
            source = resource
            break
    if workload is None:
        raise ResolveError(not_found_message(caches[0], key))

    new_spec = dict(spec)
    template = _get(workload, template_path)
    if isinstance(template, dict):
        new_spec["template"] = template
    if spec.get("selector") is None and selector_path is not None:
        selector = _get(workload, selector_path)
        if isinstance(selector, dict):
            new_spec["selector"] = selector
    generation = str((workload.get("metadata") or {}).get("generation") or 0)
    annotations = {**(meta.get("annotations") or {}), WORKLOAD_GENERATION: generation}
    resolved = {**obj, "metadata": {**meta, "annotations": annotations}, "spec": new_spec}
    return Resolved(
        obj=resolved,
        workload=workload,
        resource=source,
        generation=generation,
        stored_generation=stored_generation(obj),
    )


def stored_generation(obj: Obj) -> str | None:
    """The workload-generation annotation as stored on the rollout."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(WORKLOAD_GENERATION)
    return str(value) if value is not None else None


def unresolved_for_validation(resolved: Obj) -> Obj:
    """The resolved rollout as validation should see it: a plain rollout with that template
    (Argo validates the resolved spec, template checks included)."""
    spec = {k: v for k, v in (resolved.get("spec") or {}).items() if k != "workloadRef"}
    return {**resolved, "spec": spec}
