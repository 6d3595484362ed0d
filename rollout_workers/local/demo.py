"""`rollouts demo`: the system end to end on the embedded defaults.

It brings the local stack up in its own state dir (with the demo Prometheus as analysis' default
Prometheus) and applies the examples from deploy/examples/: a canary with weighted steps and
pauses, a blue-green with manual promotion, two canaries with an analysis step, a canary whose
analysis is measured by Datadog (the `datadog` Secret it creates names the demo Prometheus'
Datadog-compatible API as the address), and a canary whose traffic moves by weight through
the nginx router (its canary Ingress's weight is shown
beside the weight in the rollout's status). Then, through the `rollouts` CLI exactly as a user
would type it, it changes every image (the second analysed canary gets a "flaky" one, which
the demo Prometheus scores at a 60% success rate), aborts and retries the first canary at its
pause, and promotes it, the blue-green and the routed canary, printing each rollout's state
as it changes. Meanwhile the analysis lets two canaries through (one measured by Datadog) and
aborts the other. The first canary is subscribed to notifications
(deploy/examples/notifications/: a webhook aimed at the demo Prometheus' /hooks), and what arrived
is printed: each step, the abort, the completion. It ends when those outcomes are reached and
the others are Healthy on the new revision, with a summary of the reconciles: how many, how long
(p50/p99), and how many per rollout update (a hot loop would show here).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import yaml

from rollout_workers import redisclient
from rollout_workers.kube import manifests
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import ANALYSISRUNS, EVENTS, INGRESSES, REPLICASETS, ROLLOUTS
from rollout_workers.local.stack import Stack
from rollout_workers.objects import Obj
from rollout_workers.settings import Settings
from rollout_workers.workqueue import WorkQueue

NAMESPACE = "rollouts-demo"
EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
NOTIFICATIONS = EXAMPLES / "notifications" / "argo-rollouts-notification-configmap.yaml"
HOOK_SERVICE = "service.webhook.demo-hook"
CANARY, BLUEGREEN = "canary-demo", "bluegreen-demo"
PASSING, FAILING = "canary-pass", "canary-fail"  # the canaries with an analysis step
DATADOG = "canary-datadog"  # the canary whose analysis step queries the datadog provider
ROUTED = "canary-nginx"  # the canary whose traffic moves by weight (nginx)
ROLLOUT_NAMES = (CANARY, BLUEGREEN, PASSING, FAILING, DATADOG, ROUTED)
#: The canary Ingress the nginx router makes of the stable one, and its weight annotation.
ROUTED_INGRESS = f"{ROUTED}-{ROUTED}-canary"
NGINX_WEIGHT = "nginx.ingress.kubernetes.io/canary-weight"
NEW_IMAGE = "argoproj/rollouts-demo:green"
FLAKY_IMAGE = "argoproj/rollouts-demo:flaky-yellow"


class DemoFailed(RuntimeError):
    pass


def phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def healthy_on_new_revision(obj: Obj) -> bool:
    status = obj.get("status") or {}
    revision = (
        (obj.get("metadata") or {}).get("annotations", {}).get("rollout.argoproj.io/revision")
    )
    return (
        phase(obj) == "Healthy"
        and status.get("stableRS") == status.get("currentPodHash")
        and revision == "2"
    )


def aborted_by_analysis(obj: Obj) -> bool:
    """Aborted by the controller (no user did), with the failed analysis as the reason."""
    status = obj.get("status") or {}
    return (
        phase(obj) == "Degraded"
        and status.get("abort") is True
        and "assessed Failed" in str(status.get("message") or "")
    )


@dataclass
class Demo:
    settings: Settings
    stack: Stack
    echo: Callable[[str], None] = click.echo
    timeout: float = 180
    _last: dict[str, str] = field(default_factory=dict)

    def run(self) -> dict[str, object]:
        stack = self.stack
        s = self.settings.model_copy(update={"kubeconfig": stack.kubeconfig})
        self.kube = Kube(api_client(s), s.kube)
        self.queue = WorkQueue(
            redisclient.process_client(stack.redis_url, s),
            kind="rollouts",
            prefix=s.redis.key_prefix,
            settings=s.queue,
            send=lambda keys: None,  # read-only use: stats and durations
        )
        redis = redisclient.process_client(stack.redis_url, s)
        leader_key = f"{s.redis.key_prefix}:watcher:leader"
        self.wait_until(lambda: redis.exists(leader_key), "a watcher leads")

        self.apply_notifications(s.notifications_namespace)
        self.apply_datadog_secret(s.controller_namespace)
        self.echo(f"== applying deploy/examples/ to namespace {NAMESPACE}")
        manifests.ensure_namespace(self.kube, NAMESPACE)
        files = sorted(EXAMPLES.glob("*.yaml"))
        if not files:
            raise DemoFailed(f"no examples in {EXAMPLES}: the demo runs from a source checkout")
        for doc in manifests.load(files):
            manifests.apply(self.kube, doc, NAMESPACE)
        self.wait_for(CANARY, lambda o: phase(o) == "Healthy", "the canary's first deploy")
        self.wait_for(BLUEGREEN, lambda o: phase(o) == "Healthy", "the blue-green's first deploy")
        for name in (PASSING, FAILING, DATADOG, ROUTED):
            self.wait_for(name, lambda o: phase(o) == "Healthy", f"{name}'s first deploy")

        before = self.reconciles()
        self.echo(f"== new image {NEW_IMAGE} for {CANARY}, {BLUEGREEN}, {PASSING} and {DATADOG}")
        prometheus = self.stack.demo_prometheus_url
        self.echo(f"   and {FLAKY_IMAGE} for {FAILING}; {prometheus} measures both")
        self.cli("set", "image", CANARY, f"app={NEW_IMAGE}")
        self.cli("set", "image", BLUEGREEN, f"app={NEW_IMAGE}")
        self.cli("set", "image", PASSING, f"app={NEW_IMAGE}")
        self.cli("set", "image", FAILING, f"app={FLAKY_IMAGE}")
        self.cli("set", "image", DATADOG, f"app={NEW_IMAGE}")
        self.cli("set", "image", ROUTED, f"app={NEW_IMAGE}")
        self.wait_for(CANARY, self.at_indefinite_pause, "the canary pauses at setWeight 50")
        self.wait_for(
            BLUEGREEN, lambda o: phase(o) == "Paused", "the blue-green waits for promotion"
        )

        self.echo("== meanwhile, analysis decided the other three canaries")
        self.wait_for(PASSING, healthy_on_new_revision, f"{PASSING} passes its analysis and is "
                      "Healthy on revision 2")  # fmt: skip
        self.wait_for(DATADOG, healthy_on_new_revision, f"{DATADOG} passes its analysis, "
                      "measured by Datadog, and is Healthy on revision 2")  # fmt: skip
        self.wait_for(FAILING, aborted_by_analysis, f"{FAILING} fails its analysis and is "
                      "aborted")  # fmt: skip
        self.wait_until(lambda: self.event(FAILING, "AnalysisRunFailed"),
                        f"the AnalysisRunFailed event of {FAILING}")  # fmt: skip
        for event in self.event(FAILING, "AnalysisRunFailed"):
            self.echo(f"  event {FAILING} {event.get('reason')}: {event.get('message')}")
        runs = self.analysis_runs()

        self.echo(f"== {ROUTED}: the nginx canary Ingress's weight follows the steps")
        self.wait_for(
            ROUTED,
            lambda o: self.at_indefinite_pause(o) and self.ingress_weight() == "50",
            f"{ROUTED} pauses with canary-weight 50 on {ROUTED_INGRESS}",
        )
        self.cli("get", "rollout", ROUTED)

        self.echo("== abort the canary, then retry it")
        self.cli("abort", CANARY)
        self.wait_for(CANARY, lambda o: phase(o) == "Degraded", "the canary is aborted")
        self.cli("retry", "rollout", CANARY)
        self.wait_for(CANARY, self.at_indefinite_pause, "the retried canary pauses again")

        self.echo("== promote all three")
        self.cli("promote", CANARY)
        self.cli("promote", BLUEGREEN)
        self.cli("promote", ROUTED)
        self.wait_for(CANARY, healthy_on_new_revision, "the canary is Healthy on revision 2")
        self.wait_for(BLUEGREEN, healthy_on_new_revision, "the blue-green is Healthy on revision 2")
        self.wait_for(
            ROUTED,
            lambda o: healthy_on_new_revision(o) and self.ingress_weight() == "0",
            f"{ROUTED} is Healthy on revision 2, all traffic back on the stable Service",
        )
        updates = self.reconciles() - before
        hooks = self.notifications()

        durations = sorted(self.queue.durations())
        summary: dict[str, object] = {
            "rollouts": len(ROLLOUT_NAMES),
            "reconciles": self.reconciles(),
            "reconciles per rollout update": round(updates / len(ROLLOUT_NAMES), 1),
            "analysis runs": " + ".join(
                f"{sum(1 for p in runs.values() if p == want)} {want}"
                for want in ("Successful", "Failed")
            ),
            "retried (write races)": self.queue.stats().counters.get("error", 0),
            "notifications received": len(hooks),
            "p50_ms": round(1000 * statistics.median(durations), 1) if durations else None,
            "p99_ms": round(1000 * durations[int(0.99 * (len(durations) - 1))], 1)
            if durations
            else None,
        }
        if stack.flower:
            summary["flower"] = f"http://127.0.0.1:{stack.flower_port}"
        return summary

    # -- steps ---------------------------------------------------------------------------------

    def apply_notifications(self, namespace: str) -> None:
        """deploy/examples/notifications/'s ConfigMap, its webhook aimed at the demo
        Prometheus' /hooks, in the namespace the controller reads it from."""
        (doc,) = manifests.load([NOTIFICATIONS])
        doc["metadata"]["namespace"] = namespace
        hook = f"{self.stack.demo_prometheus_url}/hooks/demo"
        doc["data"][HOOK_SERVICE] = yaml.safe_dump({"url": hook})
        self.echo(f"== notifications: {doc['metadata']['name']} in namespace {namespace}, "
                  f"webhook {hook}")  # fmt: skip
        manifests.ensure_namespace(self.kube, namespace)
        manifests.apply(self.kube, doc, namespace)

    def apply_datadog_secret(self, namespace: str) -> None:
        """The `datadog` Secret the datadog provider reads in the controller's namespace, with
        the demo Prometheus (which answers Datadog's query API) as the address."""
        secret = {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "datadog", "namespace": namespace},
            "stringData": {"address": self.stack.demo_prometheus_url, "api-key": "demo",
                           "app-key": "demo"},
        }  # fmt: skip
        self.echo(f"== datadog: Secret datadog in namespace {namespace}, "
                  f"address {self.stack.demo_prometheus_url}")  # fmt: skip
        manifests.ensure_namespace(self.kube, namespace)
        manifests.apply(self.kube, secret, namespace)

    def notifications(self) -> list[Obj]:
        """What the local webhook received for the canary, once its completion has arrived."""

        def received() -> list[Obj]:
            url = f"{self.stack.demo_prometheus_url}/hooks"
            with urllib.request.urlopen(url, timeout=5) as answer:
                hooks: list[Obj] = json.loads(answer.read())
            return hooks

        self.echo(
            f"== notifications {CANARY} sent to the local webhook (service.webhook.demo-hook)"
        )
        self.wait_until(
            lambda: any('"completed"' in h["body"] for h in received()),
            f"the notification of {CANARY}'s completion",
        )
        hooks = received()
        for hook in hooks:
            self.echo(f"  {hook['method']} {hook['path']} {hook['body'].strip()}")
        return hooks

    def at_indefinite_pause(self, obj: Obj) -> bool:
        status = obj.get("status") or {}
        return phase(obj) == "Paused" and status.get("currentStepIndex") == 3

    def cli(self, *args: str) -> None:
        """Run `rollouts ARGS -n NAMESPACE` as a user would."""
        env = {
            **os.environ,
            "ROLLOUTS_KUBECONFIG": str(self.stack.kubeconfig),
            "ROLLOUTS_STATE_DIR": str(self.stack.state_dir),
        }
        self.echo(f"$ rollouts {' '.join(args)} -n {NAMESPACE}")
        result = subprocess.run(
            [sys.executable, "-m", "rollout_workers", *args, "-n", NAMESPACE],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if result.returncode != 0:
            raise DemoFailed(f"`rollouts {' '.join(args)}` failed: {result.stderr.strip()}")
        for line in result.stdout.strip().splitlines():
            self.echo(f"  {line}")

    def wait_for(self, name: str, done: Callable[[Obj], bool], what: str) -> None:
        def check() -> bool:
            obj = self.poll().get(name)
            return obj is not None and done(obj)

        self.wait_until(check, what)
        self.echo(f"  ok: {what}")

    def poll(self) -> dict[str, Obj]:
        """Every demo rollout by name, showing those whose state changed."""
        rollouts, _ = self.kube.list(ROLLOUTS, namespace=NAMESPACE)
        sets, _ = self.kube.list(REPLICASETS, namespace=NAMESPACE)
        by_name = {o["metadata"]["name"]: o for o in rollouts}
        for name in ROLLOUT_NAMES:
            if name in by_name:
                self.show(name, by_name[name], sets)
        return by_name

    def event(self, name: str, reason: str) -> list[Obj]:
        """The events of rollout `name` with `reason`."""
        events, _ = self.kube.list(EVENTS, namespace=NAMESPACE)
        return [
            e
            for e in events
            if (e.get("involvedObject") or {}).get("name") == name and e.get("reason") == reason
        ]

    def analysis_runs(self) -> dict[str, str]:
        """Each AnalysisRun's phase, after showing it with its measured values."""
        runs, _ = self.kube.list(ANALYSISRUNS, namespace=NAMESPACE)
        phases: dict[str, str] = {}
        for run in sorted(runs, key=lambda r: str(r["metadata"]["name"])):
            status = run.get("status") or {}
            phases[run["metadata"]["name"]] = str(status.get("phase", ""))
            values = "; ".join(
                f"{m.get('name')} "
                + " ".join(str(x.get("value")) for x in m.get("measurements") or [])
                for m in status.get("metricResults") or []
            )
            self.echo(f"  analysisrun {run['metadata']['name']}: {status.get('phase')} ({values})")
        return phases

    def wait_until(self, predicate: Callable[[], object], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not predicate():
            for note in self.stack.supervise_once():
                self.echo(f"  ({note})")
            if time.monotonic() > deadline:
                raise DemoFailed(f"timed out after {self.timeout:.0f}s waiting until {what}")
            time.sleep(0.2)

    def show(self, name: str, obj: Obj, sets: list[Obj]) -> None:
        """One line per visible change of a rollout: phase, step, replicas per ReplicaSet."""
        status = obj.get("status") or {}
        steps = ((obj["spec"].get("strategy") or {}).get("canary") or {}).get("steps") or []
        step = f" step {status.get('currentStepIndex', 0)}/{len(steps)}" if steps else ""
        uid = obj["metadata"].get("uid")
        counts = sorted(
            (
                rs["metadata"].get("annotations", {}).get("rollout.argoproj.io/revision", "?"),
                rs["spec"].get("replicas", 0),
                rs.get("status", {}).get("availableReplicas", 0),
            )
            for rs in sets
            if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
        )
        pods = " ".join(f"rev{rev}:{avail}/{want}" for rev, want, avail in counts)
        message = status.get("message") or ""
        weights = (status.get("canary") or {}).get("weights")
        if weights:
            # The weight the controller set, and what the canary Ingress carries.
            pods += f" weight {weights['canary'].get('weight', 0)}"
            if name == ROUTED:
                pods += f" (ingress {self.ingress_weight()})"
        line = f"{name:<15} {phase(obj) or '-':<11}{step:<10} {pods:<24} {message}"
        if self._last.get(name) != line:
            self._last[name] = line
            self.echo(f"  {line.rstrip()}")

    def ingress_weight(self) -> str | None:
        """The canary-weight annotation of the routed canary's canary Ingress (None: none)."""
        try:
            ingress = self.kube.get(INGRESSES, NAMESPACE, ROUTED_INGRESS)
        except NotFound:
            return None
        return (ingress["metadata"].get("annotations") or {}).get(NGINX_WEIGHT)

    def reconciles(self) -> int:
        return self.queue.stats().counters.get("reconciles", 0)
