"""The test renderer agrees with kustomize itself (kubectl's), wherever kubectl is installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.unit.deploy import kustomize
from tests.unit.deploy.render import DEPLOY, ident, overlays, rendered

KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("overlay", overlays())
def test_renderer_output_equals_kubectl_kustomize(overlay: str) -> None:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / overlay)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", f"kustomize warned: {result.stderr}"
    theirs = {ident(o): o for o in yaml.safe_load_all(result.stdout) if o}
    ours = {ident(o): o for o in rendered(overlay)}
    assert sorted(ours) == sorted(theirs)
    for key, obj in theirs.items():
        assert ours[key] == obj, key


def test_renderer_refuses_features_it_does_not_implement(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    (tmp_path / "kustomization.yaml").write_text("configMapGenerator: [{name: x}]\n")
    with pytest.raises(kustomize.KustomizeError, match="configMapGenerator"):
        kustomize.build(tmp_path)


@pytest.mark.parametrize(
    ("name", "obj", "patch", "expected"),
    [
        ("containers merge by name, env appends",
         {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]},
         {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]},
         {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"},
                                               {"name": "Y", "value": "2"}]}]}),
        ("null deletes a field", {"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ("other lists are replaced", {"args": ["a", "b"]}, {"args": ["c"]}, {"args": ["c"]}),
    ],
)  # fmt: skip
def test_strategic_merge(name: str, obj: dict, patch: dict, expected: dict) -> None:  # type: ignore[type-arg]
    assert kustomize.strategic_merge(obj, patch) == expected, name


def test_json6902_ops() -> None:
    obj = {"kind": "ClusterRole", "rules": [{"resources": ["a", "b"]}], "env": [1]}
    ops = [
        {"op": "replace", "path": "/kind", "value": "Role"},
        {"op": "test", "path": "/rules/0/resources/1", "value": "b"},
        {"op": "remove", "path": "/rules/0/resources/1"},
        {"op": "add", "path": "/env/-", "value": 2},
    ]
    assert kustomize.json6902(obj, ops) == {
        "kind": "Role",
        "rules": [{"resources": ["a"]}],
        "env": [1, 2],
    }
    with pytest.raises(kustomize.KustomizeError, match="test failed"):
        kustomize.json6902(obj, [{"op": "test", "path": "/kind", "value": "Role"}])
