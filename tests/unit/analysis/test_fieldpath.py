"""`args[].valueFrom.fieldRef.fieldPath` resolved against the rollout as Argo does
(utils/analysis/factory.go; cases from factory_test.go Test_extractValueFromRollout and
TestBuildArgumentsForRolloutAnalysisRun, plus Kubernetes' fieldpath for `metadata` paths)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.analysis.fieldpath import FieldPathError, metadata_field, rollout_value
from rollout_workers.analysis.templates import (
    TemplateError,
    analysis_run_body,
    resolve_rollout_args,
)
from rollout_workers.api.analysis import AnalysisTemplateSpec

ROLLOUT: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Rollout",
    "metadata": {
        "name": "test",
        "namespace": "default",
        "uid": "u-1",
        "labels": {"app": "app", "env": "test"},
        "annotations": {"rollout.argoproj.io/revision": "1", "note": 'say "hi"'},
    },
    "spec": {
        "replicas": 3,
        "paused": False,
        "progressDeadlineSeconds": 1000000,
        "template": {
            "metadata": {"labels": {"version": "v1"}},
            "spec": {"containers": [{"name": "container-name", "image": "foo/bar"}]},
        },
        "selector": {"matchLabels": {"app": "app"}},
    },
    "status": {"pauseConditions": [{"reason": "test-reason"}]},
}

# (id, path, value, error)
VALUES = [
    # Test_extractValueFromRollout
    ("should return a simple metadata value", "metadata.name", "test", ""),
    ("should return a label using dot notation", "metadata.labels.app", "app", ""),
    (
        "should fail returning a label using accessor notation",
        "metadata.labels['app']",
        "",
        "invalid path metadata.labels['app'] in rollout",
    ),
    ("should return a status value", "status.pauseConditions[0].reason", "test-reason", ""),
    (
        "should fail when array indexer is not an int",
        "status.pauseConditions[blah].reason",
        "",
        "invalid index 'blah'",
    ),
    (
        "should fail when array indexer is out of range",
        "status.pauseConditions[12].reason",
        "",
        "index 12 out of range",
    ),
    (
        "should fail when path references an empty field",
        "status.pauseConditions[0].startTime",
        "",
        "invalid path status.pauseConditions[0].startTime in rollout",
    ),
    (
        "should fail when path is inavlid",
        "some.invalid[2].non.existing.path",
        "",
        "invalid path some.invalid[2].non.existing.path in rollout",
    ),
    (
        "should fail when path references a non-primitive value",
        "status.pauseConditions[0]",
        "",
        "path status.pauseConditions[0] in rollout must terminate in a primitive value",
    ),
    (
        "should return a pod template label using dot notation",
        "spec.template.metadata.labels.version",
        "v1",
        "",
    ),
    # The brief's example, and Go's %v of JSON numbers and booleans.
    ("container image", "spec.template.spec.containers[0].image", "foo/bar", ""),
    ("number", "spec.replicas", "3", ""),
    ("large number as Go prints a float64", "spec.progressDeadlineSeconds", "1e+06", ""),
    ("boolean", "spec.paused", "false", ""),
    ("trailing separator", "spec.template.spec.containers[0].name.", "container-name", ""),
    ("negative index", "status.pauseConditions[-1].reason", "", "index -1 out of range"),
    ("index into a string", "metadata.name[0]", "", "invalid path metadata.name[0] in rollout"),
    (
        "whole object",
        "",
        "",
        "path  in rollout must terminate in a primitive value",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "error"), [c[1:] for c in VALUES], ids=[c[0] for c in VALUES]
)
def test_rollout_value(path: str, value: str, error: str) -> None:
    if error:
        with pytest.raises(FieldPathError) as err:
            rollout_value(ROLLOUT, path)
        assert str(err.value) == error
    else:
        assert rollout_value(ROLLOUT, path) == value


# Kubernetes' fieldpath.ExtractFieldPathAsString, which Argo uses for `metadata...` paths.
METADATA = [
    ("name", "metadata.name", "test", ""),
    ("namespace", "metadata.namespace", "default", ""),
    ("uid", "metadata.uid", "u-1", ""),
    ("label by subscript", "metadata.labels['app']", "app", ""),
    ("missing label is empty", "metadata.labels['x']", "", ""),
    (
        "annotation by subscript",
        "metadata.annotations['rollout.argoproj.io/revision']",
        "1",
        "",
    ),
    ("all labels", "metadata.labels", 'app="app"\nenv="test"', ""),
    (
        "all annotations, Go-quoted",
        "metadata.annotations",
        'note="say \\"hi\\""\nrollout.argoproj.io/revision="1"',
        "",
    ),
    ("unsupported field", "metadata.generation", "", "unsupported fieldPath: metadata.generation"),
    (
        "subscript of a non-map",
        "metadata.name['x']",
        "",
        "fieldPath \"metadata.name['x']\" does not support subscript",
    ),
    (
        "invalid label key",
        "metadata.labels['-x']",
        "",
        "invalid key subscript in metadata.labels['-x']: name part must consist of",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "error"), [c[1:] for c in METADATA], ids=[c[0] for c in METADATA]
)
def test_metadata_field(path: str, value: str, error: str) -> None:
    if error:
        with pytest.raises(FieldPathError) as err:
            metadata_field(ROLLOUT, path)
        assert str(err.value).startswith(error)
    else:
        assert metadata_field(ROLLOUT, path) == value


def field(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def test_build_arguments_for_rollout_analysis_run() -> None:
    """TestBuildArgumentsForRolloutAnalysisRun."""
    annotation = "metadata.annotations['rollout.argoproj.io/revision']"
    args = resolve_rollout_args(
        [
            {"name": "hard-coded-value-key", "value": "hard-coded-value"},
            {"name": "stable-key", "valueFrom": {"podTemplateHashValue": "Stable"}},
            {"name": "new-key", "valueFrom": {"podTemplateHashValue": "Latest"}},
            field("metadata.labels['app']", "metadata.labels['app']"),
            field("metadata.labels['env']", "metadata.labels['env']"),
            field(annotation, annotation),
            field("status.pauseConditions[0].reason", "status.pauseConditions[0].reason"),
            field("image", "spec.template.spec.containers[0].image"),
        ],
        rollout=ROLLOUT,
        stable_hash="abcdef",
        latest_hash="123456",
    )
    assert args == [
        {"name": "hard-coded-value-key", "value": "hard-coded-value"},
        {"name": "stable-key", "value": "abcdef"},
        {"name": "new-key", "value": "123456"},
        {"name": "metadata.labels['app']", "value": "app"},
        {"name": "metadata.labels['env']", "value": "test"},
        {"name": annotation, "value": "1"},
        {"name": "status.pauseConditions[0].reason", "value": "test-reason"},
        {"name": "image", "value": "foo/bar"},
    ]


# (id, args, error): what BuildArgumentsForRolloutAnalysisRun returns as its error.
ERRORS = [
    ("missing path", [field("a", "spec.nothing")], "invalid path spec.nothing in rollout"),
    (
        "the last failing path's error",
        [field("a", "spec.nothing"), field("b", "spec.template")],
        "path spec.template in rollout must terminate in a primitive value",
    ),
    # Argo overwrites its one error variable: a path resolving after a failed one clears it.
    ("cleared by a later path", [field("a", "spec.nothing"), field("b", "spec.replicas")], ""),
    ("cleared by a later metadata path", [field("a", "x"), field("b", "metadata.name")], ""),
    (
        "a metadata path fails at once",
        [field("a", "metadata.generation"), field("b", "spec.replicas")],
        "unsupported fieldPath: metadata.generation",
    ),
]


@pytest.mark.parametrize(("args", "error"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_argument_errors(args: list[dict[str, Any]], error: str) -> None:
    def build() -> list[dict[str, Any]]:
        return resolve_rollout_args(args, rollout=ROLLOUT, stable_hash=None, latest_hash=None)

    if error:
        with pytest.raises(TemplateError) as err:
            build()
        assert str(err.value) == error
    else:
        assert all(a["value"] is not None for a in build())


def test_the_run_gets_the_field_value() -> None:
    template = AnalysisTemplateSpec.from_dict(
        {
            "args": [{"name": "image"}],
            "metrics": [
                {
                    "name": "m",
                    "provider": {"web": {"url": "http://x/{{args.image}}"}},
                }
            ],
        }
    )
    analysis = {
        "templates": [{"templateName": "t"}],
        "args": [field("image", "spec.template.spec.containers[0].image")],
    }
    body = analysis_run_body(
        rollout=copy.deepcopy(ROLLOUT),
        analysis=analysis,
        lookup=lambda name, cluster: template,
        pod_hash="123456",
        stable_hash="abcdef",
        revision=1,
        infix="",
        rollout_type="Background",
    )
    assert body["spec"]["args"] == [{"name": "image", "value": "foo/bar"}]

    analysis["args"] = [field("image", "spec.template.spec.containers[1].image")]
    with pytest.raises(TemplateError, match=r"^index 1 out of range$"):
        analysis_run_body(
            rollout=ROLLOUT,
            analysis=analysis,
            lookup=lambda name, cluster: template,
            pod_hash="123456",
            stable_hash="abcdef",
            revision=1,
            infix="",
            rollout_type="Background",
        )
