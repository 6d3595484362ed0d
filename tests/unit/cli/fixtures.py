"""API objects of two rollouts caught mid-update, for the rendering tests.

A canary at step 2 of 4 (setWeight 50): a stable ReplicaSet (revision 1) and a canary one
(revision 2), two pods each, a step AnalysisRun with a job. A blue-green paused before
promotion: an active ReplicaSet (revision 1) and a preview one (revision 2), and an old
revision with a scale-down deadline.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
REVISION = "rollout.argoproj.io/revision"
HASH = "rollouts-pod-template-hash"


def ts(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def replica_set(
    name: str,
    pod_hash: str,
    *,
    owner: str,
    revision: int,
    image: str,
    replicas: int,
    available: int,
    ago: timedelta,
    annotations: dict[str, str] | None = None,
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"{name}-uid",
            "generation": 1,
            "creationTimestamp": ts(ago),
            "labels": {"app": "web", HASH: pod_hash},
            "annotations": {REVISION: str(revision), **(annotations or {})},
            "ownerReferences": [{"kind": "Rollout", "uid": owner, "controller": True}],
        },
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "web", "image": image}]}},
        },
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "readyReplicas": available,
            "availableReplicas": available,
        },
    }


def pod(name: str, rs: Obj, *, ago: timedelta, ready: bool = True, restarts: int = 0) -> Obj:
    state: Obj = {"running": {}} if ready else {"waiting": {"reason": "ContainerCreating"}}
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "creationTimestamp": ts(ago),
            "ownerReferences": [{"kind": "ReplicaSet", "uid": rs["metadata"]["uid"]}],
        },
        "spec": {"containers": [{"name": "web"}]},
        "status": {
            "phase": "Running" if ready else "Pending",
            "containerStatuses": [
                {"name": "web", "ready": ready, "restartCount": restarts, "state": state}
            ],
        },
    }


def canary_objects() -> dict[str, Any]:
    rollout = {
        "metadata": {
            "name": "shop-web",
            "namespace": "shop",
            "uid": "ro-canary",
            "generation": 3,
            "creationTimestamp": ts(timedelta(days=3, hours=2)),
        },
        "spec": {
            "replicas": 4,
            "strategy": {
                "canary": {
                    "steps": [
                        {"setWeight": 25},
                        {"pause": {}},
                        {"setWeight": 50},
                        {"pause": {"duration": "10m"}},
                    ]
                }
            },
        },
        "status": {
            "observedGeneration": "3",
            "currentStepIndex": 2,
            "currentPodHash": "6b7f",
            "stableRS": "5d9c",
            "replicas": 4,
            "updatedReplicas": 2,
            "readyReplicas": 4,
            "availableReplicas": 4,
        },
    }
    stable = replica_set(
        "shop-web-5d9c",
        "5d9c",
        owner="ro-canary",
        revision=1,
        image="shop/web:1.0",
        replicas=2,
        available=2,
        ago=timedelta(days=3, hours=2),
    )
    new = replica_set(
        "shop-web-6b7f",
        "6b7f",
        owner="ro-canary",
        revision=2,
        image="shop/web:1.1",
        replicas=2,
        available=2,
        ago=timedelta(minutes=4, seconds=10),
    )
    pods = [
        pod("shop-web-5d9c-aaaaa", stable, ago=timedelta(days=3, hours=2)),
        pod("shop-web-5d9c-bbbbb", stable, ago=timedelta(days=3, hours=1), restarts=2),
        pod("shop-web-6b7f-ccccc", new, ago=timedelta(minutes=4)),
        pod("shop-web-6b7f-ddddd", new, ago=timedelta(seconds=50)),
    ]
    run = {
        "metadata": {
            "name": "shop-web-6b7f-2-2",
            "namespace": "shop",
            "creationTimestamp": ts(timedelta(seconds=30)),
            "annotations": {REVISION: "2"},
            "ownerReferences": [{"kind": "Rollout", "uid": "ro-canary", "controller": True}],
        },
        "status": {
            "phase": "Running",
            "metricResults": [
                {
                    "name": "smoke",
                    "successful": 1,
                    "measurements": [
                        {
                            "phase": "Successful",
                            "startedAt": ts(timedelta(seconds=25)),
                            "metadata": {"job-name": "shop-web-6b7f-2-2-smoke"},
                        }
                    ],
                }
            ],
        },
    }
    stranger = replica_set(
        "other-1",
        "1111",
        owner="someone-else",
        revision=7,
        image="other:1",
        replicas=1,
        available=1,
        ago=timedelta(hours=1),
    )
    return {
        "rollout": rollout,
        "replica_sets": [new, stranger, stable],
        "pods": list(reversed(pods)),
        "analysis_runs": [run],
    }


def blue_green_objects() -> dict[str, Any]:
    rollout = {
        "metadata": {
            "name": "checkout",
            "namespace": "shop",
            "uid": "ro-bg",
            "generation": 5,
            "creationTimestamp": ts(timedelta(days=12)),
        },
        "spec": {
            "replicas": 2,
            "strategy": {
                "blueGreen": {"activeService": "checkout", "previewService": "checkout-preview"}
            },
        },
        "status": {
            "phase": "Paused",
            "message": "BlueGreenPause",
            "observedGeneration": "5",
            "pauseConditions": [{"reason": "BlueGreenPause", "startTime": ts(timedelta(0))}],
            "controllerPause": True,
            "currentPodHash": "bbbb",
            "stableRS": "aaaa",
            "blueGreen": {"activeSelector": "aaaa", "previewSelector": "bbbb"},
            "replicas": 4,
            "updatedReplicas": 2,
            "readyReplicas": 3,
            "availableReplicas": 3,
        },
    }
    old = replica_set(
        "checkout-9999",
        "9999",
        owner="ro-bg",
        revision=1,
        image="shop/checkout:blue",
        replicas=0,
        available=0,
        ago=timedelta(days=12),
        annotations={"scale-down-deadline": ts(-timedelta(seconds=90))},
    )
    active = replica_set(
        "checkout-aaaa",
        "aaaa",
        owner="ro-bg",
        revision=2,
        image="shop/checkout:green",
        replicas=2,
        available=2,
        ago=timedelta(days=2),
    )
    preview = replica_set(
        "checkout-bbbb",
        "bbbb",
        owner="ro-bg",
        revision=3,
        image="shop/checkout:yellow",
        replicas=2,
        available=1,
        ago=timedelta(minutes=1),
    )
    pods = [
        pod("checkout-aaaa-11111", active, ago=timedelta(days=2)),
        pod("checkout-aaaa-22222", active, ago=timedelta(days=2)),
        pod("checkout-bbbb-33333", preview, ago=timedelta(minutes=1)),
        pod("checkout-bbbb-44444", preview, ago=timedelta(seconds=40), ready=False),
    ]
    return {"rollout": rollout, "replica_sets": [old, active, preview], "pods": pods}


def experiment_objects() -> dict[str, Any]:
    """A running 10m experiment of two templates (baseline, canary), one pod each, available
    for 4 minutes, with an AnalysisRun; and a finished one."""
    exp = {
        "metadata": {
            "name": "shop-web-6b7f-2-exp",
            "namespace": "shop",
            "uid": "exp-uid",
            "creationTimestamp": ts(timedelta(minutes=5)),
            "annotations": {REVISION: "2"},
        },
        "spec": {"duration": "10m"},
        "status": {"phase": "Running", "availableAt": ts(timedelta(minutes=4))},
    }
    sets = []
    pods = []
    for template, image, pod_hash in (
        ("baseline", "shop/web:1.0", "1111"),
        ("canary", "shop/web:1.1", "2222"),
    ):
        rs = replica_set(
            f"shop-web-6b7f-2-exp-{template}",
            pod_hash,
            owner="exp-uid",
            revision=1,
            image=image,
            replicas=1,
            available=1,
            ago=timedelta(minutes=5),
            annotations={"experiment.argoproj.io/template-name": template},
        )
        sets.append(rs)
        pods.append(pod(f"{rs['metadata']['name']}-abcde", rs, ago=timedelta(minutes=4)))
    run = {
        "metadata": {
            "name": "shop-web-6b7f-2-exp-smoke",
            "namespace": "shop",
            "creationTimestamp": ts(timedelta(minutes=4)),
            "ownerReferences": [{"kind": "Experiment", "uid": "exp-uid", "controller": True}],
        },
        "status": {
            "phase": "Running",
            "metricResults": [{"name": "smoke", "successful": 2, "measurements": []}],
        },
    }
    done = {
        "metadata": {
            "name": "old-exp",
            "namespace": "shop",
            "uid": "old-uid",
            "creationTimestamp": ts(timedelta(days=2)),
        },
        "spec": {"duration": "1h"},
        "status": {
            "phase": "Successful",
            "message": "all good",
            "availableAt": ts(timedelta(days=2)),
        },
    }
    return {
        "experiment": exp,
        "finished": done,
        "replica_sets": sets,
        "pods": pods,
        "analysis_runs": [run],
    }
