"""Which pods a ReplicaSet scale-down deletes first."""

from __future__ import annotations

import pytest

from devcluster.controllers import calculate_deletion_order
from devcluster.stored import Stored


def pod(name: str, *, rv: int, created: str, phase: str = "Pending", ready: bool = False) -> Stored:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return Stored(
        {
            "metadata": {"name": name, "resourceVersion": str(rv), "creationTimestamp": created},
            "status": {"phase": phase, "conditions": conditions},
        }
    )


OLD = "2026-01-01T00:00:00Z"
NEW = "2026-01-01T00:00:05Z"

CASES = [
    (
        "not ready before ready",
        [
            pod("ready", rv=1, created=NEW, phase="Running", ready=True),
            pod("unready", rv=2, created=OLD),
        ],
        ["unready", "ready"],
    ),
    (
        "pending before running",
        [
            pod("running", rv=1, created=NEW, phase="Running"),
            pod("pending", rv=2, created=OLD),
        ],
        ["pending", "running"],
    ),
    (
        "newest first among equals",
        [
            pod("old", rv=1, created=OLD, phase="Running", ready=True),
            pod("new", rv=2, created=NEW, phase="Running", ready=True),
        ],
        ["new", "old"],
    ),
    (
        "same second: higher resourceVersion first",
        [
            pod("a", rv=3, created=OLD, phase="Running", ready=True),
            pod("b", rv=9, created=OLD, phase="Running", ready=True),
        ],
        ["b", "a"],
    ),
]


@pytest.mark.parametrize(("pods", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_deletion_order(pods: list[Stored], expected: list[str]) -> None:
    assert [p.metadata["name"] for p in calculate_deletion_order(pods)] == expected
