"""The Gateway API router: the canary weight on the backendRefs of HTTPRoutes, GRPCRoutes,
TCPRoutes and TLSRoutes, natively, configured exactly as Argo's plugin argoproj-labs/gatewayAPI
(rollouts-plugin-trafficrouter-gatewayapi) is: `trafficRouting.plugins["argoproj-labs/gatewayAPI"]`
or the first-class `trafficRouting.gatewayAPI` of the same shape.

As the plugin does:

- weights: in each configured route, every rule whose backendRefs name both the canary and the
  stable Service is a weighted rule; its canary backendRefs get the weight and its stable ones
  maxTrafficWeight minus the weight (minus the additional destinations' weights). A route
  without such a rule is an error ("backendRef was not found in httpRoute"). Rules naming only
  one of them (the managed rules below, or the user's own) are left alone;
- experiment Services (the additional destinations of an experiment step's templates with a
  `weight`, pkg/plugin/experiment.go HandleExperiment): a weighted rule that does not name one
  gets a backendRef to it, with its weight, in the rollout's namespace, at the Service's port
  named `http`, else its first port, else 8080 (the plugin's choice; the canary's port would be
  wrong, since an experiment Service exposes its containers' ports); once the experiment is
  over (no longer among the destinations) the backendRefs added for it are removed again. A
  Service the weighted rules already name (the user's backendRefs) only gets its weight: it is
  neither added to the other rules nor removed;
- `httpRoute` (`grpcRoute`, `tcpRoute`) counts as a route with useHeaderRoutes; routes of the
  lists take part in header routes only with `useHeaderRoutes: true`; header routes go on
  HTTPRoutes and GRPCRoutes (the plugin's setHTTPHeaderRoute and setGRPCHeaderRoute), mirror
  routes on HTTPRoutes;
- a header route adds, per weighted rule, a rule sending the requests that also match the
  headers to the canary Service (the weighted rule's matches, filters and canary port; prefix
  matches as a regular expression: anchored on HTTPRoutes, `<prefix>.*` on GRPCRoutes as the
  plugin writes them), named after the managed route (`<name>`, `<name>-1`, ...); an empty
  match removes it;
- a mirror route adds a RequestMirror filter (to the canary, with `percentage` as `percent`) to
  the weighted rules, or with `mirrorMode: rule` a rule of its own (the route's matches, to the
  stable Service, mirrored to the canary); an empty match removes it;
- the in-progress label (pkg/plugin/labels.go): with each weight, a route gets the label
  `inProgressLabelKey: inProgressLabelValue` (by default `rollouts.argoproj.io/gatewayapi-canary:
  in-progress`) when the weight is above 0, and loses it at 0 (the end of an update, an abort);
  `disableInProgressLabel` leaves the labels alone. It is written in the weight's patch;
- verification: the plugin reports every weight verified; here the weight is verified when the
  stored routes carry it (what the API server returned after the write).

Which rules are ours. The plugin first kept rule indexes in a ConfigMap (argo-gatewayapi-configmap)
and now finds its rules by their `name`; indexes go stale as soon as anyone edits the route, and
rule names only exist from Gateway API 1.2 (older servers prune them). Here the record lives on
the route itself, in the annotation `rollout-workers/managed-routes`: for each rollout, each
managed route's rules by a fingerprint of their content (without the name, with the API
server's defaults filled in), and whether it set a mirror filter. A rule is ours when its
fingerprint is recorded, or (for routes the plugin left behind) when its name is one of the
rollout's managedRoutes. The experiment Services a rollout added are recorded the same way, in
`rollout-workers/experiment-backends` (`{rollout: [Service, ...]}`): the plugin goes by the
rollout's status.canary.weights.additional instead, which is written after the route, so a
failed status write would leave an experiment's backendRef on the route for good. Keeping the
record on the route means one fenced patch changes the rules and the record together: there is
no second object to get out of step with, and no ConfigMap to create. A running plugin's
ConfigMap is neither read nor written.

Writes: each route's desired rules are computed from the route as read, and when they or the
record differ, `spec.rules` is replaced whole (and the record's annotation set) in one merge
patch fenced by the resourceVersion read. Each reconcile does it again, so a weight someone else
changed is put back. A rule already there whose fingerprint matches the desired one is kept as
stored, so a field an older Gateway API prunes (rule names, mirror `percent`) does not cause a
write on every reconcile.

Where this differs from the plugin, on purpose: the plugin handles experiment Services on
HTTPRoutes only, on the first rule naming the canary or the stable, and weights the stable at
100 minus the experiments' weights whatever the canary's (so its weights sum past 100, and at
the experiment's end it sets the canary to 0 over the step's weight); here they go on every
weighted rule of every route kind, and the stable gets maxTrafficWeight minus the canary's and
the experiments' weights, which is what status.canary.weights reports, as Argo's other routers.
An experiment Service not (yet) in the cache is an error (retried), where the plugin leaves it
out of the route but still takes its weight from the stable.

Not carried over: the label-selector discovery of routes (`httpRouteSelector`,
`grpcRouteSelector`, `tcpRouteSelector`, `tlsRouteSelector`), which validation refuses: routes
are read from a cache indexed by the names rollouts give.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from rollout_workers.api.rollout import (
    GatewayAPITrafficRouting,
    HeaderRoutingMatch,
    RolloutTrafficRouting,
    RouteMatch,
    SetHeaderRoute,
    SetMirrorRoute,
    StringMatch,
    WeightDestination,
)
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.resources import ROUTER_OBJECTS
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.routerrefs import GATEWAY_API_PLUGIN, GATEWAY_ROUTE_FIELDS, RouterRef

log = logging.getLogger(__name__)


TYPE = "GatewayAPI"
#: The config's single-route field of each route kind (`httpRoute`).
FIELDS = {kind: single for kind, (single, _) in GATEWAY_ROUTE_FIELDS.items()}
MANAGED_ANNOTATION = "rollout-workers/managed-routes"
EXPERIMENT_ANNOTATION = "rollout-workers/experiment-backends"
# The plugin's port for an experiment Service (HandleExperiment): the one named `http`, else
# the first, else this.
EXPERIMENT_PORT_NAME = "http"
DEFAULT_EXPERIMENT_PORT = 8080
# The plugin's defaults (internal/defaults/defaults.go).
IN_PROGRESS_LABEL_KEY = "rollouts.argoproj.io/gatewayapi-canary"
IN_PROGRESS_LABEL_VALUE = "in-progress"
MIRROR = "RequestMirror"
HEADER_ROUTE_KINDS = ("HTTPRoute", "GRPCRoute")
MIRROR_ROUTE_KINDS = ("HTTPRoute",)
DEFAULT_MAX_TRAFFIC_WEIGHT = 100

# The plugin's messages (pkg/plugin/errors.go).
NO_ROUTES_MESSAGE = (
    "No routes configured. One of 'tcpRoutes', 'httpRoutes', 'tcpRoute' or 'httpRoute' "
    "should be set"
)
INVALID_HEADER_MATCH_TYPE_MESSAGE = "invalid header match type"
BACKEND_REF_NOT_FOUND_MESSAGE = "backendRef was not found in {}"


#: The plugin's route selectors (config field, the kind it discovers): refused by validation,
#: since routes are read from a cache keyed by the names rollouts give, not listed by label.
ROUTE_SELECTORS = {
    "httpRouteSelector": "HTTPRoute",
    "grpcRouteSelector": "GRPCRoute",
    "tcpRouteSelector": "TCPRoute",
    "tlsRouteSelector": "TLSRoute",
}
ROUTE_SELECTOR_MESSAGE = (
    "{field} is not supported by this controller: it does not discover {kind}s by label; "
    "name them in {single} or {many}"
)


def route_selectors(config: GatewayAPITrafficRouting) -> list[str]:
    """The config fields of the route selectors that are set (an empty selector too: the
    plugin would list every route of the namespace)."""
    set_fields = config.model_dump(by_alias=True, exclude_none=True)
    return [field for field in ROUTE_SELECTORS if field in set_fields]


def route_selector_message(field: str) -> str:
    kind = ROUTE_SELECTORS[field]
    single = FIELDS[kind]
    return ROUTE_SELECTOR_MESSAGE.format(field=field, kind=kind, single=single, many=single + "s")


def not_found_message(kind: str, name: str) -> str:
    """The API server's NotFound message, which is what the plugin reports for a missing route."""
    newest = ROUTER_OBJECTS[kind][0]
    return f'{newest.plural}.{newest.group} "{name}" not found'


# -- configuration -------------------------------------------------------------------------


def config_of(routing: RolloutTrafficRouting | None) -> GatewayAPITrafficRouting | None:
    """The router's config: the first-class field, else the plugin's entry (None: neither)."""
    if routing is None:
        return None
    if routing.gateway_api is not None:
        return routing.gateway_api
    raw = (routing.plugins or {}).get(GATEWAY_API_PLUGIN)
    if not isinstance(raw, dict):
        return None
    try:
        return GatewayAPITrafficRouting.from_dict(raw)
    except pydantic.ValidationError as err:
        raise TrafficRoutingError(f"invalid {GATEWAY_API_PLUGIN} config: {err}") from None


def in_progress_label(config: GatewayAPITrafficRouting, weight: int) -> tuple[str, str | None]:
    """The plugin's ensureInProgressLabel: (key, value) to set, or (key, None) to remove; an
    empty key or value falls back to the default, as in the plugin."""
    key = config.in_progress_label_key or IN_PROGRESS_LABEL_KEY
    if weight == 0:
        return key, None
    return key, config.in_progress_label_value or IN_PROGRESS_LABEL_VALUE


@dataclass(frozen=True)
class Route:
    kind: str
    name: str
    use_header_routes: bool


def routes(config: GatewayAPITrafficRouting) -> list[Route]:
    """Every configured route, by kind: the list's entries, then the single name (which the
    plugin adds with useHeaderRoutes)."""
    out: list[Route] = []
    for kind, single, many in (
        ("HTTPRoute", config.http_route, config.http_routes),
        ("GRPCRoute", config.grpc_route, config.grpc_routes),
        ("TCPRoute", config.tcp_route, config.tcp_routes),
        ("TLSRoute", config.tls_route, config.tls_routes),
    ):
        for entry in many or []:
            out.append(Route(kind, entry.name, bool(entry.use_header_routes)))
        if single:
            out.append(Route(kind, single, True))
    return out


# -- rules ---------------------------------------------------------------------------------


def _ref_name(ref: Obj) -> str:
    return str(ref.get("name") or "")


def is_weighted(rule: Obj, canary: str, stable: str) -> bool:
    names = {_ref_name(ref) for ref in rule.get("backendRefs") or []}
    return canary in names and stable in names


def weighted_rules(rules: list[Obj], canary: str, stable: str) -> list[Obj]:
    return [rule for rule in rules if is_weighted(rule, canary, stable)]


def _with_defaults(rule: Obj, kind: str) -> Obj:
    """The rule as the API server stores it (the CRDs' defaults filled in), for comparing."""
    out = copy.deepcopy(rule)
    out.pop("name", None)
    for ref in out.get("backendRefs") or []:
        ref.setdefault("group", "")
        ref.setdefault("kind", "Service")
        ref.setdefault("weight", 1)
    for f in out.get("filters") or []:
        mirror = f.get("requestMirror")
        if isinstance(mirror, dict) and isinstance(mirror.get("backendRef"), dict):
            mirror["backendRef"].setdefault("group", "")
            mirror["backendRef"].setdefault("kind", "Service")
    if kind == "HTTPRoute":
        if not out.get("matches"):
            out["matches"] = [{}]
        for match in out["matches"]:
            path = match.setdefault("path", {})
            path.setdefault("type", "PathPrefix")
            path.setdefault("value", "/")
            for header in match.get("headers") or []:
                header.setdefault("type", "Exact")
            for param in match.get("queryParams") or []:
                param.setdefault("type", "Exact")
    return out


def fingerprint(rule: Obj, kind: str = "HTTPRoute") -> str:
    text = json.dumps(_with_defaults(rule, kind), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_managed_name(rule_name: str, base: str) -> bool:
    """The plugin's rule names for a managed route: `<base>` and `<base>-<n>`."""
    if rule_name == base:
        return True
    suffix = rule_name.removeprefix(base + "-")
    return suffix != rule_name and suffix.isdigit()


def _quote_meta(text: str) -> str:
    """Go's regexp.QuoteMeta."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in text)


def header_match(match: HeaderRoutingMatch, kind: str = "HTTPRoute") -> Obj:
    value = match.header_value or StringMatch()
    if value.exact:
        return {"name": match.header_name, "type": "Exact", "value": value.exact}
    if value.prefix:
        if kind == "GRPCRoute":  # the plugin's getGRPCHeaderRouteRuleList: neither anchored
            regex = value.prefix + ".*"  # nor quoted
        else:
            regex = "^" + _quote_meta(value.prefix) + ".*"
        return {"name": match.header_name, "type": "RegularExpression", "value": regex}
    if value.regex:
        return {"name": match.header_name, "type": "RegularExpression", "value": value.regex}
    raise TrafficRoutingError(INVALID_HEADER_MATCH_TYPE_MESSAGE)


def _backend(service: str, port: Any) -> Obj:
    ref: Obj = {"group": "", "kind": "Service", "name": service}
    if port is not None:
        ref["port"] = port
    return ref


def _port_of(rules: list[Obj], service: str) -> Any:
    for rule in rules:
        for ref in rule.get("backendRefs") or []:
            if _ref_name(ref) == service and ref.get("port") is not None:
                return ref["port"]
    return None


def build_header_rules(
    route: SetHeaderRoute,
    weighted: list[Obj],
    *,
    canary: str,
    name: str,
    kind: str = "HTTPRoute",
) -> list[Obj]:
    """One rule per weighted rule: its matches (a GRPCRoute's: the method) with the headers
    added, its filters, and the canary Service at its port."""
    headers = [header_match(m, kind) for m in route.match or []]
    rules = []
    for index, source in enumerate(weighted):
        rule: Obj = {"name": name if index == 0 else f"{name}-{index}"}
        if not source.get("matches"):
            matches: list[Obj] = [{"headers": copy.deepcopy(headers)}]
        else:
            matches = []
            for match in source["matches"]:
                merged = {k: copy.deepcopy(v) for k, v in match.items() if k != "headers"}
                merged["headers"] = copy.deepcopy(match.get("headers") or []) + copy.deepcopy(
                    headers
                )
                matches.append(merged)
        rule["matches"] = matches
        if source.get("filters"):
            rule["filters"] = copy.deepcopy(source["filters"])
        rule["backendRefs"] = [_backend(canary, _port_of([source], canary))]
        rules.append(rule)
    return rules


def mirror_filter(weighted: list[Obj], *, canary: str, percentage: int | None) -> Obj:
    mirror: Obj = {"backendRef": _backend(canary, _port_of(weighted, canary))}
    if percentage is not None:
        mirror["percent"] = percentage
    return {"type": MIRROR, "requestMirror": mirror}


def is_mirror_to(f: Obj, service: str) -> bool:
    ref = (f.get("requestMirror") or {}).get("backendRef") or {}
    return f.get("type") == MIRROR and _ref_name(ref) == service


def _string_value(match: StringMatch) -> str:
    return match.exact or match.prefix or match.regex or ""


def _path_match(match: StringMatch) -> Obj:
    if match.exact:
        return {"type": "Exact", "value": match.exact}
    if match.prefix:
        return {"type": "PathPrefix", "value": match.prefix}
    if match.regex:
        return {"type": "RegularExpression", "value": match.regex}
    return {}


def _mirror_header(name: str, match: StringMatch) -> Obj:
    if match.exact:
        return {"name": name, "type": "Exact", "value": match.exact}
    if match.regex:
        return {"name": name, "type": "RegularExpression", "value": match.regex}
    if match.prefix:
        return {"name": name, "type": "RegularExpression", "value": match.prefix + ".*"}
    return {"name": name}


def http_matches(matches: Sequence[RouteMatch]) -> list[Obj]:
    """A mirror route's matches as HTTPRouteMatches (headers sorted by name)."""
    out = []
    for match in matches:
        converted: Obj = {}
        if match.method is not None:
            converted["method"] = _string_value(match.method)
        if match.path is not None:
            converted["path"] = _path_match(match.path)
        if match.headers:
            converted["headers"] = [
                _mirror_header(name, value) for name, value in sorted(match.headers.items())
            ]
        out.append(converted)
    return out


def build_mirror_rule(
    route: SetMirrorRoute, weighted: list[Obj], *, canary: str, stable: str
) -> Obj:
    """`mirrorMode: rule`: the route's requests go to the stable Service, mirrored to the canary."""
    return {
        "name": route.name,
        "matches": http_matches(route.match or []),
        "filters": [mirror_filter(weighted, canary=canary, percentage=route.percentage)],
        "backendRefs": [_backend(stable, _port_of(weighted, stable))],
    }


# -- the record of managed rules -------------------------------------------------------------


def read_record(route: Obj) -> dict[str, dict[str, Obj]]:
    """{rollout: {managed route: {"rules": [fingerprint, ...], "mirrorFilter": bool}}}"""
    text = ((route.get("metadata") or {}).get("annotations") or {}).get(MANAGED_ANNOTATION)
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _record_text(record: dict[str, Any]) -> str | None:
    cleaned = {k: v for k, v in record.items() if v}
    return json.dumps(cleaned, sort_keys=True, separators=(",", ":")) if cleaned else None


def read_experiment_record(route: Obj) -> dict[str, list[str]]:
    """{rollout: [the experiment Services it added to the route's weighted rules]}"""
    text = ((route.get("metadata") or {}).get("annotations") or {}).get(EXPERIMENT_ANNOTATION)
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(record, dict):
        return {}
    return {
        str(rollout): [str(n) for n in names]
        for rollout, names in record.items()
        if isinstance(names, list)
    }


def experiment_port(service: Obj) -> int:
    """The port of an experiment Service's backendRef, as the plugin picks it: the port named
    `http`, else the first, else 8080 (a Service without ports)."""
    ports = [p for p in (service.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
    for port in ports:
        if port.get("name") == EXPERIMENT_PORT_NAME and port.get("port") is not None:
            return int(port["port"])
    if ports and ports[0].get("port") is not None:
        return int(ports[0]["port"])
    return DEFAULT_EXPERIMENT_PORT


def service_not_found_message(name: str) -> str:
    """The API server's NotFound message for a Service (what the plugin's Get returns)."""
    return f'services "{name}" not found'


# -- the router ----------------------------------------------------------------------------


class GatewayAPIRouter:
    """The plugin's behaviour, natively; routes come in the context, writes go through its
    writer."""

    def __init__(self, ctx: RolloutContext, config: GatewayAPITrafficRouting) -> None:
        self.ctx, self.config = ctx, config
        self.namespace = config.namespace or ctx.namespace

    @property
    def type(self) -> str:
        return TYPE

    @property
    def canary_service(self) -> str:
        return str(self.ctx.canary_spec.canary_service or "")

    @property
    def stable_service(self) -> str:
        return str(self.ctx.canary_spec.stable_service or "")

    def _routes(self) -> list[Route]:
        configured = routes(self.config)
        if not configured:
            raise TrafficRoutingError(NO_ROUTES_MESSAGE)
        return configured

    def _read(self, route: Route) -> Obj:
        self.ctx.routed.resource(route.kind)  # raises when the kind is not served
        current = self.ctx.routed.get(route.kind, self.namespace, route.name)
        if current is None:
            raise TrafficRoutingError(not_found_message(route.kind, route.name))
        return current

    def _weighted(self, route: Route, rules: list[Obj]) -> list[Obj]:
        found = weighted_rules(rules, self.canary_service, self.stable_service)
        if not found:
            raise TrafficRoutingError(BACKEND_REF_NOT_FOUND_MESSAGE.format(FIELDS[route.kind]))
        return found

    def _max_weight(self) -> int:
        routing = self.ctx.canary_spec.traffic_routing
        value = routing.max_traffic_weight if routing is not None else None
        return int(value) if value is not None else DEFAULT_MAX_TRAFFIC_WEIGHT

    # -- weights

    def calculate_weighted(
        self,
        route: Route,
        current: Obj,
        weight: int,
        additional: Sequence[WeightDestination],
    ) -> tuple[list[Obj], list[str]]:
        """The route's rules with the weights set on the weighted rules' backendRefs, the
        experiment Services among `additional` added to them and those of an earlier experiment
        removed; and the experiment Services this rollout now has on the route."""
        out = copy.deepcopy((current.get("spec") or {}).get("rules") or [])
        extra = {d.service_name: d.weight for d in additional if d.service_name}
        stable_weight = self._max_weight() - weight - sum(extra.values())
        recorded = set(read_experiment_record(current).get(self.ctx.name, []))
        weighted = self._weighted(route, out)
        named = {_ref_name(ref) for rule in weighted for ref in rule.get("backendRefs") or []}
        # A Service the weighted rules name without our record is the user's: it only gets its
        # weight. Ours are added to every weighted rule, so all of them are removed at the end.
        ours = sorted(s for s in extra if s in recorded or s not in named)
        for rule in weighted:
            refs = [
                ref
                for ref in rule.get("backendRefs") or []
                if _ref_name(ref) not in recorded or _ref_name(ref) in extra
            ]
            for ref in refs:
                name = _ref_name(ref)
                if name == self.canary_service:
                    ref["weight"] = weight
                elif name == self.stable_service:
                    ref["weight"] = stable_weight
                elif name in extra:
                    ref["weight"] = extra[name]
            present = {_ref_name(ref) for ref in refs}
            refs.extend(
                self._experiment_backend(service, service_weight)
                for service, service_weight in extra.items()
                if service in ours and service not in present
            )
            rule["backendRefs"] = refs
        return out, ours

    def _experiment_backend(self, service: str, weight: int) -> Obj:
        found = self.ctx.services.get(service)
        if found is None:
            # Created by the experiment before its status names it, but maybe not cached yet.
            raise TrafficRoutingError(service_not_found_message(service))
        ref = _backend(service, experiment_port(found))
        ref["namespace"] = self.ctx.namespace
        ref["weight"] = weight
        return ref

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Gateway API routes select by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        for route in self._routes():
            current = self._read(route)
            desired, experiments = self.calculate_weighted(route, current, weight, additional)
            record = read_experiment_record(current)
            record[self.ctx.name] = experiments
            label = (
                None
                if self.config.disable_in_progress_label
                else in_progress_label(self.config, weight)
            )
            self._persist(
                route,
                current,
                desired,
                {EXPERIMENT_ANNOTATION: _record_text(record)},
                f"weight {weight}",
                label=label,
            )

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """True when every route, as last read or written, carries the weight."""
        for route in self._routes():
            current = self.ctx.routed.get(route.kind, self.namespace, route.name)
            if current is None:
                return False
            rules = (current.get("spec") or {}).get("rules") or []
            try:
                desired, _ = self.calculate_weighted(route, current, weight, additional)
            except TrafficRoutingError:
                return False
            if desired != rules:
                return False
        return True

    # -- header and mirror routes

    def _header_routes(self, kinds: Sequence[str] = HEADER_ROUTE_KINDS) -> list[Route]:
        """The routes with useHeaderRoutes of `kinds`: header routes go on HTTPRoutes and
        GRPCRoutes, as the plugin's; mirror routes on HTTPRoutes only."""
        return [r for r in self._routes() if r.kind in kinds and r.use_header_routes]

    def _managed_names(self) -> set[str]:
        routing = self.ctx.canary_spec.traffic_routing
        return {m.name for m in (routing.managed_routes if routing else None) or []}

    def _without(
        self,
        rules: list[Obj],
        record: dict[str, dict[str, Obj]],
        names: set[str],
        *,
        strip_mirror: bool = True,
    ) -> list[Obj]:
        """`rules` without this rollout's managed rules of `names` (by fingerprint or name),
        and without its mirror filters when one of them set one (and `strip_mirror`)."""
        mine = record.get(self.ctx.name, {})
        prints = {p for n in names for p in (mine.get(n) or {}).get("rules") or []}
        strip_mirror = strip_mirror and any((mine.get(n) or {}).get("mirrorFilter") for n in names)
        out = []
        for rule in rules:
            rule_name = str(rule.get("name") or "")
            if fingerprint(rule) in prints or any(
                rule_name and is_managed_name(rule_name, n) for n in names
            ):
                continue
            if not (strip_mirror and is_weighted(rule, self.canary_service, self.stable_service)):
                out.append(rule)
                continue
            stripped = copy.deepcopy(rule)
            kept = [
                f for f in rule.get("filters") or [] if not is_mirror_to(f, self.canary_service)
            ]
            if kept:
                stripped["filters"] = kept
            else:
                stripped.pop("filters", None)
            out.append(stripped)
        return out

    @staticmethod
    def _forget(record: dict[str, dict[str, Obj]], rollout: str, names: set[str]) -> Obj:
        out = copy.deepcopy(record)
        mine = {k: v for k, v in out.get(rollout, {}).items() if k not in names}
        if mine:
            out[rollout] = mine
        else:
            out.pop(rollout, None)
        return out

    def _remove(
        self, names: set[str], *, skip_missing: bool, kinds: Sequence[str] = HEADER_ROUTE_KINDS
    ) -> None:
        for route in self._header_routes(kinds):
            if skip_missing and self.ctx.routed.get(route.kind, self.namespace, route.name) is None:
                continue
            current = self._read(route)
            rules = (current.get("spec") or {}).get("rules") or []
            record = read_record(current)
            desired = self._without(rules, record, names)
            new_record = self._forget(record, self.ctx.name, names)
            self._persist(
                route,
                current,
                desired,
                {MANAGED_ANNOTATION: _record_text(new_record)},
                "managed routes removed",
            )

    def _upsert(self, route: Route, name: str, build: Any, *, strip_mirror: bool = True) -> None:
        """Replace managed route `name`'s rules on `route`: `build(kept rules, weighted rules)`
        returns the new rules and the record's entry for `name`."""
        current = self._read(route)
        rules = (current.get("spec") or {}).get("rules") or []
        record = read_record(current)
        kept = self._without(rules, record, {name}, strip_mirror=strip_mirror)
        new_rules, entry = build(kept, self._weighted(route, kept))
        new_rules = _as_stored(new_rules, rules)
        record = self._forget(record, self.ctx.name, {name})
        record.setdefault(self.ctx.name, {})[name] = entry
        self._persist(
            route,
            current,
            new_rules,
            {MANAGED_ANNOTATION: _record_text(record)},
            f"managed route `{name}` set",
        )

    def set_header_route(self, route: SetHeaderRoute) -> None:
        name = route.name or ""
        if not route.match:
            self._remove({name}, skip_missing=False)
            return
        canary = self.canary_service

        def builder(kind: str) -> Callable[[list[Obj], list[Obj]], tuple[list[Obj], Obj]]:
            def build(kept: list[Obj], weighted: list[Obj]) -> tuple[list[Obj], Obj]:
                added = build_header_rules(route, weighted, canary=canary, name=name, kind=kind)
                return kept + added, {"rules": [fingerprint(r) for r in added]}

            return build

        for target in self._header_routes():
            self._upsert(target, name, builder(target.kind))

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        if not route.match:
            self._remove({route.name}, skip_missing=False, kinds=MIRROR_ROUTE_KINDS)
            return
        canary, stable = self.canary_service, self.stable_service
        as_rule = self.config.mirror_mode == "rule"

        def build(kept: list[Obj], weighted: list[Obj]) -> tuple[list[Obj], Obj]:
            if as_rule:
                rule = build_mirror_rule(route, weighted, canary=canary, stable=stable)
                return [*kept, rule], {"rules": [fingerprint(rule)]}
            wanted = mirror_filter(weighted, canary=canary, percentage=route.percentage)
            out = []
            for rule in kept:
                filters = rule.get("filters") or []
                present = [f for f in filters if is_mirror_to(f, canary)]
                if not is_weighted(rule, canary, stable) or _same_mirror(present, wanted):
                    out.append(rule)
                    continue
                others = [f for f in filters if not is_mirror_to(f, canary)]
                out.append({**copy.deepcopy(rule), "filters": [*others, wanted]})
            return out, {"mirrorFilter": True}

        for target in self._header_routes(MIRROR_ROUTE_KINDS):
            self._upsert(target, route.name, build, strip_mirror=as_rule)

    def remove_managed_routes(self) -> None:
        """Every managed rule this rollout recorded on its routes, and the plugin's rules named
        after its managedRoutes; a route that no longer exists has none."""
        names = self._managed_names()
        for route in self._header_routes():
            current = self.ctx.routed.get(route.kind, self.namespace, route.name)
            if current is not None:
                names |= set(read_record(current).get(self.ctx.name, {}))
        if names:
            self._remove(names, skip_missing=True)

    # -- the one write per route

    def _persist(
        self,
        route: Route,
        current: Obj,
        rules: list[Obj],
        records: dict[str, str | None],
        what: str,
        *,
        label: tuple[str, str | None] | None = None,
    ) -> None:
        """Write `rules`, the `records` (annotation -> text, None to remove) and (when given)
        the label `(key, value or None to remove)` to `route` in one fenced merge patch;
        nothing when they are already there."""
        ctx = self.ctx
        meta = current.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        before: Obj = {
            "metadata": {"annotations": {key: annotations.get(key) for key in records}},
            "spec": {"rules": (current.get("spec") or {}).get("rules") or []},
        }
        after: Obj = {
            "metadata": {"annotations": dict(records)},
            "spec": {"rules": rules},
        }
        if label is not None:
            key, value = label
            before["metadata"]["labels"] = {key: (meta.get("labels") or {}).get(key)}
            after["metadata"]["labels"] = {key: value}
        patch = merge_patch(before, after)
        if not patch:
            return
        resource = ctx.routed.resource(route.kind)
        log.info(
            "%s: updating %s %s/%s (%s)", ctx.key, route.kind, self.namespace, route.name, what
        )
        version = (current.get("metadata") or {}).get("resourceVersion")
        try:
            written = ctx.writer.patch(resource, self.namespace, route.name, fenced(patch, version))
        except Exception as err:
            ctx.event(
                "GatewayAPIUpdateError",
                f"error updating Gateway API {json.dumps(route.name)}: {err}",
                warning=True,
            )
            raise
        ctx.routed.put(RouterRef(route.kind, self.namespace, route.name), written)
        ctx.event(f"{route.kind}Modified", f"{route.kind} `{route.name}` modified: {what}")


def _as_stored(desired: list[Obj], stored: list[Obj]) -> list[Obj]:
    """`desired`, where a rule equals a stored one but for what the server fills in or prunes
    (defaults, the rule name on Gateway API before 1.2), the stored rule, each used once."""
    unused = list(stored)
    out = []
    for rule in desired:
        print_ = fingerprint(rule)
        match = next(
            (
                s
                for s in unused
                if fingerprint(s) == print_ and s.get("name") in (None, rule.get("name"))
            ),
            None,
        )
        if match is None:
            out.append(rule)
        else:
            unused.remove(match)
            out.append(match)
    return out


def _same_mirror(present: list[Obj], wanted: Obj) -> bool:
    """One mirror filter to the canary equal to the wanted one; a stored one without `percent`
    counts as equal (Gateway API before 1.2 prunes the field)."""
    if len(present) != 1:
        return False
    have = copy.deepcopy(present[0])
    want = copy.deepcopy(wanted)
    if "percent" not in have.get("requestMirror", {}):
        want["requestMirror"].pop("percent", None)
    return _with_defaults({"filters": [have]}, "") == _with_defaults({"filters": [want]}, "")
