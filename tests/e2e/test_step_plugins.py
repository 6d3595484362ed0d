"""Step plugins end to end: real watcher, beat and worker processes on the embedded API, the
shipped webhook step plugin (found by the workers through its entry point, enabled by
ROLLOUTS_PLUGINS_STEP) calling a local HTTP endpoint that records every call.

- a webhook step answers Running, then Successful: the rollout goes on to the next step;
- a webhook step answers Failed: the rollout aborts with the plugin's message, and Abort is
  called on the earlier step that ran successfully (not on the failed one).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
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
from tests.support.procs import REPO, Processes

Obj = dict[str, Any]
NS = "plugins"
WEBHOOK = "rollout-workers/webhook"
TIMEOUT = 40.0


class Endpoint:
    """Records (path, operation, stepIndex) of each call; answers from a script per path
    (the last answer repeats)."""

    def __init__(self, script: dict[str, list[tuple[int, Obj | None]]]) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.script = script
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with endpoint.lock:
                    endpoint.calls.append(
                        (self.path, body["operation"], body["rollout"]["stepIndex"])
                    )
                    answers = endpoint.script.get(self.path) or [(200, None)]
                    code, answer = answers.pop(0) if len(answers) > 1 else answers[0]
                data = json.dumps(answer).encode() if answer is not None else b""
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, path: str) -> list[tuple[str, int]]:
        with self.lock:
            return [(op, index) for p, op, index in self.calls if p == path]


RUNNING = (
    200,
    {"phase": "Running", "message": "working", "requeueAfter": "1s", "status": {"n": 1}},
)
SUCCESSFUL = (200, {"phase": "Successful", "message": "done"})
FAILED = (200, {"phase": "Failed", "message": "smoke test failed"})


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint(
        {
            "/ok": [RUNNING, SUCCESSFUL],
            "/first": [SUCCESSFUL],
            "/fails": [FAILED],
        }
    )
    yield ep
    ep.server.shutdown()
    ep.server.server_close()


def plugin_step(url: str) -> Obj:
    return {"plugin": {"name": WEBHOOK, "config": {"url": url, "timeout": "5s"}}}


def canary(name: str, steps: list[Obj]) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "demo:1"}]},
            },
            "strategy": {"canary": {"steps": steps}},
        },
    }


def status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def wait(kube: Kube, name: str, done: Callable[[Obj], bool], what: str) -> Obj:
    deadline = time.monotonic() + TIMEOUT
    while True:
        obj = kube.get(r.ROLLOUTS, NS, name)
        if done(obj):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: {what}; status {obj.get('status')}")
        time.sleep(0.2)


def set_image(kubeconfig: Path, name: str, image: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rollout_workers", "set", "image", name, f"app={image}", "-n", NS],
        cwd=REPO, env={"ROLLOUTS_KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def plugin_statuses(obj: Obj) -> list[tuple[int, str, str]]:
    found = (status(obj).get("canary") or {}).get("stepPluginStatuses") or []
    return [(s["index"], s["operation"], s.get("phase", "")) for s in found]


def test_webhook_step_plugin_runs_succeeds_fails_and_aborts(
    procs: Processes,
    cluster: DevClusterThread,
    tmp_path: Path,
    rdb: redis.Redis,
    endpoint: Endpoint,
) -> None:
    procs.env.update(
        {
            "ROLLOUTS_PLUGINS_STEP": WEBHOOK,
            # Argo's 10s minimum and 30s default requeue, shortened for the test.
            "ROLLOUTS_PLUGINS_STEP_REQUEUE_MIN": "0",
            "ROLLOUTS_PLUGINS_STEP_REQUEUE_DEFAULT": "1",
            "ROLLOUTS_PLUGINS_STEP_ERROR_BACKOFF": "1",
            "ROLLOUTS_PLUGINS_STEP_BACKOFF_DELAY": "0",
        }
    )
    kube, kubeconfig, _ = start_system(procs, cluster, tmp_path, workers=1)
    manifests.ensure_namespace(kube, NS)
    url = endpoint.url
    for doc in (
        canary("ok", [{"setWeight": 50}, plugin_step(f"{url}/ok"), {"pause": {}}]),
        canary(
            "bad",
            [{"setWeight": 50}, plugin_step(f"{url}/first"), plugin_step(f"{url}/fails")],
        ),
    ):
        manifests.apply(kube, doc, NS)
    for name in ("ok", "bad"):
        wait(kube, name, lambda o: status(o).get("phase") == "Healthy", "first deploy")
        set_image(kubeconfig, name, "demo:2")

    # Running, then Successful, then the next step (a pause).
    ok = wait(kube, "ok", lambda o: status(o).get("phase") == "Paused", "paused after the plugin")
    assert status(ok)["currentStepIndex"] == 2
    assert endpoint.of("/ok") == [("run", 1), ("run", 1)]
    (run,) = status(ok)["canary"]["stepPluginStatuses"]
    assert (run["phase"], run["message"], run["executions"]) == ("Successful", "done", 2)
    assert run["name"] == WEBHOOK and run["finishedAt"]

    # Failed aborts the rollout; the earlier successful plugin step is aborted.
    bad = wait(
        kube,
        "bad",
        lambda o: (1, "Abort", "Successful") in plugin_statuses(o),
        "aborted, with Abort on the earlier plugin step",
    )
    assert status(bad)["abort"] is True
    assert status(bad)["phase"] == "Degraded"
    progressing = next(c for c in status(bad)["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "RolloutAborted"
    assert progressing["message"] == "Rollout aborted update to revision 2: smoke test failed"
    assert plugin_statuses(bad) == [
        (1, "Run", "Successful"),
        (2, "Run", "Failed"),
        (1, "Abort", "Successful"),
    ]
    assert endpoint.of("/first") == [("run", 1), ("abort", 1)]
    assert endpoint.of("/fails") == [("run", 2)]
