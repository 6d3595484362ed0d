"""Shared helpers of the deploy/ tests: which kustomizations exist, and their rendered objects."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from tests.unit.deploy import kustomize

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"

Obj = dict[str, Any]


def overlays() -> list[str]:
    """Every buildable kustomization under deploy/ (Components are built through them)."""
    found = []
    for path in sorted(DEPLOY.rglob("kustomization.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        if data.get("kind", "Kustomization") == "Kustomization":
            found.append(str(path.parent.relative_to(DEPLOY)))
    return found


@functools.cache
def rendered(overlay: str) -> tuple[Obj, ...]:
    return tuple(kustomize.build(DEPLOY / overlay))


def ident(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
