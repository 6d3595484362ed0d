"""Experiment template weights with a traffic router (Argo's
calculateWeightDestinationsFromExperiment): each template of the running experiment that sets a
weight gets it, to the Service and pod hash the experiment's status names."""

from __future__ import annotations

from typing import Any

from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficstep import experiment_destinations
from tests.unit.rollout.onesync import T0
from tests.unit.rollout.test_controller import rollout

Obj = dict[str, Any]

STEPS = [
    {"setWeight": 10},
    {
        "experiment": {
            "templates": [
                {"name": "baseline", "specRef": "stable", "weight": 5},
                {"name": "canary", "specRef": "canary", "weight": 7},
                {"name": "plain", "specRef": "canary"},
            ]
        }
    },
    {"pause": {}},
]


def ctx_at(index: int, phase: str = "Running") -> RolloutContext:
    obj = rollout(
        replicas=10,
        strategy={
            "canary": {
                "stableService": "s",
                "canaryService": "c",
                "trafficRouting": {"smi": {}},
                "steps": STEPS,
            }
        },
    )
    obj["status"] = {"currentStepIndex": index, "canary": {"currentExperiment": "web-ex"}}
    ex = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Experiment",
        "metadata": {"name": "web-ex", "namespace": "default"},
        "spec": {"templates": []},
        "status": {
            "phase": phase,
            "templateStatuses": [
                {"name": n, "serviceName": f"web-{n}", "podTemplateHash": f"h-{n}"}
                for n in ("baseline", "canary", "plain")
            ],
        },
    }
    return RolloutContext.build(obj=obj, rss=[], now=T0, writer=RecordingWriter(), experiments=[ex])


def test_running_experiment_templates_with_a_weight_are_destinations() -> None:
    got = experiment_destinations(ctx_at(1))
    assert [(d.service_name, d.pod_template_hash, d.weight) for d in got] == [
        ("web-baseline", "h-baseline", 5),
        ("web-canary", "h-canary", 7),
    ]


def test_the_experiment_step_counts_until_the_next_one() -> None:
    # At the pause after the experiment step, the experiment step is still the current one.
    assert len(experiment_destinations(ctx_at(2))) == 2


def test_no_destinations_before_the_step_or_unless_running() -> None:
    assert experiment_destinations(ctx_at(0)) == []
    assert experiment_destinations(ctx_at(1, phase="Successful")) == []
    assert experiment_destinations(ctx_at(3)) == []
