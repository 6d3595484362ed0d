"""Realistic argoproj.io objects, loaded from testdata/ (shaped like Argo Rollouts' examples)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

TESTDATA = Path(__file__).parent / "testdata"


def load(name: str) -> dict[str, Any]:
    """A fresh copy of one test object, so tests may mutate it."""
    doc = yaml.safe_load((TESTDATA / name).read_text())
    assert isinstance(doc, dict)
    return doc
