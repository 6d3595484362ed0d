"""Outages of Redis and of the API server mid-rollout, with the real processes: nothing is lost.

Redis restarts both without persistence (queues, timers and cache gone) and with AOF (at most
the last second of writes gone); the API server is stopped for 10 s with its state kept. In each
case a canary waiting on a pause duration and a blue-green waiting on its auto-promotion reach
their final state with no manual step and no process restarted, and each process logs a Redis
outage once rather than once per attempt.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import DevClusterThread, run_in_thread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.local.redis_server import EmbeddedRedis, free_port
from tests.e2e.conftest import start_system
from tests.e2e.test_rollouts import bluegreen, canary, phase, status
from tests.support.procs import Proc, Processes

Obj = dict[str, Any]
NS = "default"


def wait(kube: Kube, name: str, done: Callable[[Obj], bool], what: str, timeout: float) -> Obj:
    deadline = time.monotonic() + timeout
    while True:
        obj = kube.get(r.ROLLOUTS, NS, name)
        if done(obj):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: {what}; status {obj.get('status')}")
        time.sleep(0.2)


def replicas(kube: Kube, name: str) -> dict[str, int]:
    uid = kube.get(r.ROLLOUTS, NS, name)["metadata"]["uid"]
    sets, _ = kube.list(r.REPLICASETS, namespace=NS)
    return {
        rs["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL]: rs["spec"]["replicas"]
        for rs in sets
        if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
    }


def set_image(kube: Kube, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    kube.patch(r.ROLLOUTS, NS, name, patch)


def finished(kube: Kube, name: str) -> Callable[[Obj], bool]:
    """Healthy on the new revision, stable, every old ReplicaSet scaled to zero."""

    def check(o: Obj) -> bool:
        s = status(o)
        if phase(o) != "Healthy" or s.get("stableRS") != s.get("currentPodHash"):
            return False
        counts = replicas(kube, name)
        return counts.get(str(s.get("stableRS")), 0) > 0 and sum(counts.values()) == counts.get(
            str(s.get("stableRS"))
        )

    return check


def start_mid_rollout(kube: Kube) -> None:
    """A canary paused on a 6 s duration and a blue-green waiting 6 s to auto-promote."""
    steps = [{"setWeight": 50}, {"pause": {"duration": "6s"}}]
    docs = [
        canary("cn", 2, steps),
        *bluegreen("bg", 2, autoPromotionSeconds=6, scaleDownDelaySeconds=2),
    ]
    for doc in docs:
        manifests.apply(kube, doc, NS)
    for name in ("cn", "bg"):
        wait(kube, name, finished(kube, name), "first deploy", 30)
        set_image(kube, name, "demo:2")
    wait(kube, "cn", lambda o: phase(o) == "Paused", "canary paused on its duration", 30)
    wait(
        kube,
        "bg",
        lambda o: (
            bool(status(o).get("blueGreen", {}).get("previewSelector"))
            and status(o).get("blueGreen", {}).get("previewSelector") != status(o).get("stableRS")
        ),
        "blue-green previewing",
        30,
    )


def outage_lines(proc: Proc) -> tuple[int, int]:
    text = proc.text()
    return len(re.findall(r"redis unavailable", text)), len(re.findall(r"redis back after", text))


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=0.3)
    yield handle
    handle.stop()


@pytest.mark.slow
@pytest.mark.parametrize("persistence", ["none", "aof"])
def test_rollouts_finish_across_a_redis_restart(
    persistence: str, procs: Processes, cluster: DevClusterThread, tmp_path: Path
) -> None:
    server = EmbeddedRedis(tmp_path / "redis", appendonly=persistence == "aof").start()
    try:
        procs.env["ROLLOUTS_REDIS_URL"] = server.url
        kube, _, _ = start_system(procs, cluster, tmp_path, workers=1)
        start_mid_rollout(kube)

        server.kill()
        time.sleep(2)  # every process notices: its next round trip fails
        server.start()
        back = time.monotonic()
        for name in ("cn", "bg"):
            wait(
                kube, name, finished(kube, name), f"finished after the restart ({persistence})", 45
            )
        took = time.monotonic() - back
        print(f"redis {persistence}: every rollout finished {took:.1f}s after Redis was back")

        for proc in procs.procs:
            assert proc.popen.poll() is None, f"{proc.name} exited:\n{proc.text()[-3000:]}"
            down, up = outage_lines(proc)
            assert (down, up) == (1, 1), f"{proc.name}: {down} down / {up} back lines"
    finally:
        procs.stop_all()
        server.stop()


def sync_count(proc: Proc) -> int:
    """Reconciles the worker host has finished so far (Celery logs one line per task)."""
    return len(re.findall(r"rollouts\.sync\[[^]]+\] succeeded", proc.text()))


@pytest.mark.slow
def test_rollouts_finish_across_an_api_server_outage(procs: Processes, tmp_path: Path) -> None:
    state, port = tmp_path / "devcluster.json", free_port()
    cluster = run_in_thread(ready_delay=0.3, port=port, state_file=state)
    try:
        kube, _, hosts = start_system(procs, cluster, tmp_path, workers=1)
        start_mid_rollout(kube)

        cluster.stop()  # state saved; every request is refused until it is back
        before = sync_count(hosts[0])
        time.sleep(OUTAGE)  # the outage itself: nothing to poll for
        during = sync_count(hosts[0]) - before
        cluster = run_in_thread(ready_delay=0.3, port=port, state_file=state)
        back = time.monotonic()
        for name in ("cn", "bg"):
            wait(kube, name, finished(kube, name), "finished after the API outage", 60)
        took = time.monotonic() - back
        print(f"API outage: {during} reconciles in {OUTAGE:g}s; finished {took:.1f}s after")

        # Per key, failures back off 5 ms, 10 ms, ... doubling: about log2(10 s / 5 ms) + 1 = 12
        # attempts in 10 s; the two rollouts' timers add a few. A hot loop would be thousands.
        assert during <= 2 * 14, f"{during} reconciles during a {OUTAGE:g}s outage"
        for proc in procs.procs:
            assert proc.popen.poll() is None, f"{proc.name} exited:\n{proc.text()[-3000:]}"
        # Reflectors back off too (0.5 s, 1 s, 2 s, ... per type): a handful of retries each.
        retries = len(re.findall(r"reflector: \w+: .*Unavailable", procs.procs[0].text()))
        assert retries <= 8 * len(r.WATCHED), f"{retries} list/watch retries"
    finally:
        procs.stop_all()
        with contextlib.suppress(Exception):  # already stopped when the test failed mid-outage
            cluster.stop()


OUTAGE = 10.0
