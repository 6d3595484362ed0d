"""Fair claiming across tenants, one process, real Redis: whichever message arrives, the claim
takes the key whose turn it is, and every workqueue guarantee still holds."""

from __future__ import annotations

import random

import pytest
import redis

from rollout_workers.keys import ObjectKey
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Claim, Hosts, Outcome, Priority, TenantDepth, WorkQueue
from tests.integration.conftest import SentLog

A1, A2, A3 = (ObjectKey(f"team-a/r{i}") for i in (1, 2, 3))
B1 = ObjectKey("team-b/r1")
C1 = ObjectKey("team-c/r1")


def _queue(rdb: redis.Redis, settings: Settings, sent: SentLog, fairness: str) -> WorkQueue:
    fair = settings.queue.model_copy(update={"fairness": fairness})
    return WorkQueue(rdb, kind="rollouts", prefix="t", settings=fair, send=sent)


def _drain(wq: WorkQueue, sent: SentLog) -> list[ObjectKey]:
    """Deliver the messages sent, in order, each to a claim that finishes its key at once;
    the keys in the order they were taken."""
    order = []
    while sent.sent:
        claimed = wq.claim(sent.sent.pop(0), "w")
        if claimed.status is Claim.CLAIMED:
            order.append(claimed.key)
            assert wq.done(claimed.key, "w", Outcome.OK)
    return order


def _class(wq: WorkQueue, key: ObjectKey) -> bytes:
    """The class queue that holds `key` (b'e' event, b'r' resync, b'' none)."""
    held = [p for p, q in wq.k_fair_queues.items() if wq._redis.zscore(q, key) is not None]
    assert len(held) <= 1, f"{key} is in both class queues"
    return held[0].value.encode() if held else b""


def test_claims_take_turns_across_tenants_whatever_the_message(
    wq: WorkQueue, sent: SentLog
) -> None:
    wq.add([A1, A2, A3])
    wq.add([B1])
    wq.add([C1])
    # A's messages come first, yet B and C get the next turns.
    assert sent.sent == [A1, A2, A3, B1, C1]
    assert _drain(wq, sent) == [A1, B1, C1, A2, A3]


def test_events_go_before_resyncs_and_an_event_upgrades_a_resync(
    wq: WorkQueue, sent: SentLog
) -> None:
    wq.add([A1, A2, B1], priority=Priority.RESYNC)
    wq.add([C1])
    assert wq.add([A2]).coalesced == [A2]  # an event for a key the resync queued
    # Each class takes turns over its own tenants (a turn shared by two tenants goes by key).
    assert _drain(wq, sent) == [A2, C1, A1, B1]


def test_fairness_off_is_plain_fifo_by_message(
    rdb: redis.Redis, settings: Settings, sent: SentLog
) -> None:
    fifo = _queue(rdb, settings, sent, "off")
    fifo.add([A1, A2], priority=Priority.RESYNC)
    fifo.add([B1])
    assert fifo.claim(A2, "w") == (Claim.CLAIMED, A2)
    assert fifo.claim(A1, "w") == (Claim.CLAIMED, A1)
    assert rdb.keys("t:wq:rollouts:fair*") == []
    assert fifo.stats().tenants == []


def test_a_switch_of_fairness_strands_no_key(
    rdb: redis.Redis, settings: Settings, sent: SentLog, wq: WorkQueue
) -> None:
    fifo = _queue(rdb, settings, sent, "off")
    wq.add([A1, B1])
    assert fifo.claim(B1, "w") == (Claim.CLAIMED, B1), "a FIFO claim drops the tenant entry"
    fifo.add([C1])  # queued without a tenant entry
    assert wq.claim(C1, "w") == (Claim.CLAIMED, A1)
    assert wq.claim(C1, "w") == (Claim.CLAIMED, C1), "no class queue holds a key: its own"
    assert not rdb.exists(*wq.k_fair_queues.values()), "B1's entry was dropped on the way"


def test_a_busy_key_is_marked_dirty_and_the_message_consumed(wq: WorkQueue) -> None:
    wq.add([A1])
    assert wq.claim(A1, "w1") == (Claim.CLAIMED, A1)
    wq.add_after([A1], 0)
    wq._redis.zadd(wq.k_queued, {A1: 1})  # queued again while held (as a lease requeue may)
    wq._redis.zadd(wq.k_fair_queues[Priority.EVENT], {A1: 0})
    assert wq.claim(B1, "w2") == (Claim.BUSY, A1)
    assert wq.done(A1, "w1", Outcome.OK)
    assert wq.claim(B1, "w2") == (Claim.CLAIMED, A1), "done queued the dirty key again"


def test_claim_clears_the_record_of_the_consumed_message_only(wq: WorkQueue) -> None:
    wq.add([A1, B1])
    wq._redis.hset(wq.k_held, mapping={A1: "h1", B1: "h2"})
    assert wq.claim(B1, "h2:1:x") == (Claim.CLAIMED, A1)
    assert wq.held() == {A1: "h1"}, "A1's message is still out there, standing for B1"


def test_a_lapsed_hosts_message_whose_key_was_taken_is_made_up(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    hosts = Hosts(rdb, prefix="t")
    wq.add([A1, B1])
    hosts.alive("h1")
    rdb.hset(wq.k_held, mapping={A1: "h1", B1: "h2"})
    assert wq.claim(B1, "h2:1:x") == (Claim.CLAIMED, A1)  # h2's message took A1
    rdb.zadd(hosts.key, {"h1": 1})  # h1 dies with A1's message, which now stands for B1
    assert wq.tick().lapsed == 1
    assert sent.sent == [A1, B1, B1]
    assert wq.claim(A1, "h3:1:y") == (Claim.CLAIMED, B1)


def test_a_stopping_hosts_requeue_makes_up_for_messages_whose_key_was_taken(
    wq: WorkQueue, sent: SentLog
) -> None:
    wq.add([A1, B1, C1])
    assert wq.claim(C1, "w") == (Claim.CLAIMED, A1)
    # The stopping host reserved A1's and B1's messages: they stand for B1 and C1.
    assert wq.requeue([A1, B1, A3]) == [B1, C1]
    assert sent.sent[3:] == [B1, C1]
    assert int(wq._redis.hget(wq.k_stats, "handed_back") or 0) == 2


def test_requeued_dirty_keys_releases_and_due_timers_are_events(wq: WorkQueue) -> None:
    wq.add([A1], priority=Priority.RESYNC)
    assert _class(wq, A1) == b"r"
    assert wq.claim(A1, "h:1:x") == (Claim.CLAIMED, A1)
    wq.add([A1], priority=Priority.RESYNC)
    wq.done(A1, "h:1:x", Outcome.OK)  # dirty: queued again
    assert _class(wq, A1) == b"e"
    assert wq.claim(A1, "h:1:y") == (Claim.CLAIMED, A1)
    assert _class(wq, A1) == b""
    assert wq.release(["h:1:"]) == [A1]
    assert _class(wq, A1) == b"e"
    assert wq.claim(A1, "h:1:z") == (Claim.CLAIMED, A1)
    wq.done(A1, "h:1:z", Outcome.AFTER, delay=0)
    wq.tick()
    assert _class(wq, A1) == b"e"


def test_label_tenants_come_from_the_watcher_else_the_namespace(
    rdb: redis.Redis, settings: Settings, sent: SentLog
) -> None:
    wq = _queue(rdb, settings, sent, "label:team")
    x1, x2, y = ObjectKey("ns-1/x"), ObjectKey("ns-2/x"), ObjectKey("ns-3/y")
    wq.add([x1, x2], tenants={x1: "blue", x2: "blue"})  # the watcher, from the objects
    assert _drain(wq, sent) == [x1, x2]
    wq.resync()  # no object at hand: the watcher's record
    wq.add([y])  # never seen by the watcher: its namespace
    assert wq.stats().tenants == [TenantDepth("blue", 0, 2), TenantDepth("ns-3", 1, 0)]
    assert _drain(wq, sent) == [y, x1, x2]
    wq.add([x1])
    assert wq.done(wq.claim(x1, "w").key, "w", Outcome.GONE)
    assert rdb.hgetall(wq.k_tenants) == {x2.encode(): b"blue"}, "a gone key is forgotten"


def test_stats_show_the_deepest_tenants_by_class(wq: WorkQueue) -> None:
    wq.add([A1, A2, B1], priority=Priority.RESYNC)
    wq.add([A3])
    stats = wq.stats(top=1)
    assert stats.fairness == "namespace"
    assert stats.tenants == [TenantDepth("team-a", 1, 2)]
    assert stats.tenants[0].queued == 3


@pytest.mark.parametrize("fairness", ["namespace", "off", "label:tenant"])
def test_coalescing_and_no_lost_update_hold_in_every_mode(
    rdb: redis.Redis, settings: Settings, sent: SentLog, fairness: str
) -> None:
    wq = _queue(rdb, settings, sent, fairness)
    assert wq.add([A1, A1, B1]).queued == [A1, B1]
    assert wq.claim(A1, "w").status is Claim.CLAIMED
    taken = ObjectKey(rdb.hkeys(wq.k_active)[0].decode())
    assert wq.add([taken]).dirty == [taken]
    assert wq.done(taken, "w", Outcome.OK)
    sent.sent.remove(taken)  # consumed by the claim
    assert sorted(_drain(wq, sent)) == [A1, B1]


def test_keys_queued_under_the_ring_layout_move_to_the_class_queues(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    """A pool upgraded while keys wait: the tick moves what the ring layout (tenant rings, a
    zset a tenant, P:of) holds into the class queues, oldest first, and deletes it."""
    rdb.zadd(wq.k_queued, {A1: 100, A2: 200, B1: 300, C1: 50})
    rdb.zadd(f"{wq.k_fair}:e:team-a", {A1: 100, A2: 200})
    rdb.zadd(f"{wq.k_fair}:e:team-b", {B1: 300})
    rdb.zadd(f"{wq.k_fair}:r:team-c", {C1: 50, A3: 10})  # A3: claimed meanwhile
    rdb.hset(
        f"{wq.k_fair}:of",
        mapping={A1: "eteam-a", A2: "eteam-a", B1: "eteam-b", C1: "rteam-c", A3: "rteam-c"},
    )
    rdb.lpush(f"{wq.k_fair}:e", "team-a", "team-b")
    rdb.lpush(f"{wq.k_fair}:r", "team-c")
    wq.tick()
    assert (_class(wq, A1), _class(wq, B1), _class(wq, C1), _class(wq, A3)) == (
        b"e",
        b"e",
        b"r",
        b"",
    )
    assert rdb.keys(f"{wq.k_fair}:[eor]*") == []
    sent.sent[:] = [A1, A2, B1, C1]  # their messages, as the old layout's adds sent them
    assert _drain(wq, sent) == [A1, B1, A2, C1]


def _state(rdb: redis.Redis, wq: WorkQueue) -> dict[str, object]:
    """The queue's Redis state without its clock: members of zsets scored by time, the fair
    tags as they are."""
    out: dict[str, object] = {}
    for name in (wq.k_queued, wq.k_known, wq.k_dirty):
        kind = rdb.type(name)
        members = rdb.zrange(name, 0, -1) if kind == b"zset" else rdb.smembers(name)
        out[name.rpartition(":")[2]] = sorted(members)
    for name in (wq.k_dirty_own, wq.k_tenants, wq.k_held, wq.k_fair_fixed[0]):
        out[name.rpartition(":")[2]] = rdb.hgetall(name)
    for p, q in wq.k_fair_queues.items():
        out[f"q:{p.value}"] = rdb.zrange(q, 0, -1, withscores=True)
    return out


@pytest.mark.parametrize("fairness", ["off", "namespace", "label:team"])
@pytest.mark.parametrize("seed", range(6))
def test_one_add_of_many_keys_is_the_adds_of_each_in_turn(
    rdb: redis.Redis, settings: Settings, fairness: str, seed: int
) -> None:
    """add.lua covers every key of a call with one command each (one HMGET of the owners, one
    ZADD, ...): the codes and the state it leaves are those of adding the keys one by one,
    duplicates, held keys, own versions and resync upgrades included."""
    rng = random.Random(seed)
    keys = [ObjectKey(f"team-{t}/r{i}") for t in "abc" for i in range(4)]
    mode = settings.queue.model_copy(update={"fairness": fairness})
    queues = [
        WorkQueue(rdb, kind="rollouts", prefix=p, settings=mode, send=SentLog(), host="h")
        for p in ("one", "each")
    ]
    # The same history for both: resync adds, claims (held keys), dirty marks with versions.
    resynced = rng.sample(keys, 4)
    held = rng.sample([k for k in keys if k not in resynced], 3)
    for wq in queues:
        wq.add(resynced + held, priority=Priority.RESYNC)
        for k in held:
            while wq.claim(k, f"w-{k}").key != k:  # with fairness, whichever key's turn
                pass
        wq.add(held, own=dict.fromkeys(held, "5"))
    for wq in queues:  # what the claims took besides, back in the queue for both alike
        wq.add(resynced, priority=Priority.RESYNC)
    calls = []
    for _ in range(12):
        k = rng.choice(keys)
        calls.append((k, rng.choice(["", "3", "9"]), rng.choice(["", "blue", "green"])))
    # Held keys dirty for their own version already, given a newer, an older and none.
    for k, version in zip(held, ["9", "3", ""], strict=True):
        calls.insert(rng.randrange(len(calls) + 1), (k, version, ""))
    priority = rng.choice([Priority.EVENT, Priority.RESYNC])
    one, each = queues

    def args(batch: list[tuple[ObjectKey, str, str]]) -> dict[str, object]:
        return {
            "own": {k: v for k, v, _ in batch if v},
            "tenants": {k: t for k, _, t in batch if t},
            "priority": priority,
        }

    # One by one, each key with what the one call gives it (the last own and tenant of it).
    last = {k: (k, v, t) for k, v, t in calls}
    together = one.add([k for k, _, _ in calls], **args(list(last.values())))  # type: ignore[arg-type]
    apart = [each.add([k], **args([last[k]])) for k, _, _ in calls]  # type: ignore[arg-type]
    for name in ("queued", "coalesced", "dirty"):
        assert getattr(together, name) == [k for r in apart for k in getattr(r, name)], name
    assert _state(rdb, one) == _state(rdb, each)
