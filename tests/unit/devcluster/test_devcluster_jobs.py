"""The Job runner's convention for how a Job's pod exits and how long it runs."""

from __future__ import annotations

from typing import Any

import pytest

from devcluster.controllers import job_exit_code, job_seconds


def template(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": "busybox", **container}]}}


EXIT_CASES = [
    ("no command", template(), 0),
    ("plain command", template(command=["echo", "hi"]), 0),
    ("exit 1 in shell command", template(command=["sh", "-c", "exit 1"]), 1),
    ("exit 0 in args", template(command=["sh", "-c"], args=["exit 0"]), 0),
    ("exit code in args after work", template(args=["run && exit 7"]), 7),
    (
        "env wins over command",
        template(
            command=["sh", "-c", "exit 1"], env=[{"name": "DEVCLUSTER_EXIT_CODE", "value": "0"}]
        ),
        0,
    ),
    ("env non-zero", template(env=[{"name": "DEVCLUSTER_EXIT_CODE", "value": "2"}]), 2),
    ("env not a number fails", template(env=[{"name": "DEVCLUSTER_EXIT_CODE", "value": "x"}]), 1),
    ("word containing exit", template(command=["./exiter", "1"]), 0),
    ("no containers", {"spec": {}}, 0),
]


@pytest.mark.parametrize(
    ("tpl", "expected"), [c[1:] for c in EXIT_CASES], ids=[c[0] for c in EXIT_CASES]
)
def test_job_exit_code(tpl: dict[str, Any], expected: int) -> None:
    assert job_exit_code(tpl) == expected


def test_job_seconds() -> None:
    assert job_seconds(template(), 2.0) == 2.0
    assert (
        job_seconds(template(env=[{"name": "DEVCLUSTER_JOB_SECONDS", "value": "0.5"}]), 2.0) == 0.5
    )
    assert (
        job_seconds(template(env=[{"name": "DEVCLUSTER_JOB_SECONDS", "value": "soon"}]), 2.0) == 2.0
    )
