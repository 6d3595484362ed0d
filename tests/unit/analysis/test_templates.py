"""The AnalysisRun a rollout asks for (analysis/templates.py): what each field of the rollout's
analysis block and of the referenced templates becomes in the run's body. The four places a
rollout names an analysis (a step, the background analysis, pre- and post-promotion) all pass
their block to `analysis_run_body`; tests/integration/rollout/test_analysis_steps.py runs each.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.analysis.templates import TemplateError, analysis_run_body
from rollout_workers.api.analysis import AnalysisTemplateSpec

Obj = dict[str, Any]
ROLLOUT: Obj = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Rollout",
    "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "labels": {"team": "a"}},
    "spec": {},
}


def metric(name: str) -> Obj:
    return {"name": name, "provider": {"web": {"url": "http://x/{{args.who}}"}}}


TEMPLATES: dict[tuple[str, bool], Obj] = {
    ("rate", False): {
        "metrics": [metric("rate")],
        "args": [{"name": "who"}, {"name": "region", "value": "eu"}],
        "dryRun": [{"metricName": "rate"}],
        "measurementRetention": [{"metricName": "rate", "limit": 3}],
    },
    ("errors", True): {"metrics": [metric("errors")], "args": [{"name": "who"}]},
    ("outer", False): {"templates": [{"templateName": "errors", "clusterScope": True}]},
}


def lookup(name: str, cluster: bool) -> AnalysisTemplateSpec | None:
    spec = TEMPLATES.get((name, cluster))
    return None if spec is None else AnalysisTemplateSpec.from_dict(spec)


def body(analysis: Obj, **kw: Any) -> Obj:
    args: dict[str, Any] = {
        "rollout": ROLLOUT,
        "analysis": analysis,
        "lookup": lookup,
        "pod_hash": "h2",
        "stable_hash": "h1",
        "revision": 2,
        "infix": "",
        "rollout_type": "Background",
    }
    args.update(kw)
    return analysis_run_body(**args)


def test_templates_are_looked_up_by_name_and_scope_and_merged() -> None:
    run = body(
        {
            "templates": [{"templateName": "rate"}, {"templateName": "outer"}],
            "args": [{"name": "who", "value": "me"}],
        }
    )
    assert [m["name"] for m in run["spec"]["metrics"]] == ["rate", "errors"]
    # A template of the other scope is not found.
    with pytest.raises(TemplateError, match='ClusterAnalysisTemplate "rate" not found'):
        body({"templates": [{"templateName": "rate", "clusterScope": True}]})


def test_rollout_args_override_the_templates_defaults() -> None:
    run = body(
        {
            "templates": [{"templateName": "rate"}],
            "args": [{"name": "who", "value": "me"}, {"name": "region", "value": "us"}],
        }
    )
    assert run["spec"]["args"] == [
        {"name": "who", "value": "me"},
        {"name": "region", "value": "us"},
    ]
    with pytest.raises(TemplateError, match=r"args\.who was not resolved"):
        body({"templates": [{"templateName": "rate"}]})


def test_pod_template_hash_args_take_the_stable_and_latest_hashes() -> None:
    run = body(
        {
            "templates": [{"templateName": "rate"}],
            "args": [
                {"name": "who", "valueFrom": {"podTemplateHashValue": "Stable"}},
                {"name": "region", "valueFrom": {"podTemplateHashValue": "Latest"}},
            ],
        }
    )
    assert run["spec"]["args"] == [
        {"name": "who", "value": "h1"},
        {"name": "region", "value": "h2"},
    ]


def test_dry_run_and_retention_of_templates_and_rollout_are_carried_into_the_run() -> None:
    run = body(
        {
            "templates": [{"templateName": "rate"}],
            "args": [{"name": "who", "value": "me"}],
            "dryRun": [{"metricName": "*"}],
            "measurementRetention": [{"metricName": "*", "limit": 7}],
        }
    )
    assert run["spec"]["dryRun"] == [{"metricName": "rate"}, {"metricName": "*"}]
    assert run["spec"]["measurementRetention"] == [
        {"metricName": "rate", "limit": 3},
        {"metricName": "*", "limit": 7},
    ]


def test_analysis_run_metadata_labels_and_annotations_go_on_the_run() -> None:
    run = body(
        {
            "templates": [{"templateName": "rate"}],
            "args": [{"name": "who", "value": "me"}],
            "analysisRunMetadata": {"labels": {"l": "1"}, "annotations": {"a": "2"}},
        },
        rollout_type="Step",
        step_index=1,
        infix="1",
    )
    meta = run["metadata"]
    assert meta["name"] == "web-h2-2-1"
    assert meta["labels"] == {
        "rollouts-pod-template-hash": "h2",
        "rollout-type": "Step",
        "step-index": "1",
        "l": "1",
    }
    assert meta["annotations"] == {"rollout.argoproj.io/revision": "2", "a": "2"}
