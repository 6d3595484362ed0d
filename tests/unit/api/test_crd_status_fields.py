"""Every status field our models can write survives Argo Rollouts' own CRDs.

On a cluster that runs Argo's CRDs, the API server prunes from a stored object every field that
the CRD schema does not list (unless below `x-kubernetes-preserve-unknown-fields`). A status
field the controller writes but Argo's schema lacks is therefore silently dropped: written on
every reconcile, never read back. The reference is testdata/argo_status_fields.json, extracted
from Argo's CRDs by argo_fields.py (which says how to regenerate it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollout_workers.api.crdgen import calculate_crds
from rollout_workers.api.experiment import ExperimentAnalysisRunStatus, TemplateStatus
from rollout_workers.api.rollout import ALBStatus, AwsResourceRef, RolloutStatus
from rollout_workers.rollout.status import normalize
from tests.unit.api.argo_fields import calculate_status_structures

ARGO: dict[str, Any] = {
    kind: structure
    for kind, structure in json.loads(
        (Path(__file__).parent / "testdata" / "argo_status_fields.json").read_text()
    ).items()
    if not kind.startswith("_")
}
OURS: dict[str, Any] = calculate_status_structures(calculate_crds())

#: Status fields of ours that Argo's schema (the reference data) lacks, with the reason they are
#: kept: each is pruned on a cluster with Argo's CRDs. Keep it empty: fix the model or the writer.
EXCEPTIONS: dict[str, str] = {}

#: Properties Argo's schema requires but ours does not: a status object the controller writes
#: without them is rejected (422) by a server with Argo's CRD. Each entry says what makes the
#: writer always set them (test_go_zero_values_fill_argos_required_fields checks the models).
REQUIRED_ONLY_BY_ARGO: dict[str, list[str]] = {
    # rollout.status.normalize writes the ALB status whole, "" for what is not known, as Argo's
    # Go structs are (test_alb_status_is_written_whole).
    "Rollout status.alb.canaryTargetGroup": ["arn", "name"],
    "Rollout status.alb.loadBalancer": ["arn", "name"],
    "Rollout status.alb.stableTargetGroup": ["arn", "name"],
    "Rollout status.albs[].canaryTargetGroup": ["arn", "name"],
    "Rollout status.albs[].loadBalancer": ["arn", "name"],
    "Rollout status.albs[].stableTargetGroup": ["arn", "name"],
    # rollout.conditions.new_condition and experiment.reconcile.new_condition set all six.
    "Rollout status.conditions[]": ["lastTransitionTime", "lastUpdateTime", "message", "reason"],
    "Experiment status.conditions[]": [
        "lastTransitionTime",
        "lastUpdateTime",
        "message",
        "reason",
    ],
    # The models write Go's zero values for these ("" and 0) when unset, as Argo does.
    "Experiment status.analysisRuns[]": ["analysisRun", "phase"],
    "Experiment status.templateStatuses[]": [
        "availableReplicas",
        "readyReplicas",
        "replicas",
        "updatedReplicas",
    ],
    # The analysis reconcile sets a phase on its first pass.
    "AnalysisRun status": ["phase"],
}


def test_the_reference_covers_every_kind_with_a_status() -> None:
    assert sorted(ARGO) == sorted(OURS) == ["AnalysisRun", "Experiment", "Rollout"]


def below_preserved(path: str, preserved: list[str]) -> bool:
    return any(path.startswith((f"{p}.", f"{p}[]")) for p in preserved)


@pytest.mark.parametrize("kind", sorted(OURS))
def test_every_status_field_of_ours_is_in_argos_schema(kind: str) -> None:
    argo, ours = ARGO[kind], OURS[kind]
    missing = [
        path
        for path in ours["fields"]
        if path not in argo["fields"]
        and not below_preserved(path, argo["preserveUnknownFields"])
        and f"{kind} {path}" not in EXCEPTIONS
    ]
    assert missing == []


@pytest.mark.parametrize("kind", sorted(OURS))
def test_shared_status_fields_have_argos_types(kind: str) -> None:
    argo, ours = ARGO[kind]["fields"], OURS[kind]["fields"]
    assert {p: ours[p] for p in ours.keys() & argo.keys() if ours[p] != argo[p]} == {}


@pytest.mark.parametrize("kind", sorted(OURS))
def test_argos_status_fields_are_all_modelled(kind: str) -> None:
    """The other direction: a field Argo's controller writes that we cannot read back."""
    assert sorted(ARGO[kind]["fields"].keys() - OURS[kind]["fields"].keys()) == []


def test_exceptions_are_still_needed() -> None:
    for entry in EXCEPTIONS:
        kind, path = entry.split(" ", 1)
        assert path in OURS[kind]["fields"], f"{entry}: no longer in the model, drop it"
        assert path not in ARGO[kind]["fields"], f"{entry}: Argo's schema has it, drop it"


def test_argos_required_status_properties_are_required_by_ours_or_listed() -> None:
    gaps = {}
    for kind, argo in ARGO.items():
        ours = OURS[kind]["required"]
        for path, required in argo["required"].items():
            missing = sorted(set(required) - set(ours.get(path, [])))
            if missing:
                gaps[f"{kind} {path}"] = missing
    assert gaps == REQUIRED_ONLY_BY_ARGO


def test_go_zero_values_fill_argos_required_fields() -> None:
    assert ExperimentAnalysisRunStatus(name="a").to_dict() == {
        "name": "a",
        "analysisRun": "",
        "phase": "",
    }
    assert TemplateStatus(name="t").to_dict() == {
        "name": "t",
        "replicas": 0,
        "updatedReplicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
    }
    # What Argo wrote reads back: "" is no phase yet.
    read = ExperimentAnalysisRunStatus.from_dict({"name": "a", "analysisRun": "", "phase": ""})
    assert read.phase is None and read.to_dict()["phase"] == ""


def test_alb_status_is_written_whole() -> None:
    """As Argo's Go structs: every reference with its name, ARN and full name ("" unknown)."""
    empty = {"name": "", "arn": "", "fullName": ""}
    assert normalize(RolloutStatus(alb=ALBStatus()))["alb"] == {
        "loadBalancer": empty,
        "canaryTargetGroup": empty,
        "stableTargetGroup": empty,
    }
    status = RolloutStatus(
        albs=[ALBStatus(ingress="i", load_balancer=AwsResourceRef(name="lb"))],
    )
    assert normalize(status)["albs"] == [
        {
            "ingress": "i",
            "loadBalancer": {"name": "lb", "arn": "", "fullName": ""},
            "canaryTargetGroup": empty,
            "stableTargetGroup": empty,
        }
    ]
    assert "alb" not in normalize(RolloutStatus(alb=None))
    assert "albs" not in normalize(RolloutStatus(albs=[]))
