"""Traffic routers: the one interface the canary's traffic step drives.

Mirrors argo-rollouts' `TrafficRoutingReconciler` (rollout/trafficrouting/): a router applies a
canary weight (and header or mirror routes) to whatever carries the traffic, reports whether the
weight is verified (None: the router cannot tell), and removes the routes it manages once the
update is over or aborted. The nginx (`nginx.py`), ALB (`alb.py`), SMI (`smi.py`), Istio
(`istio.py`), Traefik (`traefik.py`), APISIX (`apisix.py`), Ambassador (`ambassador.py`), App
Mesh (`appmesh.py`) and Gateway API (`gatewayapi.py`: the first-class `gatewayAPI` field, or
Argo's `argoproj-labs/gatewayAPI` plugin entry) routers are implemented; any other entry of
`trafficRouting.plugins` is a Python traffic router plugin enabled in settings (`plugins.py`).
A plugin that is not enabled is reported by `plugins.unsupported_router`, so the controller can
refuse the spec with a message naming it rather than act on it half-way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rollout_workers.api.rollout import SetHeaderRoute, SetMirrorRoute, WeightDestination
from rollout_workers.kube import resources as r

#: The plugin this controller implements natively (trafficrouting/gatewayapi.py), whatever
#: plugins the settings enable.
NATIVE_PLUGINS = frozenset({"argoproj-labs/gatewayAPI"})


class TrafficRoutingError(RuntimeError):
    """A router could not apply the desired state; the reconcile is retried with backoff."""


class WeightVerifyError(TrafficRoutingError):
    """A router could not verify the weight; the reconcile goes on (Argo's WeightVerifyError
    event) with `verified` as the weights' status, what the router returns with its error."""

    def __init__(self, message: str, *, verified: bool | None = False) -> None:
        super().__init__(message)
        self.verified = verified


class WeightNotVerified(TrafficRoutingError):
    """The full weight at the end of an update is not verified yet: the rest of the reconcile
    (the promotion, the old stable's scale-down) waits, and the rollout is looked at again after
    the verify interval (Argo's "end of rollout, desired weight %d not yet verified" error)."""


def not_served_message(kind: str) -> str:
    """A router kind whose CRD the API server does not serve ("TrafficSplit (split.smi-spec.io)
    is not served by the API server")."""
    newest = r.ROUTER_OBJECTS[kind][0]
    return f"{newest.kind} ({newest.group}) is not served by the API server"


class TrafficRouter(Protocol):
    """What the traffic step asks of a router (Argo's TrafficRoutingReconciler)."""

    @property
    def type(self) -> str: ...

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """Point what selects pods by hash (Istio's DestinationRule subsets) at these hashes;
        called before set_weight on every reconcile."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None: ...

    def set_header_route(self, route: SetHeaderRoute) -> None: ...

    def set_mirror_route(self, route: SetMirrorRoute) -> None: ...

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None: ...

    def remove_managed_routes(self) -> None: ...
