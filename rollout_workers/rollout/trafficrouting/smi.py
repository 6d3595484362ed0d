"""The SMI router: a controller-owned TrafficSplit carries the canary weight.

As argo-rollouts' rollout/trafficrouting/smi: the TrafficSplit is named `trafficSplitName`
(default: the rollout's name) and splits `rootService` (default: the stable Service) between
the canary Service (the weight), any additional destinations (experiment services), and the
stable Service (100 minus the others), in that order. v1alpha2 and v1alpha3 write weights as
integers; v1alpha1 as Kubernetes quantities, which for whole numbers serialise as the number's
string ("20").

The spec is owned whole: each reconcile compares it with the desired one and merge-patches the
difference (Argo's two-way patch of the spec), so a change made by someone else is undone. A
TrafficSplit of that name that the rollout does not control is an error, as in Argo. The
controller reads the TrafficSplit before the reconcile (`ctx.routed`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rollout_workers.api.rollout import (
    SetHeaderRoute,
    SetMirrorRoute,
    SMITrafficRouting,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists, Conflict
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.rollout.trafficrouting.nginx import controlled_by
from rollout_workers.routerrefs import RouterRef

log = logging.getLogger(__name__)


TYPE = "SMI"
KIND = "TrafficSplit"


def traffic_split_name(rollout: str, smi: SMITrafficRouting) -> str:
    return smi.traffic_split_name or rollout


def calculate_backends(
    *,
    version: str,
    canary_service: str,
    stable_service: str,
    weight: int,
    additional: Sequence[WeightDestination] = (),
) -> list[Obj]:
    """The backends Argo writes: canary, each additional destination, then the stable."""

    def backend(service: str, value: int) -> Obj:
        return {"service": service, "weight": str(value) if version == "v1alpha1" else value}

    backends = [backend(canary_service, weight)]
    stable_weight = 100 - weight
    for dest in additional:
        backends.append(backend(dest.service_name or "", dest.weight))
        stable_weight -= dest.weight
    backends.append(backend(stable_service, stable_weight))
    return backends


def build_traffic_split(
    resource: r.Resource,
    *,
    name: str,
    owner: Obj,
    root_service: str,
    backends: list[Obj],
) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": name,
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Rollout",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"service": root_service, "backends": backends},
    }


def calculate_spec_patch(current: Obj, desired: Obj) -> Obj:
    """The merge patch of `current`'s spec into `desired`'s (backends replaced whole); empty
    when they agree."""
    return merge_patch({"spec": current.get("spec") or {}}, {"spec": desired["spec"]})


class SMIRouter:
    """Argo's SMI reconciler; the TrafficSplit comes in the context, writes go through its
    writer."""

    def __init__(self, ctx: RolloutContext, smi: SMITrafficRouting) -> None:
        self.ctx, self.smi = ctx, smi

    @property
    def type(self) -> str:
        return TYPE

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """SMI selects by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        ctx = self.ctx
        resource = ctx.routed.resource(KIND)
        name = traffic_split_name(ctx.name, self.smi)
        canary = ctx.canary_spec
        desired = build_traffic_split(
            resource,
            name=name,
            owner=ctx.obj,
            root_service=self.smi.root_service or canary.stable_service or "",
            backends=calculate_backends(
                version=resource.version,
                canary_service=canary.canary_service or "",
                stable_service=canary.stable_service or "",
                weight=weight,
                additional=additional,
            ),
        )
        current = ctx.routed.get(KIND, ctx.namespace, name)
        if current is None:
            try:
                created = ctx.writer.create(resource, ctx.namespace, desired)
                ctx.routed.put(RouterRef(KIND, ctx.namespace, name), created)
            except AlreadyExists:
                # Created since it was read: look again in a fresh reconcile.
                raise Conflict(409, "AlreadyExists", f"TrafficSplit {name} exists") from None
            except Exception as err:
                ctx.event(
                    "TrafficSplitNotCreated",
                    f"TrafficSplit `{name}` failed creation: {err}",
                    warning=True,
                )
                raise
            ctx.event("TrafficSplitCreated", f"TrafficSplit `{name}` created")
            return
        if not controlled_by(current, str(ctx.obj["metadata"].get("uid", ""))):
            raise TrafficRoutingError(f"Rollout does not own TrafficSplit `{name}`")
        patch = calculate_spec_patch(current, desired)
        if not patch:
            return
        log.info("%s: updating TrafficSplit %s to weight %d", ctx.key, name, weight)
        version = (current.get("metadata") or {}).get("resourceVersion")
        patched = ctx.writer.patch(resource, ctx.namespace, name, fenced(patch, version))
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), patched)
        ctx.event("TrafficSplitModified", f"TrafficSplit `{name}` modified")

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Header routes are not an SMI feature in Argo (validation rejects the step)."""

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Mirror routes are not an SMI feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """SMI cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """SMI manages no header or mirror routes."""
