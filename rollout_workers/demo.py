"""`rollouts demo`: the system end to end on the embedded defaults.

It brings the local stack up in its own state dir, applies the example rollouts from
deploy/examples/, changes their images, and follows each change through the pipeline: API event
→ watcher → cache → workqueue → worker reconcile. It ends with a summary of the reconciles and
their durations. The rollouts' reconcile handler is whatever settings name for the `rollouts`
kind (printed at the start).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from rollout_workers.kube import manifests
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.resources import ROLLOUTS
from rollout_workers.local import Stack
from rollout_workers.redis_server import client as redis_client
from rollout_workers.settings import Settings
from rollout_workers.workqueue import WorkQueue

NAMESPACE = "rollouts-demo"
EXAMPLES = Path(__file__).resolve().parents[1] / "deploy" / "examples"


class DemoFailed(RuntimeError):
    pass


@dataclass
class Demo:
    settings: Settings
    stack: Stack
    echo: Callable[[str], None] = click.echo

    def run(self, timeout: float = 120) -> dict[str, object]:
        stack = self.stack
        s = self.settings.model_copy(update={"kubeconfig": stack.kubeconfig})
        kube = Kube(api_client(s), s.kube)
        redis = redis_client(stack.redis_url, s)
        queue = WorkQueue(
            redis,
            kind="rollouts",
            prefix=s.redis.key_prefix,
            settings=s.queue,
            send=lambda keys: None,  # read-only use: stats and durations
        )
        self.echo(f"reconcile handler for rollouts: {s.reconcile.handlers.get('rollouts')}")
        self.wait(
            lambda: redis.exists(f"{s.redis.key_prefix}:watcher:leader"), 30, "a watcher leads"
        )

        manifests.ensure_namespace(kube, NAMESPACE)
        docs = manifests.load(sorted(EXAMPLES.glob("*.yaml")))
        rollouts = [d["metadata"]["name"] for d in docs if d.get("kind") == "Rollout"]
        before = self.reconciles(queue)
        for doc in docs:
            manifests.apply(kube, doc, NAMESPACE)
            self.echo(f"applied {doc['kind']} {NAMESPACE}/{doc['metadata']['name']}")
        self.settle(queue, before + len(rollouts), timeout, "the new rollouts were reconciled")

        for name in rollouts:
            before = self.reconciles(queue)
            current = kube.get(ROLLOUTS, NAMESPACE, name)
            containers = current["spec"]["template"]["spec"]["containers"]
            image = containers[0]["image"].rsplit(":", 1)[0] + ":green"
            patch = {
                "spec": {"template": {"spec": {"containers": [{**containers[0], "image": image}]}}}
            }
            kube.patch(ROLLOUTS, NAMESPACE, name, patch)
            self.echo(f"set image {NAMESPACE}/{name} {containers[0]['name']}={image}")
            self.settle(queue, before + 1, timeout, f"{name}'s update was reconciled")

        durations = sorted(queue.durations())
        stats = queue.stats()
        summary: dict[str, object] = {
            "rollouts": len(rollouts),
            "reconciles": stats.counters.get("reconciles", 0),
            "errors": stats.counters.get("error", 0),
            "p50_ms": round(1000 * statistics.median(durations), 2) if durations else None,
            "p99_ms": round(1000 * durations[int(0.99 * (len(durations) - 1))], 2)
            if durations
            else None,
        }
        if stack.flower:
            summary["flower"] = f"http://127.0.0.1:{stack.flower_port}"
        return summary

    def reconciles(self, queue: WorkQueue) -> int:
        return queue.stats().counters.get("reconciles", 0)

    def settle(self, queue: WorkQueue, target: int, timeout: float, what: str) -> None:
        def done() -> bool:
            s = queue.stats()
            return s.counters.get("reconciles", 0) >= target and s.queued == 0 and s.active == 0

        self.wait(done, timeout, what)
        s = queue.stats()
        self.echo(
            f"  {what}: {s.counters.get('reconciles', 0)} reconciles so far, "
            f"queued {s.queued}, active {s.active}, timers {s.timers}"
        )

    def wait(self, predicate: Callable[[], object], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            for note in self.stack.supervise_once():
                self.echo(note)
            if time.monotonic() > deadline:
                raise DemoFailed(f"timed out after {timeout:.0f}s waiting until {what}")
            time.sleep(0.1)
