"""Which keys an applied change wakes up: an event maps to the task keys of the objects it
concerns (itself, its controller owner, the rollouts that reference it). Pure given the cache's
reverse indexes; never modifies the object it is given.

Not named for routing: it routes nothing anywhere, and the tree already has traffic routing
(rollout/trafficrouting/) and Celery's task routes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from rollout_workers.cache import Change
from rollout_workers.cache.indexers import (
    CLUSTER_TEMPLATE,
    INGRESS,
    ROUTER,
    SERVICE,
    TEMPLATE,
    WORKLOAD,
    controller_owner,
    group_kind,
    router_value,
    workload_value,
)
from rollout_workers.kube import resources as r
from rollout_workers.routerrefs import routed_through

#: Reverse lookup into the cache: (type plural, index, value) -> keys of objects of that type.
Lookup = Callable[[str, str, str], list[str]]

Keys = dict[str, set[str]]  # task kind -> object keys


def _owner_key(change: Change, kind: str) -> str | None:
    owner = controller_owner(change.obj)
    namespace = (change.obj.get("metadata") or {}).get("namespace")
    if owner and owner.get("kind") == kind and owner.get("name") and namespace:
        return f"{namespace}/{owner['name']}"
    return None


#: The task kind that reconciles objects of the type: an object's change wakes the object itself.
SELF = {r.ROLLOUTS: "rollouts", r.ANALYSISRUNS: "analysisruns", r.EXPERIMENTS: "experiments"}


def own_event(resource: r.Resource, change: Change) -> tuple[str, str] | None:
    """(task kind, resourceVersion) when the change wakes its own object: an event its own
    controller may have written, and which then needs no reconcile (see WorkQueue.add `own`)."""
    kind = SELF.get(resource)
    version = str((change.obj.get("metadata") or {}).get("resourceVersion", ""))
    if kind is None or change.type == "DELETED" or not version.isdigit():
        return None
    return kind, version


def own_tenant(resource: r.Resource, change: Change, label: str) -> tuple[str, str] | None:
    """(task kind, tenant) when the change is of an object its kind reconciles: the tenant is
    the object's `label`, else its namespace (fairness by label, see WorkQueue.add)."""
    kind = SELF.get(resource)
    if kind is None or change.type == "DELETED":
        return None
    metadata = change.obj.get("metadata") or {}
    tenant = (metadata.get("labels") or {}).get(label) or metadata.get("namespace") or ""
    return (kind, str(tenant)) if tenant else None


def woken_keys(resource: r.Resource, change: Change, lookup: Lookup) -> Keys:
    """The keys, by task kind, that `change` (of an object of type `resource`) wakes."""
    keys: Keys = defaultdict(set)
    if change.older:
        return {}
    qualified = change.key  # ns/name, or name for cluster-scoped types

    def owner(kind: str, task_kind: str) -> None:
        key = _owner_key(change, kind)
        if key:
            keys[task_kind].add(key)

    def referencing(index: str, value: str, *types: str) -> None:
        for plural in types:
            keys[plural].update(lookup(plural, index, value))

    def itself(task_kind: str) -> None:
        # Not for the object's own controller's last write: that reconcile saw everything up
        # to it (any later change is another event), so a second one would find nothing to do.
        if not change.own_write:
            keys[task_kind].add(change.key)

    if resource in SELF:
        itself(SELF[resource])
    if resource in (r.REPLICASETS, r.ANALYSISRUNS):
        owner("Rollout", "rollouts")
        owner("Experiment", "experiments")
    elif resource is r.EXPERIMENTS:
        owner("Rollout", "rollouts")
    elif resource is r.JOBS:
        owner("AnalysisRun", "analysisruns")
    elif resource is r.SERVICES:
        referencing(SERVICE, qualified, "rollouts")
        owner("Experiment", "experiments")
    elif resource.cache_name == r.INGRESSES.cache_name:  # at whichever version is served
        referencing(INGRESS, qualified, "rollouts")
        owner("Rollout", "rollouts")  # a canary Ingress the rollout's nginx router owns
    elif resource is r.ANALYSISTEMPLATES:
        referencing(TEMPLATE, qualified, "rollouts", "experiments")
    elif resource is r.CLUSTERANALYSISTEMPLATES:
        referencing(CLUSTER_TEMPLATE, qualified, "rollouts", "experiments")
    elif resource in (r.DEPLOYMENTS, r.PODTEMPLATES, r.UNHASHED_REPLICASETS):
        # A referenced workload (reflector started on demand): the rollouts whose workloadRef
        # names it resolve their pod template from it.
        meta = change.obj.get("metadata") or {}
        value = workload_value(
            str(meta.get("namespace", "")),
            group_kind(resource.api_version, resource.kind),
            str(meta.get("name", "")),
        )
        referencing(WORKLOAD, value, "rollouts")
    elif (kind := r.router_kind(resource)) is not None:
        # A traffic-router object (reflector started on demand): the rollouts that route
        # through it, and the Rollout that owns it (a TrafficSplit it created). A change
        # someone else makes to a managed route is thus corrected on the next reconcile.
        meta = change.obj.get("metadata") or {}
        value = router_value(kind, str(meta.get("namespace", "")), str(meta.get("name", "")))
        referencing(ROUTER, value, "rollouts")
        # An object no rollout names (App Mesh's VirtualRouter, named by a VirtualService):
        # the rollouts naming what it routes to.
        for ref in routed_through(kind, change.obj):
            referencing(ROUTER, router_value(ref.kind, ref.namespace, ref.name), "rollouts")
        owner("Rollout", "rollouts")
    return {kind: found for kind, found in keys.items() if found}
