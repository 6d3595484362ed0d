"""The pod restarter (spec.restartAt): tables of named cases ported from argo-rollouts'
rollout/restart_test.go, plus the cases this port adds (terminating pods, ReplicaSets scaled to
zero, priority order, blue-green, minReadySeconds)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.kube.writer import KubeWriter, RecordingWriter
from rollout_workers.rollout import pods, restart
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.timefmt import format_time

Obj = dict[str, Any]

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
RESTART_AT = NOW - dt.timedelta(minutes=1)  # restartAt has passed: a restart is due
OLDER = RESTART_AT - dt.timedelta(seconds=10)
NEWER = RESTART_AT + dt.timedelta(seconds=10)


# -- fixtures ------------------------------------------------------------------------------------


def rollout(
    *,
    restart_at: dt.datetime | None = RESTART_AT,
    restarted_at: dt.datetime | None = None,
    replicas: int | None = None,
    strategy: Obj | None = None,
    min_ready_seconds: int | None = None,
) -> Obj:
    spec: Obj = {
        "selector": {"matchLabels": {"test": "test"}},
        "template": {
            "metadata": {"labels": {"test": "test"}},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        },
        "strategy": strategy if strategy is not None else {"canary": {}},
    }
    if restart_at is not None:
        spec["restartAt"] = format_time(restart_at)
    if replicas is not None:
        spec["replicas"] = replicas
    if min_ready_seconds is not None:
        spec["minReadySeconds"] = min_ready_seconds
    status: Obj = {}
    if restarted_at is not None:
        status["restartedAt"] = format_time(restarted_at)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": "restart-rollout", "namespace": "default", "uid": "ro-uid"},
        "spec": spec,
        "status": status,
    }


def replica_set(
    name: str,
    replicas: int,
    available: int,
    *,
    created: dt.datetime = OLDER,
    selector: str = "test",
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": format_time(created),
            "labels": {"test": selector, "rollouts-pod-template-hash": name.rsplit("-", 1)[-1]},
        },
        "spec": {
            "replicas": replicas,
            "selector": {
                "matchLabels": {
                    "test": selector,
                    "rollouts-pod-template-hash": name.rsplit("-", 1)[-1],
                }
            },
        },
        "status": {"replicas": replicas, "availableReplicas": available},
    }


def pod(
    name: str,
    created: dt.datetime,
    rs: Obj,
    *,
    ready: bool = True,
    ready_since: dt.datetime | None = None,
    terminating: bool = False,
    selector: str | None = None,
) -> Obj:
    labels = dict(rs["spec"]["selector"]["matchLabels"])
    if selector is not None:
        labels["test"] = selector
    meta: Obj = {
        "name": name,
        "namespace": "default",
        "creationTimestamp": format_time(created),
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs["metadata"]["name"],
                "uid": rs["metadata"]["uid"],
                "controller": True,
            }
        ],
    }
    if terminating:
        meta["deletionTimestamp"] = format_time(NOW)
    condition: Obj = {"type": "Ready", "status": "True" if ready else "False"}
    if ready_since is not None:
        condition["lastTransitionTime"] = format_time(ready_since)
    return {"metadata": meta, "status": {"conditions": [condition]}}


@dataclass
class FakePods:
    """A PodReader over a list of pods: matchLabels-style selectors ("k=v,k2=v2") only."""

    pods: list[Obj] = field(default_factory=list)
    error: Exception | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        self.calls.append((namespace, label_selector))
        if self.error is not None:
            raise self.error
        wanted = dict(part.split("=", 1) for part in label_selector.split(",") if part)
        return [
            p
            for p in self.pods
            if p["metadata"].get("namespace") == namespace
            and all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())
        ]


class FailingDeletes(RecordingWriter):
    def delete(self, resource: Any, namespace: str, name: str) -> None:
        raise RuntimeError("big bad error")


def context(
    obj: Obj,
    rss: list[Obj],
    *,
    stable: Obj | None = None,
    new: Obj | None = None,
    now: dt.datetime = NOW,
    writer: RecordingWriter | None = None,
) -> RolloutContext:
    ctx = RolloutContext.build(obj=obj, rss=rss, now=now, writer=writer or RecordingWriter())
    ctx.stable_rs, ctx.new_rs = stable, new
    return ctx


def deleted(ctx: RolloutContext) -> list[str]:
    writer = ctx.writer
    assert isinstance(writer, RecordingWriter)
    return [a.name for a in writer.actions if a.verb == "delete" and a.resource == "pods"]


# -- restartAt unset / in the future / already done (TestRestartCheckEnqueueRollout,
#    "No Restart Needed") --------------------------------------------------------------------------


@dataclass
class Timing:
    restart_at: dt.datetime | None
    restarted_at: dt.datetime | None
    requeue: float | None  # the requeue asked for (None: none)
    lists: bool  # whether pods were read
    restarted: bool  # whether status.restartedAt was set


RS1 = replica_set("restart-rollout-abc123", 1, 1)

TIMING = {
    ".spec.restartAt not set": Timing(None, None, None, lists=False, restarted=False),
    ".spec.restartAt has already passed": Timing(
        NOW - dt.timedelta(minutes=10), None, None, lists=True, restarted=True
    ),
    "restartAt in the future: requeue at it": Timing(
        NOW + dt.timedelta(minutes=5), None, 300.0, lists=False, restarted=False
    ),
    # Argo enqueues only when restartAt is before the next resync (the resync covers the rest);
    # here the earliest requeue wins, so it is always asked for.
    "restartAt after the next resync: still requeued at it": Timing(
        NOW + dt.timedelta(days=1), None, 86400.0, lists=False, restarted=False
    ),
    "restartAt is exactly now: not yet due (After is strict), requeue now": Timing(
        NOW, None, 0.0, lists=False, restarted=False
    ),
    "No Restart Needed: status.restartedAt equals spec.restartAt": Timing(
        RESTART_AT, RESTART_AT, None, lists=False, restarted=False
    ),
    "an earlier restartedAt does not count": Timing(
        RESTART_AT, RESTART_AT - dt.timedelta(hours=1), None, lists=True, restarted=True
    ),
}


@pytest.mark.parametrize("case", TIMING.values(), ids=TIMING.keys())
def test_restart_timing(case: Timing) -> None:
    pods = FakePods([pod("newer", NEWER, RS1)])
    ctx = context(rollout(restart_at=case.restart_at, restarted_at=case.restarted_at), [RS1])
    assert restart.reconcile_restart(ctx, pods) == 0
    assert ctx.requeue_after == case.requeue
    assert bool(pods.calls) == case.lists
    assert deleted(ctx) == []
    expected = format_time(case.restart_at) if case.restarted and case.restart_at else None
    assert ctx.new_status.restarted_at == expected


# -- one reconcile of due restarts (TestRestartReconcile, TestRestartReplicaSetPod,
#    TestRestartDoNotDeleteOtherPods, TestRestartMaxUnavailable, and this port's cases) ----------


@dataclass
class Case:
    rollout: Obj
    rss: list[Obj]
    pods: list[Obj]
    deleted: list[str]
    restarted_at: bool  # status.restartedAt set to spec.restartAt
    requeue: float | None = None
    stable: Obj | None = None
    new: Obj | None = None
    lists: list[str] | None = None  # label selectors read, when the case is about them


RS_ABC = replica_set("restart-rollout-abc123", 1, 1)
RS_DEF = replica_set("restart-rollout-def456", 1, 1)
RS_OTHER = replica_set("other-rs-789", 1, 1)
RS3 = replica_set("restart-rollout-abc123", 3, 3)  # three pods in one ReplicaSet
TWO_UNAVAILABLE = {"canary": {"maxUnavailable": 2}}


def canary(max_unavailable: int | str | None) -> Obj:
    return {"canary": {} if max_unavailable is None else {"maxUnavailable": max_unavailable}}


CASES: dict[str, Case] = {
    # TestRestartReconcile
    "Not all ReplicaSets are fully available (no pods): all 0 pods are current": Case(
        rollout(), [replica_set("restart-rollout-abc123", 1, 0)], [], [], restarted_at=True
    ),
    "Deletes Pod": Case(
        rollout(), [RS_ABC], [pod("older", OLDER, RS_ABC)], ["older"], restarted_at=True
    ),
    "No more pods to delete": Case(
        rollout(), [RS_ABC], [pod("newer", NEWER, RS_ABC)], [], restarted_at=True
    ),
    "restartedAt equals creationTimestamp": Case(
        rollout(), [RS_ABC], [pod("equal", RESTART_AT, RS_ABC)], [], restarted_at=True
    ),
    # TestRestartReplicaSetPod
    "Finds no pods to delete due to different label selector": Case(
        rollout(),
        [RS_ABC],
        [pod("older", OLDER, RS_ABC, selector="test2")],
        [],
        restarted_at=True,
        stable=RS_ABC,
    ),
    "Delete Pod successfully": Case(
        rollout(),
        [RS_ABC],
        [pod("older", OLDER, RS_ABC)],
        ["older"],
        restarted_at=True,
        stable=RS_ABC,
    ),
    "No Pod Deletion required": Case(
        rollout(), [RS_ABC], [pod("newer", NEWER, RS_ABC)], [], restarted_at=True, stable=RS_ABC
    ),
    # TestRestartDoNotDeleteOtherPods: same labels, owned by a ReplicaSet not of this rollout
    "Do not delete pods of other ReplicaSets": Case(
        rollout(strategy=TWO_UNAVAILABLE),
        [RS_ABC],
        [
            pod("newer", NEWER, RS_ABC),
            {
                **pod("other-pod", OLDER, RS_OTHER),
                "metadata": {
                    **pod("other-pod", OLDER, RS_OTHER)["metadata"],
                    "labels": RS_ABC["spec"]["selector"]["matchLabels"],
                },
            },
        ],
        [],
        restarted_at=True,
        stable=RS_ABC,
    ),
    # TestRestartMaxUnavailable (replicas 3, maxUnavailable 2, one ReplicaSet of 1 replica)
    "Restart multiple": Case(
        rollout(replicas=3, strategy=TWO_UNAVAILABLE),
        [RS_ABC],
        [pod("older1", OLDER, RS_ABC), pod("older2", OLDER, RS_ABC), pod("newer", NEWER, RS_ABC)],
        ["older1", "older2"],
        restarted_at=True,
        stable=RS_ABC,
    ),
    "Restart multiple honor availability": Case(
        rollout(replicas=3, strategy=TWO_UNAVAILABLE),
        [RS_ABC],
        [
            pod("older1", OLDER, RS_ABC),
            pod("older2", OLDER, RS_ABC),
            pod("newer", NEWER, RS_ABC, ready=False),
        ],
        ["older1"],
        restarted_at=False,
        requeue=30.0,
        stable=RS_ABC,
    ),
    "maxUnavailable zero: still one at a time": Case(
        rollout(replicas=3, strategy=canary(0)),
        [RS_ABC],
        [pod("older1", OLDER, RS_ABC), pod("older2", OLDER, RS_ABC), pod("newer", NEWER, RS_ABC)],
        ["older1"],
        restarted_at=False,
        requeue=30.0,
        stable=RS_ABC,
    ),
    "maxUnavailable 100%": Case(
        rollout(replicas=3, strategy=canary("100%")),
        [RS_ABC],
        [pod("older1", OLDER, RS_ABC), pod("older2", OLDER, RS_ABC), pod("newer", NEWER, RS_ABC)],
        ["older1", "older2"],
        restarted_at=True,
        stable=RS_ABC,
    ),
    "replicas:1 weight:50": Case(
        rollout(replicas=1),
        [RS_ABC, RS_DEF],
        [pod("older1", OLDER, RS_ABC), pod("older2", OLDER, RS_DEF)],
        ["older1"],
        restarted_at=False,
        requeue=30.0,
        stable=RS_ABC,
    ),
    "replicas:1 weight:50, already at minAvailable": Case(
        rollout(replicas=1),
        [RS_ABC, RS_DEF],
        [pod("older1", OLDER, RS_ABC), pod("older2", OLDER, RS_DEF, ready=False)],
        [],
        restarted_at=False,
        requeue=30.0,
        stable=RS_ABC,
    ),
    "replicas:0": Case(
        rollout(replicas=0, strategy=TWO_UNAVAILABLE),
        [replica_set("restart-rollout-abc123", 0, 0)],
        [],
        [],
        restarted_at=True,
        lists=[],
    ),
    # Beyond restart_test.go
    "one at a time with the default maxUnavailable (25% of 3 rounds down to 0)": Case(
        rollout(replicas=3),
        [RS3],
        [pod("a", OLDER, RS3), pod("b", OLDER, RS3), pod("c", OLDER, RS3)],
        ["a"],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "a terminating old pod still needs its restart: no restartedAt yet": Case(
        rollout(replicas=3),
        [RS3],
        [pod("a", OLDER, RS3, terminating=True), pod("b", NEWER, RS3), pod("c", NEWER, RS3)],
        [],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "a terminating pod is not available: no budget for another deletion": Case(
        rollout(replicas=3),
        [RS3],
        [pod("a", OLDER, RS3, terminating=True), pod("b", OLDER, RS3), pod("c", NEWER, RS3)],
        [],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "a terminating new pod does not hold up restartedAt": Case(
        rollout(replicas=3),
        [RS3],
        [pod("a", NEWER, RS3, terminating=True), pod("b", NEWER, RS3), pod("c", NEWER, RS3)],
        [],
        restarted_at=True,
        stable=RS3,
    ),
    "terminating pod skipped, budget spent on the next old pod": Case(
        rollout(replicas=3, strategy=TWO_UNAVAILABLE),
        [RS3],
        [pod("a", OLDER, RS3, terminating=True), pod("b", OLDER, RS3), pod("c", NEWER, RS3)],
        ["b"],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "ReplicaSets scaled to zero are not read, their pods not deleted": Case(
        rollout(replicas=1, strategy=TWO_UNAVAILABLE),
        [RS_ABC, replica_set("restart-rollout-def456", 0, 0)],
        [pod("newer", NEWER, RS_ABC), pod("leftover", OLDER, RS_DEF)],
        [],
        restarted_at=True,
        stable=RS_ABC,
        lists=["rollouts-pod-template-hash=abc123,test=test"],
    ),
    "stable first, then new, then older by creation": Case(
        rollout(replicas=3),
        [
            replica_set("restart-rollout-old1", 1, 1, created=OLDER - dt.timedelta(hours=2)),
            replica_set("restart-rollout-new", 1, 1, created=OLDER),
            replica_set("restart-rollout-stable", 1, 1, created=OLDER - dt.timedelta(hours=1)),
        ],
        [
            pod("p-old1", OLDER, replica_set("restart-rollout-old1", 1, 1)),
            pod("p-new", OLDER, replica_set("restart-rollout-new", 1, 1)),
            pod("p-stable", OLDER, replica_set("restart-rollout-stable", 1, 1)),
        ],
        ["p-stable"],
        restarted_at=False,
        requeue=30.0,
        stable=replica_set("restart-rollout-stable", 1, 1, created=OLDER - dt.timedelta(hours=1)),
        new=replica_set("restart-rollout-new", 1, 1, created=OLDER),
        lists=[
            "rollouts-pod-template-hash=stable,test=test",
            "rollouts-pod-template-hash=new,test=test",
            "rollouts-pod-template-hash=old1,test=test",
        ],
    ),
    "blue-green: maxUnavailable 25% of 4 is 1": Case(
        rollout(replicas=4, strategy={"blueGreen": {"activeService": "active"}}),
        [replica_set("restart-rollout-abc123", 4, 4)],
        [pod(f"p{i}", OLDER, replica_set("restart-rollout-abc123", 4, 4)) for i in range(4)],
        ["p0"],
        restarted_at=False,
        requeue=30.0,
    ),
    "blue-green: maxUnavailable 50% of 4 is 2": Case(
        rollout(
            replicas=4, strategy={"blueGreen": {"activeService": "active", "maxUnavailable": "50%"}}
        ),
        [replica_set("restart-rollout-abc123", 4, 4)],
        [pod(f"p{i}", OLDER, replica_set("restart-rollout-abc123", 4, 4)) for i in range(4)],
        ["p0", "p1"],
        restarted_at=False,
        requeue=30.0,
    ),
    "minReadySeconds: a pod ready too recently is not available": Case(
        rollout(replicas=3, min_ready_seconds=60),
        [RS3],
        [
            pod("a", OLDER, RS3, ready_since=NOW - dt.timedelta(minutes=5)),
            pod("b", OLDER, RS3, ready_since=NOW - dt.timedelta(minutes=5)),
            pod("c", NEWER, RS3, ready_since=NOW - dt.timedelta(seconds=30)),
        ],
        [],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "minReadySeconds: pods ready long enough are available": Case(
        rollout(replicas=3, min_ready_seconds=60),
        [RS3],
        [
            pod("a", OLDER, RS3, ready_since=NOW - dt.timedelta(minutes=5)),
            pod("b", OLDER, RS3, ready_since=NOW - dt.timedelta(minutes=5)),
            pod("c", NEWER, RS3, ready_since=NOW - dt.timedelta(minutes=5)),
        ],
        ["a"],
        restarted_at=False,
        requeue=30.0,
        stable=RS3,
    ),
    "canary weight not dividing replicas: the larger total sets minAvailable": Case(
        rollout(replicas=2, strategy=canary(1)),
        [replica_set("restart-rollout-abc123", 2, 2), replica_set("restart-rollout-def456", 1, 1)],
        [
            pod("s1", OLDER, replica_set("restart-rollout-abc123", 2, 2)),
            pod("s2", OLDER, replica_set("restart-rollout-abc123", 2, 2)),
            pod("c1", OLDER, replica_set("restart-rollout-def456", 1, 1)),
        ],
        ["s1"],
        restarted_at=False,
        requeue=30.0,
        stable=replica_set("restart-rollout-abc123", 2, 2),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_reconcile_restart(case: Case) -> None:
    pods = FakePods(list(case.pods))
    ctx = context(case.rollout, case.rss, stable=case.stable, new=case.new)
    assert restart.reconcile_restart(ctx, pods) == len(case.deleted)
    assert deleted(ctx) == case.deleted
    assert ctx.new_status.restarted_at == (format_time(RESTART_AT) if case.restarted_at else None)
    assert ctx.requeue_after == case.requeue
    if case.lists is not None:
        assert [selector for _, selector in pods.calls] == case.lists
    assert all(namespace == "default" for namespace, _ in pods.calls)


# -- errors (TestRestartReconcile "Fails to delete Pod", TestRestartReplicaSetPod
#    "Pod List error") ---------------------------------------------------------------------------


def test_delete_error_propagates() -> None:
    ctx = context(rollout(), [RS_ABC], writer=FailingDeletes())
    with pytest.raises(RuntimeError, match="big bad error"):
        restart.reconcile_restart(ctx, FakePods([pod("older", OLDER, RS_ABC)]))
    assert ctx.new_status.restarted_at is None


def test_pod_list_error_propagates() -> None:
    ctx = context(rollout(), [RS_ABC], stable=RS_ABC)
    with pytest.raises(RuntimeError, match="big bad error"):
        restart.reconcile_restart(ctx, FakePods(error=RuntimeError("big bad error")))
    assert ctx.new_status.restarted_at is None
    assert deleted(ctx) == []


# -- restartedAt is spec.restartAt verbatim -----------------------------------------------------


def test_restarted_at_is_spec_restart_at_verbatim() -> None:
    obj = rollout()
    obj["spec"]["restartAt"] = "2024-05-01T11:59:00.000000Z"  # not our formatting
    ctx = context(obj, [RS_ABC])
    restart.reconcile_restart(ctx, FakePods([pod("newer", NEWER, RS_ABC)]))
    assert ctx.new_status.restarted_at == "2024-05-01T11:59:00.000000Z"
    obj["status"]["restartedAt"] = "2024-05-01T11:59:00Z"  # the same instant, spelled otherwise
    ctx = context(obj, [RS_ABC])
    pods = FakePods([pod("older", OLDER, RS_ABC)])
    restart.reconcile_restart(ctx, pods)
    assert pods.calls == []
    assert deleted(ctx) == []


# -- SortReplicaSetsByPriority (TestRestartSortReplicaSetsByPriority) ----------------------------

RS_A = replica_set("restart-rollout-rs1", 1, 1, created=NOW - dt.timedelta(seconds=10))
RS_B = replica_set("restart-rollout-rs2", 1, 1, created=NOW)

PRIORITY = {
    "honor stable RS over new RS": (RS_B, RS_A, ["restart-rollout-rs2", "restart-rollout-rs1"]),
    "honor stable RS over older RS": (RS_B, None, ["restart-rollout-rs2", "restart-rollout-rs1"]),
    "honor new RS over older RS": (None, RS_B, ["restart-rollout-rs2", "restart-rollout-rs1"]),
    "prioritize older ReplicaSet": (None, None, ["restart-rollout-rs1", "restart-rollout-rs2"]),
    "stable is new": (RS_B, RS_B, ["restart-rollout-rs2", "restart-rollout-rs1"]),
}


@pytest.mark.parametrize(("stable", "new", "expected"), PRIORITY.values(), ids=PRIORITY.keys())
def test_by_priority(stable: Obj | None, new: Obj | None, expected: list[str]) -> None:
    ctx = context(rollout(), [RS_B, RS_A], stable=stable, new=new)
    assert [rs["metadata"]["name"] for rs in restart.by_priority(ctx)] == expected


# -- helpers -----------------------------------------------------------------------------------

SELECTORS = {
    "matchLabels sorted": ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
    "expressions": (
        {
            "matchLabels": {"a": "1"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "tier", "operator": "NotIn", "values": ["db"]},
                {"key": "x", "operator": "Exists"},
                {"key": "y", "operator": "DoesNotExist"},
            ],
        },
        "a=1,env in (dev,prod),tier notin (db),x,!y",
    ),
    "empty": ({}, ""),
}


@pytest.mark.parametrize(("selector", "expected"), SELECTORS.values(), ids=SELECTORS.keys())
def test_format_selector(selector: Obj, expected: str) -> None:
    assert pods.format_selector(selector) == expected


def test_kube_pod_reader_lists_pods_by_selector() -> None:
    calls: list[tuple[Any, ...]] = []

    class FakeKube:
        def list(
            self, resource: Any, *, namespace: str | None = None, label_selector: str | None = None
        ) -> tuple[list[Obj], str]:
            calls.append((resource.plural, namespace, label_selector))
            return [{"metadata": {"name": "p"}}], "7"

    reader = pods.KubePodReader(FakeKube())  # type: ignore[arg-type]
    assert reader.list_pods("ns", "a=1") == [{"metadata": {"name": "p"}}]
    assert calls == [("pods", "ns", "a=1")]


def test_pod_reader_from_the_writer() -> None:
    class FakeKube:
        def list(
            self, resource: Any, *, namespace: str | None = None, label_selector: str | None = None
        ) -> tuple[list[Obj], str]:
            return [pod("older", OLDER, RS_ABC)], "7"

    kube_writer = KubeWriter(FakeKube())  # type: ignore[arg-type]
    reader = pods.pod_reader_for(kube_writer)
    assert isinstance(reader, pods.KubePodReader)
    assert pods.pod_reader_for(RecordingWriter()) is None


def test_without_a_pod_reader_nothing_happens() -> None:
    ctx = context(rollout(), [RS_ABC])  # a RecordingWriter: no API to read pods from
    assert restart.reconcile_restart(ctx) == 0
    assert ctx.new_status.restarted_at is None
    assert deleted(ctx) == []
