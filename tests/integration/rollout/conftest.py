"""An in-process harness for reconcile tests: the embedded API, a real watcher filling the
Redis cache, and the rollout controller called directly (one sync at a time) until a condition
holds. The full system with worker processes is tested in tests/e2e/."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client as k8s

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.analysis.controller import AnalysisRunController
from rollout_workers.analysis.providers import KubeSecretReader, ProviderDeps, provider_for
from rollout_workers.analysis.providers.job import CachedJobReader
from rollout_workers.cache import Lister
from rollout_workers.cache.written import WrittenVersions
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.experiment.controller import ExperimentController
from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.writer import KubeWriter
from rollout_workers.reconcile.handlers import SyncRequest
from rollout_workers.rollout.controller import RolloutController
from rollout_workers.settings import Settings
from rollout_workers.watcher.process import Watcher

NS = "default"


class NoLease:
    def lost(self) -> bool:
        return False

    def check(self) -> None:
        return None


@dataclass
class Harness:
    kube: Kube
    api: k8s.ApiClient
    controller: RolloutController
    rollouts: Lister
    replicasets: Lister
    rdb: redis.Redis
    analysis: AnalysisRunController | None = None
    runs: Lister | None = None
    experiments: ExperimentController | None = None
    experiment_cache: Lister | None = None

    def sync(self, name: str) -> Any:
        return self.controller.sync(SyncRequest("rollouts", ObjectKey(f"{NS}/{name}"), NoLease()))

    def rollout(self, name: str) -> dict[str, Any]:
        return self.kube.get(r.ROLLOUTS, NS, name)

    def rs_replicas(self, name: str) -> dict[str, int]:
        """spec.replicas by pod template hash, for the rollout's ReplicaSets."""
        uid = self.rollout(name)["metadata"]["uid"]
        items, _ = self.kube.list(r.REPLICASETS, namespace=NS)
        return {
            rs["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL]: rs["spec"]["replicas"]
            for rs in items
            if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
        }

    def drive(
        self, name: str, until: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        """Sync repeatedly (as the workqueue would) until `until(rollout)` holds."""
        deadline = time.monotonic() + timeout
        while True:
            self.sync(name)
            self.sync_experiments()
            self.sync_analysis_runs()
            obj = self.rollout(name)
            if until(obj):
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; last status: {obj.get('status')}")
            time.sleep(0.1)

    def sync_analysis_runs(self) -> None:
        """Reconcile every AnalysisRun in the cache (the analysisruns workers' part)."""
        if self.analysis is None or self.runs is None:
            return
        for run in self.runs.list(NS):
            key = ObjectKey(f"{NS}/{run['metadata']['name']}")
            self.analysis.sync(SyncRequest("analysisruns", key, NoLease()))

    def sync_experiments(self) -> None:
        """Reconcile every Experiment in the cache (the experiments workers' part)."""
        if self.experiments is None or self.experiment_cache is None:
            return
        for ex in self.experiment_cache.list(NS):
            key = ObjectKey(f"{NS}/{ex['metadata']['name']}")
            self.experiments.sync(SyncRequest("experiments", key, NoLease()))

    def create(self, body: dict[str, Any]) -> None:
        self.kube.create(r.ROLLOUTS, NS, body)

    def patch(self, name: str, patch: dict[str, Any], *, status: bool = False) -> None:
        self.kube.patch(r.ROLLOUTS, NS, name, patch, subresource="status" if status else "")


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.1)
    yield handle
    pruned = handle.pruned_fields()
    handle.stop()
    # The API server drops what the CRDs do not declare: the controller must not write it.
    assert pruned == {}, f"the controller wrote fields the CRD schemas lack: {pruned}"


@pytest.fixture
def harness(
    cluster: DevClusterThread, rdb: redis.Redis, tmp_path: Path, redis_url: str
) -> Iterator[Harness]:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    settings = Settings(kubeconfig=kubeconfig, redis={"url": redis_url})
    kube = Kube(api_client(settings), settings.kube)
    runtime = build_runtime(create_app(settings, redis_url), settings, redis_url)
    stop = threading.Event()
    watcher = Watcher(settings=settings, kube=kube, runtime=runtime, stop=stop)
    watcher.start()
    written = WrittenVersions(rdb, prefix="rw")
    writer = KubeWriter(kube, on_written=written.record)
    runs = Lister(rdb, prefix="rw", resource=r.ANALYSISRUNS)
    controller = RolloutController(
        rollouts=Lister(rdb, prefix="rw", resource=r.ROLLOUTS),
        replicasets=Lister(rdb, prefix="rw", resource=r.REPLICASETS),
        services=Lister(rdb, prefix="rw", resource=r.SERVICES),
        templates=Lister(rdb, prefix="rw", resource=r.ANALYSISTEMPLATES),
        cluster_templates=Lister(rdb, prefix="rw", resource=r.CLUSTERANALYSISTEMPLATES),
        analysis_runs=runs,
        experiments=Lister(rdb, prefix="rw", resource=r.EXPERIMENTS),
        written=written,
        writer=writer,
    )
    experiments = ExperimentController(
        experiments=Lister(rdb, prefix="rw", resource=r.EXPERIMENTS),
        replicasets=Lister(rdb, prefix="rw", resource=r.REPLICASETS),
        services=Lister(rdb, prefix="rw", resource=r.SERVICES),
        analysis_runs=runs,
        templates=Lister(rdb, prefix="rw", resource=r.ANALYSISTEMPLATES),
        cluster_templates=Lister(rdb, prefix="rw", resource=r.CLUSTERANALYSISTEMPLATES),
        written=written,
        writer=writer,
    )
    deps = ProviderDeps(
        writer=writer,
        secrets=KubeSecretReader(kube),
        jobs=CachedJobReader(Lister(rdb, prefix="rw", resource=r.JOBS)),
    )
    analysis = AnalysisRunController(
        runs=runs,
        written=written,
        writer=writer,
        providers=lambda metric: provider_for(metric, deps),
        secrets=KubeSecretReader(kube),
    )
    yield Harness(
        kube=kube,
        api=kube.api,
        controller=controller,
        rollouts=Lister(rdb, prefix="rw", resource=r.ROLLOUTS),
        replicasets=Lister(rdb, prefix="rw", resource=r.REPLICASETS),
        rdb=rdb,
        analysis=analysis,
        runs=runs,
        experiments=experiments,
        experiment_cache=Lister(rdb, prefix="rw", resource=r.EXPERIMENTS),
    )
    stop.set()


def canary_rollout(
    name: str, *, replicas: int, steps: list[dict[str, Any]], image: str = "app:1"
) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            "strategy": {"canary": {"steps": steps}},
        },
    }


def phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase", ""))
