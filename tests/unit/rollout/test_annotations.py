"""ReplicaSet annotations: a table of named cases."""

from __future__ import annotations

import pytest

from rollout_workers.rollout import annotations as a

R, H, D = a.REVISION, a.REVISION_HISTORY, a.DESIRED_REPLICAS

CASES = {
    "new replicaset": (
        {"team": "x", a.LAST_APPLIED: "{}", R: "7"},
        {},
        3,
        False,
        {"team": "x", R: "3", D: "5"},
    ),
    "existing keeps desired replicas": ({}, {R: "2", D: "4"}, 3, True, {R: "3", H: "2", D: "4"}),
    "rollback appends history": ({}, {R: "2", H: "1"}, 5, True, {R: "5", H: "1,2"}),
    "newer revision is kept": ({}, {R: "9"}, 5, True, {R: "9"}),
    "garbage revision left alone": ({"a": "b"}, {R: "x"}, 5, True, {R: "x", "a": "b"}),
}


@pytest.mark.parametrize(("ro", "rs", "rev", "exists", "want"), CASES.values(), ids=CASES.keys())
def test_new_rs_annotations(
    ro: dict[str, str], rs: dict[str, str], rev: int, exists: bool, want: dict[str, str]
) -> None:
    before = dict(rs)
    got = a.calculate_new_rs_annotations(
        rollout_annotations=ro, rs_annotations=rs, new_revision=rev, exists=exists, desired=5
    )
    assert got == want
    assert rs == before  # input untouched


def rs(replicas: int, desired: str | None, available: int) -> dict[str, object]:
    annotations = {D: desired} if desired is not None else {}
    return {
        "metadata": {"annotations": annotations},
        "spec": {"replicas": replicas},
        "status": {"availableReplicas": available},
    }


@pytest.mark.parametrize(
    ("obj", "saturated"),
    [
        (rs(3, "3", 3), True),
        (rs(3, "3", 2), False),
        (rs(3, "4", 3), False),
        (rs(3, None, 3), False),
        (rs(2, "3", 2), False),
        (None, False),
    ],
)
def test_is_saturated(obj: dict[str, object] | None, saturated: bool) -> None:
    assert a.is_saturated(rollout_replicas=3, rs=obj) is saturated


def test_int_annotations() -> None:
    assert a.desired_replicas(rs(1, "4", 0)) == 4
    assert a.desired_replicas(rs(1, "four", 0)) is None
    assert a.revision({"metadata": {}}) == 0
    assert a.replicas_annotation_needs_update(rs(1, "4", 0), 5)
    assert not a.replicas_annotation_needs_update(rs(1, "5", 0), 5)
