"""Which router objects a Rollout's `trafficRouting` names: pure, on the raw object.

One answer for every reader, so it sits below all of them (between the cache and kube/, whose
resources.py names the router kinds): the controller reads these objects before a reconcile,
the cache indexes rollouts by them so that a change to one wakes the rollouts routing through
it, the watcher starts the reflectors of the kinds they name, and validation reports the
missing ones. Ingresses are not here: the nginx router's stable Ingresses and the ALB router's
(`ingress`, `ingresses`) are always cached and indexed (see cache/indexers.py), so an edit to
one wakes the rollouts routing through it. The ALB router's TargetGroupBindings are read from
the API when a verification runs (rollout/trafficrouting/elbv2.py).

- SMI: the TrafficSplit `trafficSplitName`, by default the rollout's name;
- Istio: each VirtualService (`virtualService` or `virtualServices`) and the DestinationRule;
  a name `<name>.<namespace>` names one in another namespace, as in Argo;
- Traefik: the TraefikService `weightedTraefikServiceName`;
- APISIX: the ApisixRoute `route.name`, and one per `managedRoutes` name (a header route is an
  ApisixRoute of its own, which the rollout creates);
- Ambassador: each Mapping of `mappings`, and its canary copy `<mapping>-canary`, which the
  rollout creates;
- App Mesh: the VirtualService `virtualService.name` and the two VirtualNodes of
  `virtualNodeGroup`. The VirtualRouter it weights is named by the VirtualService's provider, not
  by the rollout: `dependent_router_refs` finds it in the objects read, and a VirtualRouter
  change wakes the rollouts whose VirtualNodes its routes target (`routed_through`).
- Gateway API: the HTTPRoutes, GRPCRoutes, TCPRoutes and TLSRoutes of `gatewayAPI`, or of the
  config of Argo's gatewayAPI plugin (`plugins["argoproj-labs/gatewayAPI"]`), in its
  `namespace` when set, else the rollout's.

The router-object code, layer by layer (each part in one place):

- here: spec -> references (`router_refs`, `router_kinds`, `dependent_router_refs`,
  `routed_through`), no I/O;
- kube/resources.py: the one table of router kinds -> their versions (group, plural, cache
  name), newest first (`ROUTER_OBJECTS`);
- kube/routerobjects.py: the API access (`ApiRouterObjects`: the newest version served, one
  object);
- cache/routerobjects.py: the reads through the cache (`CachedRouterObjects`: the watcher's
  cache once it has listed the kind, else the API); cache/indexers.py indexes rollouts by the
  references and kinds found here;
- watcher/ondemand.py starts a router kind's reflector when a rollout names it;
  watcher/eventkeys.py finds the rollouts a router object's change wakes;
- rollout/controller.py reads the objects into the context; the routers of
  rollout/trafficrouting/ write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rollout_workers.kube.resources import APPMESH_VIRTUAL_SERVICE
from rollout_workers.objects import Obj

#: The name of Argo's Gateway API traffic-router plugin, whose config is accepted as is.
GATEWAY_API_PLUGIN = "argoproj-labs/gatewayAPI"
#: Gateway API route kinds by the config's (single, list) field names.
GATEWAY_ROUTE_FIELDS = {
    "HTTPRoute": ("httpRoute", "httpRoutes"),
    "GRPCRoute": ("grpcRoute", "grpcRoutes"),
    "TCPRoute": ("tcpRoute", "tcpRoutes"),
    "TLSRoute": ("tlsRoute", "tlsRoutes"),
}


#: Router kinds a rollout reaches through the objects it names: the App Mesh VirtualService's
#: VirtualRouter (its reflector must run too).
IMPLIED_KINDS = {APPMESH_VIRTUAL_SERVICE: ("VirtualRouter",)}
#: Argo keeps a Mapping's name within 253 characters once `-canary` is added.
CANARY_MAPPING_BASE_MAX = 246


@dataclass(frozen=True, order=True)
class RouterRef:
    kind: str
    namespace: str
    name: str


def canary_mapping_name(mapping: str) -> str:
    """The Ambassador canary Mapping of a Mapping (Argo's buildCanaryMappingName)."""
    return f"{mapping[:CANARY_MAPPING_BASE_MAX]}-canary"


def virtual_router_ref(virtual_service: Obj) -> RouterRef | None:
    """The VirtualRouter an App Mesh VirtualService's provider names (its namespace by default);
    None when the provider is not a VirtualRouter."""
    provider = (virtual_service.get("spec") or {}).get("provider")
    router = provider.get("virtualRouter") if isinstance(provider, dict) else None
    ref = router.get("virtualRouterRef") if isinstance(router, dict) else None
    name = ref.get("name") if isinstance(ref, dict) else None
    if not isinstance(name, str) or not name:
        return None
    namespace = ref.get("namespace") if isinstance(ref, dict) else None
    default = str((virtual_service.get("metadata") or {}).get("namespace") or "")
    return RouterRef(
        "VirtualRouter", namespace if isinstance(namespace, str) and namespace else default, name
    )


def traffic_routing(obj: Obj) -> Obj:
    canary = ((obj.get("spec") or {}).get("strategy") or {}).get("canary") or {}
    routing = canary.get("trafficRouting") if isinstance(canary, dict) else None
    return routing if isinstance(routing, dict) else {}


def split_namespaced(name: str, default: str) -> tuple[str, str]:
    """(namespace, name) of an Istio reference `<name>` or `<name>.<namespace>`."""
    base, dot, namespace = name.partition(".")
    return (namespace, base) if dot and namespace else (default, name)


def gateway_api_config(routing: Obj) -> Obj | None:
    """The Gateway API router's config: the first-class field, else Argo's plugin's."""
    config = routing.get("gatewayAPI")
    if not isinstance(config, dict):
        plugins = routing.get("plugins")
        config = plugins.get(GATEWAY_API_PLUGIN) if isinstance(plugins, dict) else None
    return config if isinstance(config, dict) else None


def gateway_route_names(config: Obj, kind: str) -> list[str]:
    single, many = GATEWAY_ROUTE_FIELDS[kind]
    names: list[str] = []
    if isinstance(config.get(single), str) and config[single]:
        names.append(config[single])
    for entry in config.get(many) or []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def router_refs(obj: Obj) -> list[RouterRef]:
    """Every router object the rollout names (see the module docstring), sorted, unique."""
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    routing = traffic_routing(obj)
    refs: set[RouterRef] = set()
    smi = routing.get("smi")
    if isinstance(smi, dict):
        name = smi.get("trafficSplitName") or meta.get("name")
        if isinstance(name, str) and name:
            refs.add(RouterRef("TrafficSplit", namespace, name))
    istio = routing.get("istio")
    if isinstance(istio, dict):
        services = [istio.get("virtualService"), *(istio.get("virtualServices") or [])]
        for vs in services:
            name = vs.get("name") if isinstance(vs, dict) else None
            if isinstance(name, str) and name:
                refs.add(RouterRef("VirtualService", *split_namespaced(name, namespace)))
        rule = istio.get("destinationRule")
        name = rule.get("name") if isinstance(rule, dict) else None
        if isinstance(name, str) and name:
            refs.add(RouterRef("DestinationRule", *split_namespaced(name, namespace)))
    traefik = routing.get("traefik")
    if isinstance(traefik, dict):
        name = traefik.get("weightedTraefikServiceName")
        if isinstance(name, str) and name:
            refs.add(RouterRef("TraefikService", namespace, name))
    apisix = routing.get("apisix")
    if isinstance(apisix, dict):
        route = apisix.get("route")
        names = [route.get("name") if isinstance(route, dict) else None]
        names += [m.get("name") for m in routing.get("managedRoutes") or [] if isinstance(m, dict)]
        refs.update(
            RouterRef("ApisixRoute", namespace, n) for n in names if isinstance(n, str) and n
        )
    ambassador = routing.get("ambassador")
    if isinstance(ambassador, dict):
        for name in ambassador.get("mappings") or []:
            if isinstance(name, str) and name:
                refs.add(RouterRef("Mapping", namespace, name))
                refs.add(RouterRef("Mapping", namespace, canary_mapping_name(name)))
    app_mesh = routing.get("appMesh")
    if isinstance(app_mesh, dict):
        vs = app_mesh.get("virtualService")
        name = vs.get("name") if isinstance(vs, dict) else None
        if isinstance(name, str) and name:
            refs.add(RouterRef(APPMESH_VIRTUAL_SERVICE, namespace, name))
        group = app_mesh.get("virtualNodeGroup")
        for field in ("canaryVirtualNodeRef", "stableVirtualNodeRef"):
            node = group.get(field) if isinstance(group, dict) else None
            name = node.get("name") if isinstance(node, dict) else None
            if isinstance(name, str) and name:
                refs.add(RouterRef("VirtualNode", namespace, name))
    config = gateway_api_config(routing)
    if config is not None:
        where = config.get("namespace") if isinstance(config.get("namespace"), str) else ""
        for kind in GATEWAY_ROUTE_FIELDS:
            for name in gateway_route_names(config, kind):
                refs.add(RouterRef(kind, where or namespace, name))
    return sorted(refs)


def router_kinds(obj: Obj) -> list[str]:
    """The router kinds the rollout names, and those it reaches through them (IMPLIED_KINDS):
    the reflectors the watcher must run for it."""
    kinds = dict.fromkeys(ref.kind for ref in router_refs(obj))
    for kind in list(kinds):
        kinds.update(dict.fromkeys(IMPLIED_KINDS.get(kind, ())))
    return list(kinds)


def dependent_router_refs(found: Mapping[RouterRef, Obj]) -> list[RouterRef]:
    """The router objects named by those found (the VirtualRouter of each App Mesh
    VirtualService), sorted, unique."""
    refs = {
        ref
        for key, obj in found.items()
        if key.kind == APPMESH_VIRTUAL_SERVICE and (ref := virtual_router_ref(obj)) is not None
    }
    return sorted(refs)


def routed_through(kind: str, obj: Obj) -> list[RouterRef]:
    """The router objects through which a rollout reaches `obj` when it does not name it: the
    VirtualNodes an App Mesh VirtualRouter's routes target (in its namespace by default). A
    change to `obj` wakes the rollouts that name them."""
    if kind != "VirtualRouter":
        return []
    default = str((obj.get("metadata") or {}).get("namespace") or "")
    refs: set[RouterRef] = set()
    for route in (obj.get("spec") or {}).get("routes") or []:
        if not isinstance(route, dict):
            continue
        for rule in route.values():
            action = rule.get("action") if isinstance(rule, dict) else None
            targets = action.get("weightedTargets") if isinstance(action, dict) else None
            for target in targets if isinstance(targets, list) else []:
                node = target.get("virtualNodeRef") if isinstance(target, dict) else None
                name = node.get("name") if isinstance(node, dict) else None
                if isinstance(name, str) and name:
                    where = node.get("namespace") if isinstance(node, dict) else None
                    namespace = where if isinstance(where, str) and where else default
                    refs.add(RouterRef("VirtualNode", namespace, name))
    return sorted(refs)
