"""The APISIX router: backend weights of an ApisixRoute, and header routes as ApisixRoutes of
their own.

As argo-rollouts' rollout/trafficrouting/apisix:

- the weight: in the ApisixRoute `route.name` (the user's), each HTTP rule of `route.rules`
  (default: the rule named as the route) gives the canary Service's backend the weight and the
  stable Service's 100 minus it;
- a header route (`setHeaderRoute`, named in `managedRoutes`) is an ApisixRoute of the step's
  name, created as a copy of the route and owned by the rollout: in each of those rules the
  canary backend gets 100, the stable backend is removed, the priority goes one above the
  copied rule's, and the match's `exprs` become the header matches (exact: Equal; regex:
  RegexMatch; prefix: RegexMatch `^prefix.*`). A step without matches deletes it;
- at the end or on abort every managed route the rollout owns is deleted.

Level-triggered: each reconcile compares the rules it owns (the weighted rules; the header
route's rules) with the desired ones and merge-patches `spec.http` (fenced by the
resourceVersion read) when they differ, so a change someone else made is put back. An ApisixRoute
of a managed route's name that the rollout does not own is an error, as in Argo.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from typing import Any

from rollout_workers.api.rollout import (
    ApisixTrafficRouting,
    HeaderRoutingMatch,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube.errors import AlreadyExists, Conflict
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.rollout.trafficrouting.nginx import controlled_by
from rollout_workers.routerrefs import RouterRef

log = logging.getLogger(__name__)


TYPE = "Apisix"
KIND = "ApisixRoute"
#: Argo's messages and event reasons.
HTTP_NOT_FOUND = "spec.http was not found in Apisix Route manifest"
RULE_NOT_FOUND = "Apisix http route rule {} not found"
RULE_NAME_NOT_FOUND = "Apisix http route rule name field not found"
BACKENDS_NOT_FOUND = "Apisix http route backends not found"
SERVICE_NAME_NOT_FOUND = "serviceName field was not found in backend"
BACKEND_NOT_FOUND = "apisix route {} backend was not found"
TYPE_ASSERTION = "Failed type assertion for Apisix http route"
DUPLICATE_ROUTE = "duplicate ApisixRoute [{}] already exists"
UPDATE_ERROR_REASON = "ApisixRouteUpdateError"
CREATE_ERROR_REASON = "ApisixRouteCreateError"
DELETE_ERROR_REASON = "ApisixRouteDeleteError"


def not_found_message(name: str) -> str:
    """The API server's NotFound, which is what Argo reports for a missing ApisixRoute."""
    return f'apisixroutes.apisix.apache.org "{name}" not found'


def _http(route: Obj) -> list[Any]:
    http = (route.get("spec") or {}).get("http")
    if not isinstance(http, list):
        raise TrafficRoutingError(HTTP_NOT_FOUND)
    return http


def find_rule(http: list[Any], name: str) -> Obj:
    for rule in http:
        if not isinstance(rule, dict):
            raise TrafficRoutingError(TYPE_ASSERTION)
        if "name" not in rule:
            raise TrafficRoutingError(RULE_NAME_NOT_FOUND)
        if not isinstance(rule["name"], str):
            raise TrafficRoutingError(f"{TYPE_ASSERTION} rule name")
        if rule["name"] == name:
            return rule
    raise TrafficRoutingError(RULE_NOT_FOUND.format(name))


def backends_of(rule: Obj) -> list[Any]:
    if "backends" not in rule:
        raise TrafficRoutingError(BACKENDS_NOT_FOUND)
    backends = rule["backends"]
    if not isinstance(backends, list):
        raise TrafficRoutingError(f"{TYPE_ASSERTION} backends")
    return backends


def _service_name(backend: Any) -> str:
    if not isinstance(backend, dict):
        raise TrafficRoutingError(f"{TYPE_ASSERTION} backends")
    if "serviceName" not in backend:
        raise TrafficRoutingError(SERVICE_NAME_NOT_FOUND)
    return str(backend["serviceName"])


def set_backend_weight(backends: list[Any], service: str, weight: int) -> None:
    for backend in backends:
        if _service_name(backend) == service:
            backend["weight"] = weight
            return
    raise TrafficRoutingError(BACKEND_NOT_FOUND.format(service))


def header_exprs(matches: Sequence[HeaderRoutingMatch]) -> list[Obj]:
    """APISIX match expressions for the header matches (Argo's apisixExprs)."""
    exprs: list[Obj] = []
    for match in matches:
        subject = {"scope": "Header", "name": match.header_name}
        value = match.header_value
        if value is None:
            continue
        if value.exact:
            exprs.append({"subject": dict(subject), "op": "Equal", "value": value.exact})
        if value.regex:
            exprs.append({"subject": dict(subject), "op": "RegexMatch", "value": value.regex})
        if value.prefix:
            exprs.append(
                {"subject": dict(subject), "op": "RegexMatch", "value": f"^{value.prefix}.*"}
            )
    return exprs


class ApisixRouter:
    """Argo's APISIX reconciler; the ApisixRoutes come in the context."""

    def __init__(self, ctx: RolloutContext, apisix: ApisixTrafficRouting) -> None:
        self.ctx, self.apisix = ctx, apisix

    @property
    def type(self) -> str:
        return TYPE

    @property
    def route_name(self) -> str:
        return self.apisix.route.name if self.apisix.route is not None else ""

    def rule_names(self) -> list[str]:
        rules = self.apisix.route.rules if self.apisix.route is not None else None
        return list(rules) if rules is not None else [self.route_name]

    def _read(self, name: str) -> Obj | None:
        self.ctx.routed.resource(KIND)  # raises when the kind is not served
        return self.ctx.routed.get(KIND, self.ctx.namespace, name)

    def _route(self) -> Obj:
        current = self._read(self.route_name)
        if current is None:
            raise TrafficRoutingError(not_found_message(self.route_name))
        return current

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """APISIX selects by Service, not by pod hash: nothing to do."""

    # -- weights

    def calculate_http(self, route: Obj, weight: int) -> list[Any]:
        http = copy.deepcopy(_http(route))
        canary = self.ctx.canary_spec
        for name in self.rule_names():
            backends = backends_of(find_rule(http, name))
            set_backend_weight(backends, canary.canary_service or "", weight)
            set_backend_weight(backends, canary.stable_service or "", 100 - weight)
        return http

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        current = self._route()
        http = self.calculate_http(current, weight)
        self._patch_http(current, http, what=f"weight {weight}")

    def _patch_http(self, current: Obj, http: list[Any], *, what: str) -> None:
        if http == current["spec"]["http"]:
            return
        ctx = self.ctx
        name = current["metadata"]["name"]
        log.info("%s: updating ApisixRoute %s (%s)", ctx.key, name, what)
        version = (current.get("metadata") or {}).get("resourceVersion")
        patch = fenced({"spec": {"http": http}}, version)
        try:
            written = ctx.writer.patch(ctx.routed.resource(KIND), ctx.namespace, name, patch)
        except Exception as err:
            message = f"Error updating apisix route {json.dumps(name)}: {err}"
            ctx.event(UPDATE_ERROR_REASON, message, warning=True)
            raise
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), written)

    # -- header routes

    def calculate_header_http(
        self, http: list[Any], route: SetHeaderRoute, *, new: bool
    ) -> list[Any]:
        """The header route's rules from `http` (the route's, when `new`; else its own)."""
        http = copy.deepcopy(http)
        canary = self.ctx.canary_spec
        for name in self.rule_names():
            rule = find_rule(http, name)
            backends = backends_of(rule)
            set_backend_weight(backends, canary.canary_service or "", 100)
            stable = canary.stable_service or ""
            rule["backends"] = [b for b in backends if _service_name(b) != stable]
            if new:
                priority = rule.get("priority")
                rule["priority"] = (priority if isinstance(priority, int) else 0) + 1
            match = rule.get("match")
            if not isinstance(match, dict):
                match = rule["match"] = {}
            match["exprs"] = header_exprs(route.match or [])
        return http

    def set_header_route(self, route: SetHeaderRoute) -> None:
        ctx = self.ctx
        name = route.name or ""
        base = self._route()
        existing = self._read(name)
        if existing is not None and not controlled_by(
            existing, str(ctx.obj["metadata"].get("uid", ""))
        ):
            raise TrafficRoutingError(DUPLICATE_ROUTE.format(name))
        if route.match is None:
            if existing is not None:
                self._delete(name)
            return
        if existing is not None:
            http = self.calculate_header_http(_http(existing), route, new=False)
            self._patch_http(existing, http, what=f"header route {name}")
            return
        http = self.calculate_header_http(_http(base), route, new=True)
        self._create_header_route(base, name, http)

    def _create_header_route(self, base: Obj, name: str, http: list[Any]) -> None:
        ctx = self.ctx
        meta = base.get("metadata") or {}
        owner = ctx.obj["metadata"]
        body: Obj = {
            "apiVersion": base.get("apiVersion") or ctx.routed.resource(KIND).api_version,
            "kind": KIND,
            "metadata": {
                "name": name,
                "namespace": ctx.namespace,
                **{k: copy.deepcopy(meta[k]) for k in ("labels", "annotations") if meta.get(k)},
                "ownerReferences": [
                    {
                        "apiVersion": "argoproj.io/v1alpha1",
                        "kind": "Rollout",
                        "name": owner["name"],
                        "uid": owner.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {**copy.deepcopy(base.get("spec") or {}), "http": http},
        }
        log.info("%s: creating ApisixRoute %s (header route)", ctx.key, name)
        try:
            created = ctx.writer.create(ctx.routed.resource(KIND), ctx.namespace, body)
        except AlreadyExists:
            # Created since it was read: look again in a fresh reconcile.
            raise Conflict(409, "AlreadyExists", f"ApisixRoute {name} exists") from None
        except Exception as err:
            message = f"Error create apisix route {json.dumps(name)}: {err}"
            ctx.event(CREATE_ERROR_REASON, message, warning=True)
            raise
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), created)

    def _delete(self, name: str) -> None:
        ctx = self.ctx
        log.info("%s: deleting ApisixRoute %s (managed route)", ctx.key, name)
        try:
            ctx.writer.delete(ctx.routed.resource(KIND), ctx.namespace, name)
        except Exception as err:
            message = f"Error deleting apisix route {json.dumps(name)}: {err}"
            ctx.event(DELETE_ERROR_REASON, message, warning=True)
            raise
        ctx.routed.objects.pop(RouterRef(KIND, ctx.namespace, name), None)

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Not an APISIX feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """APISIX cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """Delete each managed route's ApisixRoute that the rollout owns."""
        ctx = self.ctx
        routing = ctx.canary_spec.traffic_routing
        uid = str(ctx.obj["metadata"].get("uid", ""))
        for managed in (routing.managed_routes if routing is not None else None) or []:
            existing = self._read(managed.name)
            if existing is not None and controlled_by(existing, uid):
                self._delete(managed.name)
