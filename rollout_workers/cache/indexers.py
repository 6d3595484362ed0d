"""Which index sets an object belongs to: pure functions of the object.

Indexes answer the watcher's and the workers' questions without scanning: the objects of a
namespace, the ReplicaSets/AnalysisRuns owned by a rollout (controller owner UID), and the
rollouts that reference a service, an analysis template, an ingress or a traffic-router object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rollout_workers.kube.resources import EXPERIMENTS, ROLLOUTS, Resource
from rollout_workers.objects import Obj
from rollout_workers.routerrefs import router_kinds, router_refs

NAMESPACE = "ns"
OWNER = "owner"
SERVICE = "svc"
TEMPLATE = "tpl"
CLUSTER_TEMPLATE = "ctpl"
INGRESS = "ing"
#: Rollouts by the workload their `workloadRef` names: `namespace/Kind.group/name`.
WORKLOAD = "wl"
#: Rollouts by the kind of workload they reference (`Kind.group`): which on-demand
#: reflectors the watcher must run.
WORKLOAD_KIND = "wlkind"
#: Rollouts by the traffic-router objects they name (routerrefs.py):
#: `Kind/namespace/name`, so a change to a VirtualService wakes the rollouts routing through it.
ROUTER = "router"
#: Rollouts by the router kinds they name (`VirtualService`): which router reflectors the
#: watcher must run.
ROUTER_KIND = "routerkind"


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def controller_owner(obj: Obj) -> Obj | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _templates(refs: Iterable[Any]) -> Iterator[tuple[str, str]]:
    """(index, template name) for each analysis template reference."""
    for ref in refs:
        if isinstance(ref, dict) and ref.get("templateName"):
            yield (CLUSTER_TEMPLATE if ref.get("clusterScope") else TEMPLATE, ref["templateName"])


def rollout_references(rollout: Obj) -> Iterator[tuple[str, str]]:
    """(index, name) of every service, template and ingress a rollout refers to."""
    canary = _get(rollout, "spec", "strategy", "canary") or {}
    bluegreen = _get(rollout, "spec", "strategy", "blueGreen") or {}
    for field in ("stableService", "canaryService", "pingPong"):
        value = canary.get(field)
        if isinstance(value, str) and value:
            yield SERVICE, value
        elif isinstance(value, dict):
            for side in ("pingService", "pongService"):
                if value.get(side):
                    yield SERVICE, value[side]
    for field in ("activeService", "previewService"):
        if bluegreen.get(field):
            yield SERVICE, bluegreen[field]
    routing = canary.get("trafficRouting") or {}
    if _get(routing, "smi", "rootService"):
        yield SERVICE, routing["smi"]["rootService"]
    nginx = routing.get("nginx") or {}
    for name in [nginx.get("stableIngress"), *_list(nginx.get("stableIngresses"))]:
        if name:
            yield INGRESS, name
    alb = routing.get("alb") or {}
    for name in [alb.get("ingress"), *_list(alb.get("ingresses"))]:
        if name:
            yield INGRESS, name
    yield from _templates(_list(_get(canary, "analysis", "templates")))
    for step in _list(canary.get("steps")):
        yield from _templates(_list(_get(step, "analysis", "templates")))
        yield from _templates(_list(_get(step, "experiment", "analyses")))
    for field in ("prePromotionAnalysis", "postPromotionAnalysis"):
        yield from _templates(_list(_get(bluegreen, field, "templates")))


def group_kind(api_version: str, kind: str) -> str:
    """`Kind.group` (`Kind` for the core group), from an apiVersion and a kind."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group else kind


def workload_value(namespace: str, group_kind_: str, name: str) -> str:
    return f"{namespace}/{group_kind_}/{name}"


def router_value(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def workload_reference(rollout: Obj) -> tuple[str, str] | None:
    """(`Kind.group`, name) of the rollout's `workloadRef`, or None."""
    ref = _get(rollout, "spec", "workloadRef")
    if not isinstance(ref, dict) or not ref.get("name") or not ref.get("kind"):
        return None
    return group_kind(str(ref.get("apiVersion") or ""), str(ref["kind"])), str(ref["name"])


def index_values(resource: Resource, obj: Obj) -> list[tuple[str, str]]:
    """(index, value) pairs for an object. Namespaced references are qualified `ns/name`."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    values: list[tuple[str, str]] = []
    if namespace:
        values.append((NAMESPACE, namespace))
    owner = controller_owner(obj)
    if owner and owner.get("uid"):
        values.append((OWNER, str(owner["uid"])))
    refs: Iterable[tuple[str, str]] = ()
    if resource == ROLLOUTS:
        refs = rollout_references(obj)
    elif resource == EXPERIMENTS:
        refs = _templates(_list(_get(obj, "spec", "analyses")))
    for index, name in dict.fromkeys(refs):
        values.append((index, name if index == CLUSTER_TEMPLATE else f"{namespace}/{name}"))
    workload = workload_reference(obj) if resource == ROLLOUTS else None
    if workload is not None:
        values.append((WORKLOAD, workload_value(namespace, *workload)))
        values.append((WORKLOAD_KIND, workload[0]))
    if resource == ROLLOUTS:
        refs_ = router_refs(obj)
        values.extend((ROUTER, router_value(ref.kind, ref.namespace, ref.name)) for ref in refs_)
        values.extend((ROUTER_KIND, kind) for kind in router_kinds(obj))
    return values
