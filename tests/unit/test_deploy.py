"""The manifests parse, and every process they run is a real `rollouts` subcommand."""

from __future__ import annotations

from pathlib import Path

import yaml

from rollout_workers.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def test_kustomize_base_lists_existing_parseable_files() -> None:
    base = ROOT / "deploy" / "base"
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    for name in kustomization["resources"]:
        path = base / name
        if path.is_dir():  # another kustomization
            assert (path / "kustomization.yaml").is_file(), name
            continue
        docs = list(yaml.safe_load_all(path.read_text()))
        assert docs and all(d["apiVersion"] and d["kind"] for d in docs), name


def test_containers_run_real_subcommands() -> None:
    commands = set(cli.commands)  # type: ignore[attr-defined]
    used = []
    for path in (ROOT / "deploy" / "base").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Deployment":
                for c in doc["spec"]["template"]["spec"]["containers"]:
                    if c["image"] == "rollout-workers":
                        used.append(c["args"][0])
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    used += [s["command"][0] for n, s in compose["services"].items() if n != "redis"]
    assert used and set(used) <= commands
