"""Which reflectors a workloadRef or a traffic router starts on demand."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, cast

import redis

from rollout_workers.cache import Change, Lister
from rollout_workers.cache.synced import synced_key
from rollout_workers.kube import resources as r
from rollout_workers.watcher.ondemand import (
    ON_DEMAND,
    OnDemandReflectors,
    referenced_kinds,
    referenced_router_kinds,
)


def rollout_change(kind: str, api_version: str, event: str = "ADDED") -> Change:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"workloadRef": {"apiVersion": api_version, "kind": kind, "name": "x"}},
    }
    return Change(event, "prod/web", obj, None)


def test_each_supported_kind_has_its_on_demand_types() -> None:
    assert ON_DEMAND == {
        "Deployment.apps": (r.DEPLOYMENTS,),
        # the labelled ReplicaSets are always watched; only the complement starts on demand
        "ReplicaSet.apps": (r.UNHASHED_REPLICASETS,),
        "PodTemplate": (r.PODTEMPLATES,),
    }
    assert not set(ON_DEMAND["Deployment.apps"]) & set(r.WATCHED.values())


def test_referenced_kinds_of_rollout_changes() -> None:
    changes = [
        rollout_change("Deployment", "apps/v1"),
        rollout_change("PodTemplate", "v1"),
        rollout_change("ReplicaSet", "apps/v1", event="DELETED"),  # a deletion starts nothing
        Change("ADDED", "prod/plain", {"metadata": {"name": "plain"}, "spec": {}}, None),
    ]
    assert referenced_kinds(changes) == {"Deployment.apps", "PodTemplate"}


def routed_change(routing: dict[str, Any], event: str = "ADDED") -> Change:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"strategy": {"canary": {"trafficRouting": routing}}},
    }
    return Change(event, "prod/web", obj, None)


def test_referenced_router_kinds_of_rollout_changes() -> None:
    changes = [
        routed_change({"istio": {"virtualService": {"name": "vs"}}}),
        routed_change({"smi": {}}),
        routed_change({"plugins": {"argoproj-labs/gatewayAPI": {"httpRoute": "h"}}}, "DELETED"),
        routed_change({"nginx": {"stableIngress": "ing"}}),  # Ingresses are always watched
    ]
    assert referenced_router_kinds(changes) == {"VirtualService", "TrafficSplit"}


def test_app_mesh_needs_the_virtual_router_kind_it_does_not_name() -> None:
    mesh = {"appMesh": {"virtualService": {"name": "vs"}}}
    assert referenced_router_kinds([routed_change(mesh)]) == {
        r.APPMESH_VIRTUAL_SERVICE,
        "VirtualRouter",
    }


class FakeRedis:
    def __init__(self) -> None:
        self.sets: dict[str, set[str]] = {}

    def delete(self, key: str) -> None:
        self.sets.pop(key, None)

    def sadd(self, key: str, member: str) -> None:
        self.sets.setdefault(key, set()).add(member)


class FakeReflector:
    def __init__(self, resource: r.Resource) -> None:
        self.resource = resource
        self.stats = SimpleNamespace(synced=threading.Event())
        self.stats.synced.set()  # its first LIST landed at once
        self.cancelled = False
        self.on_not_found: Any = None

    def run(self) -> None:
        pass


class FakeRollouts:
    def __init__(self, kinds: set[str]) -> None:
        self.kinds = kinds

    def keys_by_index(self, index: str, value: str) -> list[str]:
        return ["prod/web"] if index == "routerkind" and value in self.kinds else []


def test_a_router_reflector_starts_once_its_kind_is_served() -> None:
    """Not served: nothing starts, and rollout events do not ask discovery again; the periodic
    `ensure_indexed` does, and starts the reflector at the newest version served once the CRD
    is installed, then records its cache as listed."""
    serving: dict[str, r.Resource] = {}
    asked: list[str] = []

    def served(kind: str) -> r.Resource | None:
        asked.append(kind)
        return serving.get(kind)

    client, stop = FakeRedis(), threading.Event()
    made: list[r.Resource] = []

    def make(resource: r.Resource) -> Any:
        made.append(resource)
        return FakeReflector(resource)

    demand = OnDemandReflectors(
        make=make,
        rollouts=cast(Lister, FakeRollouts({"VirtualService"})),
        client=cast(redis.Redis, client),
        prefix="rw",
        stop=stop,
        served=served,
    )
    try:
        demand.ensure_routers({"VirtualService", "Ingress"})
        assert made == [] and demand.unserved == {"VirtualService"}
        demand.ensure_routers({"VirtualService"})  # an event: no second discovery request
        assert asked == ["VirtualService"]
        demand.ensure_indexed()  # the lease renewal asks again
        assert asked == ["VirtualService"] * 2 and made == []

        serving["VirtualService"] = r.VIRTUALSERVICES[1]  # the CRD serves v1beta1 now
        demand.ensure_indexed()
        assert made == [r.VIRTUALSERVICES[1]] and demand.unserved == set()
        assert demand.routers == {"VirtualService": r.VIRTUALSERVICES[1]}
        for thread in demand.threads:
            thread.join(5)
        assert client.sets[synced_key("rw")] == {"virtualservices-v1beta1"}

        serving["VirtualService"] = r.VIRTUALSERVICES[0]  # a newer version: kept until restart
        demand.ensure_indexed()
        demand.ensure_routers({"VirtualService"}, recheck=True)
        assert made == [r.VIRTUALSERVICES[1]]
    finally:
        stop.set()


def test_a_discovery_error_is_asked_again_periodically() -> None:
    def served(kind: str) -> r.Resource | None:
        raise ConnectionError("api down")

    demand = OnDemandReflectors(
        make=FakeReflector,  # type: ignore[arg-type]
        rollouts=cast(Lister, FakeRollouts(set())),
        client=cast(redis.Redis, FakeRedis()),
        prefix="rw",
        stop=threading.Event(),
        served=served,
    )
    demand.ensure_routers({"HTTPRoute"})
    assert demand.unserved == {"HTTPRoute"} and not demand.reflectors
