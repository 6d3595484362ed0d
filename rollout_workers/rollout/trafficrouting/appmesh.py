"""The App Mesh router: a VirtualRouter's weighted targets, and the VirtualNodes' pod hashes.

As argo-rollouts' rollout/trafficrouting/appmesh (appmesh.k8s.aws/v1beta2, the one version Argo
speaks):

- the weight: the VirtualService `virtualService.name` (in the rollout's namespace) is provided
  by a VirtualRouter (`spec.provider.virtualRouter.virtualRouterRef`, in the VirtualService's
  namespace by default). In each of its routes (those of `virtualService.routes`, by default all)
  of type httpRoute, tcpRoute, http2Route or grpcRoute (the first present, in that order), the
  weighted target whose `virtualNodeRef` names the canary VirtualNode gets the weight and the one
  naming the stable VirtualNode 100 minus it (a target's namespace defaults to the rollout's;
  other targets are left alone). A route that is not well-formed is an error naming its field,
  as Argo's field.Error;
- the hashes: before the weight, the stable VirtualNode's `spec.podSelector.matchLabels` gets
  `rollouts-pod-template-hash: <stable hash>` and the canary's the canary hash, and both the
  annotation `argo-rollouts.argoproj.io/managed-by-rollouts: <rollout>`. No stable hash yet:
  `stable-hash`; a canary hash that is empty or the stable's (App Mesh's admission webhook refuses
  two VirtualNodes with one selector): `canary-hash`.

No header or mirror routes, and the weight is not verified. Argo updates (PUTs) the VirtualNodes
at every reconcile and the VirtualRouter when a weight differs; here each is merge-patched,
fenced by the resourceVersion read, when what the rollout owns in it differs, so someone else's
edit of a weight or of a hash label is put back on the next reconcile (a VirtualRouter change
wakes the rollouts whose VirtualNodes its routes target: routerrefs.py).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import Any

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.rollout import (
    AppMeshTrafficRouting,
    AppMeshVirtualNodeReference,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.service import MANAGED_BY
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.routerrefs import RouterRef, virtual_router_ref

log = logging.getLogger(__name__)


TYPE = "AppMesh"
VIRTUAL_SERVICE = r.APPMESH_VIRTUAL_SERVICE
VIRTUAL_ROUTER = "VirtualRouter"
VIRTUAL_NODE = "VirtualNode"
#: The route types whose weighted targets are set, in the order they are looked for.
ROUTE_TYPES = ("httpRoute", "tcpRoute", "http2Route", "grpcRoute")

#: Argo's errors.
NOT_USING_VIRTUAL_ROUTER = "Virtual-service is not associated with virtual-router"
VIRTUAL_SERVICE_MISSING = "Virtual-service is missing"
VIRTUAL_ROUTER_MISSING = "Virtual-router is missing"
VIRTUAL_NODE_MISSING = "Virtual-node is missing"
NOT_WELL_FORMED = "not well-formed"
NO_ROUTES_FOUND = "No routes found"
UNSUPPORTED_ROUTE_TYPE = "Route has unsupported route type"
NO_VIRTUAL_NODE_GROUP = "trafficRouting.appMesh.virtualNodeGroup is not set"
DEFAULT_CANARY_HASH = "canary-hash"
DEFAULT_STABLE_HASH = "stable-hash"

#: Argo's warning events.
VIRTUAL_SERVICE_NOT_FOUND_REASON = "VirtualServiceNotFound"
VIRTUAL_SERVICE_NOT_FOUND_MESSAGE = "VirtualService `{}` not found in namespace `{}`"
VIRTUAL_ROUTER_NOT_FOUND_REASON = "VirtualRouterNotFound"
VIRTUAL_ROUTER_NOT_FOUND_MESSAGE = "VirtualRouter for `{}` not found in namespace `{}`"
VIRTUAL_NODE_NOT_FOUND_REASON = "VirtualNodeNotFound"
VIRTUAL_NODE_NOT_FOUND_MESSAGE = "VirtualNode `{}` not found in namespace `{}`"


def field_error(path: str, router: str, detail: str) -> TrafficRoutingError:
    """Argo's `field.Invalid(path, <VirtualRouter name>, detail)`, as its Error() reads."""
    return TrafficRoutingError(f"{path}: Invalid value: {go_quote(router)}: {detail}")


def _go_type(value: Any) -> str:
    """Go's `%T` of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def route_rule(route: Obj) -> tuple[Obj, str]:
    """The route's rule and its type, the first of ROUTE_TYPES present (Argo's GetRouteRule);
    TrafficRoutingError when none is, or the first present is not an object."""
    for route_type in ROUTE_TYPES:
        if route_type not in route:
            continue
        rule = route[route_type]
        if not isinstance(rule, dict):
            raise TrafficRoutingError(
                f".{route_type} accessor error: {rule if rule is not None else '<nil>'} is of "
                f"the type {_go_type(rule)}, expected map[string]interface{{}}"
            )
        return rule, route_type
    raise TrafficRoutingError(UNSUPPORTED_ROUTE_TYPE)


def _to_int(value: Any) -> int | None:
    """A target's weight as Argo's toInt64 reads it (any number; None for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def calculate_routes(
    router: Obj,
    *,
    routes_filter: Sequence[str],
    canary_node: str,
    stable_node: str,
    namespace: str,
    weight: int,
) -> tuple[list[Any], bool]:
    """(spec.routes with the weights set, whether any changed): Argo's reconcileVirtualRouter,
    errors and all, on a copy."""
    name = str((router.get("metadata") or {}).get("name", ""))
    routes = (router.get("spec") or {}).get("routes")
    if not isinstance(routes, list):
        raise field_error("spec.routes", name, NO_ROUTES_FOUND)
    routes = copy.deepcopy(routes)
    changed = False
    for index, route in enumerate(routes):
        path = f"spec.routes[{index}]"
        if not isinstance(route, dict):
            raise field_error(path, name, NOT_WELL_FORMED)
        if not isinstance(route.get("name"), str):
            raise field_error(f"{path}.name", name, NOT_WELL_FORMED)
        if routes_filter and route["name"] not in routes_filter:
            continue
        try:
            rule, route_type = route_rule(route)
        except TrafficRoutingError:
            raise field_error(path, name, NOT_WELL_FORMED) from None
        targets_path = f"{path}.{route_type}.action.weightedTargets"
        action = rule.get("action")
        targets = action.get("weightedTargets") if isinstance(action, dict) else None
        if not isinstance(targets, list):
            raise field_error(targets_path, name, NOT_WELL_FORMED)
        for i, target in enumerate(targets):
            target_path = f"{targets_path}[{i}]"
            if not isinstance(target, dict):
                raise field_error(target_path, name, NOT_WELL_FORMED)
            ref = target.get("virtualNodeRef")
            if not isinstance(ref, dict):
                raise field_error(f"{target_path}.virtualNodeRef", name, NOT_WELL_FORMED)
            current = _to_int(target.get("weight"))
            if current is None:
                raise field_error(f"{target_path}.weight", name, NOT_WELL_FORMED)
            node = ref.get("name") if isinstance(ref.get("name"), str) else ""
            where = ref.get("namespace")
            node_namespace = where if isinstance(where, str) and where else namespace
            if node_namespace != namespace:
                continue
            if node == stable_node:
                desired = 100 - weight
            elif node == canary_node:
                desired = weight
            else:
                continue
            if current != desired:
                target["weight"] = desired
                changed = True
    return routes, changed


def node_hashes(canary_hash: str, stable_hash: str) -> tuple[str, str]:
    """(canary, stable) pod hashes the VirtualNodes select (Argo's UpdateHash defaults)."""
    stable = stable_hash or DEFAULT_STABLE_HASH
    canary = DEFAULT_CANARY_HASH if canary_hash in ("", stable) else canary_hash
    return canary, stable


class AppMeshRouter:
    """Argo's App Mesh reconciler; the VirtualService, VirtualRouter and VirtualNodes come in
    the context."""

    def __init__(self, ctx: RolloutContext, app_mesh: AppMeshTrafficRouting) -> None:
        self.ctx, self.app_mesh = ctx, app_mesh

    @property
    def type(self) -> str:
        return TYPE

    def _nodes(self) -> tuple[AppMeshVirtualNodeReference, AppMeshVirtualNodeReference]:
        """(canary, stable) VirtualNode references (validation refuses a rollout without)."""
        group = self.app_mesh.virtual_node_group
        if group is None:
            raise TrafficRoutingError(NO_VIRTUAL_NODE_GROUP)
        return group.canary_virtual_node_ref, group.stable_virtual_node_ref

    # -- hashes

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Point the stable, then the canary VirtualNode at their pod hashes."""
        canary_ref, stable_ref = self._nodes()
        canary, stable = node_hashes(canary_hash, stable_hash)
        self._update_node(stable_ref.name, stable)
        self._update_node(canary_ref.name, canary)

    def _update_node(self, name: str, pod_hash: str) -> None:
        ctx = self.ctx
        resource = ctx.routed.resource(VIRTUAL_NODE)  # raises when the kind is not served
        node = ctx.routed.get(VIRTUAL_NODE, ctx.namespace, name)
        if node is None:
            message = VIRTUAL_NODE_NOT_FOUND_MESSAGE.format(name, ctx.namespace)
            ctx.event(VIRTUAL_NODE_NOT_FOUND_REASON, message, warning=True)
            raise TrafficRoutingError(VIRTUAL_NODE_MISSING)
        meta = node.get("metadata") or {}
        selector = (node.get("spec") or {}).get("podSelector")
        labels = selector.get("matchLabels") if isinstance(selector, dict) else None
        if labels is not None and not isinstance(labels, dict):
            raise TrafficRoutingError(
                f".spec.podSelector.matchLabels accessor error: {labels} is of the type "
                f"{_go_type(labels)}, expected map[string]interface{{}}"
            )
        if (labels or {}).get(r.POD_TEMPLATE_HASH_LABEL) == pod_hash and (
            meta.get("annotations") or {}
        ).get(MANAGED_BY) == ctx.name:
            return
        patch = {
            "metadata": {"annotations": {MANAGED_BY: ctx.name}},
            "spec": {"podSelector": {"matchLabels": {r.POD_TEMPLATE_HASH_LABEL: pod_hash}}},
        }
        log.info("%s: VirtualNode %s selects pod hash %s", ctx.key, name, pod_hash)
        written = ctx.writer.patch(
            resource, ctx.namespace, name, fenced(patch, meta.get("resourceVersion"))
        )
        ctx.routed.put(RouterRef(VIRTUAL_NODE, ctx.namespace, name), written)

    # -- weights

    def virtual_router(self) -> tuple[RouterRef, Obj]:
        """The VirtualRouter the VirtualService's provider names, as read (Argo's errors and
        events when either is missing)."""
        ctx = self.ctx
        ctx.routed.resource(VIRTUAL_SERVICE)  # raises when the kind is not served
        vs_name = self.app_mesh.virtual_service.name if self.app_mesh.virtual_service else ""
        vs = ctx.routed.get(VIRTUAL_SERVICE, ctx.namespace, vs_name)
        if vs is None:
            message = VIRTUAL_SERVICE_NOT_FOUND_MESSAGE.format(vs_name, ctx.namespace)
            ctx.event(VIRTUAL_SERVICE_NOT_FOUND_REASON, message, warning=True)
            raise TrafficRoutingError(VIRTUAL_SERVICE_MISSING)
        ref = virtual_router_ref(vs)
        if ref is None:
            raise TrafficRoutingError(NOT_USING_VIRTUAL_ROUTER)
        ctx.routed.resource(VIRTUAL_ROUTER)
        router = ctx.routed.get(VIRTUAL_ROUTER, ref.namespace, ref.name)
        if router is None:
            message = VIRTUAL_ROUTER_NOT_FOUND_MESSAGE.format(vs_name, ctx.namespace)
            ctx.event(VIRTUAL_ROUTER_NOT_FOUND_REASON, message, warning=True)
            raise TrafficRoutingError(VIRTUAL_ROUTER_MISSING)
        return ref, router

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        ctx = self.ctx
        canary_ref, stable_ref = self._nodes()
        ref, router = self.virtual_router()
        vs = self.app_mesh.virtual_service
        routes, changed = calculate_routes(
            router,
            routes_filter=(vs.routes if vs is not None else None) or [],
            canary_node=canary_ref.name,
            stable_node=stable_ref.name,
            namespace=ctx.namespace,
            weight=weight,
        )
        if not changed:
            return
        log.info("%s: VirtualRouter %s to weight %d", ctx.key, ref.name, weight)
        version = (router.get("metadata") or {}).get("resourceVersion")
        patch = fenced({"spec": {"routes": routes}}, version)
        resource = ctx.routed.resource(VIRTUAL_ROUTER)
        written = ctx.writer.patch(resource, ref.namespace, ref.name, patch)
        ctx.routed.put(ref, written)

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Not an App Mesh feature in Argo (validation rejects the step)."""

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Not an App Mesh feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """App Mesh cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """App Mesh manages no header or mirror routes."""


def reference_error(ctx: RolloutContext) -> str:
    """Argo's look-up of the VirtualRouter fails the sync before anything is reconciled, with
    no InvalidSpec, when the VirtualService is found and its provider is not a VirtualRouter:
    that error ('' when there is none; the other look-ups are validation's)."""
    routing = ctx.canary.traffic_routing if ctx.canary is not None else None
    app_mesh = routing.app_mesh if routing is not None else None
    if app_mesh is None or app_mesh.virtual_service is None:
        return ""
    vs = ctx.routed.get(VIRTUAL_SERVICE, ctx.namespace, app_mesh.virtual_service.name)
    if vs is not None and virtual_router_ref(vs) is None:
        return NOT_USING_VIRTUAL_ROUTER
    return ""
