"""Blue-green reconciles against the embedded API (in-process controller, real watcher)."""

from __future__ import annotations

from typing import Any

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
