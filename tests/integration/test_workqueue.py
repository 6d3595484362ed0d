"""The workqueue's transitions, one process, real Redis: each guarantee in isolation."""

from __future__ import annotations

import time

import pytest
import redis

from rollout_workers.keys import InvalidKey, ObjectKey
from rollout_workers.workqueue import Claim, Outcome, WorkQueue
from tests.integration.conftest import SentLog

A = ObjectKey("default/a")
B = ObjectKey("default/b")


def test_add_coalesces_while_queued(wq: WorkQueue, sent: SentLog) -> None:
    first = wq.add([A, B])
    again = wq.add([A, A])
    assert first.queued == [A, B]
    assert again.queued == [] and again.coalesced == [A, A]
    assert sent.sent == [A, B]


def test_claim_is_exclusive_and_a_stale_message_is_dropped(wq: WorkQueue) -> None:
    wq.add([A])
    assert wq.claim(A, "w1") is Claim.CLAIMED
    # A duplicate message for the same add finds the key no longer queued.
    assert wq.claim(A, "w2") is Claim.STALE


def test_add_while_active_marks_dirty_and_done_requeues(wq: WorkQueue, sent: SentLog) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    result = wq.add([A])
    assert result.dirty == [A] and result.queued == []
    assert wq.done(A, "w1", Outcome.OK) is True
    assert sent.sent == [A, A]
    assert wq.claim(A, "w2") is Claim.CLAIMED


def test_claim_that_loses_marks_dirty_and_drops(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    # Force the key queued again while w1 holds it (as a lease requeue race would).
    rdb.zadd(wq.k_queued, {A: 0})
    assert wq.claim(A, "w2") is Claim.BUSY
    assert rdb.sismember(wq.k_dirty, A)
    wq.done(A, "w1", Outcome.OK)
    assert sent.sent.count(A) == 2  # the dirty key was queued again


def test_done_by_a_fenced_owner_changes_nothing(wq: WorkQueue, rdb: redis.Redis) -> None:
    wq.add([A])
    wq.claim(A, "w1")
    rdb.hset(wq.k_active, A, "w2")  # w1's lease was taken over
    assert wq.done(A, "w1", Outcome.ERROR) is False
    assert rdb.hget(wq.k_active, A) == b"w2"
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
    rdb.zadd(wq.k_leases, {A: 0})  # the lease ran out
    result = wq.tick()
    assert result.expired == 1
    assert sent.sent == [A, A]
    assert wq.claim(A, "alive") is Claim.CLAIMED
    assert wq.done(A, "dead", Outcome.OK) is False
    assert wq.done(A, "alive", Outcome.OK) is True


def test_lost_message_is_sent_again_after_stale_after(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    wq.add([A])
    rdb.zadd(wq.k_queued, {A: 1})  # queued long ago, its message lost
    assert wq.tick().resent == 1
    assert sent.sent == [A, A]
    assert wq.tick().resent == 0  # its wait restarted


def test_requeue_after_resets_failures_and_sets_a_timer(wq: WorkQueue, rdb: redis.Redis) -> None:
    rdb.hset(wq.k_failures, A, 3)
    wq.add([A])
    wq.claim(A, "w")
    wq.done(A, "w", Outcome.AFTER, delay=5)
    assert not rdb.hexists(wq.k_failures, A)
    due = rdb.zscore(wq.k_timers, A)
    now_s, _ = rdb.time()
    assert due is not None and 4_000 < due - now_s * 1000 <= 6_000


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
        wq.claim(key, "w")
        wq.done(key, "w", Outcome.OK)
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
    deadline = rdb.zscore(wq.k_leases, A)
    assert deadline is not None
    assert deadline / 1000 - time.time() == pytest.approx(wq._settings.lease_ttl, abs=0.5)


def test_requeue_sends_again_only_keys_still_queued(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    C = ObjectKey("default/c")
    wq.add([A, B])
    rdb.zadd(wq.k_queued, {A: 1})  # reserved long ago by a host that is stopping
    wq.claim(B, "other")  # B's duplicate message was claimed elsewhere meanwhile
    assert wq.requeue([A, B, C]) == [A]
    assert sent.sent == [A, B, A]
    assert float(rdb.zscore(wq.k_queued, A) or 0) > 1  # a fresh wait: no stale resend soon
    assert wq.claim(A, "new") is Claim.CLAIMED
    assert wq.claim(A, "late") is Claim.STALE  # the stopping host's message, if ever run
    assert int(rdb.hget(wq.k_stats, "handed_back") or 0) == 1


def test_release_hands_back_a_hosts_keys_and_fences_the_holders(
    wq: WorkQueue, sent: SentLog, rdb: redis.Redis
) -> None:
    C = ObjectKey("default/c")
    wq.add([A, B, C])
    wq.claim(A, "host-1:100:aaa")
    wq.claim(B, "host-1:101:bbb")
    wq.claim(C, "host-1:1000:ccc")  # another process whose pid starts alike
    wq.add([A])  # dirty: the release queues it once, not twice
    assert sorted(wq.release(["host-1:100:", "host-1:101:"])) == [A, B]
    assert sorted(sent.sent[3:]) == [A, B]
    assert not rdb.sismember(wq.k_dirty, A)
    assert rdb.hget(wq.k_active, C) == b"host-1:1000:ccc"
    assert wq.heartbeat(A, "host-1:100:aaa") is False  # fenced
    assert wq.done(B, "host-1:101:bbb", Outcome.OK) is False
    assert wq.claim(A, "host-2:7:x") is Claim.CLAIMED
    assert int(rdb.hget(wq.k_stats, "released") or 0) == 2
    assert wq.release([]) == []
