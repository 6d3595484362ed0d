"""Blue-green reconciles against the embedded API (in-process controller, real watcher)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from rollout_workers.kube import resources as r
from tests.integration.rollout.conftest import NS, Harness, phase


def services(h: Harness, app: str) -> None:
    for name in (f"{app}-active", f"{app}-preview"):
        spec = {"selector": {"app": app}, "ports": [{"port": 80}]}
        h.kube.create(r.SERVICES, NS, {"metadata": {"name": name}, "spec": spec})


def bluegreen_rollout(name: str, *, replicas: int, **strategy: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "app:1"}]},
            },
            "strategy": {
                "blueGreen": {
                    "activeService": f"{name}-active",
                    "previewService": f"{name}-preview",
                    **strategy,
                }
            },
        },
    }


def selector(h: Harness, service: str) -> str:
    svc = h.kube.get(r.SERVICES, NS, service)
    return str(svc["spec"]["selector"].get(r.POD_TEMPLATE_HASH_LABEL, ""))


def events(h: Harness) -> list[str]:
    items, _ = h.kube.list(r.EVENTS, namespace=NS)
    return [f"{e['reason']}: {e['message']}" for e in items]


def set_image(h: Harness, name: str, image: str) -> None:
    h.patch(
        name, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    )


def test_update_keeps_old_until_scale_down_delay(harness: Harness) -> None:
    h = harness
    services(h, "bg")
    h.create(bluegreen_rollout("bg", replicas=2, scaleDownDelaySeconds=3))
    first = h.drive("bg", lambda o: phase(o) == "Healthy" and selector(h, "bg-active") != "")
    old = first["status"]["stableRS"]
    assert selector(h, "bg-active") == old

    set_image(h, "bg", "app:2")
    switched = h.drive("bg", lambda o: selector(h, "bg-active") not in ("", old))
    new = selector(h, "bg-active")
    assert switched["status"]["currentPodHash"] == new
    h.drive("bg", lambda o: o["status"].get("stableRS") == new)
    assert h.rs_replicas("bg")[old] == 2  # kept through the scale-down delay
    rs_old = next(rs for rs in h.kube.list(r.REPLICASETS, namespace=NS)[0]
                  if rs["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL] == old)  # fmt: skip
    assert "scale-down-deadline" in rs_old["metadata"]["annotations"]
    h.drive("bg", lambda o: h.rs_replicas("bg")[old] == 0, timeout=20)
    assert phase(h.rollout("bg")) == "Healthy"
    switched_event = (
        f"SwitchService: Switched selector for service 'bg-active' from '{old}' to '{new}'"
    )
    assert switched_event in events(h)


def test_preview_replica_count_and_manual_promote(harness: Harness) -> None:
    h = harness
    services(h, "pv")
    h.create(bluegreen_rollout("pv", replicas=3, previewReplicaCount=1, autoPromotionEnabled=False))
    first = h.drive("pv", lambda o: phase(o) == "Healthy" and selector(h, "pv-active") != "")
    old = first["status"]["stableRS"]

    set_image(h, "pv", "app:2")
    paused = h.drive("pv", lambda o: phase(o) == "Paused")
    new = paused["status"]["currentPodHash"]
    assert paused["status"]["pauseConditions"][0]["reason"] == "BlueGreenPause"
    assert h.rs_replicas("pv") == {old: 3, new: 1}
    assert selector(h, "pv-preview") == new and selector(h, "pv-active") == old

    h.patch("pv", {"status": {"pauseConditions": None}}, status=True)  # promote
    done = h.drive("pv", lambda o: phase(o) == "Healthy" and selector(h, "pv-active") == new)
    assert done["status"]["stableRS"] == new
    assert h.rs_replicas("pv")[new] == 3


def rs_annotations(h: Harness, pod_hash: str) -> dict[str, str]:
    sets, _ = h.kube.list(r.REPLICASETS, namespace=NS)
    rs = next(x for x in sets if x["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL] == pod_hash)
    return dict(rs["metadata"].get("annotations") or {})


def test_auto_promotion_seconds(harness: Harness) -> None:
    h = harness
    services(h, "ap")
    h.create(bluegreen_rollout("ap", replicas=1, autoPromotionSeconds=2))
    h.drive("ap", lambda o: phase(o) == "Healthy" and selector(h, "ap-active") != "")
    set_image(h, "ap", "app:2")
    new = h.drive("ap", lambda o: phase(o) == "Paused")["status"]["currentPodHash"]
    h.drive("ap", lambda o: selector(h, "ap-active") == new and phase(o) == "Healthy", timeout=20)


def test_fast_rollback_inside_the_scale_down_window_skips_the_pause(harness: Harness) -> None:
    h = harness
    services(h, "fr")
    h.create(
        bluegreen_rollout("fr", replicas=1, autoPromotionEnabled=False, scaleDownDelaySeconds=30)
    )
    old = h.drive("fr", lambda o: phase(o) == "Healthy" and selector(h, "fr-active") != "")[
        "status"
    ]["stableRS"]
    set_image(h, "fr", "app:2")
    h.drive("fr", lambda o: phase(o) == "Paused")
    h.patch("fr", {"status": {"pauseConditions": None}}, status=True)
    new = h.drive("fr", lambda o: phase(o) == "Healthy" and selector(h, "fr-active") != old)[
        "status"
    ]["stableRS"]
    assert "scale-down-deadline" in rs_annotations(h, old)  # the old one waits out its delay

    set_image(h, "fr", "app:1")  # back to the old template, inside the window
    back = h.drive("fr", lambda o: selector(h, "fr-active") == old and phase(o) == "Healthy")
    assert back["status"]["stableRS"] == old
    assert set(h.rs_replicas("fr")) == {old, new}  # no new ReplicaSet, no pause on the way
    # The active ReplicaSet's own deadline is dropped at the next sync.
    h.drive("fr", lambda o: "scale-down-deadline" not in rs_annotations(h, old))


def test_abort_returns_to_stable_and_scales_preview_down_after_the_abort_delay(
    harness: Harness,
) -> None:
    h = harness
    services(h, "abg")
    h.create(bluegreen_rollout("abg", replicas=2, autoPromotionEnabled=False,
                               abortScaleDownDelaySeconds=2))  # fmt: skip
    old = h.drive("abg", lambda o: phase(o) == "Healthy" and selector(h, "abg-active") != "")[
        "status"
    ]["stableRS"]
    set_image(h, "abg", "app:2")
    new = h.drive("abg", lambda o: phase(o) == "Paused")["status"]["currentPodHash"]
    h.patch("abg", {"status": {"abort": True}}, status=True)
    h.drive("abg", lambda o: phase(o) == "Degraded")
    assert selector(h, "abg-active") == old
    assert h.rs_replicas("abg")[new] == 2  # kept for abortScaleDownDelaySeconds
    h.drive("abg", lambda o: h.rs_replicas("abg")[new] == 0, timeout=15)


def test_scale_down_delay_revision_limit(harness: Harness) -> None:
    h = harness
    services(h, "lim")
    h.create(bluegreen_rollout("lim", replicas=1, scaleDownDelaySeconds=60,
                               scaleDownDelayRevisionLimit=1))  # fmt: skip
    first = h.drive("lim", lambda o: phase(o) == "Healthy" and selector(h, "lim-active") != "")[
        "status"
    ]["stableRS"]
    hashes = [first]
    for image in ("app:2", "app:3"):
        set_image(h, "lim", image)
        done = h.drive(
            "lim",
            lambda o: phase(o) == "Healthy" and o["status"]["stableRS"] not in hashes,
        )
        hashes.append(done["status"]["stableRS"])
    # Only one older revision may wait out its delay; the oldest goes at once.
    h.drive("lim", lambda o: h.rs_replicas("lim") == {hashes[0]: 0, hashes[1]: 1, hashes[2]: 1})


def hold(h: Harness, name: str, check: Callable[[], bool], seconds: float) -> int:
    """Keep syncing for `seconds` (as the workqueue would on every event), asserting `check`
    after each sync; returns how many syncs ran."""
    end = time.monotonic() + seconds
    syncs = 0
    while time.monotonic() < end:
        h.sync(name)
        syncs += 1
        assert check(), f"after {syncs} syncs: {h.rs_replicas(name)}"
        time.sleep(0.1)
    return syncs


@pytest.mark.slow  # the fast tier's budget (make test under 6 minutes)
def test_progress_deadline_abort_keeps_the_new_replicaset_down_until_a_retry(
    harness: Harness,
) -> None:
    """The user's sequence: no preview Service, an update whose pods never become ready times
    out (no abort), then progressDeadlineAbort is switched on. Once the abort delay ends the
    new ReplicaSet stays at 0 (it used to be scaled up again by the next sync, every delay),
    and comes back only on a retry."""
    h = harness
    spec = {"selector": {"app": "pda"}, "ports": [{"port": 80}]}
    h.kube.create(r.SERVICES, NS, {"metadata": {"name": "pda-active"}, "spec": spec})
    body = bluegreen_rollout("pda", replicas=1, abortScaleDownDelaySeconds=2)
    del body["spec"]["strategy"]["blueGreen"]["previewService"]
    body["spec"].update(progressDeadlineSeconds=1, progressDeadlineAbort=False)
    h.create(body)
    old = h.drive("pda", lambda o: phase(o) == "Healthy" and selector(h, "pda-active") != "")[
        "status"
    ]["stableRS"]

    set_image(h, "pda", "app:bad")
    degraded = h.drive(
        "pda", lambda o: phase(o) == "Degraded" and o["status"]["currentPodHash"] != old
    )
    new = degraded["status"]["currentPodHash"]
    assert not degraded["status"].get("abort")
    assert h.rs_replicas("pda") == {old: 1, new: 1}

    h.patch("pda", {"spec": {"progressDeadlineAbort": True}})
    h.drive("pda", lambda o: o["status"].get("abort") is True)
    h.drive("pda", lambda o: h.rs_replicas("pda")[new] == 0, timeout=15)
    deadline = rs_annotations(h, new).get("scale-down-deadline")

    # Several abort windows' worth of syncs: the new ReplicaSet stays down, its deadline kept.
    hold(h, "pda", lambda: h.rs_replicas("pda") == {old: 1, new: 0}, seconds=6)
    assert deadline is not None and rs_annotations(h, new)["scale-down-deadline"] == deadline
    assert selector(h, "pda-active") == old
    assert h.drive("pda", lambda o: o["status"]["replicas"] == 1)["status"]["abort"] is True

    h.patch("pda", {"status": {"abort": False}}, status=True)  # retry
    h.drive(
        "pda",
        lambda o: (
            h.rs_replicas("pda")[new] == 1 and "scale-down-deadline" not in rs_annotations(h, new)
        ),
    )
