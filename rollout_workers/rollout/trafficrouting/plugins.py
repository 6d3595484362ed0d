"""Traffic router plugins: `trafficRouting.plugins: {<name>: <config>}` carried out by code
outside the controller.

Argo Rollouts runs each traffic router plugin as a separate binary over RPC (its
RpcTrafficRoutingReconciler: UpdateHash, SetWeight, SetHeaderRoute, SetMirrorRoute,
VerifyWeight, RemoveManagedRoutes, Type), listed in the `argo-rollouts-config` ConfigMap's
`trafficRouterPlugins`. Here a plugin is a Python object published under the
`rollout_workers.traffic_routers` entry point group and enabled by name in settings
(`plugins.traffic`, `ROLLOUTS_PLUGINS_TRAFFIC`); see rollout_workers/plugins.py. The Gateway
API plugin, `argoproj-labs/gatewayAPI`, is built in (gatewayapi.py): that name always means
the native router.

`TrafficRouterPlugin` is what a plugin implements: Argo's calls, shaped as this project's
`TrafficRouter` (trafficrouting/__init__.py), each handed a `RouterContext` with the rollout
and the plugin's config. A call runs inside a reconcile and must return quickly; it reads and
writes whatever it routes through itself. A call that raises fails the reconcile, which is
retried with backoff (Argo's "failed to set weight via plugin: ..."); `verify_weight` returns
True, False (checked again in 10 s) or None (the plugin cannot tell).

A rollout naming a plugin that is not enabled is InvalidSpec with Argo's "plugin NAME not
configured in configmap" (`unsupported_router`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar, runtime_checkable

from rollout_workers.api.rollout import (
    RolloutTrafficRouting,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.objects import Obj
from rollout_workers.plugins import (
    PluginKind,
    PluginLoadError,
    PluginNotEnabled,
    PluginRegistry,
)
from rollout_workers.rollout.trafficrouting import NATIVE_PLUGINS, TrafficRoutingError

T = TypeVar("T")

ENTRY_POINT_GROUP = "rollout_workers.traffic_routers"


@dataclass(frozen=True)
class RouterContext:
    """What a call is about: the plugin's name and its config (`trafficRouting.plugins[name]`),
    and the Rollout as read (a copy: changing it changes nothing)."""

    name: str
    config: Obj
    rollout: Obj


@runtime_checkable
class TrafficRouterPlugin(Protocol):
    """A traffic router plugin (Argo's RpcTrafficRoutingReconciler)."""

    def type(self) -> str:
        """The router's type name (Argo's Type), for logs."""
        ...

    def update_hash(
        self,
        context: RouterContext,
        canary_hash: str,
        stable_hash: str,
        additional: Sequence[WeightDestination],
    ) -> None:
        """Point what selects pods by hash at these hashes; called before set_weight on every
        reconcile."""
        ...

    def set_weight(
        self, context: RouterContext, weight: int, additional: Sequence[WeightDestination]
    ) -> None:
        """Send `weight` (of trafficRouting.maxTrafficWeight, 100 by default) to the canary,
        each additional destination (an experiment's Services) its weight, the rest to the
        stable."""
        ...

    def set_header_route(self, context: RouterContext, route: SetHeaderRoute) -> None:
        """Add (or, without `match`, remove) the managed route sending matching requests to
        the canary."""
        ...

    def set_mirror_route(self, context: RouterContext, route: SetMirrorRoute) -> None:
        """Add (or, without `match`, remove) the managed route mirroring matching requests to
        the canary."""
        ...

    def verify_weight(
        self, context: RouterContext, weight: int, additional: Sequence[WeightDestination]
    ) -> bool | None:
        """Whether the weight is in effect; None when the plugin cannot tell."""
        ...

    def remove_managed_routes(self, context: RouterContext) -> None:
        """Remove every route set by set_header_route and set_mirror_route (the end of an
        update, an abort)."""
        ...


TRAFFIC_PLUGINS = PluginKind(
    noun="traffic router plugin",
    group=ENTRY_POINT_GROUP,
    setting="ROLLOUTS_PLUGINS_TRAFFIC",
    protocol=TrafficRouterPlugin,
    # Argo's chain of wrapped errors: NewReconciler, GetTrafficPlugin, startPlugin, down to
    # the ConfigMap lookup.
    prefix="failed to get traffic router plugin {name}: unable to start plugin system: ",
)


class UnknownTrafficRouterPlugin(PluginNotEnabled):
    """A rollout names a traffic router plugin that is not enabled (Argo: not in the
    ConfigMap)."""

    kind = TRAFFIC_PLUGINS


@dataclass
class TrafficRouterPluginRegistry(PluginRegistry[TrafficRouterPlugin]):
    """The enabled traffic router plugins of this process, loaded lazily by name."""

    KIND: ClassVar[PluginKind] = TRAFFIC_PLUGINS
    NOT_ENABLED: ClassVar[type[PluginNotEnabled]] = UnknownTrafficRouterPlugin
    LOAD_ERROR: ClassVar[type[PluginLoadError]] = PluginLoadError

    @classmethod
    def of(cls, plugins: dict[str, TrafficRouterPlugin]) -> TrafficRouterPluginRegistry:
        """A registry of given plugin objects (tests, embedding)."""
        registry = cls()
        registry.preload(plugins)
        return registry


class PluginRouter:
    """An enabled plugin as the `TrafficRouter` the traffic step drives, for one reconcile.
    `rollout` answers the Rollout as the reconcile holds it at each call."""

    def __init__(
        self, rollout: Callable[[], Obj], name: str, config: Obj, plugin: TrafficRouterPlugin
    ) -> None:
        self.rollout, self.name, self.config, self.plugin = rollout, name, config, plugin

    @property
    def type(self) -> str:
        return self.plugin.type()

    def _context(self) -> RouterContext:
        return RouterContext(
            name=self.name, config=copy.deepcopy(self.config), rollout=copy.deepcopy(self.rollout())
        )

    def _call(self, what: str, call: Callable[[RouterContext], T]) -> T:
        """The call's answer; what it raises, as Argo's Reconciler wraps a plugin's error."""
        try:
            return call(self._context())
        except Exception as err:
            raise TrafficRoutingError(f"failed to {what} via plugin: {err}") from err

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        self._call(
            "update hash",
            lambda c: self.plugin.update_hash(c, canary_hash, stable_hash, list(additional)),
        )

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        self._call("set weight", lambda c: self.plugin.set_weight(c, weight, list(additional)))

    def set_header_route(self, route: SetHeaderRoute) -> None:
        copied = route.model_copy(deep=True)
        self._call("set header route", lambda c: self.plugin.set_header_route(c, copied))

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        copied = route.model_copy(deep=True)
        self._call("set mirror route", lambda c: self.plugin.set_mirror_route(c, copied))

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        verified = self._call(
            "verify weight", lambda c: self.plugin.verify_weight(c, weight, list(additional))
        )
        return None if verified is None else bool(verified)

    def remove_managed_routes(self) -> None:
        self._call("remove managed routes", self.plugin.remove_managed_routes)


def unsupported_router(
    routing: RolloutTrafficRouting | None, plugins: TrafficRouterPluginRegistry | None = None
) -> str:
    """The InvalidSpec message for the first configured router this controller cannot drive
    ('' when every configured router is supported): every router Argo ships is implemented, so
    that is an entry of `plugins` that is neither native nor enabled in `plugins` (Argo's
    "plugin NAME not configured in configmap")."""
    if routing is None:
        return ""
    registry = plugins if plugins is not None else TrafficRouterPluginRegistry()
    try:
        registry.check(name for name in routing.plugins or {} if name not in NATIVE_PLUGINS)
    except UnknownTrafficRouterPlugin as err:
        return str(err)
    return ""
