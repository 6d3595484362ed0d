"""The watcher against the embedded API over HTTP: cache fidelity, recovery, routing, failover.

The embedded API runs in this process (its own thread and event loop); watchers run as real
`rollouts watcher` processes that find it through a kubeconfig, as they would a real cluster.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.cache import Lister
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.settings import KubeSettings
from tests.support.procs import Processes, wait_for

NAMESPACES = ["team-a", "team-b", "team-c"]
TYPES = [r.ROLLOUTS, r.SERVICES, r.REPLICASETS, r.ANALYSISTEMPLATES]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.2, state_file=tmp_path / "api-state.json")
    yield handle
    handle.stop()


@pytest.fixture
def kubeconfig(cluster: DevClusterThread, tmp_path: Path) -> Path:
    return cluster.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api(kubeconfig: Path) -> k8s.ApiClient:
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    core = k8s.CoreV1Api(api)
    for ns in NAMESPACES:
        try:
            core.create_namespace({"metadata": {"name": ns}})
        except ApiException as err:
            assert err.status == 409
    return api


@pytest.fixture
def watchers(procs: Processes, kubeconfig: Path) -> Processes:
    procs.env["ROLLOUTS_KUBECONFIG"] = str(kubeconfig)
    return procs


def rollout_body(name: str, svc: str, rev: int) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "annotations": {"rev": str(rev)}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
            "strategy": {"canary": {"stableService": svc}},
        },
    }


class Ops:
    """Random creates, updates and deletes through the official client."""

    def __init__(self, api: k8s.ApiClient, seed: int) -> None:
        self.core, self.apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)
        self.rng = random.Random(seed)
        self.rev = 0

    def body(self, kind: r.Resource, name: str) -> dict[str, Any]:
        self.rev += 1
        if kind is r.ROLLOUTS:
            return rollout_body(name, f"svc-{self.rng.randint(0, 3)}", self.rev)
        if kind is r.SERVICES:
            return {"metadata": {"name": name, "labels": {"rev": str(self.rev)}},
                    "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}  # fmt: skip
        if kind is r.REPLICASETS:
            labels = {"app": name, r.POD_TEMPLATE_HASH_LABEL: f"h{self.rev}"}
            return {
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
                    },
                },
            }
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": name, "annotations": {"rev": str(self.rev)}},
            "spec": {"metrics": [{"name": "m", "provider": {"job": {}}}]},
        }

    def one(self) -> None:
        kind = self.rng.choice(TYPES)
        ns = self.rng.choice(NAMESPACES)
        name = f"{kind.plural[:3]}-{self.rng.randint(0, 14)}"
        op = self.rng.choice(["create", "create", "update", "delete"])
        try:
            if op == "delete":
                self.delete(kind, ns, name)
            elif op == "update":
                self.patch(kind, ns, name)
            else:
                self.create(kind, ns, name)
        except ApiException as err:
            assert err.status in (404, 409), err

    def create(self, kind: r.Resource, ns: str, name: str) -> None:
        body = self.body(kind, name)
        if kind is r.SERVICES:
            self.core.create_namespaced_service(ns, body)
        elif kind is r.REPLICASETS:
            self.apps.create_namespaced_replica_set(ns, body)
        else:
            self.custom.create_namespaced_custom_object(
                "argoproj.io", "v1alpha1", ns, kind.plural, body
            )

    def patch(self, kind: r.Resource, ns: str, name: str) -> None:
        self.rev += 1
        body = {"metadata": {"annotations": {"rev": str(self.rev)}}}
        if kind is r.SERVICES:
            self.core.patch_namespaced_service(name, ns, body)
        elif kind is r.REPLICASETS:
            self.apps.patch_namespaced_replica_set(name, ns, body)
        else:
            self.custom.patch_namespaced_custom_object(
                "argoproj.io", "v1alpha1", ns, kind.plural, name, body
            )

    def delete(self, kind: r.Resource, ns: str, name: str) -> None:
        if kind is r.SERVICES:
            self.core.delete_namespaced_service(name, ns)
        elif kind is r.REPLICASETS:
            self.apps.delete_namespaced_replica_set(name, ns)
        else:
            self.custom.delete_namespaced_custom_object(
                "argoproj.io", "v1alpha1", ns, kind.plural, name
            )


def cache_diff(api: k8s.ApiClient, rdb: redis.Redis) -> str:
    """How the cache differs from a fresh LIST of every watched type ('' when equal)."""
    kube = Kube(api, KubeSettings())
    for kind in r.WATCHED.values():
        items, _ = kube.list(kind, label_selector=r.watch_selector(kind, ""))
        want = {_key(o): o for o in items}
        got = {_key(o): o for o in Lister(rdb, prefix="rw", resource=kind).list()}
        if want != got:
            missing = sorted(set(want) - set(got))[:3]
            extra = sorted(set(got) - set(want))[:3]
            stale = sorted(k for k in set(want) & set(got) if want[k] != got[k])[:3]
            return f"{kind.plural}: missing {missing}, extra {extra}, stale {stale}"
    return ""


def converge(api: k8s.ApiClient, rdb: redis.Redis, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while diff := cache_diff(api, rdb):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: after {timeout}s the cache differs: {diff}")
        time.sleep(0.2)


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


@pytest.mark.slow
def test_cache_equals_a_fresh_list_after_1000_random_ops(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    ops = Ops(api, seed=3)
    watcher = watchers.spawn("watcher-1", "watcher")
    watcher.wait_log(r"leads; starting", timeout=30)
    for _ in range(500):
        ops.one()
    watcher.kill_group(signal.SIGKILL)  # down while things change, deletes included
    deleted = 0
    for _ in range(300):
        before = ops.rev
        ops.one()
        deleted += ops.rev == before
    assert deleted > 20
    watcher = watchers.spawn("watcher-2", "watcher")
    for _ in range(200):
        ops.one()
    converge(api, rdb, 60, "the cache equals a fresh LIST")
    stats = wait_for(lambda: rdb.hgetall("rw:watcher:stats"), 15, "the watcher publishes stats")
    assert int(stats[b"rollouts.relists"]) == 1  # type: ignore[index]
    assert "Traceback" not in watcher.text() and "WARNING" not in watcher.text()


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_a_relist_in_pages_of_three_equals_the_list(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    watchers.env["ROLLOUTS_KUBE_PAGE_SIZE"] = "3"
    ops = Ops(api, seed=5)
    for _ in range(60):
        ops.one()
    watcher = watchers.spawn("watcher-1", "watcher")
    watcher.wait_log(r"leads; starting", timeout=30)
    converge(api, rdb, 30, "the first paged list equals the list")
    watcher.kill_group(signal.SIGKILL)  # down while objects are deleted, changed and created
    deleted = 0
    for _ in range(80):
        before = ops.rev
        ops.one()
        deleted += ops.rev == before
    assert deleted > 3
    watcher = watchers.spawn("watcher-2", "watcher")
    converge(api, rdb, 60, "the paged relist removed what vanished and wrote what changed")
    assert "Traceback" not in watcher.text()


def test_watcher_recovers_from_api_restart_and_forced_410(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis, cluster: DevClusterThread,
    tmp_path: Path,
) -> None:  # fmt: skip
    ops = Ops(api, seed=11)
    watcher = watchers.spawn("watcher", "watcher")
    watcher.wait_log(r"leads; starting", timeout=30)
    for _ in range(100):
        ops.one()
    converge(api, rdb, 30, "converged before the 410")

    cluster.force_gone()
    for _ in range(50):
        ops.one()
    converge(api, rdb, 30, "converged after a forced 410")
    assert "too old; relisting" in watcher.text()

    port = cluster.port
    cluster.stop()
    restarted = run_in_thread(port=port, ready_delay=0.2, state_file=tmp_path / "api-state.json")
    try:
        ops2 = Ops(api, seed=12)
        for _ in range(50):
            ops2.one()
        converge(api, rdb, 60, "converged after an API restart")
        assert watcher.popen.poll() is None
    finally:
        restarted.stop()


def queued(rdb: redis.Redis, kind: str = "rollouts") -> set[str]:
    return {k.decode() for k in rdb.zrange(f"rw:wq:{kind}:queued", 0, -1)}


def test_events_enqueue_exactly_the_owning_and_referencing_rollouts(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    custom, core, apps = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    ns = "team-a"
    for name, svc in (("web", "shared"), ("api", "shared"), ("solo", "own")):
        custom.create_namespaced_custom_object(
            "argoproj.io", "v1alpha1", ns, "rollouts", rollout_body(name, svc, 1)
        )
    core.create_namespaced_service(
        ns, {"metadata": {"name": "shared"}, "spec": {"ports": [{"port": 80}]}}
    )
    web = custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", ns, "rollouts", "web")
    labels = {"app": "web", r.POD_TEMPLATE_HASH_LABEL: "abc"}
    owner = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "name": "web",
        "uid": web["metadata"]["uid"],
        "controller": True,
    }
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    apps.create_namespaced_replica_set(
        ns,
        {
            "metadata": {"name": "web-abc", "labels": labels, "ownerReferences": [owner]},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    watcher = watchers.spawn("watcher", "watcher")
    watcher.wait_log(r"leads; starting", timeout=30)
    wait_for(lambda: queued(rdb) >= {f"{ns}/web", f"{ns}/api", f"{ns}/solo"}, 30, "initial sync")
    time.sleep(0.5)  # let the initial relist's adds all land before clearing

    rdb.delete("rw:wq:rollouts:queued")
    apps.patch_namespaced_replica_set_status(
        "web-abc", ns, {"status": {"replicas": 0, "observedGeneration": 7}}
    )
    wait_for(lambda: queued(rdb), 10, "the RS status change queued a key")
    time.sleep(0.5)
    assert queued(rdb) == {f"{ns}/web"}

    rdb.delete("rw:wq:rollouts:queued")
    core.patch_namespaced_service("shared", ns, {"metadata": {"labels": {"x": "y"}}})
    wait_for(lambda: queued(rdb), 10, "the service change queued keys")
    time.sleep(0.5)
    assert queued(rdb) == {f"{ns}/web", f"{ns}/api"}


@pytest.mark.slow
def test_standby_watcher_takes_over_and_catches_up(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    ops = Ops(api, seed=5)
    leader = watchers.spawn("watcher-1", "watcher")
    leader.wait_log(r"leads; starting", timeout=30)
    standby = watchers.spawn("watcher-2", "watcher")
    standby.wait_log(r"standby: the leader is", timeout=30)
    for _ in range(50):
        ops.one()
    converge(api, rdb, 30, "converged under the first leader")

    leader.kill_group(signal.SIGKILL)
    killed = time.monotonic()
    for _ in range(100):  # changes while nobody watches
        ops.one()
    standby.wait_log(r"leads; starting", timeout=20)
    took = time.monotonic() - killed
    assert took <= 15, f"standby took {took:.1f}s"
    converge(api, rdb, 30, "the new leader caught up")
    print(f"watcher failover: {took:.1f}s")


def test_watcher_without_a_cluster_is_a_one_line_error(procs: Processes, tmp_path: Path) -> None:
    procs.env["ROLLOUTS_KUBECONFIG"] = str(tmp_path / "missing")
    proc = procs.spawn("watcher", "watcher")
    proc.popen.wait(30)
    assert proc.popen.returncode == 1
    assert proc.text().strip().splitlines() == [
        f"rollouts: kubeconfig {tmp_path / 'missing'} does not exist"
    ]


@pytest.mark.parametrize("instance_id", ["", "blue"])
def test_watcher_owns_only_its_instance_id(
    instance_id: str, watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    custom = k8s.CustomObjectsApi(api)
    for name, label in (("unlabelled", None), ("blue", "blue"), ("green", "green")):
        body = rollout_body(name, "svc", 1)
        if label:
            body["metadata"]["labels"] = {r.INSTANCE_ID_LABEL: label}
        custom.create_namespaced_custom_object(
            "argoproj.io", "v1alpha1", "team-b", "rollouts", body
        )
    watchers.env["ROLLOUTS_KUBE_INSTANCE_ID"] = instance_id
    watchers.spawn("watcher", "watcher").wait_log(r"leads; starting", timeout=30)
    lister = Lister(rdb, prefix="rw", resource=r.ROLLOUTS)
    wait_for(lambda: lister.count() >= 1, 20, "the watcher cached rollouts")
    time.sleep(1)
    expected = {"": ["team-b/unlabelled"], "blue": ["team-b/blue"]}[instance_id]
    assert sorted(_key(o).lstrip("/") for o in lister.list()) == expected
    assert queued(rdb) == set(expected)


def test_workload_reflectors_start_when_a_rollout_references_the_kind(
    watchers: Processes, api: k8s.ApiClient, rdb: redis.Redis
) -> None:
    """Argo's getInformer: Deployments (and ReplicaSets without the pod-template-hash label) are
    listed only once a Rollout's workloadRef names the kind; their events then wake exactly the
    referencing rollouts."""
    custom, apps = k8s.CustomObjectsApi(api), k8s.AppsV1Api(api)
    ns = "team-b"
    labels = {"app": "wl"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    spec = {"replicas": 0, "selector": {"matchLabels": labels}, "template": template}
    apps.create_namespaced_deployment(ns, {"metadata": {"name": "wl"}, "spec": spec})
    apps.create_namespaced_replica_set(ns, {"metadata": {"name": "plain"}, "spec": spec})
    watcher = watchers.spawn("watcher", "watcher")
    watcher.wait_log(r"leads; starting", timeout=30)
    deployments = Lister(rdb, prefix="rw", resource=r.DEPLOYMENTS)
    unhashed = Lister(rdb, prefix="rw", resource=r.UNHASHED_REPLICASETS)
    hashed = Lister(rdb, prefix="rw", resource=r.REPLICASETS)
    time.sleep(1.0)
    assert deployments.count() == 0 and not rdb.smembers("rw:watcher:workloads:synced")

    for name, kind, target in (
        ("uses-deploy", "Deployment", "wl"),
        ("uses-rs", "ReplicaSet", "plain"),
    ):
        body = rollout_body(name, "svc", 1)
        del body["spec"]["template"], body["spec"]["selector"]
        body["spec"]["workloadRef"] = {"apiVersion": "apps/v1", "kind": kind, "name": target}
        custom.create_namespaced_custom_object("argoproj.io", "v1alpha1", ns, "rollouts", body)
    wait_for(lambda: deployments.get(f"{ns}/wl") is not None, 15, "the deployment cached")
    wait_for(lambda: unhashed.get(f"{ns}/plain") is not None, 15, "the plain RS cached")
    assert hashed.get(f"{ns}/plain") is None  # each ReplicaSet is cached once
    wait_for(
        lambda: (
            {b"deployments", b"replicasets-unhashed"} <= rdb.smembers("rw:watcher:workloads:synced")
        ),
        15,
        "both listed",
    )
    watcher.wait_log(r"references Deployment: starting its reflector", timeout=5)

    time.sleep(0.5)
    rdb.delete("rw:wq:rollouts:queued")
    apps.patch_namespaced_deployment("wl", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "x:2"}]}}}})  # fmt: skip
    wait_for(lambda: queued(rdb), 10, "the deployment change queued a key")
    time.sleep(0.5)
    assert queued(rdb) == {f"{ns}/uses-deploy"}
