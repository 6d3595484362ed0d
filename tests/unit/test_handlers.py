"""Handler loading and results."""

from __future__ import annotations

from unittest import mock

import pytest

from rollout_workers.pool.handlers import HandlerNotFound, Result, load_handler
from rollout_workers.workqueue import Outcome


@pytest.mark.parametrize(
    "spec",
    ["nocolon", "module:", ":attr", "no.such.module:f", "rollout_workers.pool.handlers:missing"],
)
def test_bad_handler_specs(spec: str) -> None:
    with pytest.raises(HandlerNotFound):
        load_handler(spec, mock.Mock())


def test_noop_handler_loads() -> None:
    handler = load_handler("rollout_workers.pool.handlers:noop", mock.Mock())
    assert handler(mock.Mock()) == Result.done()


def test_results() -> None:
    assert Result.requeue_after(-3) == Result(Outcome.AFTER, 0.0)
    assert Result.requeue_after(2.5).delay == 2.5
    assert Result.gone().outcome is Outcome.GONE
