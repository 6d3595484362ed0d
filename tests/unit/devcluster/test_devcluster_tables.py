"""Server-side printing of custom resources (kubectl get's Table)."""

from __future__ import annotations

import pytest

from devcluster.tables import calculate_table, wants_table
from rollout_workers.timefmt import human_duration

DURATIONS = [
    (0, "0s"),
    (119, "119s"),
    (120, "2m"),
    (125, "2m5s"),
    (600, "10m"),
    (3 * 3600 - 1, "179m"),
    (3 * 3600, "3h"),
    (3 * 3600 + 60, "3h1m"),
    (8 * 3600, "8h"),
    (48 * 3600, "2d"),
    (50 * 3600, "2d2h"),
    (8 * 86400, "8d"),
    (2 * 365 * 86400, "2y"),
    (2 * 365 * 86400 + 86400, "2y1d"),
    (9 * 365 * 86400, "9y"),
    (-1, "0s"),
    (-2, "<invalid>"),
]


@pytest.mark.parametrize(("seconds", "text"), DURATIONS, ids=[t for _s, t in DURATIONS])
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", True),
        ("application/json", False),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", False),
        ("", False),
    ],
)
def test_wants_table(accept: str, expected: bool) -> None:
    assert wants_table(accept) is expected


OBJ = {
    "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"replicas": 3, "steps": [{"w": 20}]},
    "status": {"phase": "Healthy"},
}
NOW = 1767225600.0 + 300  # 2026-01-01T00:05:00Z


def test_table_of_printer_columns() -> None:
    columns = [
        {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "First", "type": "integer", "jsonPath": ".spec.steps[0].w", "priority": 1},
        {"name": "Missing", "type": "string", "jsonPath": ".status.nothing"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    table = calculate_table(
        columns, [OBJ], list_meta={"resourceVersion": "7"}, include_object="", now=NOW
    )
    assert table["kind"] == "Table" and table["metadata"] == {"resourceVersion": "7"}
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Desired",
        "Phase",
        "First",
        "Missing",
        "Age",
    ]
    assert table["columnDefinitions"][3]["priority"] == 1
    (row,) = table["rows"]
    assert row["cells"] == ["web", 3, "Healthy", 20, None, "5m"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "web"


def test_table_defaults_to_age_and_include_object() -> None:
    table = calculate_table([], [OBJ], list_meta={}, include_object="Object", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["object"] is OBJ
    bare = calculate_table([], [OBJ], list_meta={}, include_object="None", now=NOW)
    assert "object" not in bare["rows"][0]
