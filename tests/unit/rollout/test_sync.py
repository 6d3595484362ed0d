"""The steps every strategy shares (rollout/sync.py), one sync at a time: cases ported from
argo-rollouts' rollout/sync_test.go, seeded as Argo seeds them and run in the one-sync
fixture."""

from __future__ import annotations

import pytest

from rollout_workers.rollout import canary
from tests.unit.rollout.onesync import OneSync
from tests.unit.rollout.test_canary import base, replica_set, revision

STEPS = [{"setWeight": 50}, {"pause": {}}]


@pytest.mark.parametrize(
    ("limit", "old", "deleted"),
    [
        pytest.param(None, 3, 0, id="default-10-keeps-all"),
        pytest.param(1, 3, 2, id="limit-1-deletes-the-two-oldest"),
        pytest.param(0, 2, 2, id="limit-0-deletes-every-old"),
        pytest.param(5, 3, 0, id="under-the-limit"),
    ],
)
def test_reconcile_revision_history_limit(limit: int | None, old: int, deleted: int) -> None:
    """TestReconcileRevisionHistoryLimit: old ReplicaSets scaled to zero beyond
    revisionHistoryLimit are deleted, oldest first."""
    first = base(1, None, surge=1, unavailable=0)
    if limit is not None:
        first["spec"]["revisionHistoryLimit"] = limit
    versions = [revision(first, n) for n in range(1, old + 2)]
    current = versions[-1]
    current["status"]["stableRS"] = current["status"]["currentPodHash"]
    rss = [replica_set(v, 0, 0, seconds=n) for n, v in enumerate(versions[:-1])]
    rss.append(replica_set(current, 1, 1, seconds=old))
    sim = OneSync(current, rss, kubelet_enabled=False)
    synced = sim.sync()
    removed = [a.name for a in synced.actions if a.verb == "delete"]
    expected = [rs["metadata"]["name"] for rs in rss[:deleted]]
    assert removed == expected


def promotion_reason(**status: object) -> str | None:
    """should_full_promote for revision 2 of a 2-replica canary whose new ReplicaSet has
    `available` pods, with the given status fields."""
    available = int(status.pop("available", 2))  # type: ignore[call-overload]
    first = base(2, STEPS, surge=1, unavailable=0)
    one, two = revision(first, 1), revision(first, 2)
    stable = status.pop("stable", True)
    if stable:
        two["status"]["stableRS"] = one["status"]["currentPodHash"]
    two["status"].update(status)
    sim = OneSync(
        two,
        [replica_set(one, 1, 1), replica_set(two, available, available, seconds=1)],
        kubelet_enabled=False,
    )
    ctx = sim.sync().ctx
    return canary.should_full_promote(ctx)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param({"stable": False}, "Initial deploy", id="no-stable"),
        pytest.param({"abort": True}, None, id="aborted"),
        pytest.param({"available": 1, "currentStepIndex": 2}, None, id="new-not-available"),
        pytest.param(
            {"available": 3, "currentStepIndex": 2},
            "Completed all 2 canary steps",
            id="more-available-than-desired",
        ),
        pytest.param({"promoteFull": True}, "Full promotion requested", id="promote-full"),
        pytest.param(
            {"currentStepIndex": 2}, "Completed all 2 canary steps", id="completed-all-steps"
        ),
        pytest.param({"currentStepIndex": 1}, None, id="in-the-middle"),
    ],
)
def test_should_full_promote(status: dict[str, object], reason: str | None) -> None:
    """TestShouldFullPromote and the 1.9 change that an HPA's scale-down (more available than
    desired) no longer holds the promotion."""
    assert promotion_reason(**status) == reason


def test_pause_event() -> None:
    """TestSendStateChangeEvents: taking a pause sends RolloutPaused with its reason."""
    first = base(2, STEPS, surge=1, unavailable=0)
    sim = OneSync(first)
    sim.settle()
    sim.set_image("web:2")
    paused = [(e.reason, e.message) for synced in sim.settle() for e in synced.events]
    assert ("RolloutPaused", "Rollout is paused (CanaryPauseStep)") in paused


def test_progress_deadline_exceeded_with_abort() -> None:
    """TestRolloutProgressDeadlineExceeded...: a new ReplicaSet that never becomes available
    times out (ProgressDeadlineExceeded) and, with progressDeadlineAbort, aborts."""
    first = base(2, STEPS, surge=1, unavailable=0)
    first["spec"].update(progressDeadlineSeconds=30, progressDeadlineAbort=True)
    sim = OneSync(first)
    sim.settle()
    sim.set_image("web:bad")
    sim.settle()
    sim.advance(31)
    events = [(e.reason, e.message) for synced in sim.settle() for e in synced.events]
    new_rs = sim.status["currentPodHash"]
    timed_out = f'ReplicaSet "web-{new_rs}" has timed out progressing.'
    assert ("RolloutAborted", timed_out) in events
    progressing = next(c for c in sim.status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "RolloutAborted"
    assert progressing["message"] == "Rollout aborted update to revision 2"
    assert sim.status["abort"] is True


def test_rollout_updated_is_notified_before_the_revision_lands() -> None:
    """Once a rollout's revision annotation is written, no retry records RolloutUpdated
    again: its notification is queued before the write, so a reconcile killed right after
    the write loses none (and the retry's notify is the same job)."""
    from typing import Any

    from rollout_workers.kube import resources as r
    from rollout_workers.notifications.recorder import EventRecorder
    from tests.unit.rollout.onesync import rollout

    sim = OneSync(rollout(strategy={"canary": {"steps": STEPS}}, replicas=1))
    notified: list[tuple[str, str, str]] = []

    class Outbox:
        def event(self, obj: Any, *, reason: str, message: str, warning: bool) -> None:
            annotations = obj["metadata"].get("annotations") or {}
            revision = annotations.get("rollout.argoproj.io/revision", "")
            notified.append((reason, message, revision))

    sim.recorder = EventRecorder(sim.writer, r.ROLLOUTS, outbox=Outbox())  # type: ignore[arg-type]
    sim.settle()
    sim.set_image("web:2")
    original = sim.writer.patch

    def killed_after_the_revision(
        resource: Any, namespace: str, name: str, body: Any, **kwargs: Any
    ) -> Any:
        written = original(resource, namespace, name, body, **kwargs)
        if "annotations" in (body.get("metadata") or {}) and resource.plural == "rollouts":
            raise SystemExit("kill -9")
        return written

    sim.writer.patch = killed_after_the_revision  # type: ignore[method-assign,assignment]
    with pytest.raises(SystemExit):
        sim.settle()
    sim.writer.patch = original  # type: ignore[method-assign]
    sim.settle()
    updated = [n for n in notified if n[0] == "RolloutUpdated"]
    assert updated == [
        ("RolloutUpdated", "Rollout updated to revision 1", "1"),
        ("RolloutUpdated", "Rollout updated to revision 2", "2"),
    ]
