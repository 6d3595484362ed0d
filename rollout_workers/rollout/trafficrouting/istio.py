"""The Istio router: the rollout re-weights routes of VirtualServices it does not own.

As argo-rollouts' rollout/trafficrouting/istio:

- Host-level splitting: in each VirtualService (`virtualService`, or each of `virtualServices`;
  `<name>.<namespace>` names one in another namespace) the named HTTP `routes` (none named: the
  first unnamed http route), the `tlsRoutes` (matched by their one port and their SNI hosts) and
  the `tcpRoutes` (matched by their one port) send `weight` to the destination whose host is the
  canary Service, the rest to the stable Service's, and each additional destination (experiment
  services) its weight, appended when missing. Any other destination of such a route is
  removed. With no `tlsRoutes` (`tcpRoutes`) named, the VirtualService's only tls (tcp) route is
  the one re-weighted.
- Subset-level splitting (`destinationRule`): destinations are told apart by subset (or by the
  canary and stable Services' hosts, when those are set); any other destination is removed,
  whatever its host, as with host-level splitting. Before the weights, the DestinationRule's
  canary and stable subsets are labelled `rollouts-pod-template-hash` with the canary's and the
  stable's pod hashes, and the rule is annotated as managed by the rollout (Argo's UpdateHash,
  which also drops subsets that are neither canary, stable nor an additional destination's).
- `destinationRule.additionalSubsetNames` (Argo 1.9): a destination whose subset is one of them
  keeps its weight, and that weight is taken out of the stable's (100 - canary - experiments -
  additional subsets, never below 0). They are meant to be subsets of other DestinationRules,
  which the rollout never touches: UpdateHash does not consult the list, so a subset of that
  name in the rollout's own rule is dropped like any other, as in Argo.
- Header and mirror routes (canary steps `setHeaderRoute`, `setMirrorRoute`): http routes named
  after the step, routing matching requests to the canary (header) or to the current weights
  while mirroring them to the canary (mirror). Routes named in `trafficRouting.managedRoutes` are
  kept on top of the http list in that order, above the VirtualService's own routes; a step with
  no match removes its route, and the end or abort of an update removes them all. A mirror route
  among the managed routes is re-weighted with the others.

Each write sends the merge patch of the desired spec against the one read (`spec.http`,
`spec.tls` and `spec.tcp` are lists, so a changed one is sent whole), fenced by the
resourceVersion read, and nothing when they agree; so a weight or managed route that someone else
changed is put back at the next reconcile (level-triggered). Argo's Istio cannot verify a weight.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rollout_workers.api.rollout import (
    IstioTrafficRouting,
    IstioVirtualService,
    ManagedRoute,
    RouteMatch,
    SetHeaderRoute,
    SetMirrorRoute,
    StringMatch,
    TCPRoute,
    TLSRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.rollout.trafficrouting.pingpong import stable_and_canary_services
from rollout_workers.routerrefs import RouterRef, split_namespaced

log = logging.getLogger(__name__)


TYPE = "Istio"
VS_KIND = "VirtualService"
DR_KIND = "DestinationRule"
POD_HASH_LABEL = r.POD_TEMPLATE_HASH_LABEL
MANAGED_BY_ROLLOUTS_ANNOTATION = "argo-rollouts.argoproj.io/managed-by-rollouts"

UPDATED_VS_REASON = "Updated VirtualService"  # Argo's reason, space included
UPDATED_DR_REASON = "UpdatedDestinationRule"
SPEC_HTTP_NOT_FOUND = "spec.http not found"
VS_NOT_FOUND = 'virtualservices.networking.istio.io "{}" not found'
DR_NOT_FOUND = 'destinationrules.networking.istio.io "{}" not found'
HTTP_ROUTE_NOT_FOUND = "HTTP Route '{}' is not found in the defined Virtual Service."
TLS_ROUTE_NOT_FOUND = "No matching TLS routes found in the defined Virtual Service."
TCP_ROUTE_NOT_FOUND = "No matching TCP routes found in the defined Virtual Service."
HTTP_SINGLE_ROUTE = (
    "spec.http[] should be set in VirtualService and it must have exactly one route when "
    "omitting spec.strategy.canary.trafficRouting.istio.virtualService.routes"
)
TLS_SINGLE_ROUTE = (
    "spec.tls[] should be set in VirtualService and it must have exactly one route when "
    "omitting spec.strategy.canary.trafficRouting.istio.virtualService.tlsRoutes"
)
TCP_SINGLE_ROUTE = (
    "spec.tcp[] should be set in VirtualService and it must have exactly one route when "
    "omitting spec.strategy.canary.trafficRouting.istio.virtualService.tcpRoutes"
)


@dataclass(frozen=True)
class Targets:
    """Which destinations are the canary's and the stable's (Argo's svcSubsets)."""

    canary_service: str = ""
    stable_service: str = ""
    canary_subset: str = ""
    stable_subset: str = ""
    subset_level: bool = False  # a destinationRule is configured
    additional_subsets: frozenset[str] = frozenset()  # destinationRule.additionalSubsetNames


def virtual_services(istio: IstioTrafficRouting) -> list[IstioVirtualService]:
    """`virtualServices` when any are given, else `virtualService` (Argo's getVirtualServices)."""
    if istio.virtual_services:
        return list(istio.virtual_services)
    return [istio.virtual_service] if istio.virtual_service is not None else []


def short_host(destination: Obj) -> str:
    """A destination's host up to its first dot (Argo's getHost; '' for a host starting with
    one)."""
    host = str(((destination.get("destination") or {}).get("host")) or "")
    head, dot, _ = host.partition(".")
    return "" if dot and not head else head


def _subset(destination: Obj) -> str:
    return str((destination.get("destination") or {}).get("subset") or "")


def _name(route: Obj) -> str:
    name = route.get("name") if isinstance(route, dict) else None
    return name if isinstance(name, str) else ""


def _destinations(route: Obj) -> list[Obj]:
    found = route.get("route") if isinstance(route, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


# -- finding the routes to re-weight ---------------------------------------------------------


def http_route_indexes(route_names: Sequence[str], http: Sequence[Obj]) -> list[int]:
    """Indexes of the named http routes; none named: the first unnamed route (if any)."""
    if not route_names:
        return next(([i] for i, route in enumerate(http) if not _name(route)), [])
    indexes = []
    for name in route_names:
        index = next((i for i, route in enumerate(http) if _name(route) == name), None)
        if index is None:
            raise TrafficRoutingError(HTTP_ROUTE_NOT_FOUND.format(name))
        indexes.append(index)
    return indexes


def _match_ports(route: Obj) -> tuple[set[int], set[str]]:
    ports: set[int] = set()
    sni_hosts: set[str] = set()
    for match in route.get("match") or []:
        if isinstance(match, dict):
            ports.add(int(match.get("port") or 0))
            sni_hosts.update(str(h) for h in match.get("sniHosts") or [])
    return ports, sni_hosts


def _single_port(ports: set[int]) -> int | None:
    """The route's one port (0: none given); None when it has several (it can never match)."""
    if len(ports) > 1:
        return None
    return next(iter(ports), 0)


def tls_route_indexes(wanted: Sequence[TLSRoute], tls: Sequence[Obj]) -> list[int]:
    """Indexes of the tls routes with each wanted port and exactly its SNI hosts; none wanted:
    the first route."""
    if not wanted:
        return [0] if tls else []
    indexes = []
    for spec in wanted:
        found = []
        for i, route in enumerate(tls):
            ports, sni_hosts = _match_ports(route)
            port = _single_port(ports)
            if port == (spec.port or 0) and sni_hosts == set(spec.sni_hosts or []):
                found.append(i)
        if not found:
            raise TrafficRoutingError(TLS_ROUTE_NOT_FOUND)
        indexes.extend(found)
    return indexes


def tcp_route_indexes(wanted: Sequence[TCPRoute], tcp: Sequence[Obj]) -> list[int]:
    """Indexes of the tcp routes with each wanted port; none wanted: the first route."""
    if not wanted:
        return [0] if tcp else []
    indexes = []
    for spec in wanted:
        found = [
            i
            for i, route in enumerate(tcp)
            if _single_port(_match_ports(route)[0]) == (spec.port or 0)
        ]
        if not found:
            raise TrafficRoutingError(TCP_ROUTE_NOT_FOUND)
        indexes.extend(found)
    return indexes


# -- validation (Argo's ValidateHTTPRoutes / ValidateTlsRoutes / ValidateTcpRoutes) ------------


def validate_route_destinations(destinations: Sequence[Obj], targets: Targets) -> None:
    """Both the canary and the stable are destinations of the route: by subset with a
    destinationRule, else by Service."""
    hosts = {short_host(d) for d in destinations}
    subsets = {_subset(d) for d in destinations}
    if targets.subset_level:
        if not targets.canary_subset or targets.canary_subset not in subsets:
            raise TrafficRoutingError(
                f"Canary DestinationRule subset '{targets.canary_subset}' not found in route"
            )
        if not targets.stable_subset or targets.stable_subset not in subsets:
            raise TrafficRoutingError(
                f"Stable DestinationRule subset '{targets.stable_subset}' not found in route"
            )
        return
    if not targets.canary_service or targets.canary_service not in hosts:
        raise TrafficRoutingError(f"Canary Service '{targets.canary_service}' not found in route")
    if not targets.stable_service or targets.stable_service not in hosts:
        raise TrafficRoutingError(f"Stable Service '{targets.stable_service}' not found in route")


def validate_http_routes(
    *,
    route_names: Sequence[str],
    http: Sequence[Obj],
    targets: Targets,
    managed: Sequence[ManagedRoute],
) -> None:
    for index in http_route_indexes(route_names, http):
        validate_route_destinations(_destinations(http[index]), targets)
    managed_names = {m.name for m in managed}
    own_routes = [route for route in http if _name(route) not in managed_names]
    if not route_names and len(own_routes) > 1:
        raise TrafficRoutingError(HTTP_SINGLE_ROUTE)


def validate_tls_routes(
    *, wanted: Sequence[TLSRoute], tls: Sequence[Obj], targets: Targets
) -> None:
    for index in tls_route_indexes(wanted, tls):
        validate_route_destinations(_destinations(tls[index]), targets)
    if not wanted and len(tls) > 1:
        raise TrafficRoutingError(TLS_SINGLE_ROUTE)


def validate_tcp_routes(
    *, wanted: Sequence[TCPRoute], tcp: Sequence[Obj], targets: Targets
) -> None:
    for index in tcp_route_indexes(wanted, tcp):
        validate_route_destinations(_destinations(tcp[index]), targets)
    if not wanted and len(tcp) > 1:
        raise TrafficRoutingError(TCP_SINGLE_ROUTE)


def route_list(spec: Obj, field: str) -> list[Obj] | None:
    """`spec.<field>` when it is a list (None: absent, and left alone)."""
    value = spec.get(field)
    return (
        [route for route in value if isinstance(route, dict)] if isinstance(value, list) else None
    )


def validate_virtual_service(
    spec: Obj, *, vs: IstioVirtualService, targets: Targets, managed: Sequence[ManagedRoute]
) -> None:
    """Every check of the VirtualService Argo makes before re-weighting it (raises the first)."""
    http = route_list(spec, "http")
    if http is not None:
        validate_http_routes(
            route_names=vs.routes or [], http=http, targets=targets, managed=managed
        )
    tls = route_list(spec, "tls")
    if tls is not None:
        validate_tls_routes(wanted=vs.tls_routes or [], tls=tls, targets=targets)
    tcp = route_list(spec, "tcp")
    if tcp is not None:
        validate_tcp_routes(wanted=vs.tcp_routes or [], tcp=tcp, targets=targets)


# -- the weights -----------------------------------------------------------------------------


def _destination(host: str, weight: int) -> Obj:
    return {"destination": {"host": host}, "weight": weight}


def calculate_destinations(
    destinations: Sequence[Obj],
    *,
    weight: int,
    targets: Targets,
    additional: Sequence[WeightDestination] = (),
) -> list[Obj]:
    """One route's destinations at `weight` (Argo's processRoutes): the canary's, the stable's
    (100 minus the others, at least 0), each additional destination's (appended when missing),
    those to an additional subset at their own weight; any other destination is dropped, and one
    whose host starts with a dot is kept as it is (Argo's getHost finds no host in it)."""
    extra = targets.additional_subsets - {""}  # a destination with no subset is never one
    stable_weight = 100 - weight - sum(d.weight for d in additional)
    # Every destination to an additional subset counts, whichever branch below it takes.
    stable_weight -= sum(int(d.get("weight") or 0) for d in destinations if _subset(d) in extra)
    stable_weight = max(stable_weight, 0)
    pending = {d.service_name or "": d for d in additional}
    result: list[Obj] = []
    for destination in destinations:
        host, subset = short_host(destination), _subset(destination)
        if not host:
            result.append(copy.deepcopy(destination))
            continue
        if host == targets.canary_service or (subset and subset == targets.canary_subset):
            value = weight
        elif host == targets.stable_service or (subset and subset == targets.stable_subset):
            value = stable_weight
        elif host in pending:
            value = pending.pop(host).weight
        elif subset and subset in extra:
            result.append(copy.deepcopy(destination))  # its weight is the user's
            continue
        else:
            continue  # not the canary's, the stable's nor an experiment's: removed, as in Argo
        result.append({**copy.deepcopy(destination), "weight": value})
    result.extend(_destination(name, d.weight) for name, d in pending.items())
    return result


def mirror_route_names(http: Sequence[Obj], managed: Sequence[ManagedRoute]) -> list[str]:
    """The managed mirror routes, re-weighted with the routes the rollout names."""
    managed_names = {m.name for m in managed}
    return [_name(route) for route in http if route.get("mirror") and _name(route) in managed_names]


def calculate_weighted_spec(
    spec: Obj,
    *,
    vs: IstioVirtualService,
    weight: int,
    targets: Targets,
    managed: Sequence[ManagedRoute],
    additional: Sequence[WeightDestination] = (),
) -> Obj:
    """The VirtualService's spec at `weight` (raises TrafficRoutingError when it does not have
    the routes and destinations the rollout names)."""
    validate_virtual_service(spec, vs=vs, targets=targets, managed=managed)
    desired = copy.deepcopy(spec)

    def reweight(routes: list[Obj], indexes: Sequence[int]) -> list[Obj]:
        for index in dict.fromkeys(indexes):
            routes[index] = {
                **routes[index],
                "route": calculate_destinations(
                    _destinations(routes[index]),
                    weight=weight,
                    targets=targets,
                    additional=additional,
                ),
            }
        return routes

    http = route_list(desired, "http")
    if http is not None:
        indexes = http_route_indexes(vs.routes or [], http)
        indexes += [http_route_indexes([n], http)[0] for n in mirror_route_names(http, managed)]
        desired["http"] = order_routes(reweight(http, indexes), managed)
    tls = route_list(desired, "tls")
    if tls is not None:
        desired["tls"] = reweight(tls, tls_route_indexes(vs.tls_routes or [], tls))
    tcp = route_list(desired, "tcp")
    if tcp is not None:
        desired["tcp"] = reweight(tcp, tcp_route_indexes(vs.tcp_routes or [], tcp))
    return desired


# -- managed routes --------------------------------------------------------------------------


def order_routes(http: Sequence[Obj], managed: Sequence[ManagedRoute]) -> list[Obj]:
    """The managed routes first, in `managedRoutes` order, then the others as they were (Argo's
    orderRoutes)."""
    names = [m.name for m in managed]
    own = [route for route in http if _name(route) not in names]
    ordered = [route for name in names for route in http if _name(route) == name]
    return ordered + own


def remove_route(http: Sequence[Obj], name: str) -> list[Obj]:
    return [route for route in http if _name(route) != name]


def _string_match(match: StringMatch | None) -> Obj:
    if match is None:
        return {}
    return {
        k: v
        for k, v in (("exact", match.exact), ("regex", match.regex), ("prefix", match.prefix))
        if v
    }


def set_weight_destinations(vs: IstioVirtualService, http: Sequence[Obj]) -> list[Obj]:
    """The destinations of the first route the rollout re-weights (Argo's
    getVirtualServiceSetWeightRoute)."""
    indexes = http_route_indexes(vs.routes or [], http)
    return _destinations(http[indexes[0]]) if indexes else []


def _port_of(destinations: Sequence[Obj]) -> int:
    if not destinations:
        return 0
    port = (destinations[0].get("destination") or {}).get("port") or {}
    return int(port.get("number") or 0) if isinstance(port, dict) else 0


def build_header_route(
    route: SetHeaderRoute, *, http: Sequence[Obj], vs: IstioVirtualService, host: str, subset: str
) -> Obj:
    """Argo's createHeaderRoute: matching requests all go to the canary (on the port of the
    re-weighted route, when it has one)."""
    try:
        port = _port_of(set_weight_destinations(vs, http))
    except TrafficRoutingError:
        port = 0
    destination: Obj = {"host": host}
    if port > 0:
        destination["port"] = {"number": port}
    if subset:
        destination["subset"] = subset
    return {
        "name": route.name or "",
        "match": [
            {"headers": {m.header_name: _string_match(m.header_value)}} for m in route.match or []
        ],
        "route": [{"destination": destination, "weight": 100}],
    }


def _route_match(match: RouteMatch) -> Obj:
    out: Obj = {}
    if match.method is not None:
        out["method"] = _string_match(match.method)
    if match.path is not None:
        out["uri"] = _string_match(match.path)
    if match.headers:
        out["headers"] = {name: _string_match(value) for name, value in match.headers.items()}
    return out


def build_mirror_route(
    route: SetMirrorRoute, *, http: Sequence[Obj], vs: IstioVirtualService, host: str, subset: str
) -> Obj:
    """Argo's createMirrorRoute: matching requests keep the re-weighted route's destinations and
    weights, and `percentage` (default 100) of them is mirrored to the canary."""
    destinations = copy.deepcopy(set_weight_destinations(vs, http))
    mirror: Obj = {"host": host}
    if subset:
        mirror["subset"] = subset
    port = _port_of(destinations)
    if port > 0:
        mirror["port"] = {"number": port}
    return {
        "name": route.name,
        "match": [_route_match(m) for m in route.match or []],
        "route": destinations,
        "mirror": mirror,
        "mirrorPercentage": {"value": 100 if route.percentage is None else route.percentage},
    }


# -- the DestinationRule ---------------------------------------------------------------------


def calculate_destination_rule(
    rule: Obj,
    *,
    rollout: str,
    canary_subset: str,
    stable_subset: str,
    canary_hash: str,
    stable_hash: str,
    additional: Sequence[WeightDestination] = (),
) -> Obj:
    """The rule's annotations and spec with the subsets pointed at the hashes (Argo's
    UpdateHash): the canary and stable subsets labelled with their hash (unlabelled when it is
    empty), an additional destination's subset with its hash (added when missing); subsets that
    are none of these are dropped, as in Argo, `additionalSubsetNames` included (Argo's UpdateHash
    does not read them: they name subsets of other rules)."""
    meta = rule.get("metadata") or {}
    annotations = {**(meta.get("annotations") or {}), MANAGED_BY_ROLLOUTS_ANNOTATION: rollout}
    pending = {d.service_name or "": d for d in additional}
    subsets: list[Obj] = []
    for subset in (rule.get("spec") or {}).get("subsets") or []:
        name = subset.get("name")
        labels = dict(subset.get("labels") or {})
        if name == canary_subset:
            value = canary_hash
        elif name == stable_subset:
            value = stable_hash
        elif name in pending:
            value = pending.pop(name).pod_template_hash or ""
        else:
            continue
        if value:
            labels[POD_HASH_LABEL] = value
        else:
            labels.pop(POD_HASH_LABEL, None)
        subsets.append({**copy.deepcopy(subset), "labels": labels})
    for name, dest in pending.items():
        subsets.append({"name": name, "labels": {POD_HASH_LABEL: dest.pod_template_hash or ""}})
    spec = {**copy.deepcopy(rule.get("spec") or {}), "subsets": subsets}
    return {"metadata": {"annotations": annotations}, "spec": spec}


def _owned_view(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {
        "metadata": {"annotations": meta.get("annotations") or {}},
        "spec": obj.get("spec") or {},
    }


# -- the router ------------------------------------------------------------------------------


class IstioRouter:
    """Argo's Istio reconciler; the VirtualServices and the DestinationRule come in the
    context (read before the reconcile), writes go through its writer."""

    def __init__(self, ctx: RolloutContext, istio: IstioTrafficRouting) -> None:
        self.ctx, self.istio = ctx, istio

    @property
    def type(self) -> str:
        return TYPE

    # -- reading ---------------------------------------------------------------------------

    @property
    def managed(self) -> list[ManagedRoute]:
        return list(self.ctx.routing_spec.managed_routes or [])

    def _virtual_service(self, vs: IstioVirtualService) -> tuple[str, str, Obj]:
        ctx = self.ctx
        ctx.routed.resource(VS_KIND)  # raises when the kind is not served
        namespace, name = split_namespaced(vs.name, ctx.namespace)
        obj = ctx.routed.get(VS_KIND, namespace, name)
        if obj is None:
            ctx.event("VirtualServiceNotFound", f"VirtualService `{name}` not found", warning=True)
            raise TrafficRoutingError(VS_NOT_FOUND.format(name))
        return namespace, name, obj

    def _destination_rule(self) -> tuple[str, str, Obj] | None:
        ctx, spec = self.ctx, self.istio.destination_rule
        if spec is None:
            return None
        ctx.routed.resource(DR_KIND)  # raises when the kind is not served
        namespace, name = split_namespaced(spec.name, ctx.namespace)
        obj = ctx.routed.get(DR_KIND, namespace, name)
        if obj is None:
            ctx.event(
                "DestinationRuleNotFound", f"DestinationRule `{name}` not found", warning=True
            )
            raise TrafficRoutingError(DR_NOT_FOUND.format(name))
        return namespace, name, obj

    def _dr_host(self) -> str:
        found = self._destination_rule()
        return str(((found[2].get("spec") or {}).get("host")) or "") if found else ""

    def targets(self) -> Targets:
        canary, rule = self.ctx.canary_spec, self.istio.destination_rule
        stable_service, canary_service = stable_and_canary_services(
            canary, self.ctx.rollout.status, ping_pong_preferred=False
        )
        return Targets(
            canary_service=canary_service,
            stable_service=stable_service,
            canary_subset=rule.canary_subset_name if rule else "",
            stable_subset=rule.stable_subset_name if rule else "",
            subset_level=rule is not None,
            additional_subsets=frozenset(rule.additional_subset_names or [])
            if rule
            else frozenset(),
        )

    def _each(self) -> Iterator[tuple[IstioVirtualService, str, str, Obj]]:
        for vs in virtual_services(self.istio):
            namespace, name, obj = self._virtual_service(vs)
            yield vs, namespace, name, obj

    # -- writing ---------------------------------------------------------------------------

    def _write(self, kind: str, namespace: str, name: str, current: Obj, desired: Obj) -> bool:
        """Patch the owned parts of `current` into `desired`'s; False when they agree."""
        patch = merge_patch(_owned_view(current), _owned_view(desired))
        if not patch:
            return False
        version = (current.get("metadata") or {}).get("resourceVersion")
        written = self.ctx.writer.patch(
            self.ctx.routed.resource(kind), namespace, name, fenced(patch, version)
        )
        self.ctx.routed.put(RouterRef(kind, namespace, name), written)
        return True

    def _write_spec(self, namespace: str, name: str, current: Obj, spec: Obj) -> bool:
        desired = {"metadata": current.get("metadata") or {}, "spec": spec}
        return self._write(VS_KIND, namespace, name, current, desired)

    # -- the protocol ----------------------------------------------------------------------

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Point the DestinationRule's subsets at the canary's and the stable's pod hashes
        (Argo's UpdateHash; the reconcile calls it before set_weight)."""
        spec = self.istio.destination_rule
        found = self._destination_rule()
        if spec is None or found is None:
            return
        ctx = self.ctx
        namespace, name, current = found
        desired = calculate_destination_rule(
            current,
            rollout=ctx.name,
            canary_subset=spec.canary_subset_name,
            stable_subset=spec.stable_subset_name,
            canary_hash=canary_hash,
            stable_hash=stable_hash,
            additional=additional,
        )
        if self._write(DR_KIND, namespace, name, current, desired):
            log.info(
                "%s: DestinationRule %s pointed at %s/%s", ctx.key, name, canary_hash, stable_hash
            )
            ctx.event(
                UPDATED_DR_REASON,
                f"DestinationRule {spec.name} subset updated ({spec.canary_subset_name}: "
                f"{canary_hash}, {spec.stable_subset_name}: {stable_hash})",
            )

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        """Argo's SetWeight on each VirtualService."""
        ctx = self.ctx
        targets = self.targets()
        for vs, namespace, name, current in self._each():
            spec = calculate_weighted_spec(
                current.get("spec") or {},
                vs=vs,
                weight=weight,
                targets=targets,
                managed=self.managed,
                additional=additional,
            )
            if self._write_spec(namespace, name, current, spec):
                log.info("%s: VirtualService %s set to weight %d", ctx.key, name, weight)
                ctx.event(
                    UPDATED_VS_REASON, f"VirtualService `{name}` set to desiredWeight '{weight}'"
                )

    def _canary_destination(self) -> tuple[str, str]:
        host = self._dr_host() or self.targets().canary_service
        return host, self.targets().canary_subset

    def _http(self, current: Obj, what: str) -> list[Obj]:
        http = route_list(current.get("spec") or {}, "http")
        if http is None:
            raise TrafficRoutingError(f"[{what}] {SPEC_HTTP_NOT_FOUND}")
        return http

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Add (or, with no match, remove) the step's header route in each VirtualService."""
        ctx = self.ctx
        host, subset = self._canary_destination()
        name = route.name or ""
        for vs, namespace, vs_name, current in self._each():
            http = remove_route(self._http(current, "SetHeaderRoute"), name)
            if route.match:
                http.append(build_header_route(route, http=http, vs=vs, host=host, subset=subset))
            spec = {**(current.get("spec") or {}), "http": order_routes(http, self.managed)}
            if self._write_spec(namespace, vs_name, current, spec):
                ctx.event(UPDATED_VS_REASON, f"VirtualService `{vs_name}` set headerRoute '{name}'")

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Add (or, with no match, remove) the step's mirror route in each VirtualService."""
        ctx = self.ctx
        host, subset = self._canary_destination()
        for vs, namespace, vs_name, current in self._each():
            http = remove_route(self._http(current, "SetMirrorRoute"), route.name)
            if route.match:
                mirror = build_mirror_route(route, http=http, vs=vs, host=host, subset=subset)
                http.insert(0, mirror)
            spec = {**(current.get("spec") or {}), "http": order_routes(http, self.managed)}
            if self._write_spec(namespace, vs_name, current, spec):
                ctx.event(
                    UPDATED_VS_REASON, f"VirtualService `{vs_name}` set mirrorRoute '{route.name}'"
                )

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """Istio cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """Remove every route named in `managedRoutes` from each VirtualService."""
        managed = self.managed
        if not managed:
            return
        names = {m.name for m in managed}
        for _vs, namespace, name, current in self._each():
            http = route_list(current.get("spec") or {}, "http")
            if http is None:  # tls/tcp only: nothing is managed there
                continue
            kept = [route for route in http if _name(route) not in names]
            if len(kept) == len(http):
                continue
            spec = {**(current.get("spec") or {}), "http": kept}
            if self._write_spec(namespace, name, current, spec):
                self.ctx.event(
                    UPDATED_VS_REASON, f"VirtualService `{name}` removed all managed routes."
                )
