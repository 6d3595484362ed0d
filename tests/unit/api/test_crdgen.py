"""The generated CRDs are structural and the committed files are current.

Their names, scopes, subresources and printer columns are pinned against Argo's in
test_crd_parity.py, their status fields in test_crd_status_fields.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rollout_workers.api.crdgen import CRDS, calculate_crds, main, render_files
from tests.unit.api.conftest import load

ROOT = Path(__file__).resolve().parents[3]
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
GENERATED = calculate_crds()


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, prop in node.get("properties", {}).items():
        yield from walk(prop, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[]")


def schema_of(plural: str) -> dict[str, Any]:
    crd = next(c for c in GENERATED if c["spec"]["names"]["plural"] == plural)
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize("crd", GENERATED, ids=lambda c: c["metadata"]["name"])
def test_schema_is_structural(crd: dict[str, Any]) -> None:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["type"] == "object"
    for path, node in walk(schema):
        assert not node.keys() & {"$ref", "$defs", "title", "default", "allOf", "oneOf"}, path
        assert node.get("type") or node.get(PRESERVE) or node.get(INT_OR_STRING), path
        assert not ("properties" in node and "additionalProperties" in node), path
        if "anyOf" in node:
            assert node[INT_OR_STRING] is True, path
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        assert node.get("nullable", False) in (True, False), path
        for required in node.get("required", []):
            assert required in node["properties"], path


def test_field_schemas() -> None:
    spec = schema_of("rollouts")["properties"]["spec"]["properties"]
    status = schema_of("rollouts")["properties"]["status"]["properties"]
    canary = spec["strategy"]["properties"]["canary"]["properties"]
    blue_green = spec["strategy"]["properties"]["blueGreen"]
    assert canary["maxSurge"][INT_OR_STRING] is True
    assert canary["steps"]["items"]["properties"]["pause"]["properties"]["duration"][INT_OR_STRING]
    assert spec["template"][PRESERVE] is True  # the pod template is not modelled
    assert canary["trafficRouting"][PRESERVE] is True  # routers we do not model pass through
    assert PRESERVE not in blue_green and blue_green["required"] == ["activeService"]
    assert status["observedGeneration"]["type"] == "string"
    assert status["phase"]["type"] == "string" and "enum" not in status["phase"]  # as Argo's
    assert spec["restartAt"] == {"type": "string", "format": "date-time", "nullable": True}
    assert schema_of("rollouts")["required"] == ["spec"]
    metric = schema_of("analysistemplates")["properties"]["spec"]["properties"]["metrics"]["items"]
    assert metric["properties"]["count"][INT_OR_STRING] is True
    assert metric["properties"]["provider"][PRESERVE] is True
    assert metric["required"] == ["name", "provider"]


def pruned(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """The paths the API server would drop from `value` when storing it under `schema`."""
    if path == ".metadata":
        return []  # the server validates object metadata itself
    if schema.get(PRESERVE) or not isinstance(value, dict | list):
        return []
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in pruned(schema["items"], v, f"{path}[{i}]")]
    if isinstance(schema.get("additionalProperties"), dict):
        return [
            p for k, v in value.items() for p in pruned(schema["additionalProperties"], v, path)
        ]
    props = schema.get("properties", {})
    out = []
    for key, v in value.items():
        if key not in props:
            out.append(f"{path}.{key}")
        else:
            out += pruned(props[key], v, f"{path}.{key}")
    return out


PRUNED = {
    "rollout-canary.yaml": ("rollouts", [".status.canary.futureSteps"]),
    "rollout-bluegreen.yaml": ("rollouts", [".spec.strategy.blueGreen.previewIngress"]),
    "analysis-template.yaml": ("analysistemplates", []),
    "analysis-run.yaml": ("analysisruns", []),
    "experiment.yaml": ("experiments", []),
}


@pytest.mark.parametrize(("name", "expected"), PRUNED.items(), ids=PRUNED)
def test_the_api_server_keeps_every_modelled_field(name: str, expected: tuple[Any, ...]) -> None:
    plural, dropped = expected
    assert pruned(schema_of(plural), load(name)) == dropped


def test_committed_files_are_current() -> None:
    assert main(["--check", "--out", str(ROOT / "deploy" / "crds")]) == 0


def test_check_reports_stale_missing_and_leftover_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check", "--out", str(tmp_path)]) == 1
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--check", "--out", str(tmp_path)]) == 0
    capsys.readouterr()

    (tmp_path / "rollout-crd.yaml").write_text("stale\n")
    (tmp_path / "experiment-crd.yaml").unlink()
    (tmp_path / "old-crd.yaml").write_text("{}\n")
    assert main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "out of date" in err and "rollout-crd.yaml" in err
    assert "missing" in err and "experiment-crd.yaml" in err
    assert "not generated" in err and "old-crd.yaml" in err


def test_kustomization_lists_every_crd_file() -> None:
    files = render_files()
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    assert kustomization["kind"] == "Kustomization"
    assert kustomization["resources"] == [spec.filename for spec in CRDS]
    for name in kustomization["resources"]:
        assert yaml.safe_load(files[name])["kind"] == "CustomResourceDefinition"
