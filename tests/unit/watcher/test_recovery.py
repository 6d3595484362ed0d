"""The leader's Redis check: which observations start a relist-and-requeue, and when it ends."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis

from rollout_workers.cache.epoch import CacheEpoch
from rollout_workers.watcher.recovery import RedisCheck
from rollout_workers.watcher.reflector import Reflector


class FakeRedis:
    """The few commands the check uses; `down` makes every call fail as a lost connection."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.run_id = "r1"
        self.down = False

    def _up(self) -> None:
        if self.down:
            raise redis.ConnectionError("Connection refused")

    def pipeline(self, transaction: bool = True) -> Pipe:
        return Pipe(self)

    def get(self, key: str) -> str | None:
        self._up()
        return self.data.get(key)

    def set(self, key: str, value: str) -> None:
        self._up()
        self.data[key] = value

    def exists(self, key: str) -> int:
        self._up()
        return int(key in self.data)


class Pipe:
    def __init__(self, client: FakeRedis) -> None:
        self._client, self._calls = client, []  # type: ignore[var-annotated]

    def get(self, key: str) -> None:
        self._calls.append(lambda: self._client.data.get(key))

    def info(self, section: str) -> None:
        self._calls.append(lambda: {"run_id": self._client.run_id})

    def execute(self) -> list[Any]:
        self._client._up()
        return [call() for call in self._calls]


class FakeReflector:
    def __init__(self) -> None:
        self.wanted, self.applied = 1, 0

    def request_relist(self) -> int:
        self.wanted += 1
        return self.wanted

    def relisted(self, generation: int) -> bool:
        return self.applied >= generation

    def relist(self) -> None:
        self.applied = self.wanted


class World:
    def __init__(self, epoch: str | None = None) -> None:
        self.redis = FakeRedis()
        self.epoch = CacheEpoch(self.redis, prefix="rw")  # type: ignore[arg-type]
        if epoch:
            self.redis.data[self.epoch.key] = epoch
        self.reflectors = [FakeReflector(), FakeReflector()]
        self.requeues = 0
        self.check = RedisCheck(
            self.redis,  # type: ignore[arg-type]
            epoch=self.epoch,
            reflectors=self.reflectors,  # type: ignore[arg-type]
            requeue=self.requeue,
        )

    def requeue(self) -> dict[str, int]:
        self.requeues += 1
        return {"rollouts": 2}

    def relist_all(self) -> None:
        for r in self.reflectors:
            r.relist()


def started(epoch: str | None = None) -> World:
    w = World(epoch)
    assert w.check.poll() and w.check.recovering  # the first lists are not done yet
    w.relist_all()
    w.check.poll()
    assert not w.check.recovering
    return w


def test_a_first_start_marks_the_epoch_after_every_first_list_and_requeues_nothing() -> None:
    w = started()
    assert w.redis.data[w.epoch.key] == w.check.epoch
    assert w.requeues == 0


def test_a_new_leader_over_an_intact_redis_keeps_the_epoch() -> None:
    w = started("e0")
    assert w.redis.data[w.epoch.key] == "e0" and w.requeues == 0


@pytest.mark.parametrize("loss", ["epoch gone", "run_id changed", "outage"])
def test_a_possible_loss_relists_every_type_then_requeues_every_key_once(loss: str) -> None:
    w = started("e0")
    if loss == "epoch gone":
        w.redis.data.clear()  # a restart without persistence
    elif loss == "run_id changed":
        w.redis.run_id = "r2"  # a restart with AOF between two checks
    else:
        w.redis.down = True
        assert not w.check.poll()
        w.redis.down = False
    assert w.check.poll() and w.check.recovering
    assert [r.wanted for r in w.reflectors] == [2, 2]
    assert w.redis.data.get(w.epoch.key) in (None, "e0")  # not marked before the relists
    w.check.poll()
    assert w.requeues == 0
    w.relist_all()
    w.check.poll()
    assert not w.check.recovering and w.requeues == 1
    assert w.redis.data[w.epoch.key] not in (None, "e0")
    w.check.poll()
    assert w.requeues == 1 and w.check.recoveries == 1


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    w = started("e0")
    w.redis.down = True
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            assert not w.check.poll()
        w.redis.down = False
        w.check.poll()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("redis unavailable" in m for m in messages) == 1
    assert sum("redis back after" in m for m in messages) == 1


def test_reflector_relist_generations() -> None:
    import threading

    refl = Reflector.__new__(Reflector)
    refl._lock = threading.Lock()
    refl._wanted, refl._applied, refl._response = 1, 0, None
    assert refl._relist_wanted() and not refl.relisted(1)
    refl._applied = 1
    generation = refl.request_relist()
    assert generation == 2 and refl._relist_wanted() and not refl.relisted(2)


def test_an_epoch_lost_during_the_first_lists_starts_a_full_recovery() -> None:
    w = World("e0")
    assert w.check.poll() and w.check.recovering
    w.relist_all()
    w.redis.data.clear()  # flushed after some types had been listed
    w.check.poll()
    assert w.check.recovering and [r.wanted for r in w.reflectors] == [2, 2]
    w.relist_all()
    w.check.poll()
    assert not w.check.recovering and w.requeues == 1 and w.redis.data[w.epoch.key]


def test_reflectors_started_on_demand_are_relisted_and_marked_listed_again() -> None:
    """Workload and router reflectors start after the leader does: a recovery relists those
    running at the time, and marks them listed again (workers wait for that mark) before the
    keys are requeued."""
    w = started("e0")
    on_demand: list[FakeReflector] = []
    marks: list[int] = []
    w.check = RedisCheck(
        w.redis,  # type: ignore[arg-type]
        epoch=w.epoch,
        reflectors=lambda: [*w.reflectors, *on_demand],  # type: ignore[list-item]
        requeue=w.requeue,
        on_recovered=lambda: marks.append(w.requeues),
    )
    w.check.poll()
    w.relist_all()
    w.check.poll()
    assert not w.check.recovering and marks == []  # a start marks nothing
    on_demand.append(FakeReflector())  # a rollout names a workload: its reflector starts
    on_demand[0].relist()
    w.redis.data.clear()
    assert w.check.poll() and w.check.recovering
    assert on_demand[0].wanted == 2
    w.relist_all()
    w.check.poll()
    assert w.check.recovering  # the on-demand reflector has not relisted yet
    on_demand[0].relist()
    w.check.poll()
    assert not w.check.recovering and marks == [0] and w.requeues == 1
