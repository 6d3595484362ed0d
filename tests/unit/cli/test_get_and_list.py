"""`get rollout` and `list rollouts` rendering from fixture objects, and the pure rules behind
them (phase, pod status, ReplicaSet health, weights, ages), as tables of named cases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from rollout_workers.cli.info import (
    RolloutInfo,
    calculate_rollout_info,
    experiment_info,
    pod_info,
    replica_set_health,
    workload_ref_text,
)
from rollout_workers.cli.listing import render_experiment_list, render_list
from rollout_workers.cli.phase import FINAL_PHASES, calculate_rollout_phase, current_set_weight
from rollout_workers.cli.table import ANSI
from rollout_workers.cli.tree import render_experiment, render_rollout, revisions
from rollout_workers.timefmt import human_duration
from tests.unit.cli import fixtures as f

Obj = dict[str, Any]

CANARY_SCREEN = """\
Name:            shop-web
Namespace:       shop
Status:          ◌ Progressing
Message:         more replicas need to be updated
Strategy:        Canary
  Step:          2/4
  SetWeight:     50
  ActualWeight:  50
Images:          shop/web:1.0 (stable)
                 shop/web:1.1 (canary)
Replicas:
  Desired:       4
  Current:       4
  Updated:       2
  Ready:         4
  Available:     4

NAME                                KIND         STATUS         AGE    INFO
⟳ shop-web                          Rollout      ◌ Progressing  3d2h
├──# revision:2
│  ├──⧉ shop-web-6b7f               ReplicaSet   ✔ Healthy      4m10s  canary
│  │  ├──□ shop-web-6b7f-ccccc      Pod          ✔ Running      4m     ready:1/1
│  │  └──□ shop-web-6b7f-ddddd      Pod          ✔ Running      50s    ready:1/1
│  └──\u03b1 shop-web-6b7f-2-2           AnalysisRun  ◌ Running      30s    ✔ 1
│     └──⊞ shop-web-6b7f-2-2-smoke  Job          ✔ Successful   25s
└──# revision:1
   └──⧉ shop-web-5d9c               ReplicaSet   ✔ Healthy      3d2h   stable
      ├──□ shop-web-5d9c-aaaaa      Pod          ✔ Running      3d2h   ready:1/1
      └──□ shop-web-5d9c-bbbbb      Pod          ✔ Running      3d1h   ready:1/1,restarts:2
"""

BLUE_GREEN_SCREEN = """\
Name:            checkout
Namespace:       shop
Status:          ॥ Paused
Message:         BlueGreenPause
Strategy:        BlueGreen
Images:          shop/checkout:green (stable, active)
                 shop/checkout:yellow (preview)
Replicas:
  Desired:       2
  Current:       4
  Updated:       2
  Ready:         3
  Available:     3

NAME                            KIND        STATUS               AGE  INFO
⟳ checkout                      Rollout     ॥ Paused             12d
├──# revision:3
│  └──⧉ checkout-bbbb           ReplicaSet  ◌ Progressing        60s  preview
│     ├──□ checkout-bbbb-33333  Pod         ✔ Running            60s  ready:1/1
│     └──□ checkout-bbbb-44444  Pod         ◌ ContainerCreating  40s  ready:0/1
├──# revision:2
│  └──⧉ checkout-aaaa           ReplicaSet  ✔ Healthy            2d   stable,active
│     ├──□ checkout-aaaa-11111  Pod         ✔ Running            2d   ready:1/1
│     └──□ checkout-aaaa-22222  Pod         ✔ Running            2d   ready:1/1
└──# revision:1
   └──⧉ checkout-9999           ReplicaSet  • ScaledDown         12d  delay:90s
"""


def rollout_info(objects: dict[str, Any]) -> RolloutInfo:
    return calculate_rollout_info(
        objects["rollout"],
        replica_sets=objects["replica_sets"],
        pods=objects["pods"],
        analysis_runs=objects.get("analysis_runs", []),
    )


def test_canary_mid_rollout_screen() -> None:
    info = rollout_info(f.canary_objects())
    assert render_rollout(info, now=f.NOW) == CANARY_SCREEN


def test_blue_green_screen() -> None:
    info = rollout_info(f.blue_green_objects())
    assert render_rollout(info, now=f.NOW) == BLUE_GREEN_SCREEN


def test_workload_ref_line() -> None:
    objects = f.canary_objects()
    ro = objects["rollout"]
    ro["spec"]["workloadRef"] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "shop-web",
        "scaleDown": "progressively",
    }
    ro["status"]["workloadObservedGeneration"] = "3"
    screen = render_rollout(rollout_info(objects), now=f.NOW).splitlines()
    assert screen[4:6] == [
        "WorkloadRef:     Deployment/shop-web (scaleDown: progressively, observed generation 3)",
        "Strategy:        Canary",
    ]
    del ro["spec"]["workloadRef"]["scaleDown"]
    assert workload_ref_text(ro) == "Deployment/shop-web (scaleDown: never, observed generation 3)"


def test_colour_codes_do_not_shift_columns() -> None:
    info = rollout_info(f.canary_objects())
    coloured = render_rollout(info, now=f.NOW, color=True)
    assert "\x1b[33mcanary\x1b[0m" in coloured
    assert "\x1b[32m✔\x1b[0m Healthy" in coloured
    plain = ANSI.sub("", coloured)
    assert plain == CANARY_SCREEN


def test_list_rollouts_table() -> None:
    rollouts = [f.canary_objects()["rollout"], f.blue_green_objects()["rollout"]]
    assert render_list(rollouts).splitlines() == [
        "NAME        STRATEGY   STATUS        STEP  SET-WEIGHT  READY  DESIRED  UP-TO-DATE  "
        "AVAILABLE",
        "shop-web    Canary     Progressing   2/4   50          4/4    4        2           4",
        "checkout    BlueGreen  Paused        -     -           3/4    2        2           3",
    ]
    with_ns = render_list(rollouts, all_namespaces=True).splitlines()
    assert with_ns[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert with_ns[1].split()[:3] == ["shop", "shop-web", "Canary"]


def ro(spec: Obj | None = None, status: Obj | None = None, generation: int = 1) -> Obj:
    return {
        "metadata": {"name": "r", "generation": generation},
        "spec": {"replicas": 2, "strategy": {"canary": {}}, **(spec or {})},
        "status": {"observedGeneration": str(generation), **(status or {})},
    }


HEALTHY = {
    "replicas": 2,
    "updatedReplicas": 2,
    "availableReplicas": 2,
    "stableRS": "a",
    "currentPodHash": "a",
}
BG: Obj = {"strategy": {"blueGreen": {}}}
PHASES: dict[str, tuple[Obj, tuple[str, str]]] = {
    "controller phase and message": (
        ro(status={"phase": "Degraded", "message": "RolloutAborted: x"}),
        ("Degraded", "RolloutAborted: x"),
    ),
    "spec change not yet observed": (
        {**ro(status={"phase": "Healthy"}), "metadata": {"generation": 2}},
        ("Progressing", "waiting for rollout spec update to be observed"),
    ),
    "unpause not yet observed": (
        ro(status={"phase": "Paused", "controllerPause": True}),
        ("Progressing", "waiting for rollout to unpause"),
    ),
    "fallback: invalid spec": (
        ro(status={"conditions": [{"type": "InvalidSpec", "message": "bad"}]}),
        ("Degraded", "InvalidSpec: bad"),
    ),
    "fallback: aborted": (
        ro(status={"conditions": [{"type": "Progressing", "reason": "RolloutAborted"}]}),
        ("Degraded", "RolloutAborted: "),
    ),
    "fallback: paused by the user": (ro({"paused": True}), ("Paused", "manually paused")),
    "fallback: pause condition": (
        ro(status={"pauseConditions": [{"reason": "CanaryPauseStep"}]}),
        ("Paused", "CanaryPauseStep"),
    ),
    "fallback: restarting": (
        ro({"restartAt": "2024-01-01T00:00:00Z"}, HEALTHY),
        ("Progressing", "rollout is restarting"),
    ),
    "fallback: restart done": (
        ro(
            {"restartAt": "2024-01-01T00:00:00Z"},
            {**HEALTHY, "restartedAt": "2024-01-01T00:00:00Z"},
        ),
        ("Healthy", ""),
    ),
    "fallback: old replicas terminating": (
        ro(status={**HEALTHY, "replicas": 3}),
        ("Progressing", "old replicas are pending termination"),
    ),
    "fallback: steps left": (
        ro(status={**HEALTHY, "stableRS": "old"}),
        ("Progressing", "waiting for all steps to complete"),
    ),
    "fallback: canary healthy": (ro(status=HEALTHY), ("Healthy", "")),
    "fallback: blue-green cutover pending": (
        ro(BG, HEALTHY),
        ("Progressing", "active service cutover pending"),
    ),
    "fallback: blue-green healthy": (
        ro(BG, {**HEALTHY, "blueGreen": {"activeSelector": "a"}}),
        ("Healthy", ""),
    ),
}


@pytest.mark.parametrize(("rollout", "want"), PHASES.values(), ids=PHASES.keys())
def test_rollout_phase(rollout: Obj, want: tuple[str, str]) -> None:
    assert calculate_rollout_phase(rollout) == want


STEPS = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 40}, {"analysis": {}}]
WEIGHTS = {
    "first step": ({"currentStepIndex": 0}, 20),
    "pause keeps the last weight": ({"currentStepIndex": 1}, 20),
    "analysis keeps the last weight": ({"currentStepIndex": 3}, 40),
    "past the last step": ({"currentStepIndex": 4}, 100),
    "aborted": ({"currentStepIndex": 2, "abort": True}, 0),
}


@pytest.mark.parametrize(("status", "want"), WEIGHTS.values(), ids=WEIGHTS.keys())
def test_current_set_weight(status: Obj, want: int) -> None:
    rollout = {"spec": {"strategy": {"canary": {"steps": STEPS}}}, "status": status}
    assert current_set_weight(rollout) == want


def test_set_weight_before_any_set_weight_step() -> None:
    rollout: Obj = {"spec": {"strategy": {"canary": {"steps": [{"pause": {}}]}}}, "status": {}}
    assert current_set_weight(rollout) == 0


def container(**state: Obj) -> Obj:
    ready = "running" in state
    return {"name": "c", "ready": ready, "restartCount": 0, "state": state}


PODS: dict[str, tuple[Obj, tuple[str, str, str]]] = {
    "running": (
        {"phase": "Running", "containerStatuses": [container(running={})]},
        ("Running", "✔", "1/1"),
    ),
    "image pull": (
        {"phase": "Pending", "containerStatuses": [container(waiting={"reason": "ErrImagePull"})]},
        ("ErrImagePull", "⚠", "0/1"),
    ),
    "crash loop": (
        {
            "phase": "Running",
            "containerStatuses": [container(waiting={"reason": "CrashLoopBackOff"})],
        },
        ("CrashLoopBackOff", "✖", "0/1"),
    ),
    "exit code": (
        {"phase": "Failed", "containerStatuses": [container(terminated={"exitCode": 3})]},
        ("ExitCode:3", "✖", "0/1"),
    ),
    "init waiting": (
        {
            "phase": "Pending",
            "initContainerStatuses": [container(waiting={"reason": "PodInitializing"})],
        },
        ("Init:0/1", "◌", "0/1"),
    ),
    "pending": ({"phase": "Pending"}, ("Pending", "◌", "0/1")),
}


@pytest.mark.parametrize(("status", "want"), PODS.values(), ids=PODS.keys())
def test_pod_status(status: Obj, want: tuple[str, str, str]) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]},
        "status": status,
    }
    info = pod_info(pod)
    assert (info.status, info.icon, info.ready) == want


def test_terminating_pod() -> None:
    pod = {"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {}}
    assert pod_info(pod).status == "Terminating"


RS_HEALTH = {
    "healthy": ({"replicas": 2}, {"observedGeneration": 1, "availableReplicas": 2}, "Healthy"),
    "becoming available": (
        {"replicas": 2},
        {"observedGeneration": 1, "availableReplicas": 1},
        "Progressing",
    ),
    "generation not observed": ({"replicas": 2}, {"availableReplicas": 2}, "Progressing"),
    "scaled down": ({"replicas": 0}, {"observedGeneration": 1}, "ScaledDown"),
    "replica failure": (
        {"replicas": 2},
        {
            "observedGeneration": 1,
            "conditions": [{"type": "ReplicaFailure", "status": "True"}],
        },
        "ReplicaFailure",
    ),
}


@pytest.mark.parametrize(("spec", "status", "want"), RS_HEALTH.values(), ids=RS_HEALTH.keys())
def test_replica_set_health(spec: Obj, status: Obj, want: str) -> None:
    rs = {"metadata": {"generation": 1}, "spec": spec, "status": status}
    assert replica_set_health(rs) == want


AGES = {
    "seconds": (59, "59s"),
    "two minutes in seconds": (119, "119s"),
    "minutes and seconds": (250, "4m10s"),
    "whole minutes": (600, "10m"),
    "hours and minutes": (3 * 3600 + 5 * 60, "3h5m"),
    "hours": (30 * 3600, "30h"),
    "days and hours": (3 * 86400 + 2 * 3600, "3d2h"),
    "days": (40 * 86400, "40d"),
    "years": (3 * 365 * 86400 + 86400, "3y1d"),
    "clock skew": (-1, "0s"),
}


@pytest.mark.parametrize(("seconds", "want"), AGES.values(), ids=AGES.keys())
def test_human_duration(seconds: float, want: str) -> None:
    assert human_duration(seconds) == want


def test_actual_weight_with_traffic_routing_uses_the_reported_weight() -> None:
    objects = f.canary_objects()
    canary = objects["rollout"]["spec"]["strategy"]["canary"]
    canary["trafficRouting"] = {"nginx": {}}
    objects["rollout"]["status"]["canary"] = {"weights": {"canary": {"weight": 45}}}
    assert rollout_info(objects).actual_weight == "45"
    del objects["rollout"]["status"]["canary"]
    assert rollout_info(objects).actual_weight == "50"


def test_actual_weight_past_the_last_step_is_all_of_max_traffic_weight() -> None:
    objects = f.canary_objects()
    canary = objects["rollout"]["spec"]["strategy"]["canary"]
    canary["trafficRouting"] = {"nginx": {"stableIngress": "i"}, "maxTrafficWeight": 1000}
    objects["rollout"]["status"]["currentStepIndex"] = len(canary["steps"])
    assert rollout_info(objects).actual_weight == "1000"


def test_objects_of_other_owners_are_left_out() -> None:
    info = rollout_info(f.canary_objects())
    assert [rs.name for rs in info.replica_sets] == ["shop-web-6b7f", "shop-web-5d9c"]
    assert revisions(info) == [2, 1]
    assert info.status not in FINAL_PHASES
    bg = f.blue_green_objects()
    assert [(rs.stable, rs.active, rs.preview) for rs in rollout_info(bg).replica_sets] == [
        (False, False, True),
        (True, True, False),
        (False, False, False),
    ]


EXPERIMENT_SCREEN = """\
Name:            shop-web-6b7f-2-exp
Namespace:       shop
Status:          ◌ Running
Images:          shop/web:1.0 (Σ:baseline)
                 shop/web:1.1 (Σ:canary)

NAME                                        KIND         STATUS     AGE  INFO
Σ shop-web-6b7f-2-exp                       Experiment   ◌ Running  5m
├──⧉ shop-web-6b7f-2-exp-baseline           ReplicaSet   ✔ Healthy  5m
│  └──□ shop-web-6b7f-2-exp-baseline-abcde  Pod          ✔ Running  4m   ready:1/1
├──⧉ shop-web-6b7f-2-exp-canary             ReplicaSet   ✔ Healthy  5m
│  └──□ shop-web-6b7f-2-exp-canary-abcde    Pod          ✔ Running  4m   ready:1/1
└──\u03b1 shop-web-6b7f-2-exp-smoke              AnalysisRun  ◌ Running  4m   ✔ 2
"""

FINISHED_EXPERIMENT_SCREEN = """\
Name:            old-exp
Namespace:       shop
Status:          ✔ Successful
Message:         all good

NAME       KIND        STATUS        AGE  INFO
Σ old-exp  Experiment  ✔ Successful  2d
"""


def experiment_screen(which: str) -> str:
    objects = f.experiment_objects()
    info = experiment_info(
        objects[which],
        replica_sets=objects["replica_sets"],
        pods=objects["pods"],
        analysis_runs=objects["analysis_runs"],
    )
    return render_experiment(info, now=f.NOW)


def test_get_experiment_screen() -> None:
    assert experiment_screen("experiment") == EXPERIMENT_SCREEN
    assert experiment_screen("finished") == FINISHED_EXPERIMENT_SCREEN


def test_list_experiments_table() -> None:
    objects = f.experiment_objects()
    pending = {
        "metadata": {
            "name": "pending",
            "namespace": "x",
            "creationTimestamp": f.ts(timedelta(seconds=3)),
        }
    }
    experiments = [objects["experiment"], objects["finished"], pending]
    assert render_experiment_list(experiments, now=f.NOW).splitlines() == [
        "NAME                 STATUS      DURATION  REMAINING  AGE",
        "shop-web-6b7f-2-exp  Running     10m       6m         5m",  # available 4m of 10m
        "old-exp              Successful  60m       -          2d",  # finished: nothing left
        "pending                          -         -          3s",  # no duration
    ]
    with_ns = render_experiment_list(experiments[:1], now=f.NOW, all_namespaces=True)
    assert with_ns.splitlines() == [
        "NAMESPACE  NAME                 STATUS   DURATION  REMAINING  AGE",
        "shop       shop-web-6b7f-2-exp  Running  10m       6m         5m",
    ]
