"""The broker transport on real Redis: a worker host takes the messages that keep coming and
records that it holds them in one step (celeryapp/transport.py), with what a BRPOP and its
HSET did, malformed entries included."""

from __future__ import annotations

import itertools
import json
from typing import Any

import redis
from kombu import Consumer, Exchange, Queue

from rollout_workers.celeryapp.sender import SyncSender
from rollout_workers.celeryapp.transport import KEY_HEADER, STREAK
from rollout_workers.keys import ObjectKey
from rollout_workers.settings import Settings
from rollout_workers.workqueue.queue import held_key
from tests.integration.conftest import consume, host_app


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _calls(rdb: redis.Redis, command: str) -> int:
    stats: dict[str, Any] = rdb.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_a_host_takes_waiting_messages_and_records_them_in_one_step(
    rdb: redis.Redis, settings: Settings
) -> None:
    app = host_app(settings, "h1")
    name = settings.queue.for_kind("rollouts")
    send = SyncSender(app, name="rollouts.sync", queue=name)
    first, later = ObjectKey("ns/first"), [ObjectKey("ns/a"), ObjectKey("ns/b")]
    send([first])
    rdb.lpush(name, b"not json at all")
    rdb.lpush(name, json.dumps({"a": 1}))  # JSON, but not an envelope
    send(later)
    other = app.send_task("timers.tick", queue=name)  # not a sync task: kombu's own record
    rdb.config_resetstat()

    assert consume(app, name, 6) == [first, *later, "timers.tick"]
    # Only the first came by BRPOP (nothing had been delivered yet); the rest by the script,
    # sent whole once and then by its sha.
    assert _calls(rdb, "brpop") == 1
    assert _calls(rdb, "eval") == 1 and _calls(rdb, "evalsha") == 4
    held = held_key(settings.redis.key_prefix, "rollouts")
    records = {_text(k): _text(v) for k, v in rdb.hgetall(held).items()}
    assert records == {first: "h1", "ns/a": "h1", "ns/b": "h1"}
    # Unacked at close, all four went back on the list, the sync messages from memory.
    back = [json.loads(raw)["headers"] for raw in rdb.lrange(name, 0, -1)]
    assert sorted(h.get(KEY_HEADER) or h["id"] for h in back) == sorted([*records, other.id])


def test_a_script_cache_flushed_under_the_pop_costs_one_brpop(
    rdb: redis.Redis, settings: Settings
) -> None:
    app = host_app(settings, "h1")
    name = settings.queue.for_kind("rollouts")
    keys = [ObjectKey(f"ns/k{i}") for i in range(4)]
    SyncSender(app, name="rollouts.sync", queue=name)(keys)
    flushed = False

    def flush_once(got: list[str]) -> None:
        nonlocal flushed
        if len(got) == 2 and not flushed:  # as Redis restarting without its scripts would
            rdb.script_flush()
            flushed = True

    rdb.config_resetstat()
    assert consume(app, name, 4, after_each=flush_once) == keys
    # The third pop by sha met NOSCRIPT and took nothing: a BRPOP took the third message, and
    # the fourth came off the script sent whole again.
    assert _calls(rdb, "brpop") == 2 and _calls(rdb, "eval") == 2
    held = held_key(settings.redis.key_prefix, "rollouts")
    assert {_text(k) for k in rdb.hkeys(held)} == set(keys)


def test_a_busy_queue_is_popped_first_for_a_few_messages_then_the_others_get_their_turn(
    rdb: redis.Redis, settings: Settings
) -> None:
    """kombu would try every idle queue before a busy one on each pop (an empty RPOP each);
    here the queue that delivered is tried first for up to STREAK messages in a row."""
    app = host_app(settings, "h1")
    busy, other, idle = "rollouts", "analysis", ["notifications", "system"]
    n = STREAK + 4  # more than a streak: the busy queue must give way once
    SyncSender(app, name="rollouts.sync", queue=busy)([ObjectKey(f"ns/r{i}") for i in range(n)])
    SyncSender(app, name="rollouts.sync", queue=other)([ObjectKey(f"ns/a{i}") for i in range(4)])
    order: list[str] = []

    def received(body: Any, message: Any) -> None:
        order.append(str(message.delivery_info["routing_key"]))

    rdb.config_resetstat()
    with app.connection_for_read() as conn:
        entities = [Queue(q, Exchange(q), routing_key=q) for q in [busy, other, *idle]]  # type: ignore[no-untyped-call]
        with Consumer(conn, queues=entities, callbacks=[received], accept=["json"]):  # type: ignore[no-untyped-call]
            for _ in range(n + 4):
                conn.drain_events(timeout=5)
    assert sorted(order) == sorted([busy] * n + [other] * 4)
    # While the other queue had messages, neither took more than STREAK turns in a row.
    last_other = max(i for i, q in enumerate(order) if q == other)
    runs = [len(list(g)) for _, g in itertools.groupby(order[: last_other + 1])]
    assert max(runs) <= STREAK, order
    # About one RPOP a message, not one a queue (the first came by BRPOP).
    assert _calls(rdb, "rpop") <= 2 * (n + 3), _calls(rdb, "rpop")
    print(f"{n + 4} messages from 4 queues: {_calls(rdb, 'rpop')} RPOPs; order {order}")
