"""The pod restarter against the embedded API: real pods, recreated by the ReplicaSet controller.

The canary script does not call the restarter yet, so this test builds the context itself (as
the controller does) and calls `reconcile_restart` with the API-backed pod reader, the way a
workqueue would: again after each pass, until status.restartedAt would be set.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import KubeWriter
from rollout_workers.rollout import restart
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.timefmt import format_time, parse_time
from tests.integration.rollout.conftest import NS, Harness, canary_rollout, phase


def owned_rss(h: Harness, name: str) -> list[dict[str, Any]]:
    uid = h.rollout(name)["metadata"]["uid"]
    items, _ = h.kube.list(r.REPLICASETS, namespace=NS)
    return [
        rs
        for rs in items
        if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
    ]


def live_pods(h: Harness, name: str) -> list[dict[str, Any]]:
    items, _ = h.kube.list(r.PODS, namespace=NS, label_selector=f"app={name}")
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def test_restart_replaces_every_pod_one_at_a_time(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("rs", replicas=3, steps=[{"setWeight": 50}]))
    h.drive("rs", lambda o: phase(o) == "Healthy")
    before = {p["metadata"]["name"] for p in live_pods(h, "rs")}
    assert len(before) == 3

    time.sleep(1.1)  # creationTimestamps have second precision: restartAt strictly after them
    at = format_time(dt.datetime.now(dt.UTC))
    h.patch("rs", {"spec": {"restartAt": at}})
    time.sleep(1.1)  # restartAt must be in the past (NeedsRestart: now after restartAt)

    writer = KubeWriter(h.kube)
    deletions: list[int] = []
    deadline = time.monotonic() + 30
    while True:
        ctx = RolloutContext.build(
            obj=h.rollout("rs"), rss=owned_rss(h, "rs"), now=dt.datetime.now(dt.UTC), writer=writer
        )
        deletions.append(restart.reconcile_restart(ctx))
        if ctx.new_status.restarted_at is not None:
            break
        # Deleting never takes availability below spec.replicas - max(maxUnavailable, 1).
        assert sum(ready(p) for p in live_pods(h, "rs")) >= 2
        assert ctx.requeue_after == restart.RESTART_POD_CHECK_SECONDS
        assert time.monotonic() < deadline, f"not restarted; deletions {deletions}"
        time.sleep(0.2)

    assert ctx.new_status.restarted_at == at
    assert all(n <= 1 for n in deletions)  # 25% of 3 rounds down to 0: one at a time
    assert sum(deletions) == 3
    # The last old pod was deleted in the pass that set restartedAt: wait for its replacement.
    settle = time.monotonic() + 10
    while len(after := live_pods(h, "rs")) < 3 and time.monotonic() < settle:
        time.sleep(0.1)
    assert len(after) == 3
    assert not before & {p["metadata"]["name"] for p in after}
    assert all(parse_time(p["metadata"]["creationTimestamp"]) >= parse_time(at) for p in after)


def test_future_restart_requeues_without_reading_pods(harness: Harness) -> None:
    h = harness
    h.create(canary_rollout("later", replicas=1, steps=[]))
    h.drive("later", lambda o: phase(o) == "Healthy")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    h.patch("later", {"spec": {"restartAt": format_time(now + dt.timedelta(minutes=5))}})
    ctx = RolloutContext.build(
        obj=h.rollout("later"), rss=owned_rss(h, "later"), now=now, writer=KubeWriter(h.kube)
    )
    assert restart.reconcile_restart(ctx) == 0
    assert ctx.requeue_after == 300.0
    assert ctx.new_status.restarted_at is None
