"""Issue scenarios end to end: real watcher, beat and worker processes on the embedded API,
every user action through the `rollouts` CLI: the rollout scenarios of #4, the analysis and
experiment scenarios of #5 (web metrics from an in-process endpoint, job metrics completed by
the embedded API's Job controller). They run concurrently, one namespace each, with three
worker hosts while a thread kill -9s a random one every 0.5-1.5 s (and starts it again); every
end state they assert must hold. The traffic-routing scenarios (routers.py) run in the RBAC
audit, without the kills.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.settings import KINDS, Settings
from rollout_workers.workqueue import Owner, held_key, token_prefix
from tests.e2e.conftest import start_system
from tests.support.authserver import aws_environment
from tests.support.metrics import MetricsServer
from tests.support.procs import REPO, Processes

Obj = dict[str, Any]
# Each wait may span several kills at default settings: a killed claim waits out its lease.
TIMEOUT = 150.0


@dataclass
class World:
    kube: Kube
    kubeconfig: Path
    namespace: str
    metrics: MetricsServer
    #: Under chaos: how many `kind` keys starting with a prefix a killed host held claimed
    #: (a notification job whose sender was killed mid-send may be sent again).
    interrupted: Callable[[str, str], int] = lambda kind, prefix: 0

    def cli(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTS_")}
        env["ROLLOUTS_KUBECONFIG"] = str(self.kubeconfig)
        result = subprocess.run(
            [sys.executable, "-m", "rollout_workers", *args, "-n", self.namespace],
            cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, f"rollouts {' '.join(args)}: {result.stderr}"
        return result.stdout

    def rollout(self, name: str) -> Obj:
        return self.kube.get(r.ROLLOUTS, self.namespace, name)

    def wait(
        self, name: str, done: Callable[[Obj], bool], what: str, timeout: float = TIMEOUT
    ) -> Obj:
        deadline = time.monotonic() + timeout
        while True:
            obj = self.rollout(name)
            if done(obj):
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.namespace}/{name}: {what}; status {obj.get('status')}")
            time.sleep(0.25)

    def replicas(self, name: str) -> dict[str, int]:
        uid = self.rollout(name)["metadata"]["uid"]
        sets, _ = self.kube.list(r.REPLICASETS, namespace=self.namespace)
        return {
            rs["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL]: rs["spec"]["replicas"]
            for rs in sets
            if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
        }

    def reasons(self) -> list[str]:
        events, _ = self.kube.list(r.EVENTS, namespace=self.namespace)
        return [str(e["reason"]) for e in events]

    def wait_reasons(self, *reasons: str, timeout: float = TIMEOUT) -> None:
        """Poll until Events of every reason exist: a worker writes them from its event sink,
        after the reconcile that recorded them."""
        deadline = time.monotonic() + timeout
        while missing := set(reasons) - set(self.reasons()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.namespace}: no events {sorted(missing)}")
            time.sleep(0.25)

    def apply(self, *docs: Obj) -> None:
        for doc in docs:
            manifests.apply(self.kube, doc, self.namespace)

    def list(self, resource: r.Resource) -> list[Obj]:
        items, _ = self.kube.list(resource, namespace=self.namespace)
        return items

    def template(self, name: str, **metric: Any) -> None:
        """An AnalysisTemplate measuring `metrics/{{args.value}}`, passing at >= 0.9."""
        url = self.metrics.url + "/{{args.value}}"
        metric = {
            "name": name,
            "successCondition": "result >= 0.9",
            "provider": {"web": {"url": url}},
            **metric,
        }
        self.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
                    "metadata": {"name": name},
                    "spec": {"args": [{"name": "value"}], "metrics": [metric]}})  # fmt: skip

    def job_template(self, name: str, command: str, args: list[Obj] | None = None) -> None:
        """An AnalysisTemplate whose metric is a Job running `command` (the embedded API's Job
        controller completes it)."""
        pod = {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "check", "image": "busybox", "command": ["sh", "-c", command]}
                ],
            }
        }
        metric = {"name": name, "provider": {"job": {"spec": {"backoffLimit": 0, "template": pod}}}}
        self.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
                    "metadata": {"name": name},
                    "spec": {"args": args or [], "metrics": [metric]}})  # fmt: skip


def phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def canary(name: str, replicas: int, steps: list[Obj], **spec: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "demo:1"}]},
            },
            "strategy": {"canary": {"steps": steps}},
            **spec,
        },
    }


def bluegreen(name: str, replicas: int, **strategy: Any) -> list[Obj]:
    svc = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-{kind}"},
         "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}
        for kind in ("active", "preview")
    ]  # fmt: skip
    ro = canary(name, replicas, [])
    ro["spec"]["strategy"] = {
        "blueGreen": {"activeService": f"{name}-active", "previewService": f"{name}-preview",
                      **strategy}
    }  # fmt: skip
    return [*svc, ro]


def promoted(o: Obj) -> bool:
    """Healthy, with the current ReplicaSet marked stable."""
    return phase(o) == "Healthy" and status(o).get("stableRS") == status(o).get("currentPodHash")


def promoted_past(stable: str) -> Callable[[Obj], bool]:
    """Promoted to a revision other than `stable`: right after an update the status still shows
    the previous revision promoted until a worker has seen the change."""
    return lambda o: promoted(o) and status(o).get("stableRS") != stable


def selector(w: World, service: str) -> str:
    svc = w.kube.get(r.SERVICES, w.namespace, service)
    return str(svc["spec"]["selector"].get(r.POD_TEMPLATE_HASH_LABEL, ""))


# -- the scenarios of the issue ------------------------------------------------------------------


def analysis(template: str, value: str) -> Obj:
    return {"templates": [{"templateName": template}], "args": [{"name": "value", "value": value}]}


def runs_of(w: World, kind: str) -> list[Obj]:
    return [
        x for x in w.list(r.ANALYSISRUNS) if x["metadata"]["labels"].get("rollout-type") == kind
    ]


def scenario_1_scaling_while_paused(w: World) -> None:
    w.apply(canary("web", 1, [{"setWeight": 25}, {"pause": {}}]))
    stable = w.wait("web", lambda o: phase(o) == "Healthy", "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "web", "app=demo:2")
    new = w.wait("web", lambda o: phase(o) == "Paused", "paused at 25%")["status"]["currentPodHash"]
    w.wait("web", lambda o: w.replicas("web") == {new: 1, stable: 1}, "1/1")
    w.kube.patch(r.ROLLOUTS, w.namespace, "web", {"spec": {"replicas": 8}})
    w.wait("web", lambda o: w.replicas("web") == {new: 2, stable: 6}, "2/6 after scaling to 8")
    w.kube.patch(r.ROLLOUTS, w.namespace, "web", {"spec": {"replicas": 4}})
    w.wait("web", lambda o: w.replicas("web") == {new: 1, stable: 3}, "1/3 after scaling to 4")
    assert phase(w.rollout("web")) == "Paused"


def scenario_2_abort_retry_promote(w: World) -> None:
    w.apply(canary("ab", 2, [{"setWeight": 50}, {"pause": {}}]))
    w.wait("ab", lambda o: phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "ab", "app=demo:2")
    w.wait("ab", lambda o: phase(o) == "Paused", "paused")
    w.cli("abort", "ab")
    w.wait("ab", lambda o: phase(o) == "Degraded", "aborted")
    w.cli("retry", "rollout", "ab")
    w.wait("ab", lambda o: phase(o) == "Paused", "paused again after retry")
    w.cli("promote", "ab")
    done = w.wait("ab", promoted, "promoted")
    assert done["metadata"]["annotations"]["rollout.argoproj.io/revision"] == "2"
    w.wait_reasons("RolloutPaused", "RolloutAborted", "RolloutCompleted", "ScalingReplicaSet")


def scenario_3_update_while_paused(w: World) -> None:
    w.apply(canary("mid", 4, [{"setWeight": 50}, {"pause": {}}]))
    stable = w.wait("mid", lambda o: phase(o) == "Healthy", "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "mid", "app=demo:2")
    middle = w.wait("mid", lambda o: phase(o) == "Paused", "paused")["status"]["currentPodHash"]
    w.cli("set", "image", "mid", "app=demo:3")

    def paused_on_third(o: Obj) -> bool:
        return phase(o) == "Paused" and status(o).get("currentPodHash") not in (stable, middle)

    latest = w.wait("mid", paused_on_third, "paused on revision 3")["status"]["currentPodHash"]
    w.wait("mid", lambda o: w.replicas("mid") == {stable: 2, middle: 0, latest: 2}, "middle at 0")


def scenario_4_bluegreen_scale_down_delay(w: World) -> None:
    # Long enough that a loaded machine still sees the old ReplicaSet kept after the switch.
    w.apply(*bluegreen("bg", 2, scaleDownDelaySeconds=15))

    def serving(o: Obj) -> bool:
        return phase(o) == "Healthy" and selector(w, "bg-active") != ""

    old = w.wait("bg", serving, "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "bg", "app=demo:2")

    def switched(o: Obj) -> bool:
        return selector(w, "bg-active") not in ("", old) and status(o).get("stableRS") != old

    new = w.wait("bg", switched, "switched")["status"]["currentPodHash"]
    assert w.replicas("bg")[old] == 2, "the old ReplicaSet is kept during scaleDownDelay"
    w.wait("bg", lambda o: w.replicas("bg") == {old: 0, new: 2}, "old scaled down after delay")
    w.wait_reasons("SwitchService")


def scenario_5_bluegreen_preview_and_promote(w: World) -> None:
    w.apply(*bluegreen("pv", 3, previewReplicaCount=1, autoPromotionEnabled=False))

    def serving(o: Obj) -> bool:
        return phase(o) == "Healthy" and selector(w, "pv-active") != ""

    old = w.wait("pv", serving, "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "pv", "app=demo:2")
    new = w.wait("pv", lambda o: phase(o) == "Paused", "paused for promotion")["status"][
        "currentPodHash"
    ]
    w.wait("pv", lambda o: w.replicas("pv") == {old: 3, new: 1}, "one preview pod")
    assert selector(w, "pv-preview") == new and selector(w, "pv-active") == old
    w.cli("promote", "pv")
    w.wait("pv", lambda o: phase(o) == "Healthy" and selector(w, "pv-active") == new, "promoted")


def scenario_6_bad_image_deadline(w: World) -> None:
    w.apply(canary("bad", 2, [{"setWeight": 50}, {"pause": {}}], progressDeadlineSeconds=10))
    stable = w.wait("bad", lambda o: phase(o) == "Healthy", "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "bad", "app=demo:bad-1")
    first = w.wait("bad", lambda o: phase(o) == "Degraded", "deadline exceeded", timeout=60)
    assert "ProgressDeadlineExceeded" in status(first)["message"]
    first_bad = status(first)["currentPodHash"]
    w.cli("set", "image", "bad", "app=demo:bad-2")

    def second_bad_only(o: Obj) -> bool:
        current = status(o).get("currentPodHash")
        return current not in (stable, first_bad) and w.replicas("bad").get(first_bad) == 0

    w.wait("bad", second_bad_only, "middle bad revision at 0")


def scenario_7_full_restart_invalid(w: World) -> None:
    w.apply(canary("full", 2, [{"setWeight": 50}, {"pause": {}}]))
    w.wait("full", lambda o: phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "full", "app=demo:2")
    w.wait("full", lambda o: phase(o) == "Paused", "paused")
    w.cli("promote", "full", "--full")
    w.wait("full", promoted, "fully promoted")
    w.cli("restart", "full")
    at = w.rollout("full")["spec"]["restartAt"]
    w.wait(
        "full", lambda o: status(o).get("restartedAt") == at and phase(o) == "Healthy", "restarted"
    )
    w.apply(canary("inv", 1, [{"setWeight": 150}]))
    bad = w.wait("inv", lambda o: phase(o) == "Degraded", "invalid spec")
    assert "InvalidSpec" in status(bad)["message"]
    fixed = {"spec": {"strategy": {"canary": {"steps": [{"setWeight": 30}]}}}}
    w.kube.patch(r.ROLLOUTS, w.namespace, "inv", fixed)
    w.wait("inv", lambda o: phase(o) == "Healthy", "valid again")


# -- the scenarios of the analysis issue (#5) ----------------------------------------------------


def analysis_1_job_steps_then_promote(w: World) -> None:
    """An inline job analysis at each pause, then promote: Healthy with one run per step."""
    w.job_template("smoke", "true")
    step = {"analysis": {"templates": [{"templateName": "smoke"}]}}
    w.apply(
        canary("jobs", 2, [{"setWeight": 25}, step, {"setWeight": 50}, step, {"pause": {}}, step])
    )
    w.wait("jobs", lambda o: phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "jobs", "app=demo:2")
    w.wait(
        "jobs", lambda o: phase(o) == "Paused" and status(o).get("currentStepIndex") == 4, "paused"
    )
    w.cli("promote", "jobs")
    done = w.wait("jobs", promoted, "promoted")
    mine = [
        x
        for x in runs_of(w, "Step")
        if x["metadata"]["name"].startswith(f"jobs-{status(done)['currentPodHash']}-")
    ]
    # One run per analysis step; a reconcile killed after creating one and before recording
    # it may leave a completed run and its `.1` sibling (Argo's collision counter).
    steps = {x["metadata"]["name"].split(".")[0] for x in mine}
    assert len(steps) == 3 and all(x["status"]["phase"] == "Successful" for x in mine), mine
    assert len(w.list(r.JOBS)) >= 3


def analysis_2_background_while_paused(w: World) -> None:
    """Background web analysis Running while paused; Successful after promote."""
    w.template("bg-rate", interval="1s")
    body = canary("bga", 2, [{"setWeight": 50}, {"pause": {}}])
    body["spec"]["strategy"]["canary"]["analysis"] = analysis("bg-rate", "0.99")
    w.apply(body)
    w.wait("bga", lambda o: phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "bga", "app=demo:2")

    def background(o: Obj) -> str:
        run = (status(o).get("canary") or {}).get("currentBackgroundAnalysisRunStatus") or {}
        return str(run.get("status", ""))

    w.wait("bga", lambda o: phase(o) == "Paused" and background(o) == "Running", "measuring")
    w.cli("promote", "bga")
    w.wait("bga", promoted, "promoted")
    deadline = time.monotonic() + TIMEOUT
    while [x["status"].get("phase") for x in runs_of(w, "Background")] != ["Successful"]:
        assert time.monotonic() < deadline, runs_of(w, "Background")
        time.sleep(0.25)


def analysis_3_pre_promotion_failure_then_fixed(w: World) -> None:
    """Blue-green pre-promotion failure: Degraded, preview on the new revision. Fixed args and
    a retry: Healthy."""
    w.template("gate")
    w.apply(*bluegreen("pre", 1, prePromotionAnalysis=analysis("gate", "0.5")))
    old = w.wait(
        "pre", lambda o: phase(o) == "Healthy" and selector(w, "pre-active") != "", "first deploy"
    )["status"]["stableRS"]
    w.cli("set", "image", "pre", "app=demo:2")
    degraded = w.wait("pre", lambda o: phase(o) == "Degraded", "pre-promotion analysis failed")
    new = status(degraded)["currentPodHash"]
    assert selector(w, "pre-preview") == new and selector(w, "pre-active") == old
    fixed = {
        "spec": {"strategy": {"blueGreen": {"prePromotionAnalysis": analysis("gate", "0.99")}}}
    }
    w.kube.patch(r.ROLLOUTS, w.namespace, "pre", fixed)
    w.cli("retry", "rollout", "pre")
    w.wait(
        "pre", lambda o: promoted(o) and selector(w, "pre-active") == new, "promoted after retry"
    )


def analysis_4_pre_and_post_then_fast_rollback(w: World) -> None:
    """Blue-green pre- and post-promotion analysis; the old template again: a fast rollback
    that starts no new run."""
    w.template("gate")
    w.apply(
        *bluegreen(
            "pp",
            1,
            prePromotionAnalysis=analysis("gate", "0.99"),
            postPromotionAnalysis=analysis("gate", "0.99"),
            scaleDownDelaySeconds=60,
        )
    )
    old = w.wait(
        "pp", lambda o: phase(o) == "Healthy" and selector(w, "pp-active") != "", "first deploy"
    )["status"]["stableRS"]
    w.cli("set", "image", "pp", "app=demo:2")
    w.wait("pp", promoted_past(old), "promoted")
    runs = w.list(r.ANALYSISRUNS)
    # One run of each type; a reconcile killed after creating one and before recording it may
    # leave its `.1` sibling (Argo's collision counter).
    passed = {
        x["metadata"]["labels"]["rollout-type"]
        for x in runs
        if (x.get("status") or {}).get("phase") == "Successful"
    }
    assert passed == {"PostPromotion", "PrePromotion"}, runs
    assert len({x["metadata"]["name"].split(".")[0] for x in runs}) == 2, runs
    w.cli("set", "image", "pp", "app=demo:1")
    w.wait(
        "pp",
        lambda o: selector(w, "pp-active") == old and status(o).get("stableRS") == old,
        "rolled back",
    )
    assert len(w.list(r.ANALYSISRUNS)) == len(runs), "a fast rollback analyses nothing"


def analysis_5_experiment_step(w: World) -> None:
    """An experiment step with stable and canary templates and a required job analysis: the
    Experiment succeeds, and the job got both templates' pod hashes."""
    command = "echo stable={{args.stable-hash}} canary={{args.canary-hash}}"
    w.job_template("compare", command, [{"name": "stable-hash"}, {"name": "canary-hash"}])
    step = {
        "experiment": {
            "templates": [
                {"name": "baseline", "specRef": "stable"},
                {"name": "canary", "specRef": "canary"},
            ],
            "analyses": [
                {
                    "name": "compare",
                    "templateName": "compare",
                    "requiredForCompletion": True,
                    "args": [
                        {"name": "stable-hash", "value": "{{templates.baseline.podTemplateHash}}"},
                        {"name": "canary-hash", "value": "{{templates.canary.podTemplateHash}}"},
                    ],
                }
            ],
        }
    }
    w.apply(canary("exp", 2, [{"setWeight": 50}, step]))
    stable = w.wait("exp", lambda o: phase(o) == "Healthy", "first deploy")["status"]["stableRS"]
    w.cli("set", "image", "exp", "app=demo:2")
    done = w.wait("exp", promoted_past(stable), "promoted")
    name = f"exp-{status(done)['currentPodHash']}-2-1"
    experiment = w.kube.get(r.EXPERIMENTS, w.namespace, name)
    assert status(experiment)["phase"] == "Successful", status(experiment)
    hashes = {
        rs["metadata"]["annotations"]["experiment.argoproj.io/template-name"]: rs["metadata"][
            "labels"
        ][r.POD_TEMPLATE_HASH_LABEL]
        for rs in w.list(r.REPLICASETS)
        if rs["metadata"]["name"].startswith(f"{name}-")
    }
    assert set(hashes) == {"baseline", "canary"}
    run = w.kube.get(r.ANALYSISRUNS, w.namespace, f"{name}-compare")
    commands = [
        j["spec"]["template"]["spec"]["containers"][0]["command"][-1]
        for j in w.list(r.JOBS)
        if j["metadata"]["labels"].get(r.ANALYSIS_RUN_UID_LABEL) == run["metadata"]["uid"]
    ]
    assert commands[-1] == f"echo stable={hashes['baseline']} canary={hashes['canary']}"


def analysis_6_inconclusive_then_promote(w: World) -> None:
    """An inconclusive result pauses the rollout; promote moves past the step, as the plugin
    (v1.8 and later) does it: no fresh run."""
    key = f"{w.namespace}-inc"
    w.metrics.values[key] = 0.5  # neither >= 0.9 nor < 0.1: Inconclusive
    w.template("inc", failureCondition="result < 0.1")
    w.apply(canary("inc", 1, [{"analysis": analysis("inc", key)}]))
    w.wait("inc", lambda o: phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "inc", "app=demo:2")
    paused = w.wait("inc", lambda o: phase(o) == "Paused", "paused on the inconclusive run")
    assert status(paused)["pauseConditions"][0]["reason"] == "InconclusiveAnalysisRun"
    # (Under kill -9 a reconcile that created the run may die before recording it; its retry
    # then creates `<name>.1` once the first has completed, as Argo's collision counter does.)
    before = {x["metadata"]["name"] for x in runs_of(w, "Step")}
    w.cli("promote", "inc")
    w.wait("inc", promoted, "promoted past the inconclusive step")
    assert {x["metadata"]["name"] for x in runs_of(w, "Step")} == before


SCENARIOS = [
    scenario_1_scaling_while_paused,
    scenario_2_abort_retry_promote,
    scenario_3_update_while_paused,
    scenario_4_bluegreen_scale_down_delay,
    scenario_5_bluegreen_preview_and_promote,
    scenario_6_bad_image_deadline,
    scenario_7_full_restart_invalid,
    analysis_1_job_steps_then_promote,
    analysis_2_background_while_paused,
    analysis_3_pre_promotion_failure_then_fixed,
    analysis_4_pre_and_post_then_fast_rollback,
    analysis_5_experiment_step,
    analysis_6_inconclusive_then_promote,
]


# -- the system ---------------------------------------------------------------------------------


def run_all(
    kube: Kube,
    kubeconfig: Path,
    scenarios: list[Callable[[World], None]] | None = None,
    *,
    prefix: str = "s",
    logs: Path | None = None,
    tracker: OrphanTracker | None = None,
) -> None:
    """Run the scenarios (default: SCENARIOS) concurrently, one namespace `<prefix><n>` each;
    every failure is reported at the end, with the lines of the process logs under `logs` that
    name the failed scenario's namespace (what CI keeps of a flaky run)."""
    scenarios = SCENARIOS if scenarios is None else scenarios
    failures: list[str] = []
    metrics = MetricsServer().start()

    def one(index: int, scenario: Callable[[World], None]) -> None:
        ns = f"{prefix}{index + 1}"
        manifests.ensure_namespace(kube, ns)
        started = time.monotonic()
        try:
            world = World(kube, kubeconfig, ns, metrics)
            if tracker is not None:
                world.interrupted = tracker.interrupted
            scenario(world)
        except Exception:
            failures.append(
                f"{scenario.__name__}:\n{traceback.format_exc()}{log_lines(logs, f'{ns}/')}"
            )
        print(f"{scenario.__name__}: {time.monotonic() - started:.1f} s")

    try:
        with ThreadPoolExecutor(len(scenarios)) as pool:
            list(pool.map(one, range(len(scenarios)), scenarios))
    finally:
        metrics.stop()
    assert not failures, "\n".join(failures)


def log_lines(logs: Path | None, needle: str, last: int = 120) -> str:
    """The last lines of every log under `logs` that contain `needle` (the keyed traces of a
    scenario's namespace), merged across the processes in time order."""
    if logs is None:
        return ""
    found: list[tuple[str, str]] = []
    for path in sorted(logs.glob("*.log")):
        with path.open(errors="replace") as f:
            # Lines start with their time ("2026-11-26 03:31:59,204"), so they sort by it.
            found += [(line[:23], f"{path.stem}: {line.rstrip()}") for line in f if needle in line]
    found.sort(key=lambda item: item[0])
    lines = [line for _, line in found[-last:]]
    return "\nlog lines naming " + needle + ":\n" + "\n".join(lines) + "\n"


@dataclass
class Orphan:
    """A key a killed host held (claimed) or had in hand (reserved, publishing)."""

    kind: str
    key: str
    how: str  # "claimed" or "reserved"
    killed_at: float  # Redis time, s
    victim: str  # the start of the killed host's owner tokens
    moved: float | None = None  # seconds from the kill to its next reconcile start


class OrphanTracker:
    """Takes, right after each kill, what the killed host held from the workqueue's records
    (`active` tokens of its processes; `held`: the messages it had reserved or was publishing),
    then polls each key until another process claims it: the claim time (`started`, Redis
    time) is the key's next reconcile start. A key claimed and finished between two polls
    counts at the poll that finds it gone, so the figures are upper bounds."""

    def __init__(self, rdb: redis.Redis, prefix: str) -> None:
        self.rdb, self.prefix = rdb, prefix
        self.orphans: list[Orphan] = []
        self._pending: list[Orphan] = []
        self._lock = threading.Lock()
        #: The longest any key was seen waiting in a `queued` zset (Redis time), and which.
        self.longest_wait = 0.0
        self.longest_waiter = ""

    def now(self) -> float:
        s, us = self.rdb.time()
        return int(s) + int(us) / 1e6

    def killed(self, host_pid: int) -> None:
        killed_at = self.now()
        host = f"{socket.gethostname()}:{host_pid}"
        victim = token_prefix(host)
        found: list[Orphan] = []
        for kind in KINDS:
            base = f"{self.prefix}:wq:{kind}"
            for key, token in self.rdb.hgetall(f"{base}:active").items():
                if token.decode().startswith(victim):
                    found.append(Orphan(kind, key.decode(), "claimed", killed_at, victim))
            for key, holder in self.rdb.hgetall(held_key(self.prefix, kind)).items():
                if holder.decode().split("|")[0] == host:
                    found.append(Orphan(kind, key.decode(), "reserved", killed_at, victim))
        with self._lock:
            self.orphans += found
            self._pending += found

    def interrupted(self, kind: str, prefix: str) -> int:
        """How many `kind` keys starting with `prefix` a killed host held claimed."""
        with self._lock:
            return sum(
                o.how == "claimed" and o.kind == kind and o.key.startswith(prefix)
                for o in self.orphans
            )

    def poll(self) -> None:
        with self._lock:
            pending = list(self._pending)
        if not pending:
            return
        pipe = self.rdb.pipeline(transaction=False)
        for o in pending:
            base = f"{self.prefix}:wq:{o.kind}"
            pipe.zscore(f"{base}:queued", o.key)
            pipe.hget(f"{base}:active", o.key)
        replies = pipe.execute()
        now = self.now()
        for i, o in enumerate(pending):
            queued, owner = replies[2 * i : 2 * i + 2]
            held = Owner.parse(owner) if owner is not None else None
            if held and not held.token.startswith(o.victim) and held.since_ms:
                o.moved = max(0.0, held.since_ms / 1000 - o.killed_at)
            elif held is None and queued is None:
                o.moved = now - o.killed_at
        with self._lock:
            self._pending = [o for o in self._pending if o.moved is None]

    def sample_waits(self) -> None:
        """The oldest queued key of each kind: how long it has waited unclaimed so far."""
        pipe = self.rdb.pipeline(transaction=False)
        pipe.time()
        for kind in KINDS:
            pipe.zrange(f"{self.prefix}:wq:{kind}:queued", 0, 0, withscores=True)
        (s, us), *oldest = pipe.execute()
        now_ms = int(s) * 1000 + int(us) // 1000
        for kind, found in zip(KINDS, oldest, strict=True):
            for key, enqueued in found:
                waited = (now_ms - enqueued) / 1000
                if waited > self.longest_wait:
                    self.longest_wait, self.longest_waiter = waited, f"{kind} {key.decode()}"

    def run(self, stop: threading.Event) -> None:
        polls = 0
        while not stop.wait(0.02):
            self.poll()
            polls += 1
            if polls % 5 == 0:
                self.sample_waits()

    def report(self) -> str:
        moved = sorted((o for o in self.orphans if o.moved is not None), key=lambda o: o.moved or 0)
        lines = [f"keys held by killed hosts: {len(self.orphans)}, reconciled again: {len(moved)}",
                 f"  longest wait of a queued key: {self.longest_wait:.2f}s "
                 f"({self.longest_waiter or 'none'})"]  # fmt: skip
        for how in ("claimed", "reserved"):
            some = [o for o in moved if o.how == how]
            if some:
                worst = some[-1]
                lines.append(f"  {how}: {len(some)}, worst kill-to-reconcile {worst.moved:.2f}s "
                             f"({worst.kind} {worst.key})")  # fmt: skip
        return "\n".join(lines)


# The scenarios run once, under chaos: every end state they assert must hold while worker hosts
# are killed with SIGKILL. A calm run of the same scenarios added half a minute and no coverage.
@pytest.mark.slow
def test_scenarios_survive_kill_9_of_workers(
    procs: Processes, shaped_cluster: DevClusterThread, tmp_path: Path, rdb: redis.Redis
) -> None:
    """On both CRD shapes (Argo's: no status subresource on AnalysisRun and Experiment; and
    one on every type). Nothing the controller writes may be pruned by the schemas."""
    cluster = shaped_cluster
    # The shipped queue settings: a killed host's reserved messages are sent again, and its
    # claims taken back, once its heartbeat lapses (not after the lease TTL or stale_after).
    procs.env.pop("ROLLOUTS_QUEUE_LEASE_TTL", None)
    defaults = Settings().queue
    # ROLLOUTS_CHAOS_WIDE=1 (make chaos): every scenario family at once, the plain ones twice,
    # on more hosts; the default is the CI run.
    wide = os.environ.get("ROLLOUTS_CHAOS_WIDE") == "1"
    if wide:  # the credentials the SigV4 scenario's server checks (tests/support/authserver.py)
        procs.env.update(aws_environment(str(tmp_path)))
    kube, kubeconfig, hosts = start_system(procs, cluster, tmp_path, workers=4 if wide else 3)
    stop = threading.Event()
    kills: list[str] = []
    rng = random.Random(42)
    tracker = OrphanTracker(rdb, Settings().redis.key_prefix)
    polling = threading.Thread(target=tracker.run, args=(stop,), daemon=True)
    polling.start()

    def chaos() -> None:
        generation = 0
        while not stop.wait(rng.uniform(0.5, 1.5)):
            index = rng.randrange(len(hosts))
            victim = hosts[index]
            victim.kill_group(signal.SIGKILL)
            tracker.killed(victim.pid)
            kills.append(f"{victim.name} at {dt.datetime.now(dt.UTC):%H:%M:%S}")
            generation += 1
            hosts[index] = procs.worker(f"host-{index}-{generation}", concurrency=2)

    thread = threading.Thread(target=chaos, daemon=True)
    thread.start()
    from tests.e2e import fields, notifications, routers  # they build on this module
    from tests.e2e import test_workloadref as wref

    scenarios = [*SCENARIOS, notifications.exactly_once]
    if wide:
        scenarios += [
            *SCENARIOS,
            *routers.scenarios(routers.NGINX, routers.SMI, routers.ISTIO, routers.GATEWAY),
            *fields.SCENARIOS,
            wref.scale_down_on_success,
            wref.pod_template_reference,
        ]
    try:
        run_all(kube, kubeconfig, scenarios, logs=tmp_path / "logs", tracker=tracker)
    finally:
        stop.set()
        thread.join(30)
    # The last kills' keys: the system is still up; let them move before reading the figures.
    deadline = time.monotonic() + defaults.lease_ttl + 5
    while any(o.moved is None for o in tracker.orphans) and time.monotonic() < deadline:
        tracker.poll()
        time.sleep(0.05)
    polling.join(5)
    assert len(kills) >= 3, kills
    print(f"kill -9 of worker hosts during the run: {len(kills)}")
    print(tracker.report())
    stuck = [o for o in tracker.orphans if o.moved is None]
    worst = max((o.moved or 0.0 for o in tracker.orphans), default=0.0)
    # Before hosts had heartbeats, a reserved message waited stale_after (60 s) here.
    assert not stuck and worst <= defaults.lease_ttl + 2, (worst, stuck)
    # A key whose claim or message died with a host is claimed again within the lease TTL, and
    # one whose message was lost on the way within lost_after: no queued key waits longer (the
    # stall once seen left an experiment's keys unclaimed for 150 s).
    bound = defaults.lease_ttl + defaults.lost_after + 2
    assert tracker.longest_wait <= bound, (tracker.longest_wait, tracker.longest_waiter)
    pruned = {t: paths for t, paths in cluster.pruned_fields().items() if "argoproj.io" in t}
    assert not pruned, f"written fields the CRD schemas lack: {pruned}"
