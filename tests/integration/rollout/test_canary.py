"""Canary reconciles against the embedded API (in-process controller, real watcher and cache)."""

from __future__ import annotations

import time

from rollout_workers.rollout.controller import INVALID_SPEC_REQUEUE, STALE_REQUEUE
from tests.integration.rollout.conftest import Harness, canary_rollout, phase


def set_image(h: Harness, name: str, image: str) -> None:
    h.patch(
        name, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    )


def test_scaling_while_paused_at_setweight_25(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("web", replicas=1, steps=[{"setWeight": 25}, {"pause": {}}]))
    first = h.drive("web", lambda o: phase(o) == "Healthy")
    stable = first["status"]["stableRS"]
    assert first["status"]["currentStepIndex"] == 2

    set_image(h, "web", "app:2")
    paused = h.drive("web", lambda o: phase(o) == "Paused")
    canary = paused["status"]["currentPodHash"]
    assert canary != stable and paused["status"]["stableRS"] == stable
    assert h.rs_replicas("web") == {canary: 1, stable: 1}

    h.patch("web", {"spec": {"replicas": 8}})
    h.drive("web", lambda o: h.rs_replicas("web") == {canary: 2, stable: 6})
    h.patch("web", {"spec": {"replicas": 4}})
    h.drive("web", lambda o: h.rs_replicas("web") == {canary: 1, stable: 3})
    assert phase(h.rollout("web")) == "Paused"

    h.patch("web", {"status": {"pauseConditions": None}}, status=True)  # promote
    done = h.drive("web", lambda o: phase(o) == "Healthy")
    assert done["status"]["stableRS"] == canary
    assert h.rs_replicas("web") == {canary: 4, stable: 0}


def reasons(h: Harness) -> list[str]:
    from rollout_workers.kube import resources as r

    items, _ = h.kube.list(r.EVENTS, namespace="default")
    return [str(e["reason"]) for e in sorted(items, key=lambda e: e["metadata"]["resourceVersion"])]


def progressing_reason(obj: dict[str, object]) -> str:
    for cond in obj.get("status", {}).get("conditions", []):  # type: ignore[attr-defined]
        if cond["type"] == "Progressing":
            return str(cond.get("reason"))
    return ""


def test_abort_retry_promote(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("ab", replicas=2, steps=[{"setWeight": 50}, {"pause": {}}]))
    stable = h.drive("ab", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "ab", "app:2")
    canary = h.drive("ab", lambda o: phase(o) == "Paused")["status"]["currentPodHash"]
    assert h.rs_replicas("ab") == {canary: 1, stable: 1}

    h.patch("ab", {"status": {"abort": True}}, status=True)
    aborted = h.drive("ab", lambda o: phase(o) == "Degraded" and h.rs_replicas("ab")[canary] == 0)
    assert progressing_reason(aborted) == "RolloutAborted"
    assert aborted["status"]["message"].startswith(
        "RolloutAborted: Rollout aborted update to revision 2"
    )
    assert h.rs_replicas("ab") == {canary: 0, stable: 2}

    h.patch("ab", {"status": {"abort": False}}, status=True)  # retry
    h.drive("ab", lambda o: phase(o) == "Paused" and h.rs_replicas("ab")[canary] == 1)
    h.patch("ab", {"status": {"pauseConditions": None}}, status=True)  # promote
    done = h.drive("ab", lambda o: phase(o) == "Healthy")
    assert done["status"]["stableRS"] == canary
    seen = reasons(h)
    # No RolloutResumed: a user's promote clears the pause before the controller sees it, as in
    # Argo, which emits RolloutResumed only for a pause the controller itself lifts.
    for reason in ("RolloutPaused", "RolloutAborted", "RolloutCompleted",
                   "ScalingReplicaSet", "NewReplicaSetCreated", "RolloutUpdated"):  # fmt: skip
        assert reason in seen, (reason, seen)


def test_update_while_paused_scales_the_middle_revision_to_zero(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("mid", replicas=4, steps=[{"setWeight": 50}, {"pause": {}}]))
    stable = h.drive("mid", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "mid", "app:2")
    middle = h.drive("mid", lambda o: phase(o) == "Paused")["status"]["currentPodHash"]
    set_image(h, "mid", "app:3")
    latest = h.drive(
        "mid",
        lambda o: phase(o) == "Paused" and o["status"]["currentPodHash"] not in (stable, middle),
    )["status"]["currentPodHash"]
    h.drive("mid", lambda o: h.rs_replicas("mid") == {stable: 2, middle: 0, latest: 2})
    assert h.rollout("mid")["metadata"]["annotations"]["rollout.argoproj.io/revision"] == "3"


def test_bad_image_hits_the_progress_deadline(harness: Harness) -> None:
    h = harness
    body = canary_rollout("bad", replicas=2, steps=[{"setWeight": 50}, {"pause": {}}])
    body["spec"]["progressDeadlineSeconds"] = 3
    h.create(body)
    stable = h.drive("bad", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "bad", "app:bad-1")
    degraded = h.drive("bad", lambda o: phase(o) == "Degraded", timeout=20)
    assert progressing_reason(degraded) == "ProgressDeadlineExceeded"
    first_bad = degraded["status"]["currentPodHash"]
    set_image(h, "bad", "app:bad-2")
    h.drive(
        "bad",
        lambda o: (
            o["status"]["currentPodHash"] not in (stable, first_bad)
            and h.rs_replicas("bad").get(first_bad) == 0
        ),
        timeout=20,
    )


def test_promote_full_skips_the_remaining_steps(harness: Harness) -> None:
    h = harness
    steps = [{"setWeight": 50}, {"pause": {}}, {"setWeight": 75}, {"pause": {}}]
    h.create(canary_rollout("full", replicas=2, steps=steps))
    h.drive("full", lambda o: phase(o) == "Healthy")
    set_image(h, "full", "app:2")
    canary = h.drive("full", lambda o: phase(o) == "Paused")["status"]["currentPodHash"]
    h.patch("full", {"status": {"promoteFull": True}}, status=True)
    done = h.drive("full", lambda o: phase(o) == "Healthy")
    assert done["status"]["stableRS"] == canary and done["status"]["currentStepIndex"] == 4


def test_invalid_spec_becomes_valid(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("inv", replicas=1, steps=[{"setWeight": 200}]))
    bad = h.drive("inv", lambda o: phase(o) == "Degraded")
    assert bad["status"]["message"].startswith('InvalidSpec: The Rollout "inv" is invalid: ')
    assert "SetWeight needs to be between 0 and 100" in bad["status"]["message"]
    deadline = time.monotonic() + 10
    outcome = h.sync("inv")
    while outcome.delay == STALE_REQUEUE and time.monotonic() < deadline:
        time.sleep(0.1)  # the cache has not caught up with the status just written
        outcome = h.sync("inv")
    assert outcome.delay == INVALID_SPEC_REQUEUE  # a slow requeue, never a hot loop
    h.patch("inv", {"spec": {"strategy": {"canary": {"steps": [{"setWeight": 20}]}}}})
    done = h.drive("inv", lambda o: phase(o) == "Healthy")
    assert not any(c["type"] == "InvalidSpec" for c in done["status"]["conditions"])


def test_unreadable_spec_is_an_invalid_spec_condition(harness: Harness) -> None:
    h = harness
    body = canary_rollout("odd", replicas=1, steps=[{"setWeight": 20}])
    body["spec"]["strategy"]["canary"]["steps"] = [{"setWeight": "lots"}]
    h.create(body)
    bad = h.drive("odd", lambda o: phase(o) == "Degraded")
    assert "setWeight" in bad["status"]["message"]


def test_restart_replaces_every_pod_and_records_restarted_at(harness: Harness) -> None:
    import datetime as dt

    from rollout_workers.kube import resources as r

    h = harness
    h.create(canary_rollout("rs", replicas=2, steps=[{"setWeight": 50}]))
    h.drive("rs", lambda o: phase(o) == "Healthy")

    def live_pods() -> set[str]:
        pods, _ = h.kube.list(r.PODS, namespace="default")
        return {
            p["metadata"]["name"]
            for p in pods
            if p["metadata"]["name"].startswith("rs-")
            and not p["metadata"].get("deletionTimestamp")
        }

    before = live_pods()
    # A moment from now (whole seconds, as the plugin writes it): every current pod predates it.
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    h.patch("rs", {"spec": {"restartAt": at}})
    done = h.drive(
        "rs", lambda o: o.get("status", {}).get("restartedAt") == at and phase(o) == "Healthy"
    )
    assert before and not before & live_pods()
    assert done["status"]["restartedAt"] == at
