"""The worker host's probes: liveness from the shared progress stamp and queued work,
readiness from Redis; the stamp is shared with forked children."""

from __future__ import annotations

import os

import pytest
import redis

from rollout_workers.celeryapp.host import WorkerHost
from rollout_workers.settings import Settings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Host(WorkerHost):
    waiting: int | Exception = 0

    def queued_messages(self) -> int:
        if isinstance(self.waiting, Exception):
            raise self.waiting
        return self.waiting


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def host(clock: FakeClock) -> Host:
    settings = Settings(health={"stall_timeout": 30})
    return Host(None, settings, "redis://127.0.0.1:1/0", clock=clock)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stalled", "waiting", "live", "reason"),
    [
        ("fresh", 5, True, "consumer progressed 10.0s ago"),
        ("stalled", 5, False, "consumer stuck: no progress for 45s with 5 messages queued"),
        ("stalled", 0, True, "idle: no progress for 45s, nothing queued"),
        ("stalled", redis.ConnectionError("refused"), True, "Redis unreadable (refused)"),
    ],
)
def test_liveness(
    *,
    host: Host,
    clock: FakeClock,
    stalled: str,
    waiting: int | Exception,
    live: bool,
    reason: str,
) -> None:
    host.stamp()
    clock.now += 10 if stalled == "fresh" else 45
    host.waiting = waiting
    status = host.live()
    assert status.ok is live
    assert reason in status.reason


def test_a_forked_child_stamps_the_parents_progress(host: Host, clock: FakeClock) -> None:
    host.stamp()
    clock.now += 100
    pid = os.fork()
    if pid == 0:  # the child: a task starts
        host.stamp()
        os._exit(0)
    os.waitpid(pid, 0)
    assert host.progress_age() == 0.0


def test_not_ready_while_stopping_or_without_redis(host: Host) -> None:
    status = host.ready()
    assert not status.ok and status.reason.startswith("Redis unreachable")
    host.stopping.set()
    assert host.ready().reason == "shutting down"


class FakeRequest:
    def __init__(self, request_id: str, name: str, args: tuple[object, ...]) -> None:
        self.id, self.name, self.args = request_id, name, args


class FakeQueue:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.down = False

    def requeue(self, keys: object) -> list[str]:
        if self.down:
            raise redis.ConnectionError("down")
        self.calls.append(list(keys))  # type: ignore[call-overload]
        return self.calls[-1]


class FakeRuntime:
    def __init__(self) -> None:
        self.queues = {"rollouts": FakeQueue(), "analysisruns": FakeQueue()}

    def queue(self, kind: str) -> FakeQueue:
        return self.queues[kind]


def test_reserved_but_unstarted_sync_requests_are_handed_back_once(host: Host) -> None:
    from celery.worker import state

    runtime = FakeRuntime()
    host._runtime = runtime  # type: ignore[assignment]
    requests = [
        FakeRequest("1", "rollouts.sync", ("default/a",)),
        FakeRequest("2", "rollouts.sync", ("default/started",)),
        FakeRequest("3", "analysisruns.sync", ("default/run",)),
        FakeRequest("4", "resync.all", ()),
        FakeRequest("5", "rollouts.sync", ("Not A Key",)),
    ]
    try:
        for request in requests:
            state.reserved_requests.add(request)  # type: ignore[arg-type]
        state.active_requests.add(requests[1])  # type: ignore[arg-type]
        handed: set[str] = set()
        runtime.queues["rollouts"].down = True
        with pytest.raises(redis.ConnectionError):
            host.hand_back_reserved(handed)
        runtime.queues["rollouts"].down = False
        assert host.hand_back_reserved(handed) >= 1  # the failed part is retried
        assert runtime.queues["rollouts"].calls == [["default/a"]]
        assert runtime.queues["analysisruns"].calls == [["default/run"]]
        assert host.hand_back_reserved(handed) == 0  # each request once
    finally:
        for request in requests:
            state.reserved_requests.discard(request)  # type: ignore[arg-type]
            state.active_requests.discard(request)  # type: ignore[arg-type]
