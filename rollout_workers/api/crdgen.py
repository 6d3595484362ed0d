"""Generate the argoproj.io CustomResourceDefinitions from the pydantic models.

The models are the single source of the API: the CRD schemas in deploy/crds are derived from
their JSON schemas, so a field added to a model reaches the cluster (and `kubectl explain`) by
re-running this module, and CI's `--check` fails while the committed files lag behind.

pydantic's JSON schema is turned into a Kubernetes *structural* schema:

- `$ref`s are inlined (the API server does not resolve them);
- `anyOf [X, null]` becomes X with `nullable: true`;
- `int | str` becomes `x-kubernetes-int-or-string: true`;
- `dict[str, Any]` fields become objects with `x-kubernetes-preserve-unknown-fields: true`;
- models are closed objects, so the API server prunes fields it does not know (as Argo's CRDs
  do) — except `OpenModel`s, which keep unknown fields;
- titles and Python-side defaults are dropped (a CRD default would be applied by the server);
- enums are dropped, as Argo's CRDs have none: the server accepts any string there, as with
  Argo's, and the controller reports a value it does not know as InvalidSpec, as Argo does
  (and Go's empty string, which Argo writes for "no phase yet", is a valid status value).

Usage: `python -m rollout_workers.api.crdgen [--out deploy/crds] [--check]`.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from rollout_workers.api.analysis import AnalysisRun, AnalysisTemplate, ClusterAnalysisTemplate
from rollout_workers.api.base import PRESERVE_UNKNOWN, Resource
from rollout_workers.api.experiment import Experiment
from rollout_workers.api.rollout import Rollout

GROUP = "argoproj.io"
VERSION = "v1alpha1"
INT_OR_STRING = "x-kubernetes-int-or-string"
HEADER = (
    "# Generated from the models in rollout_workers/api by\n"
    "# `python -m rollout_workers.api.crdgen`; do not edit by hand.\n"
)

_AGE_COLUMN = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
    "description": "Time since resource was created",
}


@dataclass(frozen=True, kw_only=True)
class CrdSpec:
    """How one model is published as a CustomResourceDefinition."""

    model: type[Resource]
    kind: str
    plural: str
    short_names: tuple[str, ...]
    filename: str
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale_subresource: Mapping[str, str] | None = None
    printer_columns: tuple[Mapping[str, str], ...] = (_AGE_COLUMN,)
    required: tuple[str, ...] = field(default=("spec",))

    @property
    def name(self) -> str:
        return f"{self.plural}.{GROUP}"


#: The resources, in the order kustomize applies them. Names, short names, categories (none),
#: scopes, printer columns and subresources follow Argo Rollouts' CRDs so that either can be
#: installed and the controller behaves the same against both. Only Rollout has the status and
#: scale subresources: Argo's AnalysisRun and Experiment CRDs declare `subresources: {}`, so their
#: status is written through the object itself, never through `/status` (which does not exist
#: there). tests/unit/api/test_crd_parity.py pins these facts against Argo's manifests/crds.
CRDS: tuple[CrdSpec, ...] = (
    CrdSpec(
        model=Rollout,
        kind="Rollout",
        plural="rollouts",
        short_names=("ro",),
        filename="rollout-crd.yaml",
        status_subresource=True,
        # HPAReplicas, not replicas: during a blue-green update `replicas` counts the preview
        # pods too, and an autoscaler must see only the pods that receive active traffic.
        scale_subresource={
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.HPAReplicas",
            "labelSelectorPath": ".status.selector",
        },
        printer_columns=(
            {
                "name": "Desired",
                "type": "integer",
                "jsonPath": ".spec.replicas",
                "description": "Number of desired pods",
            },
            {
                "name": "Current",
                "type": "integer",
                "jsonPath": ".status.replicas",
                "description": "Total number of non-terminated pods targeted by this rollout",
            },
            {
                "name": "Up-to-date",
                "type": "integer",
                "jsonPath": ".status.updatedReplicas",
                "description": "Total number of non-terminated pods targeted by this rollout"
                " that have the desired template spec",
            },
            {
                "name": "Available",
                "type": "integer",
                "jsonPath": ".status.availableReplicas",
                "description": "Total number of available pods (ready for at least"
                " minReadySeconds) targeted by this rollout",
            },
            _AGE_COLUMN,
        ),
    ),
    CrdSpec(
        model=AnalysisTemplate,
        kind="AnalysisTemplate",
        plural="analysistemplates",
        short_names=("at",),
        filename="analysis-template-crd.yaml",
    ),
    CrdSpec(
        model=ClusterAnalysisTemplate,
        kind="ClusterAnalysisTemplate",
        plural="clusteranalysistemplates",
        short_names=("cat",),
        filename="cluster-analysis-template-crd.yaml",
        scope="Cluster",
    ),
    CrdSpec(
        model=AnalysisRun,
        kind="AnalysisRun",
        plural="analysisruns",
        short_names=("ar",),
        filename="analysis-run-crd.yaml",
        printer_columns=(
            {
                "name": "Status",
                "type": "string",
                "jsonPath": ".status.phase",
                "description": "AnalysisRun status",
            },
            _AGE_COLUMN,
        ),
    ),
    CrdSpec(
        model=Experiment,
        kind="Experiment",
        plural="experiments",
        short_names=("exp",),
        filename="experiment-crd.yaml",
        printer_columns=(
            {
                "name": "Status",
                "type": "string",
                "jsonPath": ".status.phase",
                "description": "Experiment status",
            },
            _AGE_COLUMN,
        ),
    ),
)

# -- schema conversion -----------------------------------------------------------------------

_DROPPED_KEYS = frozenset({"title", "default", "examples", "$defs", "enum"})


class SchemaError(ValueError):
    """A model uses a type that has no structural-schema equivalent."""


def calculate_structural_schema(model: type[Resource]) -> dict[str, Any]:
    """The `openAPIV3Schema` of a resource model."""
    raw = model.model_json_schema(by_alias=True)
    defs: dict[str, Any] = raw.get("$defs", {})
    schema = _convert(raw, defs=defs, path=(model.__name__,))
    properties = schema["properties"]
    # The API server owns metadata's schema; a CRD may only say it is an object.
    properties["metadata"] = {"type": "object"}
    for key in ("apiVersion", "kind"):
        properties[key] = {"type": "string"}
    return schema


def _convert(
    node: Mapping[str, Any], *, defs: Mapping[str, Any], path: tuple[str, ...]
) -> dict[str, Any]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in path:
            raise SchemaError(f"recursive model {name} at {'.'.join(path)}")
        target = _convert(defs[name], defs=defs, path=(*path, name))
        return {**target, **_annotations(node, "$ref")}
    if "anyOf" in node:
        return _convert_union(node, defs=defs, path=path)

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "properties":
            out[key] = {
                name: _convert(prop, defs=defs, path=(*path, name))
                for name, prop in sorted(value.items())
            }
        elif key == "items":
            out[key] = _convert(value, defs=defs, path=(*path, "[]"))
        elif key == "additionalProperties":
            if isinstance(value, Mapping):
                out[key] = _convert(value, defs=defs, path=(*path, "{}"))
            elif value and "properties" not in node:
                out[PRESERVE_UNKNOWN] = True
            # `True` beside properties is pydantic's extra="allow": closed unless marked open.
        elif key == "required":
            out[key] = sorted(value)
        else:
            out[key] = value
    if node.get("type") == "object" and not out.keys() & {"properties", "additionalProperties"}:
        out[PRESERVE_UNKNOWN] = True  # a model without fields
    if not out.get("type") and not out.get(PRESERVE_UNKNOWN) and not out.get(INT_OR_STRING):
        if out.keys() - {"description"}:
            raise SchemaError(f"no type at {'.'.join(path)}: {dict(node)}")
        out[PRESERVE_UNKNOWN] = True  # `Any`
    return out


def _annotations(node: Mapping[str, Any], structural_key: str) -> dict[str, Any]:
    """The keys beside a `$ref` or `anyOf` (a field's description), which win over the target's."""
    return {k: v for k, v in node.items() if k != structural_key and k not in _DROPPED_KEYS}


def _convert_union(
    node: Mapping[str, Any], *, defs: Mapping[str, Any], path: tuple[str, ...]
) -> dict[str, Any]:
    variants = [v for v in node["anyOf"] if v != {"type": "null"}]
    nullable = len(variants) < len(node["anyOf"])
    if sorted(v.get("type", "") for v in variants) == ["integer", "string"]:
        out: dict[str, Any] = {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            INT_OR_STRING: True,
        }
    elif len(variants) == 1:
        out = _convert(variants[0], defs=defs, path=path)
    else:
        raise SchemaError(f"unsupported union at {'.'.join(path)}: {node['anyOf']}")
    out.update(_annotations(node, "anyOf"))
    if nullable:
        out["nullable"] = True
    return out


# -- documents -------------------------------------------------------------------------------


def calculate_crd(spec: CrdSpec) -> dict[str, Any]:
    """The CustomResourceDefinition of one resource."""
    schema = calculate_structural_schema(spec.model)
    schema["required"] = sorted(set(schema.get("required", ())) | set(spec.required))
    names: dict[str, Any] = {
        "kind": spec.kind,
        "listKind": f"{spec.kind}List",
        "plural": spec.plural,
        "singular": spec.kind.lower(),
        "shortNames": list(spec.short_names),
    }
    if spec.categories:
        names["categories"] = list(spec.categories)
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "additionalPrinterColumns": [dict(c) for c in spec.printer_columns],
        "schema": {"openAPIV3Schema": schema},
    }
    # Always present, `{}` when there are none, as in Argo's CRDs.
    subresources: dict[str, Any] = {}
    if spec.status_subresource:
        subresources["status"] = {}
    if spec.scale_subresource is not None:
        subresources["scale"] = dict(spec.scale_subresource)
    version["subresources"] = subresources
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": spec.name},
        "spec": {"group": GROUP, "names": names, "scope": spec.scope, "versions": [version]},
    }


def calculate_crds() -> list[dict[str, Any]]:
    """Every CustomResourceDefinition, in `CRDS` order."""
    return [calculate_crd(spec) for spec in CRDS]


def _dump(doc: Mapping[str, Any]) -> str:
    return HEADER + yaml.safe_dump(dict(doc), sort_keys=False, width=100, allow_unicode=True)


def render_files() -> dict[str, str]:
    """File name to content: one YAML file per CRD and a kustomization.yaml listing them."""
    return dict(_render_files())


@functools.cache  # the models do not change within a process, and rendering takes a while
def _render_files() -> tuple[tuple[str, str], ...]:
    files = {spec.filename: _dump(calculate_crd(spec)) for spec in CRDS}
    files["kustomization.yaml"] = _dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [spec.filename for spec in CRDS],
        }
    )
    return tuple(files.items())


def write_files(out: Path) -> list[Path]:
    """Write the rendered files into `out`; returns the paths whose content changed."""
    out.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in render_files().items():
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


def find_stale_files(out: Path) -> list[str]:
    """Problems that make the files in `out` differ from a fresh generation (empty when current).

    A YAML file in `out` that this module does not generate also counts: kustomize would not
    apply it, so it is a leftover of a renamed or removed resource.
    """
    files = render_files()
    problems = []
    for name, text in files.items():
        path = out / name
        if not path.exists():
            problems.append(f"missing: {path}")
        elif path.read_text() != text:
            problems.append(f"out of date: {path}")
    if out.is_dir():
        for path in sorted(out.glob("*.yaml")):
            if path.name not in files:
                problems.append(f"not generated: {path}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rollout_workers.api.crdgen",
        description="Write the argoproj.io CRDs generated from rollout_workers.api.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("deploy/crds"), help="directory (default: deploy/crds)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when the files in --out differ from a fresh generation",
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = find_stale_files(args.out)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("regenerate with: python -m rollout_workers.api.crdgen", file=sys.stderr)
            return 1
        return 0
    for path in write_files(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
