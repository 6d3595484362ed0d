"""Integration fixtures: settings and a runtime that talk to this session's real Redis."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
import redis
from celery import Celery
from kombu.entity import Exchange, Queue
from kombu.messaging import Consumer

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.celeryapp.transport import HELD_OPTION, HOST_OPTION, KEY_HEADER
from rollout_workers.keys import ObjectKey
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Owner, WorkQueue
from rollout_workers.workqueue.queue import held_key
from tests.conftest import TEST_HANDLERS


@pytest.fixture
def settings(base_env: dict[str, str]) -> Settings:
    return Settings(
        state_dir=base_env["ROLLOUTS_STATE_DIR"],
        redis={"url": base_env["ROLLOUTS_REDIS_URL"]},
        queue={"lease_ttl": float(base_env["ROLLOUTS_QUEUE_LEASE_TTL"])},
        reconcile={"handlers": TEST_HANDLERS},
    )


@pytest.fixture
def runtime(rdb: redis.Redis, settings: Settings) -> Iterator[Runtime]:
    """A runtime whose queues send real Celery messages."""
    assert settings.redis.url
    rt = build_runtime(create_app(settings, settings.redis.url), settings, settings.redis.url)
    yield rt
    rt.redis.close()


class SentLog:
    """A sender that records messages instead of sending them (single-process queue tests)."""

    def __init__(self) -> None:
        self.sent: list[ObjectKey] = []

    def __call__(self, keys: Sequence[ObjectKey]) -> None:
        self.sent.extend(keys)


@pytest.fixture
def sent() -> SentLog:
    return SentLog()


@pytest.fixture
def wq(rdb: redis.Redis, settings: Settings, sent: SentLog) -> WorkQueue:
    return WorkQueue(rdb, kind="rollouts", prefix="t", settings=settings.queue, send=sent)


def set_lease(rdb: redis.Redis, wq: WorkQueue, key: str, deadline_ms: int) -> None:
    """Move `key`'s lease deadline (Redis ms) in its owner record: 0, the lease ran out."""
    owner = Owner.parse(rdb.hget(wq.k_active, key) or b"")
    assert owner.since_ms is not None, f"{key} is not held"
    rdb.hset(wq.k_active, key, f"{owner.token} {owner.since_ms} {deadline_ms}")


def trace(rdb: redis.Redis, prefix: str = "rw") -> list[dict[str, object]]:
    return [json.loads(x) for x in rdb.lrange(f"{prefix}:test:trace", 0, -1)]


def host_app(settings: Settings, host: str) -> Celery:
    """A Celery app with the transport options of worker host `host` (its rollouts held hash)."""
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        HOST_OPTION: host,
        HELD_OPTION: {"rollouts.sync": held_key(settings.redis.key_prefix, "rollouts")},
    }
    return app


def consume(
    app: Celery,
    queue: str,
    reads: int,
    after_each: Callable[[list[str]], None] | None = None,
) -> list[str]:
    """Read `reads` times off `queue` through the app's transport, as a worker's consumer does
    (unacked: put back at close); returns the key, or else the task name, of each message.
    `after_each` is called with what came so far after each message."""
    got: list[str] = []

    def received(body: Any, message: Any) -> None:
        got.append(str(message.headers.get(KEY_HEADER) or message.headers["task"]))
        if after_each is not None:
            after_each(got)

    with app.connection_for_read() as conn:
        entity = Queue(queue, Exchange(queue), routing_key=queue)  # type: ignore[no-untyped-call]
        with Consumer(conn, queues=[entity], callbacks=[received], accept=["json"]):  # type: ignore[no-untyped-call]
            for _ in range(reads):
                conn.drain_events(timeout=5)
    return got
