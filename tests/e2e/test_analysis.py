"""AnalysisRuns measured by the real worker pool: watcher, beat and workers on the embedded
API; web metrics against a local HTTP server, a job metric run by the embedded job runner.
Every wait between measurements is a Redis timer fired by beat's tick."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from tests.e2e.conftest import start_system
from tests.support.procs import Processes

NS = "analysis"


@pytest.fixture
def metrics_server() -> Iterator[str]:
    """Answers /ok with {"ok": true, "rate": 0.99} and /bad with {"ok": false}."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = {"ok": True, "rate": 0.99} if self.path.startswith("/ok") else {"ok": False}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def analysis_run(name: str, metric: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": name},
        "spec": {"metrics": [metric]},
    }


def wait_phase(kube: Kube, name: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run = kube.get(r.ANALYSISRUNS, NS, name)
        phase = (run.get("status") or {}).get("phase")
        if phase in ("Successful", "Failed", "Error", "Inconclusive"):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: still {phase}: {run.get('status')}")
        time.sleep(0.25)


def test_analysis_runs_on_the_worker_pool(
    procs: Processes,
    cluster: DevClusterThread,
    tmp_path: Path,
    rdb: redis.Redis,
    metrics_server: str,
) -> None:
    kube, _, _ = start_system(procs, cluster, tmp_path, workers=2)
    manifests.ensure_namespace(kube, NS)
    web = {"web": {"url": f"{metrics_server}/ok", "jsonPath": "{$.rate}"}}
    passes = {
        "name": "rate",
        "interval": "1s",
        "count": 3,
        "successCondition": "result >= 0.95",
        "provider": web,
    }
    fails = {
        "name": "ok",
        "interval": "1s",
        "count": 3,
        "successCondition": "result.ok == true",
        "provider": {"web": {"url": f"{metrics_server}/bad"}},
    }
    container = {"name": "t", "image": "busybox", "command": ["sh", "-c", "true"]}
    pod = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    job = {"name": "smoke", "provider": {"job": {"spec": {"backoffLimit": 0, "template": pod}}}}
    for name, metric in (("passes", passes), ("fails", fails), ("job", job)):
        manifests.apply(kube, analysis_run(name, metric), NS)
    unknown = {"name": "x", "consecutiveErrorLimit": 0, "provider": {"datadog": {}}}
    manifests.apply(kube, analysis_run("unknown", unknown), NS)

    passed = wait_phase(kube, "passes")
    result = passed["status"]["metricResults"][0]
    assert passed["status"]["phase"] == "Successful"
    assert (result["count"], result["successful"], len(result["measurements"])) == (3, 3, 3)
    first, last = result["measurements"][0]["startedAt"], result["measurements"][-1]["startedAt"]
    assert first < last  # measured on a 1s interval, not all at once

    failed = wait_phase(kube, "fails")
    assert failed["status"]["phase"] == "Failed"
    assert 'Metric "ok" assessed Failed' in failed["status"]["message"]

    job = wait_phase(kube, "job")
    assert job["status"]["phase"] == "Successful", job["status"]

    unknown = wait_phase(kube, "unknown")
    assert unknown["status"]["phase"] == "Error"
    assert "datadog" in json.dumps(unknown["status"])
