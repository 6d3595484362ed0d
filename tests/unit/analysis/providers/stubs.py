"""A stand-in condition evaluator: a table of expressions this suite uses, as Python
functions. The real sandboxed evaluator is tested on its own (tests/unit/analysis)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from rollout_workers.api.analysis import AnalysisRun, Metric

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
NOW_TEXT = "2024-05-01T12:00:00Z"


class StubError(Exception):
    pass


CONDITIONS: dict[str, Callable[[Any], bool]] = {
    "true": lambda r: True,
    "false": lambda r: False,
    "result == true": lambda r: r is True,
    "result == 10": lambda r: r == 10,
    "result != 10": lambda r: r != 10,
    "result > 0": lambda r: r > 0,
    "result <= 0": lambda r: r <= 0,
    "result >= 0.9": lambda r: r >= 0.9,
    "result < 0.9": lambda r: r < 0.9,
    "10 in result": lambda r: 10 in r,
    "len(result) != 2": lambda r: len(r) != 2,
    "len(result) == 0": lambda r: len(r) == 0,
    "1": lambda r: 1,  # type: ignore[return-value,dict-item]  # not a bool, on purpose
}


def stub_evaluator(expression: str, result: object) -> bool:
    try:
        fn = CONDITIONS[expression]
    except KeyError:
        raise StubError(f"unknown name {expression}") from None
    return fn(result)


def metric(name: str = "m", **fields: Any) -> Metric:
    return Metric.from_dict({"name": name, "provider": {}, **fields})


def analysis_run(*metrics: dict[str, Any], status: dict[str, Any] | None = None) -> AnalysisRun:
    body: dict[str, Any] = {
        "metadata": {"name": "run1", "namespace": "ns", "uid": "uid-1"},
        "spec": {"metrics": list(metrics)},
    }
    if status is not None:
        body["status"] = status
    return AnalysisRun.from_dict(body)
