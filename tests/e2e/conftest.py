"""End-to-end fixtures: the embedded API in-process, and the real processes around it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout_workers.devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.settings import Settings
from tests.support.procs import Proc, Processes


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.5)
    yield handle
    handle.stop()


def start_system(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path, workers: int
) -> tuple[Kube, Path, list[Proc]]:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    procs.env["ROLLOUTS_KUBECONFIG"] = str(kubeconfig)
    procs.env.pop("ROLLOUTS_RECONCILE_HANDLERS", None)  # the real rollout controller
    procs.spawn("watcher", "watcher").wait_log(r"leads; starting", timeout=30)
    procs.beat()
    hosts = [procs.worker(f"host-{i}", concurrency=2) for i in range(workers)]
    settings = Settings(kubeconfig=kubeconfig)
    return Kube(api_client(settings), settings.kube), kubeconfig, hosts
