"""Blue-green reconcile tests in argo-rollouts' style: seed objects, run one sync at a controlled
clock, assert the recorded API actions. The simulator applies the recorded writes and plays the
kubelet: ReplicaSets of a broken image get pods that never become available."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import Action, RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.controller import reconcile

Obj = dict[str, Any]
NS = "default"
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
DEADLINE = "scale-down-deadline"


def template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


def rollout(**blue_green: Any) -> Obj:
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
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": 1,
            "progressDeadlineAbort": False,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template("web:1"),
            "strategy": {"blueGreen": {"activeService": "active", **blue_green}},
        },
    }


class Sim:
    def __init__(self, obj: Obj) -> None:
        self.writer = RecordingWriter()
        self.writer.seed(r.ROLLOUTS, obj)
        self.writer.seed(
            r.SERVICES,
            {
                "metadata": {"name": "active", "namespace": NS, "resourceVersion": "2"},
                "spec": {"selector": {"app": "web"}},
            },
        )
        self.now = T0
        self.last: RolloutContext | None = None
        self.broken = {"web:bad"}  # images whose pods never become available

    @property
    def rollout(self) -> Obj:
        return self.writer.objects[(r.ROLLOUTS.plural, NS, "web")]

    def edit_spec(self, **changes: Any) -> None:
        """A user's `kubectl apply`: a new spec and a new generation."""
        self.rollout["spec"].update(changes)
        self.rollout["metadata"]["generation"] += 1

    def replicasets(self) -> list[Obj]:
        return [o for (plural, _, _), o in self.writer.objects.items() if plural == "replicasets"]

    def rs(self, pod_hash: str) -> Obj:
        return next(
            rs
            for rs in self.replicasets()
            if rs["metadata"]["labels"]["rollouts-pod-template-hash"] == pod_hash
        )

    def services(self) -> dict[str, Obj]:
        return {
            name: o for (plural, _, name), o in self.writer.objects.items() if plural == "services"
        }

    def kubelet(self) -> None:
        """Pods follow spec.replicas; pods of a broken image never become available."""
        for rs in self.replicasets():
            n = rs["spec"]["replicas"]
            image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
            ok = 0 if image in self.broken else n
            rs["status"] = {"replicas": n, "readyReplicas": ok, "availableReplicas": ok}

    def sync(self) -> list[Action]:
        """The kubelet catches up, then one reconcile at `now`; its actions, events left out."""
        self.kubelet()
        start = len(self.writer.actions)
        self.last = RolloutContext.build(
            obj=self.rollout,
            rss=self.replicasets(),
            now=self.now,
            writer=self.writer,
            services=self.services(),
        )
        reconcile(self.last)
        return [a for a in self.writer.actions[start:] if a.resource != "events"]

    def settle(self, limit: int = 20) -> None:
        for _ in range(limit):
            if not self.sync():
                return
        raise AssertionError("the rollout never settled")

    def at(self, seconds: float) -> None:
        self.now = T0 + dt.timedelta(seconds=seconds)


def rs_writes(actions: list[Action], name: str) -> list[Obj]:
    return [a.body for a in actions if a.resource == "replicasets" and a.name == name]


def degraded_bad_update(sim: Sim) -> tuple[str, str]:
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
    sim = Sim(rollout(abortScaleDownDelaySeconds=2))
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
        writes.append(len(rs_writes(sim.sync(), name)))
        replicas.append(sim.rs(new)["spec"]["replicas"])
        deadlines.append(sim.rs(new)["metadata"]["annotations"].get(DEADLINE))
    assert replicas == [0, 0, 0, 0, 0, 0]
    assert writes == [1, 0, 0, 0, 0, 0]  # one scale-down, then nothing
    assert deadlines == [deadline] * 6  # kept, so no fresh abort window is started
    assert sim.rs(stable)["spec"]["replicas"] == 1
    assert sim.rollout["status"]["replicas"] == 1

    # A retry clears the abort: the abort window's deadline goes and the update is tried again.
    sim.writer.patch(r.ROLLOUTS, NS, "web", {"status": {"abort": False}}, status=True)
    actions = sim.sync()
    assert [a.body for a in actions if a.resource == "replicasets"] == [
        {
            "metadata": {
                "annotations": {DEADLINE: None},
                "resourceVersion": rs_writes(actions, name)[0]["metadata"]["resourceVersion"],
            }
        },
        {
            "metadata": {
                "annotations": {"rollout.argoproj.io/desired-replicas": "1"},
                "resourceVersion": rs_writes(actions, name)[1]["metadata"]["resourceVersion"],
            },
            "spec": {"replicas": 1},
        },
    ]
    assert DEADLINE not in sim.rs(new)["metadata"]["annotations"]


def test_a_return_to_an_aborted_template_is_not_fast_tracked() -> None:
    """The deadline kept on the aborted ReplicaSet is no rollback window: when the template
    comes back to it later, it is dropped and the update pauses for promotion as usual."""
    sim = Sim(rollout(abortScaleDownDelaySeconds=2, autoPromotionEnabled=False))
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
