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
from tests.unit.rollout.onesync import NS, OneSync, rollout

Obj = dict[str, Any]
STEPS = [
    {"setWeight": 50},
    {"analysis": {"templates": [{"templateName": "smoke"}]}},
    {"pause": {}},
    {"setWeight": 100},
]
TEMPLATE = AnalysisTemplateSpec.from_dict(
    {"metrics": [{"name": "ok", "provider": {"web": {"url": "http://example.test/ok"}}}]}
)


def canary() -> OneSync:
    """The rollout, its ReplicaSets and AnalysisRuns as the cache would hold them; pods come
    up when the rollout is let settle."""
    return OneSync(
        rollout(replicas=2, strategy={"canary": {"steps": STEPS}}),
        owned_only=True,
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
        template_lookup=lambda name, cluster: TEMPLATE if name == "smoke" else None,
    )


def analysis_runs(sim: OneSync) -> list[Obj]:
    return list(sim.of(r.ANALYSISRUNS).values())


def paused_on_inconclusive_analysis() -> tuple[OneSync, str]:
    """A canary paused by the controller at step 1 (analysis) for an Inconclusive run."""
    sim = canary()
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    (run,) = analysis_runs(sim)
    assert sim.rollout["status"]["currentStepIndex"] == 1
    run["status"] = {"phase": "Inconclusive", "message": "unsure"}
    sim.settle()
    status = sim.rollout["status"]
    assert status["pauseConditions"][0]["reason"] == "InconclusiveAnalysisRun"
    assert status["controllerPause"] is True
    assert status["canary"]["currentStepAnalysisRunStatus"]["status"] == "Inconclusive"
    return sim, run["metadata"]["name"]


def promote(sim: OneSync, patch: Obj) -> None:
    """The plugin's status patch, as the API server applies it."""
    sim.now += dt.timedelta(minutes=1)
    sim.writer.patch(r.ROLLOUTS, NS, "web", patch, status=True)


def without_conditions(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if k != "conditions"}


def condition_reasons(status: Obj) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in status.get("conditions") or []}


def test_old_plugin_promote_analyses_the_step_again() -> None:
    sim, old_run = paused_on_inconclusive_analysis()
    promote(sim, {"status": {"pauseConditions": None}})
    synced = sim.sync()
    # The first name is the Inconclusive run's, which the cache has: the fresh run takes the next
    # free one without a create that would find the name taken.
    assert synced.kinds() == ["create analysisruns", "patch-status rollouts"]
    patch = synced.status_patch()
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
    promote(
        sim,
        {"status": {"pauseConditions": None, "controllerPause": False, "currentStepIndex": 2}},
    )
    synced = sim.sync()
    assert synced.kinds() == ["patch-status rollouts"]  # no fresh run
    patch = synced.status_patch()
    assert without_conditions(patch) == {
        "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T12:01:00Z"}],
        "controllerPause": True,
        "canary": None,  # the Inconclusive run is no longer the step's
        "message": "CanaryPauseStep",  # the phase stays Paused
    }
    assert condition_reasons(patch)["Paused"] == "RolloutPaused"
    assert sim.rollout["status"]["currentStepIndex"] == 2
    assert [x["metadata"]["name"] for x in analysis_runs(sim)] == [old_run]
