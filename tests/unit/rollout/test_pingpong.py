"""Ping-pong (`canary.pingPong`), after Argo's service_helper_test.go and canary_test.go
(TestCanaryRolloutWithPingPong...), with Istio host-level routing, in the one-sync fixture."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.api.rollout import CanaryStrategy, Rollout, RolloutStatus
from rollout_workers.rollout.trafficrouting import pingpong
from rollout_workers.rollout.validation.references import ReferencedResources, reference_errors
from rollout_workers.routerrefs import RouterRef
from tests.unit.rollout.onesync import NS, OneSync, rollout, service

Obj = dict[str, Any]
HASH = "rollouts-pod-template-hash"


def status(stable: str | None) -> RolloutStatus:
    return RolloutStatus.from_dict({"canary": {"stablePingPong": stable}} if stable else {})


PING_PONG = {"pingPong": {"pingService": "ping", "pongService": "pong"}}
SERVICES = {"stableService": "stable", "canaryService": "canary"}


@pytest.mark.parametrize(
    ("spec", "stable", "preferred", "expected"),
    [
        pytest.param(SERVICES, None, True, ("stable", "canary"), id="no-ping-pong"),
        pytest.param(PING_PONG, None, False, ("pong", "ping"), id="unset-means-pong-stable"),
        pytest.param(PING_PONG, "ping", False, ("ping", "pong"), id="ping-stable"),
        pytest.param(PING_PONG, "pong", True, ("pong", "ping"), id="pong-stable"),
        pytest.param(
            {**PING_PONG, **SERVICES}, "ping", False, ("stable", "canary"), id="istio-prefers-svc"
        ),
        pytest.param(
            {**PING_PONG, **SERVICES}, "ping", True, ("ping", "pong"), id="alb-prefers-ping-pong"
        ),
    ],
)
def test_stable_and_canary_services(
    spec: Obj, stable: str | None, preferred: bool, expected: tuple[str, str]
) -> None:
    canary = CanaryStrategy.from_dict(spec)
    got = pingpong.stable_and_canary_services(canary, status(stable), ping_pong_preferred=preferred)
    assert got == expected


def dest(host: str, weight: int) -> Obj:
    return {"destination": {"host": host}, "weight": weight}


def virtual_service() -> Obj:
    return {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "VirtualService",
        "metadata": {"name": "vsvc", "namespace": NS, "resourceVersion": "7"},
        "spec": {
            "hosts": ["web"],
            "http": [{"name": "primary", "route": [dest("ping", 100), dest("pong", 0)]}],
        },
    }


def weights(sim: OneSync) -> dict[str, int]:
    vs = sim.writer.objects[("virtualservices", NS, "vsvc")]
    route = vs["spec"]["http"][0]["route"]
    return {d["destination"]["host"]: d["weight"] for d in route}


def selector(sim: OneSync, name: str) -> str | None:
    return sim.services()[name]["spec"]["selector"].get(HASH)


def promote(sim: OneSync) -> None:
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()


def test_ping_pong_with_istio_across_two_promotions() -> None:
    """The canary-role Service follows the new pods; at each promotion the roles swap, so the
    Service in front of the new stable pods never changes its selector, and the weights follow
    the roles."""
    obj = rollout(
        strategy={
            "canary": {
                **PING_PONG,
                "trafficRouting": {
                    "istio": {"virtualService": {"name": "vsvc", "routes": ["primary"]}}
                },
                "steps": [{"setWeight": 20}, {"pause": {}}],
            }
        },
        replicas=2,
    )
    sim = OneSync(obj, [service("ping"), service("pong"), virtual_service()])
    sim.settle()
    first = sim.status["stableRS"]
    assert sim.status["canary"]["stablePingPong"] == "ping"
    assert selector(sim, "ping") == first
    assert weights(sim) == {"ping": 100, "pong": 0}

    sim.set_image("web:2")
    sim.settle()
    second = sim.status["currentPodHash"]
    assert selector(sim, "pong") == second and selector(sim, "ping") == first
    assert weights(sim) == {"ping": 80, "pong": 20}
    promote(sim)
    assert sim.status["stableRS"] == second
    assert sim.status["canary"]["stablePingPong"] == "pong"
    assert weights(sim) == {"ping": 0, "pong": 100}
    assert selector(sim, "pong") == second

    sim.set_image("web:3")
    sim.settle()
    third = sim.status["currentPodHash"]
    assert selector(sim, "ping") == third and selector(sim, "pong") == second
    assert weights(sim) == {"ping": 20, "pong": 80}
    promote(sim)
    assert sim.status["canary"]["stablePingPong"] == "ping"
    assert weights(sim) == {"ping": 100, "pong": 0}
    assert selector(sim, "ping") == third


def test_validation_checks_the_virtual_service_against_the_ping_pong_services() -> None:
    """Argo's ValidateHTTPRoutes asks GetStableAndCanaryServices: with ping-pong and no
    stable/canary Service, the routes must send traffic to the ping and pong Services."""
    obj = rollout(
        strategy={
            "canary": {
                **PING_PONG,
                "trafficRouting": {
                    "istio": {"virtualService": {"name": "vsvc", "routes": ["primary"]}}
                },
            }
        }
    )
    vs = virtual_service()
    references = ReferencedResources(
        services={"ping": service("ping"), "pong": service("pong")},
        router_objects={RouterRef("VirtualService", NS, "vsvc"): vs},
        served_router_kinds=frozenset({"VirtualService", "DestinationRule"}),
    )
    assert reference_errors(Rollout.from_dict(obj), references) == []
    # Before the first promotion pong is the stable: a route without it is refused.
    vs["spec"]["http"][0]["route"] = [dest("ping", 100)]
    (error,) = reference_errors(Rollout.from_dict(obj), references)
    assert "Stable Service 'pong' not found in route" in str(error)
