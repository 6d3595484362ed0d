"""How the controller takes each plugin's promote of a canary paused on an Inconclusive step
analysis (argo-rollouts' style: seed, one sync, assert the status patch).

The plugin before v1.8 clears only the pause conditions: the controller, still marked as the
one that paused, analyses the step again with a fresh run. From v1.8 it also resets
`controllerPause` and moves `currentStepIndex` past the step: the controller goes on with the
next step, and a pause step there is taken afresh.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from rollout_workers.api.analysis import AnalysisTemplateSpec
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.controller import reconcile

Obj = dict[str, Any]
NS = "default"
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
STEPS = [
    {"setWeight": 50},
    {"analysis": {"templates": [{"templateName": "smoke"}]}},
    {"pause": {}},
    {"setWeight": 100},
]
TEMPLATE = AnalysisTemplateSpec.from_dict(
    {"metrics": [{"name": "ok", "provider": {"web": {"url": "http://example.test/ok"}}}]}
)


def template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


class Sim:
    """The rollout, its ReplicaSets and AnalysisRuns as the cache would hold them."""

    def __init__(self) -> None:
        self.writer = RecordingWriter()
        self.writer.seed(
            r.ROLLOUTS,
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Rollout",
                "metadata": {"name": "web", "namespace": NS, "uid": "ro-uid", "generation": 1},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": template("web:1"),
                    "strategy": {"canary": {"steps": STEPS}},
                },
            },
        )
        self.now = T0

    @property
    def rollout(self) -> Obj:
        return self.writer.objects[(r.ROLLOUTS.plural, NS, "web")]

    def owned(self, plural: str) -> list[Obj]:
        return [
            o
            for (kind, _, _), o in self.writer.objects.items()
            if kind == plural
            and any(
                ref.get("uid") == "ro-uid" for ref in o["metadata"].get("ownerReferences") or []
            )
        ]

    def sync(self) -> list[str]:
        start = len(self.writer.actions)
        ctx = RolloutContext.build(
            obj=self.rollout,
            rss=self.owned("replicasets"),
            analysis_runs=self.owned("analysisruns"),
            now=self.now,
            writer=self.writer,
            template_lookup=lambda name, cluster: TEMPLATE if name == "smoke" else None,
        )
        reconcile(ctx)
        return [
            f"{a.verb} {a.resource}" for a in self.writer.actions[start:] if a.resource != "events"
        ]

    def settle(self, limit: int = 30) -> None:
        for _ in range(limit):
            for rs in self.owned("replicasets"):
                n = rs["spec"]["replicas"]
                rs["status"] = {
                    "replicas": n,
                    "readyReplicas": n,
                    "availableReplicas": n,
                    "observedGeneration": 1,
                }
            if not self.sync():
                return
        raise AssertionError("the rollout never settled")

    def status_patch(self, start: int) -> Obj:
        patches = [a.body for a in self.writer.actions[start:] if a.verb == "patch-status"]
        assert len(patches) == 1, patches
        status: Obj = patches[0]["status"]
        return status


def paused_on_inconclusive_analysis() -> tuple[Sim, str]:
    """A canary paused by the controller at step 1 (analysis) for an Inconclusive run."""
    sim = Sim()
    sim.settle()
    sim.rollout["spec"]["template"] = template("web:2")
    sim.rollout["metadata"]["generation"] = 2
    sim.settle()
    (run,) = sim.owned("analysisruns")
    assert sim.rollout["status"]["currentStepIndex"] == 1
    run["status"] = {"phase": "Inconclusive", "message": "unsure"}
    sim.settle()
    status = sim.rollout["status"]
    assert status["pauseConditions"][0]["reason"] == "InconclusiveAnalysisRun"
    assert status["controllerPause"] is True
    assert status["canary"]["currentStepAnalysisRunStatus"]["status"] == "Inconclusive"
    return sim, run["metadata"]["name"]


def promote(sim: Sim, patch: Obj) -> int:
    """The plugin's status patch, as the API server applies it; returns where the sync's
    actions start."""
    sim.now += dt.timedelta(minutes=1)
    sim.writer.patch(r.ROLLOUTS, NS, "web", patch, status=True)
    return len(sim.writer.actions)


def without_conditions(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if k != "conditions"}


def condition_reasons(status: Obj) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in status.get("conditions") or []}


def test_old_plugin_promote_analyses_the_step_again() -> None:
    sim, old_run = paused_on_inconclusive_analysis()
    start = promote(sim, {"status": {"pauseConditions": None}})
    # The first name is the Inconclusive run's: the fresh run takes the next free one.
    assert sim.sync() == ["create analysisruns", "create analysisruns", "patch-status rollouts"]
    patch = sim.status_patch(start)
    assert without_conditions(patch) == {
        "controllerPause": None,
        "canary": {
            "currentStepAnalysisRunStatus": {
                "message": None,
                "name": f"{old_run}.1",
                "status": "Pending",
            }
        },
        "phase": "Progressing",
        "message": "more replicas need to be updated",
    }  # still at step 1: no currentStepIndex in the patch
    assert condition_reasons(patch)["Progressing"] == "RolloutResumed"
    assert sim.rollout["status"]["currentStepIndex"] == 1


def test_new_plugin_promote_takes_the_next_pause_step() -> None:
    sim, old_run = paused_on_inconclusive_analysis()
    start = promote(
        sim,
        {"status": {"pauseConditions": None, "controllerPause": False, "currentStepIndex": 2}},
    )
    assert sim.sync() == ["patch-status rollouts"]  # no fresh run
    patch = sim.status_patch(start)
    assert without_conditions(patch) == {
        "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T12:01:00Z"}],
        "controllerPause": True,
        "canary": None,  # the Inconclusive run is no longer the step's
        "message": "CanaryPauseStep",  # the phase stays Paused
    }
    assert condition_reasons(patch)["Paused"] == "RolloutPaused"
    assert sim.rollout["status"]["currentStepIndex"] == 2
    assert [x["metadata"]["name"] for x in sim.owned("analysisruns")] == [old_run]
