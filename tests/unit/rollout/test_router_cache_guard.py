"""The stale-cache guard for router objects (as for Ingresses): a reconcile that reads a router
object older than our last write to it, or misses one we created (the TrafficSplit), requeues
shortly and writes nothing, rather than undo or repeat its own write."""

from __future__ import annotations

from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.reconcile.handlers import Outcome
from rollout_workers.rollout.controller import STALE_REQUEUE, RolloutController
from tests.unit.rollout.test_routing_reconcile import (
    NothingWritten,
    WriterReader,
    request,
)
from tests.unit.rollout.test_smi import smi_sim

Obj = dict[str, Any]
Key = tuple[str, str]  # (plural, namespace/name)
SPLIT: Key = ("trafficsplits", "default/web")


class Behind(NothingWritten):
    """A guard whose record says the cache is behind for some router keys."""

    def __init__(
        self, *, stale: frozenset[Key] = frozenset(), unseen: frozenset[Key] = frozenset()
    ) -> None:
        self.stale_keys, self.unseen_keys = stale, unseen
        self.asked: list[tuple[str, str, list[str]]] = []

    def stale_objects(self, plural: str, objs: list[Obj]) -> list[str]:
        keys = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objs]
        self.asked.append(("stale", plural, keys))
        return [k for k in keys if (plural, k) in self.stale_keys]

    def unseen(self, plural: str, keys: list[str], cached: set[str]) -> list[str]:
        self.asked.append(("unseen", plural, keys))
        return [k for k in keys if k not in cached and (plural, k) in self.unseen_keys]


def controller(sim: Any, splits: Any, written: NothingWritten) -> RolloutController:
    def reader(resource: r.Resource) -> WriterReader:
        return WriterReader(sim.writer, resource)

    return RolloutController(
        rollouts=reader(r.ROLLOUTS),
        replicasets=reader(r.REPLICASETS),
        services=reader(r.SERVICES),
        ingresses=reader(r.INGRESSES),
        router_objects=splits,
        written=written,
        writer=sim.writer,
    )


def test_a_created_traffic_split_not_cached_yet_requeues_without_writing() -> None:
    sim, splits = smi_sim("v1alpha3")
    guard = Behind(unseen=frozenset({SPLIT}))
    result = controller(sim, splits, guard).sync(request())
    assert (result.outcome, result.delay) == (Outcome.AFTER, STALE_REQUEUE)
    assert sim.writer.actions == []
    assert ("unseen", "trafficsplits", ["default/web"]) in guard.asked


def test_a_cached_split_older_than_our_write_requeues_without_writing() -> None:
    sim, splits = smi_sim("v1alpha3")
    plain = controller(sim, splits, NothingWritten())
    for _ in range(3):
        sim.kubelet()
        assert plain.sync(request()).outcome != Outcome.ERROR
    assert ("trafficsplits", "default", "web") in sim.writer.objects
    start = len(sim.writer.actions)
    guard = Behind(stale=frozenset({SPLIT}))
    result = controller(sim, splits, guard).sync(request())
    assert (result.outcome, result.delay) == (Outcome.AFTER, STALE_REQUEUE)
    assert sim.writer.actions[start:] == []
    assert ("stale", "trafficsplits", ["default/web"]) in guard.asked


def test_an_up_to_date_cache_reconciles() -> None:
    sim, splits = smi_sim("v1alpha3")
    guard = Behind()
    assert controller(sim, splits, guard).sync(request()).outcome != Outcome.ERROR
    assert sim.writer.actions  # the rollout went on
    assert ("unseen", "trafficsplits", ["default/web"]) in guard.asked


def test_an_unserved_kind_is_not_guarded() -> None:
    sim, splits = smi_sim(None)
    guard = Behind(unseen=frozenset({SPLIT}))
    controller(sim, splits, guard).sync(request())
    assert not [a for a in guard.asked if a[1] == "trafficsplits"]
