"""Reconcile tests in argo-rollouts' style: seed objects, run one sync, assert the recorded API
actions and the JSON of the status patch, in the one-sync fixture (the ReplicaSets handed to the
reconcile are those the rollout owns, as the cache's owner index returns them)."""

from __future__ import annotations

from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.rollout.hashing import pod_template_hash
from tests.unit.rollout.onesync import NS, OneSync

Obj = dict[str, Any]
TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "web:1"}]},
}


def rollout(**spec: Any) -> Obj:
    body: Obj = {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": TEMPLATE,
        "strategy": {"canary": {"steps": [{"setWeight": 25}, {"pause": {}}]}},
    }
    body.update(spec)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "uid": "ro-uid",
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": body,
    }


def sim_of(obj: Obj) -> OneSync:
    """The fixture as these tests use it: pods come up only when the rollout is let settle."""
    return OneSync(
        obj, owned_only=True, kubelet_enabled=False, settle_kubelet=True, observed_generation=True
    )


def test_first_sync_creates_the_replicaset_and_records_the_revision() -> None:
    sim = sim_of(rollout())
    pod_hash = pod_template_hash(TEMPLATE, None)
    # As in Argo, a new rollout's first sync only records the template and steps it saw.
    first = sim.sync()
    assert first.kinds() == ["patch-status rollouts"]
    assert first.status_patch()["currentPodHash"] == pod_hash
    assert "currentStepHash" in first.status_patch()
    second = sim.sync()
    assert second.kinds() == [
        "create replicasets",  # at 0 replicas
        "patch rollouts",  # rollout.argoproj.io/revision: "1"
        "patch replicasets",  # scale to 1
        "patch-status rollouts",
    ]
    create = second.actions[0]
    assert create.name == f"web-{pod_hash}"
    assert create.body["metadata"]["labels"] == {
        "app": "web",
        "rollouts-pod-template-hash": pod_hash,
    }
    assert create.body["metadata"]["annotations"] == {
        "rollout.argoproj.io/revision": "1",
        "rollout.argoproj.io/desired-replicas": "1",
    }
    assert create.body["spec"]["replicas"] == 0
    assert create.body["metadata"]["ownerReferences"][0]["uid"] == "ro-uid"
    status = sim.rollout["status"]
    assert {k: status[k] for k in ("currentPodHash", "stableRS", "currentStepIndex", "phase")} == {
        "currentPodHash": pod_hash,
        "stableRS": pod_hash,  # initial deploy: no steps, straight to stable
        "currentStepIndex": 2,
        "phase": "Progressing",
    }
    for reason in (
        "RolloutUpdated",
        "NewReplicaSetCreated",
        "ScalingReplicaSet",
        "RolloutCompleted",
    ):
        assert reason in sim.reasons(), reason


def test_a_settled_rollout_sends_nothing() -> None:
    sim = sim_of(rollout())
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Healthy"
    for _ in range(3):  # no hot loop: nothing to write, nothing requeued soon
        synced = sim.sync()
        assert synced.actions == []
    assert synced.requeue_after is None


def test_update_pauses_at_the_pause_step_with_the_expected_patch() -> None:
    sim = sim_of(rollout(replicas=4))
    sim.settle()
    stable = sim.rollout["status"]["stableRS"]
    sim.rollout["spec"]["template"] = {
        **TEMPLATE,
        "spec": {"containers": [{"name": "app", "image": "web:2"}]},
    }
    sim.rollout["metadata"]["generation"] = 2
    sim.settle()
    status = sim.rollout["status"]
    assert status["phase"] == "Paused" and status["currentStepIndex"] == 1
    assert status["pauseConditions"] == [
        {"reason": "CanaryPauseStep", "startTime": "2026-01-01T12:00:00Z"}
    ]
    assert status["controllerPause"] is True and status["stableRS"] == stable
    counts = {
        rs["metadata"]["labels"]["rollouts-pod-template-hash"]: rs["spec"]["replicas"]
        for rs in sim.replicasets()
    }
    assert counts == {stable: 3, status["currentPodHash"]: 1}


def test_timed_pause_requeues_for_its_expiry() -> None:
    sim = sim_of(
        rollout(strategy={"canary": {"steps": [{"setWeight": 50}, {"pause": {"duration": "45s"}}]}})
    )
    sim.settle()
    sim.rollout["spec"]["template"] = {
        **TEMPLATE,
        "spec": {"containers": [{"name": "app", "image": "web:2"}]},
    }
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Paused"
    assert sim.last is not None and sim.last.requeue_after == 45.0
    sim.at(46)
    sim.settle()
    assert sim.rollout["status"]["phase"] == "Healthy"
    assert "RolloutStepCompleted" in sim.reasons()


def test_hash_collision_bumps_collision_count() -> None:
    sim = sim_of(rollout())
    pod_hash = pod_template_hash(TEMPLATE, None)
    other = {
        "metadata": {"labels": {"app": "other"}},
        "spec": {"containers": [{"name": "x", "image": "other:1"}]},
    }
    sim.writer.seed(
        r.REPLICASETS,
        {
            "metadata": {
                "name": f"web-{pod_hash}",
                "namespace": NS,
                "resourceVersion": "5",
                "labels": {"rollouts-pod-template-hash": pod_hash},
            },
            "spec": {"replicas": 0, "template": other},
        },
    )
    sim.sync()  # records currentPodHash and the steps hash
    try:
        sim.sync()
    except Exception as err:  # the controller turns this into a requeue
        assert type(err).__name__ == "HashCollision"
    assert sim.writer.actions[-1].verb == "patch-status"
    assert sim.writer.actions[-1].body["status"] == {"collisionCount": 1}
    # With the bumped count the next syncs create a ReplicaSet under another name.
    sim.sync()
    sim.sync()
    created = [
        a.name for a in sim.writer.actions if a.verb == "create" and a.resource == "replicasets"
    ]
    assert created[-1] == f"web-{pod_template_hash(TEMPLATE, 1)}"


def test_progress_deadline_abort() -> None:
    sim = sim_of(rollout(progressDeadlineSeconds=10, progressDeadlineAbort=True))
    sim.settle()
    sim.rollout["spec"]["template"] = {
        **TEMPLATE,
        "spec": {"containers": [{"name": "app", "image": "web:bad"}]},
    }
    sim.sync()  # creates the canary ReplicaSet; its pods never become available
    sim.sync()
    sim.at(30)
    for _ in range(5):
        sim.sync()
    status = sim.rollout["status"]
    assert status["abort"] is True
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "RolloutAborted"
    assert status["phase"] == "Degraded"
    assert "RolloutAborted" in sim.reasons()


def test_adopts_a_replicaset_with_server_defaults_without_a_new_revision() -> None:
    defaulted = {
        "metadata": {"labels": {"app": "web", "rollouts-pod-template-hash": "argo-made"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "web:1",
                    "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log",
                }
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
        },
    }
    sim = sim_of(rollout())
    sim.writer.seed(
        r.REPLICASETS,
        {
            "metadata": {
                "name": "web-argo-made",
                "namespace": NS,
                "resourceVersion": "7",
                "labels": {"app": "web", "rollouts-pod-template-hash": "argo-made"},
                "annotations": {
                    "rollout.argoproj.io/revision": "3",
                    "rollout.argoproj.io/desired-replicas": "1",
                },
                "ownerReferences": [
                    {"kind": "Rollout", "name": "web", "uid": "ro-uid", "controller": True}
                ],
            },
            "spec": {"replicas": 1, "template": defaulted},
            "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
        },
    )
    sim.settle()
    assert not any(a.verb == "create" and a.resource == "replicasets" for a in sim.writer.actions)
    assert sim.rollout["status"]["stableRS"] == "argo-made"
    assert sim.rollout["metadata"]["annotations"]["rollout.argoproj.io/revision"] == "3"


def test_progress_deadline_abort_keeps_the_canary_down() -> None:
    """The blue-green abort flap's sequence on a basic canary: the progress deadline passes
    without abort, then progressDeadlineAbort is switched on. The canary goes to 0 at once (a
    basic canary has no abort delay, as in Argo, even with abortScaleDownDelaySeconds set) and
    stays there, with no scale-down deadline, over later syncs."""
    strategy = {"canary": {"abortScaleDownDelaySeconds": 2, "steps": [{"setWeight": 50}]}}
    sim = sim_of(rollout(replicas=2, strategy=strategy, progressDeadlineSeconds=1))
    sim.settle()
    stable = sim.rollout["status"]["stableRS"]
    sim.rollout["spec"]["template"] = {
        **TEMPLATE,
        "spec": {"containers": [{"name": "app", "image": "web:bad"}]},
    }
    sim.rollout["metadata"]["generation"] = 2
    sim.sync()
    sim.sync()
    sim.at(5)
    for _ in range(3):
        sim.sync()
    assert sim.rollout["status"]["phase"] == "Degraded" and not sim.rollout["status"].get("abort")
    canary = sim.rollout["status"]["currentPodHash"]

    sim.rollout["spec"]["progressDeadlineAbort"] = True
    sim.rollout["metadata"]["generation"] = 3
    history = []
    for seconds in (5, 5, 6, 7, 8, 10, 30):
        sim.at(seconds)
        sim.sync()
        counts = {
            rs["metadata"]["labels"]["rollouts-pod-template-hash"]: rs["spec"]["replicas"]
            for rs in sim.replicasets()
        }
        history.append(counts[canary])
        assert counts[stable] == 2
        assert not any(
            "scale-down-deadline" in rs["metadata"]["annotations"] for rs in sim.replicasets()
        )
    assert sim.rollout["status"]["abort"] is True
    assert history == [1, 0, 0, 0, 0, 0, 0]  # the abort is recorded, then the canary goes
