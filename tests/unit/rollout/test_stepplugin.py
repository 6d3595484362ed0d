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
from rollout_workers.rollout.stepplugins.protocol import StepContext, StepResult
from rollout_workers.rollout.stepplugins.registry import StepPluginRegistry, StepPluginTimings
from rollout_workers.rollout.stepplugins.statemachine import calculate_step_completed
from tests.unit.rollout.onesync import NS, OneSync, rollout

Obj = dict[str, Any]
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


def stepped(steps: list[Obj] | None = None) -> tuple[OneSync, FakePlugin]:
    """A canary whose plugin steps are answered by a FakePlugin; pods come up when the rollout
    is let settle."""
    plugin = FakePlugin()
    sim = OneSync(
        rollout(replicas=2, strategy={"canary": {"steps": steps or STEPS}}),
        step_plugins=StepPluginRegistry.of({PLUGIN: plugin}, StepPluginTimings()),
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
    )
    return sim, plugin


def plugin_statuses(sim: OneSync) -> list[Obj]:
    return list(sim.status.get("canary", {}).get("stepPluginStatuses") or [])


def requeue_after(sim: OneSync) -> float | None:
    """What the last sync asked for."""
    assert sim.last is not None
    return sim.last.requeue_after


def update(sim: OneSync) -> None:
    """A new template: the canary walks its steps, settled up to the first plugin step."""
    sim.settle()
    sim.set_image("web:2")
    sim.settle()


RUNNING = StepResult(phase="Running")


def at_first_plugin_step(answer: Answer = RUNNING) -> tuple[OneSync, FakePlugin]:
    sim, plugin = stepped()
    plugin.answers["run"] = [answer]
    update(sim)
    assert plugin.calls[0][:2] == ("run", 1)
    return sim, plugin


def test_running_records_the_run_and_requeues_after_the_default_backoff() -> None:
    sim, plugin = at_first_plugin_step(
        StepResult(phase="Running", message="migrating", status={"n": 1})
    )
    assert [c[:3] for c in plugin.calls] == [("run", 1, {"step": "first"})]
    assert plugin_statuses(sim) == [
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
    assert requeue_after(sim) == 35.0  # the backoff plus Argo's 5s delay
    assert sim.rollout["status"]["phase"] == "Progressing"


def test_within_the_backoff_the_plugin_is_not_called() -> None:
    sim, plugin = at_first_plugin_step()
    sim.now += dt.timedelta(seconds=10)
    synced = sim.sync()
    assert synced.actions == []
    assert len(plugin.calls) == 1
    assert synced.requeue_after == 25.0


@pytest.mark.parametrize(
    ("requested", "backoff"),
    [(None, "30s"), (5.0, "30s"), (10.0, "30s"), (11.0, "11s"), (123.0, "2m3s")],
    ids=["none", "below-min", "at-min", "above-min", "long"],
)
def test_requested_requeue_is_used_above_the_minimum(requested: float | None, backoff: str) -> None:
    sim, _ = at_first_plugin_step(StepResult(phase="Running", requeue_after=requested))
    assert plugin_statuses(sim)[0]["backoff"] == backoff


def test_after_the_backoff_the_plugin_gets_its_status_back_and_success_moves_on() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Running", status={"n": 1}))
    plugin.answers["run"] = [StepResult(phase="Successful", message="done", status={"n": 2})]
    sim.now += dt.timedelta(seconds=31)
    synced = sim.sync()
    assert plugin.calls[-1] == ("run", 1, {"step": "first"}, {"n": 1})
    patch = synced.status_patch()
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
    assert plugin.calls[-1][:2] == ("run", 2)


def test_failed_aborts_the_rollout_with_the_plugins_message() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Failed", message="smoke test failed"))
    status = sim.rollout["status"]
    assert status["abort"] is True
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "RolloutAborted"
    assert progressing["message"] == "Rollout aborted update to revision 2: smoke test failed"
    assert status["phase"] == "Degraded"
    assert plugin_statuses(sim)[0]["phase"] == "Failed"
    assert plugin_statuses(sim)[0]["finishedAt"] == "2026-01-01T12:00:00Z"
    # A Failed run is not aborted (Abort is for steps that ran successfully or still run).
    sim.settle()
    assert [c[0] for c in plugin.calls] == ["run"]


def test_a_plugin_error_is_recorded_and_retried_after_the_backoff() -> None:
    sim, plugin = at_first_plugin_step(ConnectionError("endpoint down"))
    (run,) = plugin_statuses(sim)
    assert (run["phase"], run["message"], run["backoff"], run["executions"]) == (
        "Error",
        "endpoint down",
        "30s",
        1,
    )
    assert "status" not in run
    assert sim.rollout["status"]["currentStepIndex"] == 1  # Error does not complete the step
    assert requeue_after(sim) == 35.0
    sim.now += dt.timedelta(seconds=31)
    plugin.answers["run"] = [StepResult(phase="Successful")]
    sim.sync()
    assert len(plugin.calls) == 2
    assert plugin_statuses(sim)[0]["phase"] == "Successful"
    assert plugin_statuses(sim)[0]["executions"] == 2
    assert sim.rollout["status"]["currentStepIndex"] == 2


def test_an_unknown_phase_is_an_error() -> None:
    sim, _ = at_first_plugin_step(StepResult(phase="Done"))
    assert plugin_statuses(sim)[0]["phase"] == "Error"
    assert "invalid phase" in plugin_statuses(sim)[0]["message"]


def test_abort_calls_abort_on_each_step_that_ran_latest_first() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Successful"))
    plugin.answers["run"] = [StepResult(phase="Running")]
    sim.sync()  # step 2 runs
    assert [s["phase"] for s in plugin_statuses(sim)] == ["Successful", "Running"]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": True}}, status=True)
    sim.settle()
    aborts = [c[:2] for c in plugin.calls if c[0] == "abort"]
    assert aborts == [("abort", 2), ("abort", 1)]
    assert [(s["index"], s["operation"], s["phase"]) for s in plugin_statuses(sim)] == [
        (1, "Run", "Successful"),
        (2, "Run", "Running"),
        (2, "Abort", "Successful"),
        (1, "Abort", "Successful"),
    ]


def test_abort_answering_running_is_failed_and_an_abort_error_is_recorded() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Successful"))
    plugin.answers["run"] = [StepResult(phase="Successful")]
    sim.now += dt.timedelta(seconds=31)
    sim.sync()
    assert sim.rollout["status"]["currentStepIndex"] == 3
    plugin.answers["abort"] = [StepResult(phase="Running"), RuntimeError("boom")]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": True}}, status=True)
    sim.settle()
    aborts = {(s["index"], s["phase"]) for s in plugin_statuses(sim) if s["operation"] == "Abort"}
    assert aborts == {(2, "Failed"), (1, "Error")}


def test_retry_after_abort_starts_with_clean_statuses() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Failed", message="no"))
    sim.settle()
    plugin.answers["run"] = [StepResult(phase="Running")]
    # The plugin's retry: abort cleared, back at step 0.
    sim.writer.patch(
        r.ROLLOUTS, NS, "web", {"status": {"abort": None, "currentStepIndex": 0}}, status=True
    )
    sim.settle()
    assert sim.rollout["status"]["currentStepIndex"] == 1
    assert [(s["index"], s["operation"], s["phase"]) for s in plugin_statuses(sim)] == [
        (1, "Run", "Running")
    ]


def test_promote_full_terminates_the_running_step() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Running"))
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"promoteFull": True}}, status=True)
    sim.settle()
    assert [c[:2] for c in plugin.calls] == [("run", 1), ("terminate", 1)]
    assert [(s["index"], s["operation"], s["phase"]) for s in plugin_statuses(sim)] == [
        (1, "Run", "Running"),
        (1, "Terminate", "Successful"),
    ]
    assert sim.rollout["status"]["stableRS"] == sim.rollout["status"]["currentPodHash"]


def test_promote_past_a_running_step_terminates_it() -> None:
    sim, plugin = at_first_plugin_step(StepResult(phase="Running"))
    plugin.answers["run"] = [StepResult(phase="Running")]
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"currentStepIndex": 2}}, status=True)
    sim.sync()
    assert [c[:2] for c in plugin.calls] == [("run", 1), ("terminate", 1), ("run", 2)]


def test_unknown_plugin_is_invalid_spec_with_argos_message() -> None:
    sim, _ = stepped(steps=[{"plugin": {"name": "acme/missing"}}])
    sim.sync()
    cond = next(c for c in sim.rollout["status"]["conditions"] if c["type"] == "InvalidSpec")
    assert cond["message"] == (
        "could not create step plugin at index 0 : failed to get step plugin acme/missing: "
        "unable to start plugin system: unable to find plugin (acme/missing): "
        "plugin acme/missing not configured in configmap (here: an entry point named "
        "acme/missing in the rollout_workers.step_plugins group, enabled by listing the name in "
        "ROLLOUTS_PLUGINS_STEP)"
    )


def test_a_plugin_that_cannot_be_loaded_is_retried_without_completing_the_step() -> None:
    sim, _ = stepped()

    def broken(name: str) -> Any:
        raise ImportError("no module named acme")

    sim.step_plugins = StepPluginRegistry(enabled=frozenset({PLUGIN}), loader=broken)
    update(sim)
    assert sim.rollout["status"]["currentStepIndex"] == 1
    assert requeue_after(sim) == 30.0
    assert "ReconciliationError" in sim.reasons()


def test_a_new_revision_drops_the_old_statuses() -> None:
    sim, _ = at_first_plugin_step(StepResult(phase="Successful"))
    assert plugin_statuses(sim)
    sim.set_image("web:3")
    sim.sync()
    assert plugin_statuses(sim) == []


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
    sim, plugin = at_first_plugin_step(StepResult(phase="Running"))
    statuses = plugin_statuses(sim)
    statuses.insert(0, {"index": 9, "name": "other", "operation": "Run", "phase": "Successful"})
    sim.writer.patch(
        r.ROLLOUTS, NS, "web", {"status": {"canary": {"stepPluginStatuses": statuses}}}, status=True
    )
    sim.now += dt.timedelta(seconds=40)
    plugin.answers["run"] = [StepResult(phase="Running", message="still")]
    sim.sync()
    assert [(s["index"], s.get("message")) for s in plugin_statuses(sim)] == [
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
