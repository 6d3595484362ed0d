"""client-go's workqueue guarantees, rebuilt on Redis for a pool of Celery workers.

Celery gives transport and a worker pool; it does not give per-key exclusivity or coalescing.
The queue state lives in Redis and every transition is one atomic Lua script, so any number of
processes on any number of hosts can add, claim and finish keys. A Celery message carries only
a key and is merely a wake-up: the Redis state decides whether it is acted on.

Guarantees, per task kind (`rollouts`, `analysisruns`, `experiments`):

* Coalescing: a key added many times while it waits is processed once (`queued` zset; only the
  add that inserts the key sends a message).
* Fairness: a message is a wake-up for any queued key. With `queue.fairness` on (by namespace,
  or by a tenant label the watcher records in the `tenants` hash), `claim` takes the key whose
  turn it is: start-time fair queueing over the tenants with queued keys (each key pushed is
  tagged max(the class's virtual time, its tenant's next tag), and `claim` takes the lowest
  tag), events and user actions (class `e`) before periodic resyncs (`r`, `WorkQueue.resync`),
  each class one zset, and the oldest key first within a tenant; an event for a key a resync
  queued moves it up. So one tenant's mass update or a resync delays another tenant's event by
  about one turn per tenant with queued events, not by their depth (fair.lua). Each queued key
  still has one message outstanding; the message that took another key leaves its own key's
  message standing for it, and the dead-host and hand-back paths make up for a lost message by
  count. With fairness `off`, a message claims its own key (plain FIFO).
* Exclusivity: a key is never processed by two live workers at once. `claim` takes a lease with
  an owner token, in one owner record (`active` hash: token, claim time, lease deadline;
  owner.lua); a claim that finds another live owner marks the key dirty and drops its
  message.
* No lost update: a key added while it is being processed is marked dirty and queued again when
  its holder calls `done`. A reconcile starts after its claim removed the key from `queued`, so
  it reads state at least as new as every add before the claim.
* Rate limiting: `add_rate_limited` and a failed `done` delay the key by base * 2^(failures-1),
  capped at max; a successful `done` (or `forget`) resets the count.
* Delays: `add_after` puts the key in a `timers` zset scored by due time; the earliest due time
  wins. The beat-driven `tick` moves due keys onto the queue, and between ticks the beat's timer
  passes (`tick` with `timers_only`) move them as they come due. There is no Celery eta/countdown.
  A `done` whose outcome is a requeue of no delay queues the key at once instead (client-go's
  AddAfter of a non-positive delay is an Add): on a timer it would wait for the beat's next pass and
  run apart from the events that meanwhile queued the key.
* Dead workers: a lease not extended by heartbeat expires and `tick` (which reads every owner
  record: one per key being reconciled) queues the key again. The old holder is fenced off:
  its heartbeat and its `done` find another token and change nothing.
* Dead hosts: a key whose worker host dies (kill -9, lost node) is reconciled again within
  `host_lapse` + 2 s at default settings, whether the host held it or only had its message in
  hand. Hosts stamp a heartbeat every `host_heartbeat`; once one is `host_lapse` old:
  - claimed keys: an owner token names its host (`<host>/<pid>:<unique>`). A key held by a
    lapsed host whose lease was not extended for `host_lapse` either (a live holder extends it
    every `host_lapse`/2 at most) is taken back by `tick` as if its lease had expired. Right
    after a gap in the ticks (a Redis failover, a beat restart) every host looks lapsed until
    it stamps again, so claims are taken back only once the ticks have run for `host_lapse`;
    until then the lease TTL bounds the wait.
  - messages in hand: reserved or prefetched (the transport records key -> host in the `held`
    hash as it takes the message off the broker, one HSET in place of kombu's unacked
    bookkeeping, written by the script that pops the message while messages keep coming), or
    being published (a worker host's add/done/requeue/release records
    `host|pub` in the script that queues the key, cleared once sent; a worker's `done` pushes
    a dirty key's message in the script itself, so it records nothing). `tick` sends again every
    still-queued key recorded against the lapsed host. `claim` clears the record, so the common
    path costs no round trip of its own (one HSET after a BRPOP), where kombu's acks would cost
    two, and one HDEL inside the claim.
* Lost or duplicated messages: a duplicate finds the key not queued and is dropped (`stale`);
  a message lost otherwise (a publisher that is not a worker host dying between queuing a key
  and sending it, a host dying between popping a message and recording it) leaves the key
  queued. While no message waits on the kind's broker list, `tick` sends again every key queued
  longer than `lost_after` (2 s) that no host has in hand: its message is nowhere. Behind a
  backlog it waits `stale_after` instead: the last-resort net. Either costs at most one extra
  reconcile.
* Metrics: the scripts keep client-go's workqueue metrics beside the state they describe (adds,
  retries, the queue-duration histogram at claim, claim times for unfinished work in the
  `active` owner records), and `done`
  applies the caller's metric increments in the same atomic step as the outcome, so a
  reconcile is counted once, only by the owner of its lease, at no extra round trip.
* Graceful hand-back: a worker host told to stop (SIGTERM) stops taking messages, lets each
  reconcile in hand finish and call `done`, and `requeue`s at once every key whose message it
  had reserved but not started, so another host takes it within moments rather than after the
  message's visibility timeout or `stale_after`. A reconcile still running when the host's
  grace period ends is abandoned: `release` hands its key back (queued at once, not after the
  lease TTL) and fences the old holder by its owner token, as an expired lease would.

All times come from Redis' own clock (`TIME`), so hosts with skewed clocks agree on deadlines.
"""

from rollout_workers.workqueue.hosts import Hosts
from rollout_workers.workqueue.queue import (
    AddResult,
    Claim,
    Claimed,
    ClaimRead,
    Envelope,
    Outcome,
    Owner,
    Priority,
    QueueStats,
    Sender,
    TenantDepth,
    TickResult,
    WorkQueue,
    held_key,
    hosts_key,
    token_prefix,
)

__all__ = [
    "AddResult",
    "Claim",
    "ClaimRead",
    "Claimed",
    "Envelope",
    "Hosts",
    "Outcome",
    "Owner",
    "Priority",
    "QueueStats",
    "Sender",
    "TenantDepth",
    "TickResult",
    "WorkQueue",
    "held_key",
    "hosts_key",
    "token_prefix",
]
