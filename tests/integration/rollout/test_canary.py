"""Canary reconciles against the embedded API (in-process controller, real watcher and cache)."""

from __future__ import annotations

from tests.integration.rollout.conftest import Harness, canary_rollout, phase


def set_image(h: Harness, name: str, image: str) -> None:
    h.patch(name, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}})


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
