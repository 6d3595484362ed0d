"""The workqueue's transitions, one process, real Redis: each guarantee in isolation."""

from __future__ import annotations

import time

import pytest
import redis

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.keys import InvalidKey, ObjectKey, own_key
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Claim, Hosts, Outcome, Owner, WorkQueue
from tests.integration.conftest import SentLog, set_lease

A = ObjectKey("default/a")
B = ObjectKey("default/b")


@pytest.fixture
def fifo(rdb: redis.Redis, settings: Settings, sent: SentLog) -> WorkQueue:
    """The queue with fairness off: a message claims its own key, as in plain FIFO."""
    off = settings.queue.model_copy(update={"fairness": "off"})
    return WorkQueue(rdb, kind="rollouts", prefix="t", settings=off, send=sent)


def test_add_coalesces_while_queued(wq: WorkQueue, sent: SentLog) -> None:
    first = wq.add([A, B])
    again = wq.add([A, A])
    assert first.queued == [A, B]
    assert again.queued == [] and again.coalesced == [A, A]
    assert sent.sent == [A, B]


def test_claim_is_exclusive_and_a_stale_message_is_dropped(wq: WorkQueue) -> None:
    wq.add([A])
    assert wq.claim(A, "w1") == (Claim.CLAIMED, A)
    # A duplicate message for the same add finds the key no longer queued.
    assert wq.claim(A, "w2") == (Claim.STALE, A)


def test_add_while_active_marks_dirty_and_done_requeues(wq: WorkQueue, sent: SentLog) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    result = wq.add([A])
    assert result.dirty == [A] and result.queued == []
    assert wq.done(A, "w1", Outcome.OK) is True
    assert sent.sent == [A, A]
    assert wq.claim(A, "w2") == (Claim.CLAIMED, A)


def _own_dirty(wq: WorkQueue, rdb: redis.Redis, written: str | None, *adds: str | None) -> bool:
    """Claim A, make the adds while it is held (a version: the object's own event of that
    resourceVersion; None: any other cause), record `written` as the version A's controller
    wrote, finish: whether A was queued again."""
    rdb.delete(own_key("t", wq.kind, A))
    wq.add([A])
    assert wq.claim(A, "w1") == (Claim.CLAIMED, A)
    for version in adds:
        result = wq.add([A], own={A: version} if version is not None else None)
        assert result.dirty == [A]
    if written is not None:
        rdb.set(own_key("t", wq.kind, A), written)
    wq.done(A, "w1", Outcome.OK)
    requeued = rdb.zscore(wq.k_queued, A) is not None
    assert not rdb.hexists(wq.k_dirty_own, A)
    if requeued:
        assert wq.claim(A, "w2") == (Claim.CLAIMED, A) and wq.done(A, "w2", Outcome.OK)
    return requeued


@pytest.mark.parametrize(
    ("written", "adds", "requeued"),
    [
        ("7", ["7"], False),  # the event of the holder's own write
        ("9", ["7", "9"], False),  # two own writes in one reconcile
        ("9", ["9", "7"], False),
        ("9", ["8"], False),  # an earlier own write: everything up to 9 was seen
        ("7", ["8"], True),  # a version the holder did not write
        ("7", ["7", "8"], True),  # and then one it did not: the newest is kept
        (None, ["7"], True),  # nothing recorded: the controller did not settle the object
        ("7", ["7", None], True),  # and something else changed too
        ("7", [None, "7"], True),
        ("9", ["7", None, "9"], True),
        ("7", [None], True),
    ],
)
def test_a_key_dirty_only_by_its_own_write_is_not_queued_again(
    wq: WorkQueue, rdb: redis.Redis, written: str | None, adds: list[str | None], requeued: bool
) -> None:
    assert _own_dirty(wq, rdb, written, *adds) is requeued
    stats = {k.decode(): int(v) for k, v in rdb.hgetall(wq.k_stats).items()}
    assert stats.get("own_skipped", 0) == (0 if requeued else 1)


def test_other_dirty_marks_forget_an_own_version(wq: WorkQueue, rdb: redis.Redis) -> None:
    """A due timer or a losing claim is another cause: the key is queued again."""
    rdb.set(own_key("t", wq.kind, A), "7")
    wq.add([A])
    wq.claim(A, "w1")
    wq.add([A], own={A: "7"})
    wq.add_after([A], 0)
    time.sleep(0.01)
    wq.tick()
    wq.done(A, "w1", Outcome.OK)
    assert rdb.zscore(wq.k_queued, A) is not None
    wq.claim(A, "w2")
    wq.add([A], own={A: "7"})
    rdb.zadd(wq.k_queued, {A: 0})
    assert wq.claim(A, "w3") == (Claim.BUSY, A)
    wq.done(A, "w2", Outcome.OK)
    assert rdb.zscore(wq.k_queued, A) is not None


def test_claim_that_loses_marks_dirty_and_drops(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    # Force the key queued again while w1 holds it (as a lease requeue race would).
    rdb.zadd(wq.k_queued, {A: 0})
    assert wq.claim(A, "w2") == (Claim.BUSY, A)
    assert rdb.sismember(wq.k_dirty, A)
    wq.done(A, "w1", Outcome.OK)
    assert sent.sent.count(A) == 2  # the dirty key was queued again


def test_done_by_a_fenced_owner_changes_nothing(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    rdb.hset(wq.k_active, A, "w2")  # w1's lease was taken over
    assert wq.done(A, "w1", Outcome.ERROR) is False
    assert _owner(rdb, wq, A) == "w2"
    assert not rdb.hexists(wq.k_failures, A)
    assert wq.heartbeat(A, "w1") is False
    assert wq.heartbeat(A, "w2") is True


def test_error_backs_off_exponentially_and_success_resets(wq: WorkQueue, rdb: redis.Redis) -> None:
    delays = []
    for _ in range(4):
        wq.add([A])
        wq.claim(A, "w")
        wq.done(A, "w", Outcome.ERROR)
        due = rdb.zscore(wq.k_timers, A)
        assert due is not None
        delays.append(due)
        rdb.zrem(wq.k_timers, A)
    assert rdb.hget(wq.k_failures, A) == b"4"
    wq.add([A])
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.OK)
    assert not rdb.hexists(wq.k_failures, A)


def test_add_rate_limited_doubles_up_to_max(wq: WorkQueue) -> None:
    base = wq._settings.backoff_base
    got = [wq.add_rate_limited(A) for _ in range(5)]
    assert got == [pytest.approx(base * 2**i, abs=0.001) for i in range(5)]
    for _ in range(40):
        last = wq.add_rate_limited(A)
    assert last == wq._settings.backoff_max
    wq.forget(A)
    assert wq.add_rate_limited(A) == pytest.approx(base, abs=0.001)


def test_add_after_keeps_the_earliest_due_time(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add_after([A], 60)
    late = rdb.zscore(wq.k_timers, A)
    wq.add_after([A], 1)
    early = rdb.zscore(wq.k_timers, A)
    wq.add_after([A], 30)
    assert late is not None and early is not None
    assert rdb.zscore(wq.k_timers, A) == early
    assert late - early == pytest.approx(59_000, abs=200)


def test_tick_queues_due_timers_once(wq: WorkQueue, sent: SentLog) -> None:
    wq.add_after([A], 0)
    wq.add_after([B], 60)
    assert wq.tick().sent == 1
    assert sent.sent == [A]
    assert wq.tick().sent == 0  # fired once


def test_the_timer_pass_queues_due_timers_and_nothing_else(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    """The beat's pass between ticks: due timers only. Expired leases, stale messages and the
    ticks' own record wait for the tick."""
    wq.add([B])
    wq.claim(B, "dead")
    set_lease(rdb, wq, B, 0)  # the lease ran out
    wq.add_after([A], 0)
    wq.add_after([ObjectKey("default/c")], 60)
    sent.sent.clear()
    result = wq.tick(timers_only=True)
    assert (result.sent, result.due, result.expired) == (1, 1, 0)
    assert result.next_due == pytest.approx(60, abs=1)  # default/c's
    assert sent.sent == [A]
    assert _owner(rdb, wq, B) == "dead"
    assert not rdb.exists(wq.k_ticked)
    assert wq.tick(timers_only=True).sent == 0  # fired once
    assert wq.tick().expired == 1  # the tick does the rest
    rdb.delete(wq.k_timers)
    assert wq.tick(timers_only=True).next_due is None


def test_due_timer_of_an_active_key_marks_it_dirty(wq: WorkQueue, sent: SentLog) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    wq.add_after([A], 0)
    wq.tick()
    assert sent.sent == [A]
    wq.done(A, "w1", Outcome.OK)
    assert sent.sent == [A, A]


def test_expired_lease_is_requeued_and_the_old_owner_fenced(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    wq.add([A])
    wq.claim(A, "dead")
    set_lease(rdb, wq, A, 0)  # the lease ran out
    result = wq.tick()
    assert result.expired == 1
    assert sent.sent == [A, A]
    assert wq.claim(A, "alive") == (Claim.CLAIMED, A)
    assert wq.done(A, "dead", Outcome.OK) is False
    assert wq.done(A, "alive", Outcome.OK) is True


def test_lost_message_is_sent_again_after_stale_after(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    rdb.rpush("rollouts", "a message of another key")  # a backlog on the broker list
    wq.add([A])
    rdb.zadd(wq.k_queued, {A: 1})  # queued long ago, its message lost
    result = wq.tick()
    assert (result.resent, result.lost) == (1, 0)
    assert sent.sent == [A, A]
    assert wq.tick().resent == 0  # its wait restarted


def test_a_message_that_is_nowhere_is_sent_again_after_lost_after(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    """No message waits on the broker list and no host has A's in hand: it was lost (a host
    killed between popping it and recording it). B's message is in a host's hands."""
    wq.add([A, B])
    rdb.hset(wq.k_held, B, "host-1")
    assert wq.tick().lost == 0  # queued only now: its message may be on its way
    seconds, micros = rdb.time()
    five_seconds_ago = seconds * 1000 + micros // 1000 - 5000  # lost_after < 5 s < stale_after
    rdb.zadd(wq.k_queued, {A: five_seconds_ago, B: five_seconds_ago})
    assert wq.tick().lost == 1
    assert sent.sent == [A, B, A]
    rdb.zadd(wq.k_queued, {A: five_seconds_ago})
    rdb.rpush("rollouts", "a message")  # one waits on the list: it may be A's
    assert wq.tick().lost == 0


def test_requeue_after_resets_failures_and_sets_a_timer(wq: WorkQueue, rdb: redis.Redis) -> None:
    rdb.hset(wq.k_failures, A, 3)
    wq.add([A])
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.AFTER, delay=5)
    assert not rdb.hexists(wq.k_failures, A)
    due = rdb.zscore(wq.k_timers, A)
    now_s, _ = rdb.time()
    assert due is not None and 4_000 < due - now_s * 1000 <= 6_000


def test_requeue_after_no_delay_queues_the_key_at_once(
    wq: WorkQueue, rdb: redis.Redis, sent: SentLog
) -> None:
    """client-go's AddAfter of no delay is an Add: the key goes back on the queue with the
    `done`, not on a timer the next tick (up to a tick interval later) would fire. Queued at
    once, it coalesces with any event meanwhile, as in Argo's queue."""
    wq.add([A])
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.AFTER, delay=0)
    assert rdb.zscore(wq.k_timers, A) is None
    assert rdb.zscore(wq.k_queued, A) is not None and sent.sent == [A, A]
    wq.claim(A, "w2")
    wq.add([A])  # dirty while held, and no delay again: one requeue
    wq.done(A, "w2", Outcome.AFTER, delay=0.0004)
    assert rdb.zscore(wq.k_timers, A) is None and sent.sent == [A, A, A]


def test_gone_forgets_the_key(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add([A])
    wq.add_after([A], 100)
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.GONE)
    assert not rdb.sismember(wq.k_known, A)
    assert rdb.zscore(wq.k_timers, A) is None
    assert wq.known() == []


def test_resync_adds_every_known_key(wq: WorkQueue, sent: SentLog) -> None:
    wq.add([A, B, ObjectKey("other/c")])
    for key in (A, B, ObjectKey("other/c")):
        claimed = wq.claim(key, "w").key  # the key whose turn it is
        wq.done(claimed, "w", Outcome.OK)
    sent.sent.clear()
    assert wq.resync("default").queued == [A, B]
    assert sorted(wq.resync().coalesced) == [A, B]


def test_malformed_keys_are_rejected_before_redis(wq: WorkQueue, rdb: redis.Redis) -> None:
    for bad in ["nokey", "a/b/c", "UPPER/x", "-x/y", "ns/", "/n", "ns/" + "a" * 64]:
        with pytest.raises(InvalidKey):
            wq.add([A, bad])
    assert rdb.zcard(wq.k_queued) == 0


def test_stats_and_durations(wq: WorkQueue) -> None:
    wq.add([A, B])
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.ERROR, duration=0.25)
    wq.add([A])
    stats = wq.stats()
    assert (stats.queued, stats.active, stats.timers, stats.known) == (2, 0, 1, 2)
    assert stats.failing == [("default/a", 1)]
    assert stats.counters["reconciles"] == 1 and stats.counters["error"] == 1
    assert wq.durations() == [0.25]


def test_lease_deadline_follows_redis_time(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add([A])
    wq.claim(A, "w")
    deadline = Owner.parse(rdb.hget(wq.k_active, A) or b"").deadline_ms
    assert deadline is not None
    assert deadline / 1000 - time.time() == pytest.approx(wq._settings.lease_ttl, abs=0.5)


def test_requeue_sends_again_only_keys_still_queued(
    fifo: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    C = ObjectKey("default/c")
    fifo.add([A, B])
    rdb.zadd(fifo.k_queued, {A: 1})  # reserved long ago by a host that is stopping
    fifo.claim(B, "other")  # B's duplicate message was claimed elsewhere meanwhile
    assert fifo.requeue([A, B, C]) == [A]
    assert sent.sent == [A, B, A]
    assert float(rdb.zscore(fifo.k_queued, A) or 0) > 1  # a fresh wait: no stale resend soon
    assert fifo.claim(A, "new") == (Claim.CLAIMED, A)
    assert fifo.claim(A, "late") == (Claim.STALE, A)  # the stopping host's message, if ever run
    assert int(rdb.hget(fifo.k_stats, "handed_back") or 0) == 1


def test_release_hands_back_a_hosts_keys_and_fences_the_holders(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    C = ObjectKey("default/c")
    wq.add([A, B, C])
    wq.claim(A, "host-1:9/100:aaa")
    wq.claim(B, "host-1:9/101:bbb")
    wq.claim(C, "host-1:9/1000:ccc")  # another process whose pid starts alike
    wq.add([A])  # dirty: the release queues it once, not twice
    assert sorted(wq.release(["host-1:9/100:", "host-1:9/101:"])) == [A, B]
    assert sorted(sent.sent[3:]) == [A, B]
    assert not rdb.sismember(wq.k_dirty, A)
    assert _owner(rdb, wq, C) == "host-1:9/1000:ccc"
    assert wq.heartbeat(A, "host-1:9/100:aaa") is False  # fenced
    assert wq.done(B, "host-1:9/101:bbb", Outcome.OK) is False
    assert wq.claim(A, "host-2:7/1:x") == (Claim.CLAIMED, A)
    assert int(rdb.hget(wq.k_stats, "released") or 0) == 2
    assert wq.release([]) == []


# -- dead hosts ----------------------------------------------------------------------------------

C = ObjectKey("default/c")


def _host_queue(wq: WorkQueue, rdb: redis.Redis, settings: Settings, host: str) -> WorkQueue:
    """The same queue as seen from a process of worker host `host`."""
    return WorkQueue(
        rdb, kind="rollouts", prefix="t", settings=settings.queue, send=wq._send, host=host
    )


def test_a_lapsed_hosts_reserved_keys_are_sent_again_and_its_fresh_claims_kept(
    fifo: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    hosts = Hosts(rdb, prefix="t")
    fifo.add([A, B, C])
    hosts.alive("h1")
    hosts.alive("h2")
    # h1 reserved A and C (the transport's record), h2 reserved B; h1 then claimed C.
    rdb.hset(fifo.k_held, mapping={A: "h1", B: "h2", C: "h1"})
    assert fifo.claim(C, "h1/7:x") == (Claim.CLAIMED, C)
    assert fifo.held() == {A: "h1", B: "h2"}, "a claim clears the record"
    assert fifo.tick().lapsed == 0, "both hosts are alive"

    rdb.zadd(hosts.key, {"h1": 1})  # h1's last heartbeat was long ago: it died
    result = fifo.tick()
    assert result.lapsed == 1 and result.expired == 0
    assert result.taken == 0, "C's lease was just taken: its holder may be alive"
    assert sent.sent == [A, B, C, A]
    assert fifo.held() == {B: "h2"}
    assert fifo.tick().lapsed == 0, "sent once"
    assert fifo.claim(A, "h2/8:y") == (Claim.CLAIMED, A)
    assert fifo.claim(A, "h2/8:z") == (Claim.STALE, A), "h1's message, if it ever came back"


@pytest.fixture
def shipped(rdb: redis.Redis, settings: Settings, sent: SentLog) -> WorkQueue:
    """The FIFO queue with the shipped lease TTL (15 s), longer than `host_lapse` (5 s)."""
    queue = settings.queue.model_copy(update={"fairness": "off", "lease_ttl": 15.0})
    return WorkQueue(rdb, kind="rollouts", prefix="t", settings=queue, send=sent)


def _redis_ms(rdb: redis.Redis) -> int:
    s, us = rdb.time()
    return int(s) * 1000 + int(us) // 1000


def _ticking_for(wq: WorkQueue, rdb: redis.Redis, seconds: float) -> None:
    """As if the ticks had run without a gap for `seconds`."""
    now = _redis_ms(rdb)
    rdb.hset(wq.k_ticked, mapping={"last": now, "since": now - round(seconds * 1000)})


def _extended_ago(wq: WorkQueue, rdb: redis.Redis, key: str, s: float) -> None:
    """As if `key`'s lease (the shipped 15 s) had last been taken or extended `s` seconds ago."""
    set_lease(rdb, wq, key, _redis_ms(rdb) + round((15 - s) * 1000))


def test_a_lapsed_hosts_claims_not_extended_since_are_taken_back_and_fenced(
    shipped: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    hosts = Hosts(rdb, prefix="t")
    shipped.add([A, B, C])
    for h in ("node:1", "node:2"):
        hosts.alive(h)
    assert shipped.claim(A, "node:1/11:a") == (Claim.CLAIMED, A)
    assert shipped.claim(B, "node:1/12:b") == (Claim.CLAIMED, B)
    assert shipped.claim(C, "node:2/21:c") == (Claim.CLAIMED, C)
    shipped.add([A])  # dirty: taken back, A is queued once
    for k in (A, B, C):
        _extended_ago(shipped, rdb, k, 6)
    _ticking_for(shipped, rdb, 10)
    assert shipped.tick().taken == 0, "every host is alive"

    rdb.zadd(hosts.key, {"node:1": _redis_ms(rdb) - 6000})  # node:1 died 6 s ago
    _ticking_for(shipped, rdb, 10)
    result = shipped.tick()
    assert (result.taken, result.expired) == (2, 0)
    assert sorted(sent.sent[3:]) == [A, B]
    assert shipped.heartbeat(A, "node:1/11:a") is False, "the old holder is fenced"
    assert shipped.done(B, "node:1/12:b", Outcome.OK) is False
    assert _owner(rdb, shipped, C) == "node:2/21:c", "another host's claim is kept"
    assert not rdb.sismember(shipped.k_dirty, A)
    assert int(rdb.hget(shipped.k_stats, "host_lapsed_claims") or 0) == 2
    assert shipped.claim(A, "node:2/21:d") == (Claim.CLAIMED, A)
    _ticking_for(shipped, rdb, 10)
    assert shipped.tick().taken == 0, "taken once"


def test_a_lapsed_hosts_claim_still_being_extended_is_kept(
    shipped: WorkQueue, rdb: redis.Redis, settings: Settings
) -> None:
    """A heartbeat thread that stalled is not a dead host while its leases are extended."""
    hosts = Hosts(rdb, prefix="t")
    shipped.add([A, B])
    hosts.alive("node:1")
    shipped.claim(A, "node:1/11:a")
    shipped.claim(B, "node:1/11:b")
    _extended_ago(shipped, rdb, A, 3)  # within the keeper's period (lapse/2 = 2.5 s + delay)
    _extended_ago(shipped, rdb, B, 5.5)
    rdb.zadd(hosts.key, {"node:1": _redis_ms(rdb) - 6000})
    _ticking_for(shipped, rdb, 10)
    assert shipped.tick().taken == 1
    assert _owner(rdb, shipped, A) == "node:1/11:a"
    assert _owner(rdb, shipped, B) is None


def test_after_a_gap_in_the_ticks_claims_wait_until_the_hosts_could_stamp_again(
    shipped: WorkQueue, rdb: redis.Redis, settings: Settings
) -> None:
    """After a Redis failover every host looks lapsed and every lease unextended: the claims
    are kept until the ticks have run for `host_lapse`, by when live hosts have stamped."""
    hosts = Hosts(rdb, prefix="t")
    shipped.add([A])
    hosts.alive("node:1")
    shipped.claim(A, "node:1/11:a")
    _extended_ago(shipped, rdb, A, 8)
    rdb.zadd(hosts.key, {"node:1": _redis_ms(rdb) - 8000})
    rdb.hset(shipped.k_ticked, mapping={"last": _redis_ms(rdb) - 8000, "since": 0})
    assert shipped.tick().taken == 0, "the first tick after the gap"
    assert shipped.tick().taken == 0, "and the next ones, for host_lapse"
    now = _redis_ms(rdb)
    assert int(rdb.hget(shipped.k_ticked, "since") or 0) >= now - 1000
    _ticking_for(shipped, rdb, settings.queue.host_lapse)
    assert shipped.tick().taken == 1, "still lapsed once the ticks ran for host_lapse"


def test_a_token_without_a_host_is_left_to_its_lease(
    shipped: WorkQueue, rdb: redis.Redis, settings: Settings
) -> None:
    hosts = Hosts(rdb, prefix="t")
    shipped.add([A])
    hosts.alive("node:1")
    shipped.claim(A, "node:1:11:a")  # not `<host>/<pid>:`: a holder of an older version
    _extended_ago(shipped, rdb, A, 8)
    rdb.zadd(hosts.key, {"node:1": _redis_ms(rdb) - 8000})
    _ticking_for(shipped, rdb, 10)
    assert shipped.tick().taken == 0


def test_a_lapsed_host_is_forgotten_after_every_kind_could_see_it(
    wq: WorkQueue, rdb: redis.Redis
) -> None:
    hosts = Hosts(rdb, prefix="t")
    hosts.alive("h1")
    now = float(rdb.time()[0])
    rdb.zadd(hosts.key, {"h1": (now - 6) * 1000})  # lapsed (5 s), not yet forgotten (20 s)
    wq.tick()
    assert "h1" in hosts.last_seen()
    rdb.zadd(hosts.key, {"h1": (now - 30) * 1000})
    wq.tick()
    assert hosts.last_seen() == {}


def test_a_host_dying_while_publishing_leaves_a_record_that_the_tick_honours(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis, settings: Settings
) -> None:
    hosts = Hosts(rdb, prefix="t")
    hosts.alive("h1")

    def die(keys: object) -> None:
        raise ConnectionError("killed between queuing and sending")

    dying = WorkQueue(
        rdb, kind="rollouts", prefix="t", settings=settings.queue, send=die, host="h1"
    )
    with pytest.raises(ConnectionError):
        dying.add([A])
    assert wq.held() == {A: "h1|pub"}
    assert wq.tick().lapsed == 0 and sent.sent == []
    rdb.zadd(hosts.key, {"h1": 1})
    assert wq.tick().lapsed == 1
    assert sent.sent == [A]


def test_a_sent_message_drops_only_its_own_publish_record(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis, settings: Settings
) -> None:
    h1 = _host_queue(wq, rdb, settings, "h1")
    h1.add([A])
    assert wq.held() == {}, "cleared once sent"
    # done() of a dirty key publishes it again; its record is cleared after the send too.
    assert h1.claim(A, "h1:1:x") == (Claim.CLAIMED, A)
    h1.add([A])
    records: list[dict[ObjectKey, str]] = []

    def reserved_during_send(keys: object) -> None:
        records.append(wq.held())
        rdb.hset(wq.k_held, A, "h2")  # another host reserved it before the sender returned

    h1._send = reserved_during_send
    assert h1.done(A, "h1:1:x", Outcome.OK) is True
    assert records == [{A: "h1|pub"}]
    assert wq.held() == {A: "h2"}, "the reservation stays"
    assert wq.claim(A, "h2:1:y") == (Claim.CLAIMED, A)
    assert wq.held() == {}


def test_the_transport_records_the_host_that_reserves_a_sync_message(
    rdb: redis.Redis, settings: Settings
) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    queue = build_runtime(app, settings, settings.redis.url).queue("rollouts")
    queue.add([A])
    assert queue.held() == {}, "not a worker host: no publish record"
    options = dict(app.conf.broker_transport_options)
    options.update(rollouts_host="h9", rollouts_held={"rollouts.sync": queue.k_held})
    with app.connection_for_read(transport_options=options) as conn:
        consumer = conn.SimpleQueue("rollouts", no_ack=False)
        message = consumer.get(timeout=5)
        assert message.headers["rollouts_key"] == A
        assert queue.held() == {A: "h9"}
        message.ack()
        consumer.close()
    assert queue.claim(A, "h9:1:x") == (Claim.CLAIMED, A)
    assert queue.held() == {}


def test_a_claim_reports_its_guard_key(rdb: redis.Redis, settings: Settings, sent: SentLog) -> None:
    guarded = WorkQueue(
        rdb, kind="rollouts", prefix="t", settings=settings.queue, send=sent, claim_guard="t:g"
    )
    guarded.add([A, B])
    assert guarded.claim_guarded(A, "w1") == ((Claim.CLAIMED, A), False, None)
    rdb.set("t:g", "epoch")
    assert guarded.claim_guarded(B, "w1") == ((Claim.CLAIMED, B), True, None)
    assert guarded.claim_guarded(B, "w2") == ((Claim.STALE, B), True, None)  # nothing claimed


def _owner(rdb: redis.Redis, wq: WorkQueue, key: str) -> str | None:
    """The token of `key`'s holder, if any."""
    value = rdb.hget(wq.k_active, key)
    return None if value is None else Owner.parse(value).token


def test_a_claim_of_the_layout_before_keeps_its_lease_in_the_leases_zset(
    wq: WorkQueue, rdb: redis.Redis
) -> None:
    """A key a host of the layout before holds (its owner record the token alone, its lease
    deadline in `leases`) is extended, expired and finished as it was."""
    for key in (A, B):
        rdb.hset(wq.k_active, key, f"old/1:{key}")
        rdb.zadd(wq.k_leases, {key: _redis_ms(rdb) + 60_000})
    assert wq.tick().expired == 0
    assert wq.heartbeat(A, f"old/1:{A}")
    assert wq.add([A]).dirty == [A]
    rdb.zadd(wq.k_leases, {A: 0})
    assert wq.tick().expired == 1
    assert not rdb.hexists(wq.k_active, A) and rdb.zscore(wq.k_leases, A) is None
    assert wq.claim(A, "new") == (Claim.CLAIMED, A), "queued again"
    assert wq.done(B, f"old/1:{B}", Outcome.OK)
    assert rdb.zscore(wq.k_leases, B) is None
    assert _owner(rdb, wq, A) == "new" and rdb.zscore(wq.k_leases, A) is None


def test_done_given_the_time_held_reads_no_clock(wq: WorkQueue, rdb: redis.Redis) -> None:
    """With the time since the claim answered, done's time is the claim's plus that: a timer
    starts there, and no clock is read; without it, Redis' clock."""
    wq.add([A])
    assert wq.claim(A, "w1") == (Claim.CLAIMED, A)
    since = Owner.parse(rdb.hget(wq.k_active, A) or b"").since_ms
    assert since is not None
    rdb.config_resetstat()
    assert wq.done(A, "w1", Outcome.AFTER, delay=60, held=2.5)
    assert "cmdstat_time" not in rdb.info("commandstats")
    assert rdb.zscore(wq.k_timers, A) == since + 2_500 + 60_000
    wq.add([A])
    assert wq.claim(A, "w2") == (Claim.CLAIMED, A)
    before = int(rdb.time()[0]) * 1000
    assert wq.done(A, "w2", Outcome.ERROR)
    assert (rdb.zscore(wq.k_timers, A) or 0) >= before
