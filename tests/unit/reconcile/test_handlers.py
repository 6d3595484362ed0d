"""Handler loading and results."""

from __future__ import annotations

import inspect
from unittest import mock

import pytest

from rollout_workers.keys import ObjectKey
from rollout_workers.reconcile.handlers import (
    CACHE_WAIT,
    NOOP,
    HandlerNotFound,
    Result,
    SyncRequest,
    load_factory,
    load_handler,
    when_cache_synced,
)
from rollout_workers.settings import KINDS, ReconcileSettings
from rollout_workers.workqueue import Outcome

DEFAULTS = ReconcileSettings().handlers


@pytest.mark.parametrize(
    "spec",
    ["nocolon", "module:", ":attr", "no.such.module:f", "rollout_workers.reconcile.handlers:gone"],
)
def test_bad_handler_specs(spec: str) -> None:
    with pytest.raises(HandlerNotFound):
        load_handler(spec, mock.Mock())


def test_every_task_kind_names_a_default_handler() -> None:
    assert set(DEFAULTS) == set(KINDS)


@pytest.mark.parametrize("spec", [*sorted(DEFAULTS.values()), NOOP])
def test_every_default_handler_name_resolves_to_a_factory_of_the_runtime(spec: str) -> None:
    """The settings name handlers as strings (settings.py cannot import the reconcilers above
    it): a module moved or a factory renamed would otherwise fail only in a running worker."""
    factory = load_factory(spec)
    module, _, attr = spec.partition(":")
    assert (factory.__module__, factory.__name__) == (module, attr)
    assert list(inspect.signature(factory).parameters) == ["runtime"]


def test_noop_handler_loads() -> None:
    handler = load_handler(NOOP, mock.Mock())
    assert handler(mock.Mock()) == Result.done()


def test_results() -> None:
    assert Result.requeue_after(-3) == Result(Outcome.AFTER, 0.0)
    assert Result.requeue_after(2.5).delay == 2.5
    assert Result.gone().outcome is Outcome.GONE


def test_the_cache_epoch_read_with_the_claim_spares_a_read() -> None:
    """A claim that read the epoch key (the workers' queues) answers the cache check; any other
    request reads the key itself."""
    epoch_key = "rw:cache:epoch"
    runtime = mock.Mock()
    runtime.settings.redis.key_prefix = "rw"
    runtime.redis.exists.return_value = 1
    handle = when_cache_synced(runtime, lambda request: Result.done())
    lease = mock.Mock()

    def request(guard: tuple[str, bool] | None) -> SyncRequest:
        return SyncRequest(kind="rollouts", key=ObjectKey("ns/a"), lease=lease, guard=guard)

    assert handle(request((epoch_key, True))) == Result.done()
    assert handle(request((epoch_key, False))) == Result.requeue_after(CACHE_WAIT)
    runtime.redis.exists.assert_not_called()
    assert handle(request(("another:key", False))) == Result.done()  # not the epoch: read it
    assert handle(request(None)) == Result.done()
    assert runtime.redis.exists.call_count == 2
