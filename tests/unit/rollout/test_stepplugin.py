"""Step plugins' status machine, after argo-rollouts' rollout/stepplugin_test.go (seed the
rollout, run one sync, assert the plugin calls and `status.canary.stepPluginStatuses` in the
status patch)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.api.rollout import StepPluginStatus
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.controller import reconcile
from rollout_workers.rollout.stepplugin import calculate_step_completed
from rollout_workers.rollout.stepplugins.protocol import StepContext, StepResult
from rollout_workers.rollout.stepplugins.registry import (
    StepPluginRegistry,
    StepPluginState,
    StepPluginTimings,
)

Obj = dict[str, Any]
NS = "default"
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
PLUGIN = "acme/test"
STEPS: list[Obj] = [
    {"setWeight": 50},
    {"plugin": {"name": PLUGIN, "config": {"step": "first"}}},
    {"plugin": {"name": PLUGIN, "config": {"step": "second"}}},
    {"setWeight": 100},
]

Answer = StepResult | Exception


@dataclass
class FakePlugin:
    """Answers from a script per operation (then Running for a run, Successful otherwise);
    records every call."""

    answers: dict[str, list[Answer]] = field(default_factory=dict)
    calls: list[tuple[str, int, Obj, Obj | None]] = field(default_factory=list)

    def _answer(self, operation: str, step: StepContext) -> StepResult:
        self.calls.append((operation, step.index, step.config, step.status))
        script = self.answers.setdefault(operation, [])
        default = StepResult(phase="Running" if operation == "run" else "Successful")
        answer = script.pop(0) if script else default
        if isinstance(answer, Exception):
            raise answer
        return answer

    def run(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._answer("run", step)

    def terminate(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._answer("terminate", step)

    def abort(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._answer("abort", step)


def template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


class Sim:
    def __init__(self, steps: list[Obj] | None = None) -> None:
        self.writer = RecordingWriter()
        self.plugin = FakePlugin()
        self.registry = StepPluginRegistry.of({PLUGIN: self.plugin}, StepPluginTimings())
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
                    "strategy": {"canary": {"steps": steps or STEPS}},
                },
            },
        )
        self.now = T0
        self.requeue_after: float | None = None

    @property
    def rollout(self) -> Obj:
        return self.writer.objects[(r.ROLLOUTS.plural, NS, "web")]

    @property
    def plugin_statuses(self) -> list[Obj]:
        return list(
            (self.rollout.get("status") or {}).get("canary", {}).get("stepPluginStatuses") or []
        )

    def owned(self) -> list[Obj]:
        return [o for (kind, _, _), o in self.writer.objects.items() if kind == "replicasets"]

    def sync(self) -> list[str]:
        start = len(self.writer.actions)
        ctx = RolloutContext.build(
            obj=self.rollout, rss=self.owned(), now=self.now, writer=self.writer
        )
        ctx.step_plugins = StepPluginState(registry=self.registry)
        reconcile(ctx)
        self.requeue_after = ctx.requeue_after
        return [
            f"{a.verb} {a.resource}" for a in self.writer.actions[start:] if a.resource != "events"
        ]

    def settle(self, limit: int = 30) -> None:
        for _ in range(limit):
            for rs in self.owned():
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

    def events(self, start: int = 0) -> list[tuple[str, str]]:
        return [
            (a.body["reason"], a.body["message"])
            for a in self.writer.actions[start:]
            if a.resource == "events"
        ]

    def update(self) -> None:
        """A new template: the canary walks its steps, settled up to the first plugin step."""
        self.settle()
        self.rollout["spec"]["template"] = template("web:2")
        self.rollout["metadata"]["generation"] = 2
        self.settle()


RUNNING = StepResult(phase="Running")


def at_first_plugin_step(answer: Answer = RUNNING) -> Sim:
    sim = Sim()
    sim.plugin.answers["run"] = [answer]
    sim.update()
    assert sim.plugin.calls[0][:2] == ("run", 1)
    return sim


def test_running_records_the_run_and_requeues_after_the_default_backoff() -> None:
    sim = at_first_plugin_step(StepResult(phase="Running", message="migrating", status={"n": 1}))
    assert [c[:3] for c in sim.plugin.calls] == [("run", 1, {"step": "first"})]
    assert sim.plugin_statuses == [
        {
            "index": 1,
            "name": PLUGIN,
            "operation": "Run",
            "phase": "Running",
            "message": "migrating",
            "startedAt": "2026-01-01T12:00:00Z",
            "updatedAt": "2026-01-01T12:00:00Z",
            "backoff": "30s",  # no requeue asked: Argo's 30s default
            "executions": 1,
            "status": {"n": 1},
        }
    ]
    assert sim.requeue_after == 35.0  # the backoff plus Argo's 5s delay
    assert sim.rollout["status"]["phase"] == "Progressing"


def test_within_the_backoff_the_plugin_is_not_called() -> None:
    sim = at_first_plugin_step()
    sim.now += dt.timedelta(seconds=10)
    assert sim.sync() == []
    assert len(sim.plugin.calls) == 1
    assert sim.requeue_after == 25.0


@pytest.mark.parametrize(
    ("requested", "backoff"),
    [(None, "30s"), (5.0, "30s"), (10.0, "30s"), (11.0, "11s"), (123.0, "2m3s")],
    ids=["none", "below-min", "at-min", "above-min", "long"],
)
def test_requested_requeue_is_used_above_the_minimum(requested: float | None, backoff: str) -> None:
    sim = at_first_plugin_step(StepResult(phase="Running", requeue_after=requested))
    assert sim.plugin_statuses[0]["backoff"] == backoff


def test_after_the_backoff_the_plugin_gets_its_status_back_and_success_moves_on() -> None:
    sim = at_first_plugin_step(StepResult(phase="Running", status={"n": 1}))
    sim.plugin.answers["run"] = [StepResult(phase="Successful", message="done", status={"n": 2})]
    sim.now += dt.timedelta(seconds=31)
    start = len(sim.writer.actions)
    sim.sync()
    assert sim.plugin.calls[-1] == ("run", 1, {"step": "first"}, {"n": 1})
    patch = sim.status_patch(start)
    assert patch["currentStepIndex"] == 2
    assert patch["canary"]["stepPluginStatuses"][0] == {
        "index": 1,
        "name": PLUGIN,
        "operation": "Run",
        "phase": "Successful",
        "message": "done",
        "startedAt": "2026-01-01T12:00:00Z",
        "updatedAt": "2026-01-01T12:00:31Z",
        "finishedAt": "2026-01-01T12:00:31Z",
        "executions": 2,
        "status": {"n": 2},
    }
    # the next plugin step runs on the next sync
    sim.sync()
    assert sim.plugin.calls[-1][:2] == ("run", 2)


def test_failed_aborts_the_rollout_with_the_plugins_message() -> None:
    sim = at_first_plugin_step(StepResult(phase="Failed", message="smoke test failed"))
    status = sim.rollout["status"]
    assert status["abort"] is True
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "RolloutAborted"
    assert progressing["message"] == "Rollout aborted update to revision 2: smoke test failed"
    assert status["phase"] == "Degraded"
    assert sim.plugin_statuses[0]["phase"] == "Failed"
    assert sim.plugin_statuses[0]["finishedAt"] == "2026-01-01T12:00:00Z"
    # A Failed run is not aborted (Abort is for steps that ran successfully or still run).
    sim.settle()
    assert [c[0] for c in sim.plugin.calls] == ["run"]


def test_a_plugin_error_is_recorded_and_retried_after_the_backoff() -> None:
    sim = at_first_plugin_step(ConnectionError("endpoint down"))
    (run,) = sim.plugin_statuses
    assert (run["phase"], run["message"], run["backoff"], run["executions"]) == (
        "Error",
        "endpoint down",
        "30s",
        1,
    )
    assert "status" not in run
    assert sim.rollout["status"]["currentStepIndex"] == 1  # Error does not complete the step
    assert sim.requeue_after == 35.0
    sim.now += dt.timedelta(seconds=31)
    sim.plugin.answers["run"] = [StepResult(phase="Successful")]
    sim.sync()
    assert len(sim.plugin.calls) == 2
    assert sim.plugin_statuses[0]["phase"] == "Successful"
    assert sim.plugin_statuses[0]["executions"] == 2
    assert sim.rollout["status"]["currentStepIndex"] == 2


def test_an_unknown_phase_is_an_error() -> None:
    sim = at_first_plugin_step(StepResult(phase="Done"))
    assert sim.plugin_statuses[0]["phase"] == "Error"
    assert "invalid phase" in sim.plugin_statuses[0]["message"]


def test_abort_calls_abort_on_each_step_that_ran_latest_first() -> None:
    sim = at_first_plugin_step(StepResult(phase="Successful"))
    sim.plugin.answers["run"] = [StepResult(phase="Running")]
    sim.sync()  # step 2 runs
    assert [s["phase"] for s in sim.plugin_statuses] == ["Successful", "Running"]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": True}}, status=True)
    sim.settle()
    aborts = [c[:2] for c in sim.plugin.calls if c[0] == "abort"]
    assert aborts == [("abort", 2), ("abort", 1)]
    assert [(s["index"], s["operation"], s["phase"]) for s in sim.plugin_statuses] == [
        (1, "Run", "Successful"),
        (2, "Run", "Running"),
        (2, "Abort", "Successful"),
        (1, "Abort", "Successful"),
    ]


def test_abort_answering_running_is_failed_and_an_abort_error_is_recorded() -> None:
    sim = at_first_plugin_step(StepResult(phase="Successful"))
    sim.plugin.answers["run"] = [StepResult(phase="Successful")]
    sim.now += dt.timedelta(seconds=31)
    sim.sync()
    assert sim.rollout["status"]["currentStepIndex"] == 3
    sim.plugin.answers["abort"] = [StepResult(phase="Running"), RuntimeError("boom")]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": True}}, status=True)
    sim.settle()
    aborts = {(s["index"], s["phase"]) for s in sim.plugin_statuses if s["operation"] == "Abort"}
    assert aborts == {(2, "Failed"), (1, "Error")}


def test_retry_after_abort_starts_with_clean_statuses() -> None:
    sim = at_first_plugin_step(StepResult(phase="Failed", message="no"))
    sim.settle()
    sim.plugin.answers["run"] = [StepResult(phase="Running")]
    # The plugin's retry: abort cleared, back at step 0.
    sim.writer.patch(
        r.ROLLOUTS, NS, "web", {"status": {"abort": None, "currentStepIndex": 0}}, status=True
    )
    sim.settle()
    assert sim.rollout["status"]["currentStepIndex"] == 1
    assert [(s["index"], s["operation"], s["phase"]) for s in sim.plugin_statuses] == [
        (1, "Run", "Running")
    ]


def test_promote_full_terminates_the_running_step() -> None:
    sim = at_first_plugin_step(StepResult(phase="Running"))
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"promoteFull": True}}, status=True)
    sim.settle()
    assert [c[:2] for c in sim.plugin.calls] == [("run", 1), ("terminate", 1)]
    assert [(s["index"], s["operation"], s["phase"]) for s in sim.plugin_statuses] == [
        (1, "Run", "Running"),
        (1, "Terminate", "Successful"),
    ]
    assert sim.rollout["status"]["stableRS"] == sim.rollout["status"]["currentPodHash"]


def test_promote_past_a_running_step_terminates_it() -> None:
    sim = at_first_plugin_step(StepResult(phase="Running"))
    sim.plugin.answers["run"] = [StepResult(phase="Running")]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"currentStepIndex": 2}}, status=True)
    sim.sync()
    assert [c[:2] for c in sim.plugin.calls] == [("run", 1), ("terminate", 1), ("run", 2)]


def test_unknown_plugin_is_invalid_spec_with_argos_message() -> None:
    sim = Sim(steps=[{"plugin": {"name": "acme/missing"}}])
    sim.sync()
    cond = next(c for c in sim.rollout["status"]["conditions"] if c["type"] == "InvalidSpec")
    assert cond["message"] == (
        "could not create step plugin at index 0 : failed to get step plugin acme/missing: "
        "unable to start plugin system: unable to find plugin (acme/missing): "
        "plugin acme/missing not configured in configmap"
    )


def test_a_plugin_that_cannot_be_loaded_is_retried_without_completing_the_step() -> None:
    sim = Sim()

    def broken(name: str) -> Any:
        raise ImportError("no module named acme")

    sim.registry = StepPluginRegistry(enabled=frozenset({PLUGIN}), loader=broken)
    sim.update()
    assert sim.rollout["status"]["currentStepIndex"] == 1
    assert sim.requeue_after == 30.0
    reasons = [reason for reason, _ in sim.events()]
    assert "ReconciliationError" in reasons


def test_a_new_revision_drops_the_old_statuses() -> None:
    sim = at_first_plugin_step(StepResult(phase="Successful"))
    assert sim.plugin_statuses
    sim.rollout["spec"]["template"] = template("web:3")
    sim.rollout["metadata"]["generation"] = 3
    sim.sync()
    assert sim.plugin_statuses == []


def _s(index: int, operation: str, phase: str = "") -> StepPluginStatus:
    return StepPluginStatus(index=index, name=PLUGIN, operation=operation, phase=phase or None)


@pytest.mark.parametrize(
    ("statuses", "index", "want"),
    [
        ([], 0, False),
        ([_s(0, "Run", "Successful")], 0, True),
        ([_s(0, "Run", "Failed")], 0, True),
        ([_s(0, "Run", "Error")], 0, False),
        ([_s(0, "Run", "Running")], 0, False),
        ([_s(0, "Run", "Running"), _s(0, "Terminate")], 0, True),
        ([_s(0, "Run", "Running"), _s(0, "Abort")], 0, True),
        ([_s(1, "Run", "Successful")], 0, False),
    ],
    ids=[
        "status is not set",
        "phase is successful",
        "phase is failed",
        "phase is error",
        "phase is running",
        "phase is running, but terminated",
        "phase is running, but aborted",
        "status for index is missing",
    ],
)
def test_is_step_completed(statuses: list[StepPluginStatus], index: int, want: bool) -> None:
    assert calculate_step_completed(statuses, index) is want


def test_status_order_is_preserved_when_updating() -> None:
    sim = at_first_plugin_step(StepResult(phase="Running"))
    statuses = sim.plugin_statuses
    statuses.insert(0, {"index": 9, "name": "other", "operation": "Run", "phase": "Successful"})
    sim.writer.patch(
        r.ROLLOUTS, NS, "web", {"status": {"canary": {"stepPluginStatuses": statuses}}}, status=True
    )
    sim.now += dt.timedelta(seconds=40)
    sim.plugin.answers["run"] = [StepResult(phase="Running", message="still")]
    sim.sync()
    assert [(s["index"], s.get("message")) for s in sim.plugin_statuses] == [
        (9, None),
        (1, "still"),
    ]


def test_settings_enable_plugins_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollout_workers.rollout.controller import step_plugin_registry
    from rollout_workers.settings import Settings

    monkeypatch.setenv("ROLLOUTS_PLUGINS_STEP", "rollout-workers/webhook, acme/slack")
    monkeypatch.setenv("ROLLOUTS_PLUGINS_STEP_REQUEUE_MIN", "0")
    settings = Settings()
    assert settings.plugins.step == ["rollout-workers/webhook", "acme/slack"]
    registry = step_plugin_registry(settings.plugins)
    assert registry.enabled == {"rollout-workers/webhook", "acme/slack"}
    assert registry.timings.requeue_min == 0
    assert registry.timings.requeue_default == 30
