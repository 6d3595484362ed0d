"""Traffic router plugins (`trafficRouting.plugins`): a plugin enabled by name drives the traffic
step as Argo's plugin reconciler does (UpdateHash, SetWeight, VerifyWeight, SetHeaderRoute,
SetMirrorRoute, RemoveManagedRoutes, with the rollout and the plugin's config); one not enabled
is InvalidSpec with Argo's "not configured in configmap"; a plugin's error is Argo's "failed to
... via plugin"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.api.rollout import SetHeaderRoute, SetMirrorRoute, WeightDestination
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.rollout.trafficrouting.plugins import (
    ENTRY_POINT_GROUP,
    PluginRouter,
    RouterContext,
    TrafficRouterPlugin,
    TrafficRouterPluginRegistry,
)
from rollout_workers.rollout.trafficstep import routers_for
from tests.unit.rollout.onesync import T0, OneSync, rollout, service

Obj = dict[str, Any]
PLUGIN = "acme/router"
CONFIG = {"route": "web", "namespace": "edge"}
HEADER = {"name": "header", "match": [{"headerName": "X-Canary", "headerValue": {"exact": "1"}}]}
MIRROR = {"name": "mirror", "match": [{"method": {"exact": "GET"}}], "percentage": 30}


@dataclass
class FakeRouter:
    """Records each call with the config it was given; verifies what it was last told."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)
    weight: int | None = None
    fail: dict[str, Exception] = field(default_factory=dict)

    def _record(self, context: RouterContext, *call: Any) -> None:
        assert context.name == PLUGIN and context.config == CONFIG
        assert context.rollout["metadata"]["name"] == "web"
        context.rollout["spec"] = {}  # a copy: the controller's rollout is unchanged
        if call[0] in self.fail:
            raise self.fail[call[0]]
        self.calls.append(call)

    def type(self) -> str:
        return "Acme"

    def update_hash(
        self,
        context: RouterContext,
        canary_hash: str,
        stable_hash: str,
        additional: Sequence[WeightDestination],
    ) -> None:
        self._record(context, "update_hash", bool(canary_hash), bool(stable_hash))

    def set_weight(
        self, context: RouterContext, weight: int, additional: Sequence[WeightDestination]
    ) -> None:
        self._record(context, "set_weight", weight, list(additional))
        self.weight = weight

    def set_header_route(self, context: RouterContext, route: SetHeaderRoute) -> None:
        self._record(context, "set_header_route", route.name, bool(route.match))

    def set_mirror_route(self, context: RouterContext, route: SetMirrorRoute) -> None:
        self._record(context, "set_mirror_route", route.name, route.percentage)

    def verify_weight(
        self, context: RouterContext, weight: int, additional: Sequence[WeightDestination]
    ) -> bool | None:
        self._record(context, "verify_weight", weight)
        return self.weight == weight

    def remove_managed_routes(self, context: RouterContext) -> None:
        self._record(context, "remove_managed_routes")


def plugin_rollout(steps: list[Obj]) -> Obj:
    return rollout(
        replicas=2,
        strategy={
            "canary": {
                "stableService": "stable",
                "canaryService": "canary",
                "trafficRouting": {
                    "plugins": {PLUGIN: CONFIG},
                    "managedRoutes": [{"name": "header"}, {"name": "mirror"}],
                },
                "steps": steps,
            }
        },
    )


def routed(
    steps: list[Obj], registry: TrafficRouterPluginRegistry | None
) -> tuple[OneSync, FakeRouter]:
    plugin = FakeRouter()
    sim = OneSync(
        plugin_rollout(steps),
        [service("stable"), service("canary")],
        traffic_plugins=registry if registry is not None else _registry(plugin),
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
    )
    return sim, plugin


def _registry(plugin: FakeRouter) -> TrafficRouterPluginRegistry:
    return TrafficRouterPluginRegistry.of({PLUGIN: plugin})


def calls(plugin: FakeRouter, *names: str) -> list[tuple[Any, ...]]:
    return [c for c in plugin.calls if c[0] in names]


def test_the_plugin_is_driven_through_a_canary_with_its_config() -> None:
    steps: list[Obj] = [
        {"setWeight": 20},
        {"setHeaderRoute": HEADER},
        {"setMirrorRoute": MIRROR},
        {"pause": {}},
        {"setWeight": 60},
    ]
    sim, plugin = routed(steps, None)
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    assert sim.status["currentStepIndex"] == 3  # paused, the routes set
    assert sim.status["canary"]["weights"]["canary"]["weight"] == 20
    assert sim.status["canary"]["weights"]["verified"] is True
    assert sim.rollout["spec"]["strategy"]["canary"]["steps"] == steps  # the copy was changed
    assert calls(plugin, "set_header_route", "set_mirror_route") == [
        ("set_header_route", "header", True),
        ("set_mirror_route", "mirror", 30),
    ]
    assert ("update_hash", True, True) in plugin.calls
    assert calls(plugin, "set_weight")[-1] == ("set_weight", 20, [])
    # Promoted: the weight goes to 60, then all the way; the managed routes are removed.
    sim.rollout["status"]["pauseConditions"] = None
    sim.rollout["spec"]["paused"] = False
    sim.settle()
    weights = [c[1] for c in calls(plugin, "set_weight")]
    assert 60 in weights and weights[-1] == 0  # fully promoted: all to the (new) stable
    assert ("remove_managed_routes",) in plugin.calls
    assert sim.status["stableRS"] == sim.status["currentPodHash"]


def test_a_plugin_not_enabled_is_invalid_spec_with_argos_message() -> None:
    sim, plugin = routed([{"setWeight": 20}], TrafficRouterPluginRegistry())
    sim.sync()
    cond = next(c for c in sim.status["conditions"] if c["type"] == "InvalidSpec")
    assert cond["message"] == (
        "failed to get traffic router plugin acme/router: unable to start plugin system: "
        "unable to find plugin (acme/router): plugin acme/router not configured in configmap "
        "(here: an entry point named acme/router in the rollout_workers.traffic_routers group, "
        "enabled by listing the name in ROLLOUTS_PLUGINS_TRAFFIC)"
    )
    assert plugin.calls == []


def router_of(plugin: FakeRouter) -> PluginRouter:
    ctx = RolloutContext.build(
        obj=plugin_rollout([{"setWeight": 20}]), rss=[], now=T0, writer=RecordingWriter()
    )
    ctx.traffic_plugins = _registry(plugin)
    [router] = routers_for(ctx)
    assert isinstance(router, PluginRouter) and router.type == "Acme"
    return router


ERROR_CASES: list[tuple[str, str, Any]] = [
    # (Argo's Reconciler method, what its error says, the call)
    ("UpdateHash", "update hash", lambda r: r.update_hash("a", "b")),
    ("SetWeight", "set weight", lambda r: r.set_weight(10)),
    ("SetHeaderRoute", "set header route", lambda r: r.set_header_route(_header())),
    ("SetMirrorRoute", "set mirror route", lambda r: r.set_mirror_route(_mirror())),
    ("VerifyWeight", "verify weight", lambda r: r.verify_weight(10)),
    ("RemoveManagedRoutes", "remove managed routes", lambda r: r.remove_managed_routes()),
]


def _header() -> SetHeaderRoute:
    return SetHeaderRoute.from_dict(HEADER)


def _mirror() -> SetMirrorRoute:
    return SetMirrorRoute.from_dict(MIRROR)


@pytest.mark.parametrize(
    ("what", "call"), [pytest.param(*case[1:], id=case[0]) for case in ERROR_CASES]
)
def test_a_plugins_error_is_wrapped_as_argos_reconciler_does(what: str, call: Any) -> None:
    method = what.replace(" ", "_")
    plugin = FakeRouter(fail={method: RuntimeError("route is gone")})
    with pytest.raises(TrafficRoutingError) as err:
        call(router_of(plugin))
    assert str(err.value) == f"failed to {what} via plugin: route is gone"


def test_a_plugin_that_cannot_be_loaded_is_a_retried_routing_error() -> None:
    def broken(name: str) -> Any:
        raise ImportError("no module named acme")

    ctx = RolloutContext.build(
        obj=plugin_rollout([{"setWeight": 20}]), rss=[], now=T0, writer=RecordingWriter()
    )
    ctx.traffic_plugins = TrafficRouterPluginRegistry(enabled=frozenset({PLUGIN}), loader=broken)
    with pytest.raises(TrafficRoutingError, match=r"^unable to load traffic router plugin"):
        routers_for(ctx)


def test_the_registry_loads_an_entry_points_class_once() -> None:
    loaded: list[str] = []

    def loader(name: str) -> Any:
        loaded.append(name)
        return FakeRouter

    registry = TrafficRouterPluginRegistry(enabled=frozenset({PLUGIN}), loader=loader)
    first = registry.resolve(PLUGIN)
    assert isinstance(first, TrafficRouterPlugin) and registry.resolve(PLUGIN) is first
    assert loaded == [PLUGIN]
    not_a_router = TrafficRouterPluginRegistry(
        enabled=frozenset({PLUGIN}), loader=lambda name: object()
    )
    with pytest.raises(Exception, match=r"is not a traffic router plugin"):
        not_a_router.resolve(PLUGIN)
    # Without a loader, names are entry points of the group (none is installed for this one).
    assert ENTRY_POINT_GROUP == "rollout_workers.traffic_routers"
    with pytest.raises(LookupError, match="not configured in configmap"):
        TrafficRouterPluginRegistry(enabled=frozenset({PLUGIN})).resolve(PLUGIN)


def test_settings_enable_metric_and_traffic_plugins_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rollout_workers.settings import Settings

    monkeypatch.setenv("ROLLOUTS_PLUGINS_METRIC", "acme/metric")
    monkeypatch.setenv("ROLLOUTS_PLUGINS_TRAFFIC", '["acme/router", "acme/other"]')
    settings = Settings()
    assert settings.plugins.metric == ["acme/metric"]
    assert settings.plugins.traffic == ["acme/router", "acme/other"]
