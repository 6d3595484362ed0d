"""The structure of a CRD's schema, as small comparable data (no descriptions).

Used both on Argo Rollouts' CRDs, to produce the test data, and on ours in the tests. A path
names a property from the root: `status.canary.weights.canary`, with `[]` for the items of an
array and `*` for the values of a map (`additionalProperties`).

Two modes, each regenerated from a checkout of Argo Rollouts (its manifests/crds directory),
where SOURCE says where the files came from (repository and tag/commit):

- status fields, for test_crd_status_fields.py:

      python -m tests.unit.api.argo_fields SOURCE path/to/manifests/crds/*-crd.yaml \\
          > tests/unit/api/testdata/argo_status_fields.json

- spec fields, for the field table (field_table.py, test_field_table.py):

      python -m tests.unit.api.argo_fields --spec SOURCE path/to/manifests/crds/*-crd.yaml \\
          > tests/unit/api/testdata/argo_spec_fields.json

  From the bare mirror of the repository, for v1.9.1:

      git -C REPO archive v1.9.1 manifests/crds | tar -x -C /tmp/argo-v1.9.1 && \\
      python -m tests.unit.api.argo_fields --spec \\
          "argoproj/argo-rollouts v1.9.1 (b6bd3bcf8f60d717a98763d26acc983db7f97cb0)" \\
          /tmp/argo-v1.9.1/manifests/crds/*-crd.yaml \\
          > tests/unit/api/testdata/argo_spec_fields.json

  The subtrees passed through verbatim to the objects the controller creates (pod templates,
  Job specs: `PASSTHROUGH`) are one path each, their contents left out.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
Schema = dict[str, Any]


def type_of(node: Schema) -> str:
    """The JSON type of a node; `int-or-string` for an IntOrString, `` for an untyped one."""
    if node.get(INT_OR_STRING):
        return "int-or-string"
    return str(node.get("type", ""))


def walk(node: Schema, path: str) -> Iterable[tuple[str, Schema]]:
    yield path, node
    for name, prop in sorted((node.get("properties") or {}).items()):
        yield from walk(prop, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}.*")


def calculate_structure(schema: Schema, root: str) -> dict[str, Any]:
    """Field paths with their types, the required properties per object, and the paths below
    which the API server keeps unknown fields (x-kubernetes-preserve-unknown-fields)."""
    nodes = list(walk(schema, root))
    return {
        "fields": {path: type_of(node) for path, node in nodes},
        "required": {path: sorted(node["required"]) for path, node in nodes if "required" in node},
        "preserveUnknownFields": [path for path, node in nodes if node.get(PRESERVE)],
    }


def status_schema(crd: Schema) -> Schema | None:
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage", True)]
    properties = version["schema"]["openAPIV3Schema"].get("properties") or {}
    status: Schema | None = properties.get("status")
    return status


def calculate_status_structures(crds: Iterable[Schema]) -> dict[str, Any]:
    """Kind to the structure of its status (kinds without a status are left out)."""
    out: dict[str, Any] = {}
    for crd in crds:
        status = status_schema(crd)
        if status is not None:
            out[crd["spec"]["names"]["kind"]] = calculate_structure(status, "status")
    return dict(sorted(out.items()))


#: Per kind, the spec subtrees copied verbatim into the objects the controller creates: a pod
#: template into ReplicaSets, a Job spec into Jobs. Their contents are core/v1 and batch/v1
#: schemas (thousands of paths), not Argo's API; each is listed as one path.
PASSTHROUGH: dict[str, tuple[str, ...]] = {
    "Rollout": ("spec.template",),
    "Experiment": ("spec.templates[].template",),
    "AnalysisTemplate": ("spec.metrics[].provider.job.spec",),
    "ClusterAnalysisTemplate": ("spec.metrics[].provider.job.spec",),
    "AnalysisRun": ("spec.metrics[].provider.job.spec",),
}


def below(path: str, prefix: str) -> bool:
    """Whether `path` is strictly inside the subtree at `prefix`."""
    return path.startswith((f"{prefix}.", f"{prefix}[]"))


def spec_schema(crd: Schema) -> Schema:
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage", True)]
    spec: Schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def calculate_spec_fields(crds: Iterable[Schema]) -> dict[str, dict[str, str]]:
    """Kind to its spec's field paths with their types, pass-through subtrees collapsed."""
    out: dict[str, dict[str, str]] = {}
    for crd in crds:
        kind = crd["spec"]["names"]["kind"]
        passthrough = PASSTHROUGH.get(kind, ())
        out[kind] = {
            path: type_of(node)
            for path, node in walk(spec_schema(crd), "spec")
            if not any(below(path, prefix) for prefix in passthrough)
        }
    return dict(sorted(out.items()))


def main_spec(source: str, crds: list[Schema]) -> dict[str, Any]:
    fields = calculate_spec_fields(crds)
    shared = fields.pop("ClusterAnalysisTemplate", None)
    if shared is not None and shared != fields.get("AnalysisTemplate"):
        raise SystemExit("ClusterAnalysisTemplate's spec differs from AnalysisTemplate's")
    return {
        "_comment": (
            "Spec field paths of Argo Rollouts' CRDs with their types, the reference for "
            "tests/unit/api/test_field_table.py. ClusterAnalysisTemplate's spec is "
            "AnalysisTemplate's (checked when generated). Pass-through subtrees (pod "
            "templates, Job specs) are one path each: "
            + ", ".join(sorted({p for ps in PASSTHROUGH.values() for p in ps}))
            + ". Regenerate with `python -m tests.unit.api.argo_fields --spec SOURCE "
            "manifests/crds/*-crd.yaml`; see tests/unit/api/argo_fields.py."
        ),
        "_source": source,
        **fields,
    }


def main(argv: Sequence[str]) -> int:
    spec_mode = argv[:1] == ["--spec"]
    if spec_mode:
        argv = argv[1:]
    source, *files = argv
    crds = [yaml.safe_load(Path(f).read_text()) for f in files]
    if spec_mode:
        json.dump(main_spec(source, crds), sys.stdout, indent=1, sort_keys=False)
        sys.stdout.write("\n")
        return 0
    doc = {
        "_comment": (
            "Status fields of Argo Rollouts' CRDs (structure only), the reference for "
            "tests/unit/api/test_crd_status_fields.py. Regenerate with "
            "`python -m tests.unit.api.argo_fields SOURCE manifests/crds/*-crd.yaml`; see "
            "tests/unit/api/argo_fields.py."
        ),
        "_source": source,
        **calculate_status_structures(crds),
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
