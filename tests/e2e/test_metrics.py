"""Controller metrics end to end: one scrape of the leader watcher's /metrics gives the whole
pool's figures while two worker hosts reconcile, and no counter goes backwards when a host is
killed with SIGKILL and started again. A standby watcher serves no pool series."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.workqueue import WorkQueue
from tests.e2e.conftest import start_system
from tests.e2e.test_rollouts import bluegreen, canary
from tests.support.procs import REPO, Processes, wait_for

NS = "default"
CANARIES = ["c1", "c2", "c3"]
BLUEGREENS = ["b1", "b2"]
Sample = tuple[str, tuple[tuple[str, str], ...]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return str(response.read().decode())


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> dict[Sample, float]:
    """Samples as exposed (prometheus_client's parser would rename `rollout_reconcile_error`
    to `..._total`); the parser is still run, to prove the text is valid exposition."""
    list(text_string_to_metric_families(text))
    out = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            name, labels, value = match.groups()
            out[(name, tuple(sorted(_LABEL.findall(labels or ""))))] = float(value)
    return out


def counters(text: str) -> dict[Sample, float]:
    """Every sample that must never decrease: counters and histogram buckets, counts, sums."""
    typed = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    out = {}
    for (name, labels), value in samples(text).items():
        for family in (name, name.rsplit("_", 1)[0]):
            if typed.get(family) in ("counter", "histogram"):
                out[(name, labels)] = value
    return out


def total(text: str, metric: str, /, **labels: str) -> float:
    return sum(
        v
        for (n, ls), v in samples(text).items()
        if n == metric and labels.items() <= dict(ls).items()
    )


def healthy(kube: Kube, names: list[str]) -> bool:
    for name in names:
        status = kube.get(r.ROLLOUTS, NS, name).get("status") or {}
        if status.get("phase") != "Healthy" or status.get("stableRS") != status.get(
            "currentPodHash"
        ):
            return False
    return True


def hashes(kube: Kube, names: list[str]) -> set[str]:
    return {
        str((kube.get(r.ROLLOUTS, NS, name).get("status") or {}).get("currentPodHash"))
        for name in names
    }


@pytest.fixture
def port(procs: Processes) -> Iterator[int]:
    chosen = free_port()
    procs.env["ROLLOUTS_METRICS_PORT"] = str(chosen)
    yield chosen


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_one_scrape_gives_the_pool(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path, rdb: redis.Redis, port: int
) -> None:
    kube, _, hosts = start_system(procs, cluster, tmp_path, workers=2)
    for name in CANARIES:
        manifests.apply(kube, canary(name, 2, []), NS)
    for name in BLUEGREENS:
        for doc in bluegreen(name, 1):
            manifests.apply(kube, doc, NS)
    names = CANARIES + BLUEGREENS
    wait_for(lambda: healthy(kube, names), 40, "every rollout Healthy")

    # rollout_info: one series per rollout in the cluster, Argo's strategy and phase labels.
    queue = WorkQueue(rdb, kind="rollouts", prefix="rw", settings=_settings(), send=_no_send)

    def settled() -> str | None:
        # Each process writes its counts at most a second after it made them, so a scrape
        # agrees with the queue's stats once every process has written its last ones: the
        # queue-duration observations of a claim may go out before the reconcile's others.
        text = scrape(port)
        stats = queue.stats().counters
        reconciles = stats.get("reconciles")
        counted = [
            total(text, "rollout_reconcile_count"),
            total(text, "workqueue_work_duration_seconds_count", name="Rollouts"),
            total(text, "workqueue_queue_duration_seconds_count", name="Rollouts"),
        ]
        errors = total(text, "rollout_reconcile_error")
        if any(n != reconciles for n in counted) or errors != stats.get("error", 0):
            return None
        return None if queue.stats().active else text

    text = str(wait_for(settled, 20, "the scrape agrees with the queue's stats", interval=0.3))
    info = {
        dict(ls)["name"]: dict(ls)
        for (n, ls), v in samples(text).items()
        if n == "rollout_info" and v == 1
    }
    assert sorted(info) == sorted(names)
    for name in CANARIES:
        assert info[name]["strategy"] == "canary" and info[name]["phase"] == "Completed"
    for name in BLUEGREENS:
        assert info[name]["strategy"] == "blueGreen" and info[name]["phase"] == "Completed"
    assert total(text, "rollout_info_replicas_available", name="c1") == 2

    # The reconcile counters are the queue's own stats (every process's reconciles, once).
    stats = queue.stats().counters
    assert total(text, "rollout_reconcile_count") == stats["reconciles"] > len(names)
    assert total(text, "rollout_reconcile_error") == stats.get("error", 0)
    assert (
        total(text, "workqueue_work_duration_seconds_count", name="Rollouts") == stats["reconciles"]
    )
    assert (
        total(text, "workqueue_queue_duration_seconds_count", name="Rollouts")
        == stats["reconciles"]
    )
    assert total(text, "workqueue_adds_total", name="Rollouts") >= len(names)
    assert total(text, "workqueue_depth", name="Rollouts") == 0
    # Events the controller recorded, as the API server has them once the workers' event sinks
    # have written them (after the reconciles): an Event recorded again is counted up, not
    # created again, and none was dropped.
    recorded = total(text, "rollout_events_total")
    assert recorded > 0

    def written() -> float | None:
        events, _ = kube.list(r.EVENTS, namespace=NS)
        ours = [e for e in events if e.get("reportingComponent") == "rollouts-controller"]
        count = sum(int(e.get("count") or 1) for e in ours)
        return count if count == recorded else None

    wait_for(written, 20, "every recorded event written", interval=0.3)
    assert total(scrape(port), "rollout_events_dropped_total") == 0
    assert total(text, "controller_clientset_k8s_request_total", kind="rollouts", verb="Patch") > 0
    assert total(text, "controller_clientset_k8s_request_total", verb="Watch") > 0  # the watcher's

    # A standby watcher serves no pool series (scraping both replicas counts the pool once).
    standby_port = free_port()
    standby = procs.spawn("watcher-2", "watcher", env={"ROLLOUTS_METRICS_PORT": str(standby_port)})
    standby.wait_log(r"standby: the leader is", timeout=20)
    standby_text = scrape(standby_port)
    assert "rollout_info" not in standby_text and "workqueue_depth" not in standby_text
    assert "process_" in standby_text or "python_info" in standby_text

    # A worker host killed mid-flight and started again: no counter goes backwards.
    before = counters(scrape(port))
    old = hashes(kube, names)
    hosts[0].kill_group()
    hosts[0].popen.wait(10)
    procs.worker("host-0-again", concurrency=2)
    for name in names:
        kube.patch(r.ROLLOUTS, NS, name, {"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "demo:2"}]}}}})  # fmt: skip
    wait_for(
        lambda: healthy(kube, names) and hashes(kube, names).isdisjoint(old),
        40,
        "every rollout Healthy on demo:2",
    )
    after = counters(scrape(port))
    went_back = {k: (v, after.get(k)) for k, v in before.items() if after.get(k, -1) < v}
    assert not went_back
    assert sum(v for (n, _), v in after.items() if n == "rollout_reconcile_count") > sum(
        v for (n, _), v in before.items() if n == "rollout_reconcile_count"
    )

    # `rollouts metrics` prints the same pool-wide series once.
    printed = subprocess.run(
        [sys.executable, "-m", "rollout_workers", "metrics"],
        cwd=REPO, env=_env(procs), capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    assert sorted(k for k in samples(printed) if k[0] == "rollout_info") == sorted(
        k for k in samples(text) if k[0] == "rollout_info"
    )


def test_metrics_command_without_redis_is_one_line(tmp_path: Path) -> None:
    env = {"ROLLOUTS_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
           "ROLLOUTS_STATE_DIR": str(tmp_path), "ROLLOUTS_REDIS_SOCKET_TIMEOUT": "2"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "rollout_workers", "metrics"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Redis" in result.stderr and "Traceback" not in result.stderr


def _env(procs: Processes) -> dict[str, str]:
    import os

    return {**os.environ, **procs.env}


def _settings() -> Any:
    from rollout_workers.settings import QueueSettings

    return QueueSettings()


def _no_send(keys: Any) -> None:
    raise AssertionError("the test only reads the queue")
