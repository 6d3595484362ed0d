"""The structure of a CRD's status schema, as small comparable data (no descriptions).

Used both on Argo Rollouts' CRDs, to produce testdata/argo_status_fields.json, and on ours in
test_crd_status_fields.py. A path names a property from the root: `status.canary.weights.canary`,
with `[]` for the items of an array and `*` for the values of a map (`additionalProperties`).

Regenerate the test data from a checkout of Argo Rollouts (its manifests/crds directory):

    python -m tests.unit.api.argo_fields SOURCE path/to/argo-rollouts/manifests/crds/*-crd.yaml \\
        > tests/unit/api/testdata/argo_status_fields.json

where SOURCE says where the files came from (repository and commit).
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


def main(argv: Sequence[str]) -> int:
    source, *files = argv
    crds = [yaml.safe_load(Path(f).read_text()) for f in files]
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
