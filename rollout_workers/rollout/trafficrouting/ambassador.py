"""The Ambassador router: a weighted canary copy of each Mapping.

As argo-rollouts' rollout/trafficrouting/ambassador: for each Mapping of `mappings` (the user's,
which must not set a `weight`), a canary Mapping `<mapping>-canary` is created as a copy of the
Mapping (without its metadata: no labels, annotations or owner, as in Argo) whose `service` names
the canary Service instead of the stable one (the first occurrence of the stable Service's name is
replaced, so a `:port` or `.namespace` suffix is kept) and whose `weight` is the canary's. Later
weights patch it; at weight 0 it is deleted. No header or mirror routes; the weight is not
verified. Several Mappings are handled independently and their errors reported together, as
Argo's goroutines do ("2 errors found: [...][...]").

Weight 0. Argo sets the canary Mapping's weight to 0, sleeps 5 s so that Ambassador stops sending
to the canary before the Mapping goes, then deletes it, all inside one reconcile. A reconcile here
never sleeps: the weight goes to 0 with the time recorded on the canary Mapping (the
`rollout-workers/zero-weight-since` annotation, removed if the weight rises again), and the first
reconcile at least 5 s later deletes it (the rollout is requeued for it). The end state is Argo's:
the canary Mapping at weight 0 for at least 5 s, then gone. The canary's pods are scaled down
after abortScaleDownDelaySeconds or scaleDownDelaySeconds (30 s by default), as with every
router, rather than after Argo's sleep.

Level-triggered: each reconcile compares the canary Mapping's weight with the desired one and
patches it (fenced by the resourceVersion read), so a weight someone else changed is put back,
and a canary Mapping deleted mid-update is created again. As in Argo, only the weight (and the
Mapping's existence) is owned: other edits of the canary Mapping are left as they are.

The kind: Mapping at getambassador.io v3alpha1 or v2, or the AmbassadorMapping of Emissary 2's
previews (x.getambassador.io/v3alpha1), the first the cluster serves (Argo: the controller's
`--ambassador-api-version`, default getambassador.io/v2).

Events: Argo's reasons and messages. `CanaryMappingWeightUpdate` ("Set canary mapping weight to
N") Argo records at every reconcile, which client-go folds into one Event's count; here it is
recorded when a canary Mapping's weight is written.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
from collections.abc import Sequence

from rollout_workers.api.rollout import (
    AmbassadorTrafficRouting,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists, Conflict
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.routerrefs import RouterRef, canary_mapping_name
from rollout_workers.timefmt import format_micro_time, parse_time

log = logging.getLogger(__name__)


TYPE = "Ambassador"
KIND = "Mapping"
#: When the canary Mapping's weight went to 0 (RFC 3339, microseconds).
ZERO_SINCE_ANNOTATION = "rollout-workers/zero-weight-since"
#: How long a canary Mapping stays at weight 0 before it is deleted (Argo's sleep).
DELETE_AFTER_SECONDS = 5.0

#: Argo's event reasons and messages.
MAPPING_NOT_FOUND_REASON = "AmbassadorMappingNotFound"
MAPPING_NOT_FOUND_MESSAGE = 'Ambassador mapping "{}" not found'
CONFIG_ERROR_REASON = "AmbassadorMappingConfigError"
WEIGHT_DEFINED_MESSAGE = 'Ambassador mapping "{}" can not define weight'
CLEANUP_ERROR_REASON = "CanaryMappingCleanupError"
CREATION_ERROR_REASON = "CanaryMappingCreationError"
UPDATE_ERROR_REASON = "CanaryMappingUpdateError"
WEIGHT_UPDATE_REASON = "CanaryMappingWeightUpdate"
WEIGHT_UPDATE_MESSAGE = "Set canary mapping weight to {}"


def not_found_message(resource: r.Resource, name: str) -> str:
    """The API server's NotFound, which is what Argo reports for a missing Mapping."""
    return f'{resource.plural}.{resource.group} "{name}" not found'


def mapping_weight(mapping: Obj) -> int:
    """`spec.weight` when it is an integer, else 0 (Argo's GetMappingWeight)."""
    weight = (mapping.get("spec") or {}).get("weight")
    return weight if isinstance(weight, int) and not isinstance(weight, bool) else 0


def mapping_service(mapping: Obj) -> str:
    """`spec.service` when it is a string, else '' (Argo's GetMappingService)."""
    service = (mapping.get("spec") or {}).get("service")
    return service if isinstance(service, str) else ""


def build_canary_mapping(
    base: Obj, *, resource: r.Resource, stable_service: str, canary_service: str, weight: int
) -> Obj:
    """The canary copy of `base` (Argo's buildCanaryMapping): its spec, the stable Service's
    name replaced by the canary's (first occurrence) in `service`, and `weight`."""
    spec = copy.deepcopy(base.get("spec") or {})
    spec["service"] = mapping_service(base).replace(stable_service, canary_service, 1)
    spec["weight"] = weight
    meta = base.get("metadata") or {}
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": canary_mapping_name(str(meta.get("name", ""))),
            "namespace": meta.get("namespace"),
        },
        "spec": spec,
    }


def combined_error(errors: Sequence[Exception]) -> Exception:
    """One error as itself; several as Argo's formatErrors writes them."""
    if len(errors) == 1:
        return errors[0]
    return TrafficRoutingError(
        f"{len(errors)} errors found: " + "".join(f"[{err}]" for err in errors)
    )


def zero_since(mapping: Obj) -> dt.datetime | None:
    """When the canary Mapping's weight went to 0 (None: not recorded, or unreadable)."""
    value = ((mapping.get("metadata") or {}).get("annotations") or {}).get(ZERO_SINCE_ANNOTATION)
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


class AmbassadorRouter:
    """Argo's Ambassador reconciler; the Mappings (and their canary copies) come in the
    context."""

    def __init__(self, ctx: RolloutContext, ambassador: AmbassadorTrafficRouting) -> None:
        self.ctx, self.ambassador = ctx, ambassador
        self._announced = False

    @property
    def type(self) -> str:
        return TYPE

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Ambassador selects by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        resource = self.ctx.routed.resource(KIND)  # raises when the kind is not served
        self._announced = False
        errors: list[Exception] = []
        for name in self.ambassador.mappings:
            try:
                self._reconcile_mapping(resource, name, weight)
            except Exception as err:  # each Mapping is tried; the errors are reported together
                errors.append(err)
        if errors:
            raise combined_error(errors)

    def _reconcile_mapping(self, resource: r.Resource, name: str, weight: int) -> None:
        ctx = self.ctx
        canary = ctx.routed.get(KIND, ctx.namespace, canary_mapping_name(name))
        if canary is None:
            if weight != 0:
                self._create(resource, name, weight)
        elif weight == 0:
            self._wind_down(resource, canary)
        elif mapping_weight(canary) != weight or _annotated(canary):
            self._patch(resource, canary, weight, since=None)

    def _announce(self, weight: int) -> None:
        if not self._announced:
            self._announced = True
            self.ctx.event(WEIGHT_UPDATE_REASON, WEIGHT_UPDATE_MESSAGE.format(weight))

    def _create(self, resource: r.Resource, base_name: str, weight: int) -> None:
        ctx = self.ctx
        base = ctx.routed.get(KIND, ctx.namespace, base_name)
        if base is None:
            ctx.event(
                MAPPING_NOT_FOUND_REASON, MAPPING_NOT_FOUND_MESSAGE.format(base_name), warning=True
            )
            raise TrafficRoutingError(not_found_message(resource, base_name))
        if mapping_weight(base) != 0:
            message = WEIGHT_DEFINED_MESSAGE.format(base_name)
            ctx.event(CONFIG_ERROR_REASON, message, warning=True)
            raise TrafficRoutingError(message)
        body = build_canary_mapping(
            base,
            resource=resource,
            stable_service=ctx.canary_spec.stable_service or "",
            canary_service=ctx.canary_spec.canary_service or "",
            weight=weight,
        )
        name = body["metadata"]["name"]
        body["metadata"]["namespace"] = ctx.namespace
        log.info("%s: creating canary mapping %s at weight %d", ctx.key, name, weight)
        self._announce(weight)
        try:
            created = ctx.writer.create(resource, ctx.namespace, body)
        except AlreadyExists:
            # Created since it was read: look again in a fresh reconcile.
            raise Conflict(409, "AlreadyExists", f"Mapping {name} exists") from None
        except Exception as err:
            ctx.event(CREATION_ERROR_REASON, f"Error creating canary mapping: {err}", warning=True)
            raise
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), created)

    def _patch(
        self, resource: r.Resource, canary: Obj, weight: int, *, since: dt.datetime | None
    ) -> None:
        """Set the canary Mapping's weight, and record (or clear) when it went to 0."""
        ctx = self.ctx
        meta = canary.get("metadata") or {}
        name = str(meta.get("name", ""))
        stamp = format_micro_time(since) if since is not None else None
        patch: Obj = {"spec": {"weight": weight}}
        if stamp is not None or _annotated(canary):
            patch["metadata"] = {"annotations": {ZERO_SINCE_ANNOTATION: stamp}}
        log.info("%s: canary mapping %s to weight %d", ctx.key, name, weight)
        self._announce(weight)
        try:
            written = ctx.writer.patch(
                resource, ctx.namespace, name, fenced(patch, meta.get("resourceVersion"))
            )
        except Exception as err:
            ctx.event(
                UPDATE_ERROR_REASON,
                f'Error updating canary mapping "{name}": {err}',
                warning=True,
            )
            raise
        ctx.routed.put(RouterRef(KIND, ctx.namespace, name), written)

    def _wind_down(self, resource: r.Resource, canary: Obj) -> None:
        """Weight 0: first the weight (with the time), then, 5 s on, the canary Mapping."""
        ctx = self.ctx
        since = zero_since(canary)
        if mapping_weight(canary) != 0 or since is None:
            self._patch(resource, canary, 0, since=ctx.now)
            ctx.requeue(DELETE_AFTER_SECONDS)
            return
        waited = (ctx.now - since).total_seconds()
        if waited < DELETE_AFTER_SECONDS:
            ctx.requeue(DELETE_AFTER_SECONDS - waited)
            return
        name = str((canary.get("metadata") or {}).get("name", ""))
        log.info("%s: deleting canary mapping %s (weight 0 for %.1f s)", ctx.key, name, waited)
        try:
            ctx.writer.delete(resource, ctx.namespace, name)
        except Exception as err:
            # As Argo: logged and recorded, not a failed reconcile; the next one tries again.
            log.warning("%s: cannot delete canary mapping %s: %s", ctx.key, name, err)
            ctx.event(
                CLEANUP_ERROR_REASON,
                f'Error deleting canary mapping "{name}": {err}',
                warning=True,
            )
            return
        ctx.routed.objects.pop(RouterRef(KIND, ctx.namespace, name), None)

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Not an Ambassador feature in Argo (validation rejects the step)."""

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Not an Ambassador feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """Ambassador cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """Ambassador manages no header or mirror routes (its canary Mappings go at weight 0)."""


def _annotated(mapping: Obj) -> bool:
    """The zero-weight annotation is present (readable or not)."""
    annotations = (mapping.get("metadata") or {}).get("annotations") or {}
    return ZERO_SINCE_ANNOTATION in annotations
