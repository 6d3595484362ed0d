"""The models read Argo's JSON and write it back unchanged, unknown fields included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from rollout_workers.api import (
    AnalysisPhase,
    AnalysisRun,
    AnalysisTemplate,
    ClusterAnalysisTemplate,
    ConditionStatus,
    Experiment,
    KubeModel,
    ObjectMeta,
    PauseReason,
    Rollout,
    RolloutConditionType,
    RolloutPhase,
)
from rollout_workers.api.rollout import RolloutSpec, RolloutStatus
from tests.unit.api.conftest import load


def cluster_template() -> dict[str, Any]:
    doc = load("analysis-template.yaml")
    doc["kind"] = "ClusterAnalysisTemplate"
    del doc["metadata"]["namespace"]
    return doc


CASES: dict[str, tuple[type[KubeModel], dict[str, Any]]] = {
    "canary rollout": (Rollout, load("rollout-canary.yaml")),
    "blue-green rollout": (Rollout, load("rollout-bluegreen.yaml")),
    "analysis template": (AnalysisTemplate, load("analysis-template.yaml")),
    "cluster analysis template": (ClusterAnalysisTemplate, cluster_template()),
    "analysis run": (AnalysisRun, load("analysis-run.yaml")),
    "experiment": (Experiment, load("experiment.yaml")),
}


@pytest.mark.parametrize(("model", "doc"), CASES.values(), ids=CASES.keys())
def test_round_trip_is_lossless(model: type[KubeModel], doc: dict[str, Any]) -> None:
    parsed = model.model_validate(doc)
    assert parsed.model_dump(by_alias=True, exclude_unset=True) == doc
    assert parsed.to_dict() == doc
    assert model.from_json(json.dumps(doc)).to_dict() == doc
    assert json.loads(parsed.to_json()) == doc
    assert model.from_dict(doc) == parsed


def test_unknown_fields_survive_at_every_depth() -> None:
    rollout = Rollout.from_dict(load("rollout-canary.yaml"))
    assert rollout.metadata.model_extra == {
        "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
    }
    canary = rollout.spec.strategy and rollout.spec.strategy.canary
    assert canary and canary.traffic_routing
    assert canary.traffic_routing.model_extra == {
        "futureRouter": {"virtualService": {"name": "checkout"}}
    }
    assert rollout.status and rollout.status.canary and rollout.status.canary.model_extra
    assert rollout.status.canary.model_extra == {"futureSteps": {"lastRun": 8}}
    (step,) = rollout.status.canary.step_plugin_statuses or []
    assert (step.name, step.status) == ("acme/notify", {"sent": 3})

    rollout.status.phase = RolloutPhase.HEALTHY  # a typed edit keeps the untyped neighbours
    out = rollout.to_dict()
    assert out["status"]["phase"] == "Healthy"
    assert out["status"]["canary"]["stepPluginStatuses"][0]["index"] == 8
    assert out["status"]["canary"]["futureSteps"] == {"lastRun": 8}
    assert out["spec"]["strategy"]["canary"]["trafficRouting"]["futureRouter"] == {
        "virtualService": {"name": "checkout"}
    }


def test_go_names_that_are_not_camel_case() -> None:
    status = RolloutStatus(hpa_replicas=3, stable_rs="6cbccd9f99", observed_generation="4")
    assert status.to_dict() == {
        "HPAReplicas": 3,
        "stableRS": "6cbccd9f99",
        "observedGeneration": "4",
    }
    read = RolloutStatus.from_dict({"HPAReplicas": 2, "stableRS": "abc"})
    assert (read.hpa_replicas, read.stable_rs) == (2, "abc")
    assert "hpaReplicas" not in json.dumps(load("rollout-bluegreen.yaml"))


def test_observed_generation_is_a_string_even_when_written_as_a_number() -> None:
    doc = load("rollout-bluegreen.yaml")
    doc["status"]["observedGeneration"] = 410  # as some tools and old fixtures write it
    status = Rollout.from_dict(doc).status
    assert status and status.observed_generation == "410"
    assert Rollout.from_dict(doc).to_dict()["status"]["observedGeneration"] == "410"


INT_OR_STRING = {
    "percentage stays a string": ("maxSurge", "25%", "25%"),
    "number stays a number": ("maxSurge", 1, 1),
    "numeric string stays a string": ("maxUnavailable", "1", "1"),
    "zero": ("maxUnavailable", 0, 0),
}


@pytest.mark.parametrize(("field", "given", "kept"), INT_OR_STRING.values(), ids=INT_OR_STRING)
def test_int_or_string_keeps_its_type(field: str, given: object, kept: object) -> None:
    spec = RolloutSpec.from_dict({"strategy": {"canary": {field: given}}})
    dumped = spec.to_dict()["strategy"]["canary"][field]
    assert dumped == kept and type(dumped) is type(kept)


def test_pause_duration_and_metric_count_accept_both_forms() -> None:
    rollout = Rollout.from_dict(load("rollout-canary.yaml"))
    assert rollout.spec.strategy and rollout.spec.strategy.canary
    steps = rollout.spec.strategy.canary.steps or []
    durations = [s.pause.duration for s in steps if s.pause is not None]
    assert durations == [None, "30s", 60]
    template = AnalysisTemplate.from_dict(load("analysis-template.yaml"))
    counts = [m.count for m in template.spec.metrics or []]
    assert counts == ["{{args.count}}", 3, None, None]


def test_enums_are_typed_and_compare_as_strings() -> None:
    rollout = Rollout.from_dict(load("rollout-canary.yaml"))
    assert rollout.status
    assert rollout.status.phase is RolloutPhase.PAUSED
    assert [c.reason for c in rollout.status.pause_conditions or []] == [
        PauseReason.CANARY_PAUSE_STEP
    ]
    conditions = rollout.status.conditions or []
    assert conditions[0].type is RolloutConditionType.AVAILABLE
    assert conditions[0].status is ConditionStatus.TRUE
    assert json.dumps({"phase": RolloutPhase.PAUSED}) == '{"phase": "Paused"}'


def test_an_unknown_enum_value_is_rejected() -> None:
    doc = load("rollout-canary.yaml")
    doc["status"]["phase"] = "Sleeping"
    with pytest.raises(ValidationError, match="phase"):
        Rollout.from_dict(doc)


PHASES = {
    AnalysisPhase.PENDING: False,
    AnalysisPhase.RUNNING: False,
    AnalysisPhase.SUCCESSFUL: True,
    AnalysisPhase.FAILED: True,
    AnalysisPhase.ERROR: True,
    AnalysisPhase.INCONCLUSIVE: True,
}


@pytest.mark.parametrize(("phase", "completed"), PHASES.items(), ids=[p.value for p in PHASES])
def test_analysis_phase_completed(phase: AnalysisPhase, completed: bool) -> None:
    assert phase.completed is completed


def test_only_set_fields_are_written() -> None:
    rollout = Rollout(metadata=ObjectMeta(name="web"), spec=RolloutSpec(replicas=2))
    assert rollout.to_dict() == {"metadata": {"name": "web"}, "spec": {"replicas": 2}}
    rollout.spec.paused = True
    assert rollout.to_dict()["spec"] == {"replicas": 2, "paused": True}


def test_explicit_nulls_are_kept() -> None:
    doc = {"spec": {"replicas": None, "template": {"metadata": {"creationTimestamp": None}}}}
    assert Rollout.from_dict(doc).to_dict() == doc


def test_missing_required_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="activeService"):
        RolloutSpec.from_dict({"strategy": {"blueGreen": {"previewService": "p"}}})
    with pytest.raises(ValidationError, match="provider"):
        AnalysisTemplate.from_dict({"spec": {"metrics": [{"name": "m"}]}})
