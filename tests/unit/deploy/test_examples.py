"""Every manifest under deploy/examples/ (the migration example in its subdirectory included)
passes `rollouts lint` and is made only of kinds `manifests.apply` can apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollout_workers.cli.lint import calculate_lint_errors, load_documents
from rollout_workers.kube import manifests

EXAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "examples"
FILES = sorted(EXAMPLES.rglob("*.yaml"))


def test_the_migration_example_is_outside_the_demo_glob() -> None:
    # `make demo` applies deploy/examples/*.yaml only: the migration example is not part of it.
    assert EXAMPLES / "migration" / "deployment-to-rollout.yaml" in FILES
    assert EXAMPLES / "migration" / "deployment-to-rollout.yaml" not in EXAMPLES.glob("*.yaml")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(EXAMPLES)) for p in FILES])
def test_example_lints_clean_and_applies(path: Path) -> None:
    documents = load_documents(path.read_text())
    assert calculate_lint_errors(documents) == []
    for doc in documents:
        manifests.resource_of(doc)  # raises UnknownKind
