"""The Traefik router: the weights of a weighted TraefikService.

As argo-rollouts' rollout/trafficrouting/traefik: the TraefikService `weightedTraefikServiceName`
(the user's, never created) lists the stable and canary Services under `spec.weighted.services`;
the canary's entry gets the weight and the stable's 100 minus it. Other entries are left as
they are. Traefik has no header or mirror routes here, and cannot report the weight it applies.

The two entries are owned: each reconcile compares them with the desired weights and merge-patches
the list (fenced by the resourceVersion read) when they differ, so a weight someone else changed
is put back. The kind is served as traefik.io (Traefik v2.10 and later) or traefik.containo.us
(before), whichever the cluster serves, newest first.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import Any

from rollout_workers.api.rollout import (
    SetHeaderRoute,
    SetMirrorRoute,
    TraefikTrafficRouting,
    WeightDestination,
)
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.routerrefs import RouterRef

log = logging.getLogger(__name__)


TYPE = "Traefik"
KIND = "TraefikService"
#: Argo's messages for a TraefikService it cannot weight.
SERVICES_NOT_FOUND = "spec.weighted.services was not found in traefik service manifest"
CANARY_NOT_FOUND = "traefik canary service was not found"
STABLE_NOT_FOUND = "traefik stable service was not found"
NAME_NOT_FOUND = "name field was not found in service"
TYPE_ASSERTION = "Failed type assertion setting weight for traefik service"
UPDATE_ERROR_REASON = "TraefikServiceUpdateError"


def not_found_message(resource_group: str, name: str) -> str:
    """The API server's NotFound, which is what Argo reports for a missing TraefikService."""
    return f'traefikservices.{resource_group} "{name}" not found'


def _find(services: list[Any], name: str) -> Obj | None:
    for service in services:
        if not isinstance(service, dict):
            raise TrafficRoutingError(TYPE_ASSERTION)
        if "name" not in service:
            raise TrafficRoutingError(NAME_NOT_FOUND)
        if service["name"] == name:
            return service
    return None


def calculate_services(
    traefik_service: Obj, *, canary_service: str, stable_service: str, weight: int
) -> list[Any]:
    """`spec.weighted.services` with the canary's weight and the stable's 100 minus it (Argo's
    order of checks: the list, the canary, the stable)."""
    weighted = (traefik_service.get("spec") or {}).get("weighted")
    services = weighted.get("services") if isinstance(weighted, dict) else None
    if not isinstance(services, list):
        raise TrafficRoutingError(SERVICES_NOT_FOUND)
    services = copy.deepcopy(services)
    canary = _find(services, canary_service)
    if canary is None:
        raise TrafficRoutingError(CANARY_NOT_FOUND)
    canary["weight"] = weight
    stable = _find(services, stable_service)
    if stable is None:
        raise TrafficRoutingError(STABLE_NOT_FOUND)
    stable["weight"] = 100 - weight
    return services


class TraefikRouter:
    """Argo's Traefik reconciler; the TraefikService comes in the context."""

    def __init__(self, ctx: RolloutContext, traefik: TraefikTrafficRouting) -> None:
        self.ctx, self.traefik = ctx, traefik

    @property
    def type(self) -> str:
        return TYPE

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Traefik selects by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        ctx = self.ctx
        resource = ctx.routed.resource(KIND)  # raises when the kind is not served
        name = self.traefik.weighted_traefik_service_name
        current = ctx.routed.get(KIND, ctx.namespace, name)
        if current is None:
            raise TrafficRoutingError(not_found_message(resource.group, name))
        services = calculate_services(
            current,
            canary_service=ctx.canary_spec.canary_service or "",
            stable_service=ctx.canary_spec.stable_service or "",
            weight=weight,
        )
        if services == current["spec"]["weighted"]["services"]:
            return
        log.info("%s: updating TraefikService %s to weight %d", ctx.key, name, weight)
        version = (current.get("metadata") or {}).get("resourceVersion")
        patch = fenced({"spec": {"weighted": {"services": services}}}, version)
        try:
            written = ctx.writer.patch(resource, ctx.namespace, name, patch)
        except Exception as err:
            ctx.event(
                UPDATE_ERROR_REASON,
                f'Error updating traefik service "{name}": {err}',
                warning=True,
            )
            raise
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), written)

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Not a Traefik feature in Argo (validation rejects the step)."""

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Not a Traefik feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """Traefik cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """Traefik manages no header or mirror routes."""
