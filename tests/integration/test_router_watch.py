"""The watcher follows traffic-router objects on demand (watcher/ondemand.py), and workers read
them from the cache once listed (cache/routerobjects.py): the embedded API, a real in-process
watcher and real Redis.

A rollout naming a VirtualService before its CRD exists starts nothing; once the CRD is served,
the next lease renewal (`ensure_indexed`) starts the kind's reflector at the newest version,
records the kind as listed after its first LIST, and a change to the VirtualService (someone
else's edit of a managed route) queues the rollout. The worker's reader falls back to the API
until the kind is listed, then reads the cache at the version listed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.cache import CacheWriter, Lister
from rollout_workers.cache.routerobjects import CachedRouterObjects
from rollout_workers.cache.synced import listed_caches, synced_key
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.routerobjects import ApiRouterObjects
from rollout_workers.settings import Settings
from rollout_workers.watcher.process import Watcher
from tests.support.procs import wait_for
from tests.support.routercrds import CRDS, ROUTER_CRDS, install_router_crds, router_crd

NS = "default"
Obj = dict[str, Any]
#: The VirtualService CRD serving only its two older versions (v1beta1 newest).
OLDER_VS = r.VIRTUALSERVICES[1:]


class CountingApi(ApiRouterObjects):
    """The API reader, counting the GETs a worker sends to it."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube)
        self.gets = 0

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        self.gets += 1
        return super().get(resource, namespace, name)


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.1)
    yield handle
    handle.stop()


@pytest.fixture
def watcher(
    cluster: DevClusterThread, rdb: redis.Redis, tmp_path: Path, redis_url: str
) -> Iterator[Watcher]:
    settings = Settings(
        kubeconfig=cluster.write_kubeconfig(tmp_path / "kubeconfig"), redis={"url": redis_url}
    )
    kube = Kube(api_client(settings), settings.kube)
    runtime = build_runtime(create_app(settings, redis_url), settings, redis_url)
    stop = threading.Event()
    watcher = Watcher(settings=settings, kube=kube, runtime=runtime, stop=stop)
    watcher.start()
    wait_for(watcher.synced, 15, "the always-watched types listed")
    yield watcher
    stop.set()  # the reflector threads are daemons, ended with the cluster's connections


def user_kube(cluster: DevClusterThread, tmp_path: Path, who: str) -> Kube:
    settings = Settings(kubeconfig=cluster.write_kubeconfig(tmp_path / f"{who}.kubeconfig"))
    return Kube(api_client(settings), settings.kube)


def istio_rollout(name: str, vs: str) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "app:1"}]},
            },
            "strategy": {
                "canary": {
                    "stableService": f"{name}-stable",
                    "canaryService": f"{name}-canary",
                    "trafficRouting": {
                        "istio": {"virtualService": {"name": vs, "routes": ["primary"]}}
                    },
                }
            },
        },
    }


def virtual_service(resource: r.Resource, name: str, weight: int) -> Obj:
    return {
        "apiVersion": resource.api_version,
        "kind": "VirtualService",
        "metadata": {"name": name},
        "spec": {"http": [{"name": "primary", "route": [{"weight": weight}]}]},
    }


def queued(rdb: redis.Redis) -> set[str]:
    return {k.decode() for k in rdb.zrange("rw:wq:rollouts:queued", 0, -1)}


def test_a_router_kind_is_followed_once_its_crd_is_served(
    watcher: Watcher, cluster: DevClusterThread, rdb: redis.Redis, tmp_path: Path
) -> None:
    user = user_kube(cluster, tmp_path, "user")
    api = CountingApi(user_kube(cluster, tmp_path, "worker"))
    reader = CachedRouterObjects(rdb, prefix="rw", api=api)
    rollouts = Lister(rdb, prefix="rw", resource=r.ROLLOUTS)
    assert watcher.on_demand is not None

    # Named before the CRD exists: nothing starts, and the worker finds the kind unserved.
    user.create(r.ROLLOUTS, NS, istio_rollout("web", "vs"))
    user.create(r.ROLLOUTS, NS, istio_rollout("other", "other-vs"))
    wait_for(lambda: rollouts.get(f"{NS}/web"), 10, "the rollout cached")
    wait_for(lambda: watcher.on_demand.unserved == {"VirtualService"}, 10, "asked discovery")
    watcher.on_demand.ensure_indexed()  # a lease renewal: still not served
    assert watcher.on_demand.routers == {} and not listed_caches(rdb, "rw")
    assert reader.served("VirtualService") is None

    # The CRD (at older versions only) and a VirtualService appear: until the watcher lists
    # the kind, the worker reads the API at the newest version served.
    install_router_crds(user, router_crd(OLDER_VS))
    served = OLDER_VS[0]
    user.create(served, NS, virtual_service(served, "vs", 100))
    assert reader.served("VirtualService") == served
    got = reader.get(served, NS, "vs")
    assert got is not None and api.gets == 1

    # The next lease renewal starts the reflector at v1beta1; listed, the kind is read from
    # the cache at that version, without a GET.
    rdb.delete("rw:wq:rollouts:queued")
    watcher.on_demand.ensure_indexed()
    assert watcher.on_demand.routers == {"VirtualService": served}
    assert watcher.on_demand.unserved == set()
    wait_for(lambda: served.cache_name in listed_caches(rdb, "rw"), 10, "the kind listed")
    wait_for(lambda: f"{NS}/web" in queued(rdb), 10, "the first LIST woke the rollout")
    assert queued(rdb) == {f"{NS}/web"}  # not the rollout naming another VirtualService
    assert reader.served("VirtualService") == served
    cached = reader.get(served, NS, "vs")
    assert cached is not None and cached["spec"] == got["spec"] and api.gets == 1
    assert reader.get(served, NS, "missing") is None and api.gets == 1

    # Someone else edits the managed route: the rollout naming it is queued, and reads it.
    rdb.delete("rw:wq:rollouts:queued")
    user.patch(
        served, NS, "vs", {"spec": {"http": [{"name": "primary", "route": [{"weight": 7}]}]}}
    )
    wait_for(lambda: queued(rdb), 10, "the change queued a key")
    assert queued(rdb) == {f"{NS}/web"}
    wait_for(
        lambda: (reader.get(served, NS, "vs") or {})["spec"]["http"][0]["route"][0]["weight"] == 7,
        10,
        "the change cached",
    )
    assert api.gets == 1

    # A kind no rollout names (DestinationRule) starts nothing even when served.
    install_router_crds(user, ROUTER_CRDS["DestinationRule"])
    watcher.on_demand.ensure_indexed()
    assert set(watcher.on_demand.routers) == {"VirtualService"}


class NewerApi:
    """An API that serves a newer version than the cache was listed at."""

    def __init__(self) -> None:
        self.gets: list[r.Resource] = []

    def served(self, kind: str) -> r.Resource | None:
        return r.ROUTER_OBJECTS[kind][0]

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        self.gets.append(resource)
        return virtual_service(resource, name, 1)


def test_the_worker_reads_a_kind_at_the_version_its_cache_was_listed_at(
    rdb: redis.Redis,
) -> None:
    """The CRD gained v1 after the watcher listed VirtualServices at v1beta1: the worker keeps
    speaking v1beta1 (what the cache holds), so what it writes is at the version it read."""
    listed = r.VIRTUALSERVICES[1]
    CacheWriter(rdb, prefix="rw", resource=listed).apply(
        "ADDED", {**virtual_service(listed, "vs", 30), "metadata": {"name": "vs", "namespace": NS}}
    )
    api = NewerApi()
    reader = CachedRouterObjects(rdb, prefix="rw", api=api)
    assert reader.served("VirtualService") == r.VIRTUALSERVICES[0]  # not listed yet: the API's
    rdb.sadd(synced_key("rw"), listed.cache_name)
    assert reader.served("VirtualService") == listed
    cached = reader.get(listed, NS, "vs")
    assert cached is not None and cached["apiVersion"] == listed.api_version and api.gets == []
    # Another version of the kind is not in that cache: read from the API.
    newer = reader.get(r.VIRTUALSERVICES[0], NS, "vs")
    assert newer is not None and api.gets == [r.VIRTUALSERVICES[0]]
    # Other kinds are unaffected.
    assert reader.served("HTTPRoute") == r.HTTPROUTES[0]


def test_after_redis_loses_everything_an_on_demand_kind_is_relisted_and_listed_again(
    watcher: Watcher, cluster: DevClusterThread, rdb: redis.Redis, tmp_path: Path
) -> None:
    """Workers read a router (or workload) kind's cache only once it is marked listed; that
    mark goes with a Redis restart without persistence. The leader's recovery relists the
    on-demand reflectors with the others and marks them listed again."""
    user = user_kube(cluster, tmp_path, "user")
    assert watcher.on_demand is not None
    install_router_crds(user, ROUTER_CRDS["VirtualService"])
    served = r.VIRTUALSERVICES[0]
    user.create(served, NS, virtual_service(served, "vs", 100))
    user.create(r.ROLLOUTS, NS, istio_rollout("web", "vs"))
    check = watcher.redis_check()
    wait_for(lambda: check.poll() and not check.recovering, 15, "the first lists")
    wait_for(lambda: served.cache_name in listed_caches(rdb, "rw"), 15, "the kind listed")

    rdb.flushall()
    assert check.poll() and check.recovering
    wait_for(lambda: check.poll() and not check.recovering, 15, "the recovery")
    assert served.cache_name in listed_caches(rdb, "rw")
    cached = Lister(rdb, prefix="rw", resource=served).get(f"{NS}/vs")
    assert cached is not None and check.recoveries == 1
    assert f"{NS}/web" in queued(rdb)


def test_a_removed_router_crd_stops_its_reflector_and_comes_back_when_installed(
    watcher: Watcher, cluster: DevClusterThread, rdb: redis.Redis, tmp_path: Path
) -> None:
    user = user_kube(cluster, tmp_path, "user")
    crd = ROUTER_CRDS["VirtualService"]
    served = r.VIRTUALSERVICES[0]
    cache = Lister(rdb, prefix="rw", resource=served)
    assert watcher.on_demand is not None
    install_router_crds(user, crd)
    user.create(served, NS, virtual_service(served, "vs", 100))
    user.create(r.ROLLOUTS, NS, istio_rollout("web", "vs"))
    wait_for(lambda: served.cache_name in listed_caches(rdb, "rw"), 10, "the kind listed")
    wait_for(lambda: cache.get(f"{NS}/vs"), 10, "the VirtualService cached")
    (reflector,) = [x for x in watcher.on_demand.running() if x.resource == served]

    # The CRD goes: the reflector's next LIST or watch answers 404 and discovery no longer
    # serves the kind. The reflector stops, its cache and listed mark go, and the rollout
    # routing through the VirtualService is queued (its validation finds the kind unserved).
    rdb.delete("rw:wq:rollouts:queued")
    user.delete(CRDS, None, crd["metadata"]["name"])
    wait_for(lambda: reflector.cancelled, 15, "the reflector stopped")
    assert watcher.on_demand.routers == {} and "VirtualService" in watcher.on_demand.unserved
    assert served.cache_name not in listed_caches(rdb, "rw")
    assert cache.get(f"{NS}/vs") is None and cache.count() == 0
    wait_for(lambda: f"{NS}/web" in queued(rdb), 10, "the rollout woken")
    watcher.on_demand.ensure_indexed()  # a lease renewal: still not served
    assert watcher.on_demand.routers == {}

    # Installed again: the next lease renewal follows the kind again, no restart.
    install_router_crds(user, crd)
    user.create(served, NS, virtual_service(served, "vs", 50))
    watcher.on_demand.ensure_indexed()
    assert watcher.on_demand.routers == {"VirtualService": served}
    wait_for(lambda: served.cache_name in listed_caches(rdb, "rw"), 10, "the kind listed again")
    wait_for(lambda: cache.get(f"{NS}/vs"), 10, "the VirtualService cached again")
