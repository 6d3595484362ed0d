"""Blue-green reconcile tests in argo-rollouts' style: seed objects, run one sync at a controlled
clock, assert the recorded API actions, in the one-sync fixture (whose kubelet never makes pods
of a broken image available)."""

from __future__ import annotations

from typing import Any

from rollout_workers.api.analysis import AnalysisTemplateSpec
from rollout_workers.kube import resources as r
from tests.unit.rollout.onesync import NS, OneSync, rollout, service, template

Obj = dict[str, Any]
DEADLINE = "scale-down-deadline"


def blue_green(**strategy: Any) -> OneSync:
    obj = rollout(
        replicas=1,
        progressDeadlineSeconds=1,
        progressDeadlineAbort=False,
        strategy={"blueGreen": {"activeService": "active", **strategy}},
    )
    return OneSync(obj, [service("active")])


def degraded_bad_update(sim: OneSync) -> tuple[str, str]:
    """Deploy, update to an image that never becomes ready, time out (no abort): (stable, new)."""
    sim.settle()
    stable = sim.rollout["status"]["stableRS"]
    assert sim.rollout["status"]["phase"] == "Healthy"
    sim.edit_spec(template=template("web:bad"))
    sim.settle()
    new = sim.rollout["status"]["currentPodHash"]
    assert new != stable and sim.rs(new)["spec"]["replicas"] == 1
    sim.at(5)  # past progressDeadlineSeconds
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Degraded"
    assert not sim.rollout["status"].get("abort")
    return stable, new


def test_abort_scale_down_keeps_the_new_replicaset_at_zero_until_a_retry() -> None:
    """The new ReplicaSet goes to 0 when the abort delay ends and stays there: the deadline
    annotation is kept on the scaled-down ReplicaSet, as Argo's scaleReplicaSet does while
    shouldDelayScaleDownOnAbort. Dropping it made the next reconcile start a fresh abort window
    and scale the ReplicaSet back up (a scale-down/scale-up flap every delay)."""
    sim = blue_green(abortScaleDownDelaySeconds=2)
    stable, new = degraded_bad_update(sim)
    name = f"web-{new}"

    sim.edit_spec(progressDeadlineAbort=True)
    sim.settle()
    status = sim.rollout["status"]
    assert status["abort"] is True and status["phase"] == "Degraded"
    deadline = sim.rs(new)["metadata"]["annotations"][DEADLINE]
    assert deadline == "2026-01-01T12:00:07Z"  # now (5 s) + abortScaleDownDelaySeconds
    assert sim.rs(new)["spec"]["replicas"] == 1
    assert sim.last is not None and sim.last.requeue_after == 2.0

    # The abort delay ends; later reconciles (the ReplicaSet's own events, resyncs) follow.
    replicas, deadlines, writes = [], [], []
    for seconds in (7, 7, 8, 10, 30, 600):
        sim.at(seconds)
        writes.append(len(sim.sync().writes("replicasets", name)))
        replicas.append(sim.rs(new)["spec"]["replicas"])
        deadlines.append(sim.rs(new)["metadata"]["annotations"].get(DEADLINE))
    assert replicas == [0, 0, 0, 0, 0, 0]
    assert writes == [1, 0, 0, 0, 0, 0]  # one scale-down, then nothing
    assert deadlines == [deadline] * 6  # kept, so no fresh abort window is started
    assert sim.rs(stable)["spec"]["replicas"] == 1
    assert sim.rollout["status"]["replicas"] == 1

    # A retry clears the abort: the abort window's deadline goes and the update is tried again.
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": False}}, status=True)
    synced = sim.sync()
    versions = [w["metadata"]["resourceVersion"] for w in synced.writes("replicasets", name)]
    assert synced.writes("replicasets") == [
        {
            "metadata": {
                "annotations": {DEADLINE: None},
                "resourceVersion": versions[0],
            }
        },
        {
            "metadata": {
                "annotations": {"rollout.argoproj.io/desired-replicas": "1"},
                "resourceVersion": versions[1],
            },
            "spec": {"replicas": 1},
        },
    ]
    assert DEADLINE not in sim.rs(new)["metadata"]["annotations"]


def test_a_return_to_an_aborted_template_is_not_fast_tracked() -> None:
    """The deadline kept on the aborted ReplicaSet is no rollback window: when the template
    comes back to it later, it is dropped and the update pauses for promotion as usual."""
    sim = blue_green(abortScaleDownDelaySeconds=2, autoPromotionEnabled=False)
    stable, new = degraded_bad_update(sim)
    sim.edit_spec(progressDeadlineAbort=True)
    sim.settle()
    sim.at(7)
    sim.settle()
    assert sim.rs(new)["spec"]["replicas"] == 0
    assert DEADLINE in sim.rs(new)["metadata"]["annotations"]

    sim.edit_spec(template=template("web:1"))  # back to stable: the abort is over
    sim.settle()
    assert not sim.rollout["status"].get("abort")
    sim.broken.clear()  # the image is fixed under the same tag
    sim.at(20)
    sim.edit_spec(template=template("web:bad"), progressDeadlineSeconds=600)
    sim.settle()
    status = sim.rollout["status"]
    assert status["currentPodHash"] == new
    assert DEADLINE not in sim.rs(new)["metadata"]["annotations"]
    assert sim.rs(new)["spec"]["replicas"] == 1
    assert status["phase"] == "Paused"
    assert [p["reason"] for p in status["pauseConditions"]] == ["BlueGreenPause"]
    assert status["stableRS"] == stable
    assert sim.services()["active"]["spec"]["selector"]["rollouts-pod-template-hash"] == stable


GATE = AnalysisTemplateSpec.from_dict(
    {"metrics": [{"name": "ok", "provider": {"web": {"url": "http://example.test/ok"}}}]}
)


def pre_promotion_failed(sim: OneSync) -> Obj:
    """Deploy, update, and let the pre-promotion run fail: the rollout aborts. The run."""
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    (run,) = sim.of(r.ANALYSISRUNS).values()
    run["status"] = {"phase": "Failed", "message": "gate failed"}
    sim.settle()
    assert sim.rollout["status"]["abort"] is True
    return run


def test_a_retry_after_a_failed_pre_promotion_run_analyses_again_with_the_preview_unsaturated() -> (
    None
):
    """Argo's skipPrePromotionAnalysisRun cases "should not skip when currentAr is not nil"
    (even if the ReplicaSet is unsaturated): a retry after a failed run starts a new run even
    when the preview lost a pod meanwhile. Skipping left the failed run current, and the next
    reconcile aborted the retried rollout again (seen under kill -9 chaos)."""
    sim = OneSync(
        rollout(replicas=1, strategy={"blueGreen": {
            "activeService": "active", "autoPromotionEnabled": False,
            "prePromotionAnalysis": {"templates": [{"templateName": "gate"}]}}}),
        [service("active")],
        template_lookup=lambda name, cluster: GATE if name == "gate" else None,
    )  # fmt: skip
    failed = pre_promotion_failed(sim)
    sim.capped["web:2"] = 0  # the preview's pod is gone: the new ReplicaSet is unsaturated
    sim.settle()
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": False}}, status=True)
    sim.settle()
    runs = sorted(sim.of(r.ANALYSISRUNS))
    assert len(runs) == 2, runs
    current = sim.rollout["status"]["blueGreen"]["prePromotionAnalysisRunStatus"]
    assert current["name"] != failed["metadata"]["name"]
    assert not sim.rollout["status"].get("abort")
