"""The WorkQueue: one task kind's queue state in Redis, driven by the Lua scripts beside it."""

from __future__ import annotations

import enum
import functools
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple, Protocol

import redis

from rollout_workers.counters import WORKQUEUE_BUCKETS, Increment, PendingCounts, observe
from rollout_workers.counters import Keys as MetricKeys
from rollout_workers.keys import ObjectKey, own_key, parse_key
from rollout_workers.redisclient import Script
from rollout_workers.settings import QueueSettings

log = logging.getLogger(__name__)

#: Sends one Celery message per key. Injected so this package never imports Celery.
Sender = Callable[[Sequence[ObjectKey]], None]


class Envelope(Protocol):
    """A key's message as the broker holds it (a kombu envelope), for a script to push itself:
    `add` and `done` queue a key and push its message in one step."""

    @property
    def list_key(self) -> str:
        """The Redis list the messages go on."""

    def __call__(self, key: ObjectKey) -> str:
        """A fresh message for `key`, serialized."""


#: Recent reconcile durations kept per kind, for percentiles.
DURATIONS_KEPT = 10_000

#: A lapsed host is forgotten after this many lapse periods, once every kind's tick saw it.
FORGET_LAPSED = 4


class Claim(enum.Enum):
    CLAIMED = 1
    STALE = 0
    BUSY = 2


class Claimed(NamedTuple):
    """What a claim did, and to which key: with fairness on, the key whose turn it is, which
    need not be the message's."""

    status: Claim
    key: ObjectKey


class ClaimRead(Protocol):
    """A read that runs in the claim's own script call, for the key claimed, so that the
    reconcile need not make it: `source` defines the Lua function
    `claim_read(k, KEYS, ARGV, guard)`, called with the claimed key, `keys` and `args`, and the
    queue's `claim_guard` key (nil for none); it returns what comes back with the claim
    (`claim_guarded`) and, given a guard, 1 if that key exists, else 0 (the read reads it with
    its own, and the claim does not). The caller that reads the cache knows its layout; this
    package only runs it."""

    @property
    def source(self) -> str: ...

    @property
    def keys(self) -> Sequence[str]: ...

    @property
    def args(self) -> Sequence[str]: ...


#: Runs claim.lua, and for a key claimed, the claim's read. KEYS: claim's without its guard,
#: the guard if any, then the read's. ARGV: how many keys and arguments claim takes, '1' when a
#: guard follows claim's keys, claim's arguments, then the read's. Returns claim's answer (its
#: guard as the read found it) with the read's appended.
_CLAIM_READ = """
local nk, na = tonumber(ARGV[1]), tonumber(ARGV[2])
local ckeys, cargs, rkeys, rargs = {}, {}, {}, {}
for i = 1, nk do ckeys[i] = KEYS[i] end
local guard, first = nil, nk + 1
if ARGV[3] == '1' then guard, first = KEYS[nk + 1], nk + 2 end
for i = first, #KEYS do rkeys[#rkeys + 1] = KEYS[i] end
for i = 1, na do cargs[i] = ARGV[3 + i] end
for i = 4 + na, #ARGV do rargs[#rargs + 1] = ARGV[i] end
local got = claim_lua(ckeys, cargs)
if got[1] == 1 then
  local read, guarded = claim_read(got[2], rkeys, rargs, guard)
  got[5] = read
  if guard then got[3] = guarded end
end
return got
"""


class Priority(enum.StrEnum):
    """The class of an add: events and user actions go before periodic resyncs."""

    EVENT = "e"
    RESYNC = "r"


class Outcome(enum.StrEnum):
    OK = "ok"
    AFTER = "after"
    ERROR = "error"
    GONE = "gone"


@dataclass(frozen=True)
class AddResult:
    queued: list[ObjectKey] = field(default_factory=list)
    coalesced: list[ObjectKey] = field(default_factory=list)
    dirty: list[ObjectKey] = field(default_factory=list)


@dataclass(frozen=True)
class TickResult:
    sent: int
    due: int
    expired: int
    resent: int
    lapsed: int = 0  # keys sent again because the host holding their message lapsed
    lost: int = 0  # keys sent again because their message was nowhere (see tick.lua)
    taken: int = 0  # keys a lapsed host held, queued again before their leases expired
    next_due: float | None = None  # seconds until the earliest timer left; None: no timer


@dataclass(frozen=True)
class TenantDepth:
    tenant: str
    events: int  # keys queued by events and user actions
    resyncs: int  # keys queued by periodic resyncs

    @property
    def queued(self) -> int:
        return self.events + self.resyncs


@dataclass(frozen=True)
class QueueStats:
    kind: str
    queued: int
    active: int
    dirty: int
    timers: int
    timers_due: int
    known: int
    failing: list[tuple[str, int]]
    counters: dict[str, int]
    fairness: str = "off"
    tenants: list[TenantDepth] = field(default_factory=list)  # the deepest first


#: The scripts that read owner records, preceded by owner.lua's functions.
_OWNER_READERS = frozenset({"claim", "done", "extend", "tick", "release"})


def _lua(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.lua").read_text()


@functools.cache
def script_source(name: str, fair_mode: str | None = None) -> str:
    """The text of one of the workqueue's Lua scripts (`add`, `claim`, ...), preceded by the
    functions it uses: clock.lua's, owner.lua's for the scripts that read owner records, and,
    with a fairness mode, that mode and fair.lua's."""
    text = _lua("clock") + (_lua("owner") if name in _OWNER_READERS else "") + _lua(name)
    if fair_mode is None:
        return text
    return f"local FAIR_MODE = {fair_mode!r}\n{_lua('fair')}{text}"


def claim_read_script(fair_mode: str, read_source: str) -> str:
    """claim.lua and a ClaimRead's source as functions, then the glue that runs them."""
    claim = script_source("claim", fair_mode)
    return f"local function claim_lua(KEYS, ARGV)\n{claim}\nend\n{read_source}\n{_CLAIM_READ}"


def held_key(prefix: str, kind: str) -> str:
    """The hash key -> host that has the key's message in hand: the worker host that reserved
    it (written by the transport when it takes the message off the broker), or `host|pub`
    while a worker host publishes it. Cleared by claim."""
    return f"{prefix}:wq:{kind}:held"


def hosts_key(prefix: str) -> str:
    """The zset of worker hosts scored by their last heartbeat (ms, Redis time)."""
    return f"{prefix}:wq:hosts"


def token_prefix(host: str, pid: int | None = None) -> str:
    """The start of the owner tokens (`<host>/<pid>:<unique>`) of process `pid` of worker host
    `host`, or of all its processes. tick.lua reads the host back, up to the last '/', to take
    back the claims of a host that lapsed."""
    return f"{host}/" if pid is None else f"{host}/{pid}:"


class Owner(NamedTuple):
    """An `active` entry (owner.lua): the holder's owner token, when it claimed the key and
    until when its lease runs (Redis ms)."""

    token: str
    since_ms: int | None  # None: a record of the layout before (the token alone)
    deadline_ms: int | None  # None: that layout's lease deadline is in the `leases` zset

    @classmethod
    def parse(cls, value: bytes | str) -> Owner:
        token, since, deadline = [*_text(value).split(" "), "", ""][:3]
        return cls(token, _ms_or_none(since), _ms_or_none(deadline))


def _ms_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def publisher(host: str) -> str:
    """How a worker host records itself as the publisher of a key's message."""
    return f"{host}|pub"


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


#: client-go's queue-duration bucket bounds in ms, for claim.lua (which sees ms timestamps).
_BOUNDS_MS = [f"{b * 1000:.12g}" for b in WORKQUEUE_BUCKETS]


class WorkQueue:
    """The queue of one task kind. Safe to share between threads; holds no state of its own."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        kind: str,
        prefix: str,
        settings: QueueSettings,
        send: Sender,
        host: str | None = None,
        replicas: int = 0,
        replicas_timeout: float = 0.2,
        envelope: Envelope | None = None,
        claim_guard: str | None = None,
        counts: PendingCounts | None = None,
    ) -> None:
        """`host` names the worker host this process belongs to (None elsewhere): messages it
        publishes are recorded as in its hands until sent, so its death cannot lose them.
        `replicas`: how many replicas a claim must reach (WAIT) before it is handed out.
        `envelope`: makes the message of a key that `add` or `done` queues, which the script
        then pushes itself (no publish afterwards, nothing to record as being published); None
        sends it through `send`.
        `claim_guard`: a key whose existence each claim reports (`claim_guarded`).
        `counts`: the process' pending counters, where this queue's own (adds, reconciles by
        outcome, retries, queue durations, recent reconcile durations) wait to be written with
        the others, at most `counts.interval` later; None counts them in the scripts."""
        self.kind = kind
        self.claim_guard = claim_guard
        self._replicas, self._replicas_timeout_ms = replicas, _ms(replicas_timeout)
        self._redis = client
        self._settings = settings
        self._send = send
        self._envelope = envelope
        self._counts = counts
        self.host = host
        self._holder = publisher(host) if host else ""
        self._prefix = prefix
        base = f"{prefix}:wq:{kind}"
        self.k_queued = f"{base}:queued"
        self.k_active = f"{base}:active"
        self.k_leases = f"{base}:leases"
        self.k_dirty = f"{base}:dirty"
        self.k_dirty_own = f"{base}:dirty-own"
        self.k_failures = f"{base}:failures"
        self.k_timers = f"{base}:timers"
        self.k_known = f"{base}:known"
        self.k_stats = f"{base}:stats"
        self.k_durations = f"{base}:durations"
        self.k_held = held_key(prefix, kind)
        self.k_hosts = hosts_key(prefix)
        self.k_metrics = MetricKeys(prefix).workqueue(kind)
        self.k_fair = f"{base}:fair"
        self.k_tenants = f"{base}:tenants"
        self.k_ticked = f"{base}:ticked"
        # The class queues and the tags hash that fair.lua names under k_fair, declared after
        # the keys a script indexes (unused by index: see fair.lua).
        self.k_fair_queues = {p: f"{self.k_fair}:q:{p.value}" for p in Priority}
        self.k_fair_fixed = [f"{self.k_fair}:next", *self.k_fair_queues.values()]

        def script(source: str) -> Script:
            return Script(client, source)

        mode = settings.fair_mode
        self.add_source = script_source("add", mode)  # see add_call
        self._add = script(self.add_source)
        self._claim = script(script_source("claim", mode))
        self._claim_reads: dict[str, Script] = {}  # by the read's source
        self._extend = script(script_source("extend"))
        self._done = script(script_source("done", mode))
        self._add_after = script(script_source("add_after"))
        self._add_rate_limited = script(script_source("add_rate_limited"))
        self._tick = script(script_source("tick", mode))
        self._requeue = script(script_source("requeue", mode))
        self._release = script(script_source("release", mode))
        self._sent = script(script_source("sent"))

    # -- producers -------------------------------------------------------------------------

    def add(
        self,
        keys: Iterable[str],
        *,
        own: Mapping[str, str] | None = None,
        tenants: Mapping[str, str] | None = None,
        priority: Priority = Priority.EVENT,
    ) -> AddResult:
        """Mark keys as needing a reconcile; send a message for each one newly queued.

        `own` maps a key to the resourceVersion of the object's own watch event that is the
        only cause of this add: a key held by a worker is then marked dirty with it, and `done`
        does not queue the key again if its controller wrote that version itself.
        `tenants` maps a key to the tenant its object names (fairness by label: the watcher
        has the object); it is recorded for the adds that do not have it.
        `priority` RESYNC queues keys behind every event of their tenant; an EVENT add of a key
        a resync queued moves it up."""
        checked = [parse_key(k) for k in keys]
        if not checked:
            return AddResult()
        redis_keys, head, per_key = self.add_call(checked, own or {}, tenants or {}, priority)
        args = [*head, *(arg for one in per_key for arg in one)]
        return self.added(checked, self._add(keys=redis_keys, args=args))

    def add_call(
        self,
        keys: Sequence[ObjectKey],
        own: Mapping[str, str],
        tenants: Mapping[str, str],
        priority: Priority = Priority.EVENT,
    ) -> tuple[list[str], list[str], list[list[str]]]:
        """add.lua's Redis keys, leading arguments and arguments per key for these checked keys
        (see `add`), for a caller that runs `add_source` inside a script of its own."""
        per_key = []
        envelope = self._envelope
        for key in keys:
            version = own.get(key, "")
            message = envelope(key) if envelope is not None else ""
            per_key.append(
                [key, version if version.isdigit() else "", tenants.get(key, ""), message]
            )
        redis_keys = [
            self.k_queued,
            self.k_active,
            self.k_dirty,
            self.k_known,
            self.k_metrics,
            self.k_held,
            self.k_dirty_own,
            self.k_fair,
            self.k_tenants,
            *self.k_fair_fixed,
            envelope.list_key if envelope is not None else self.k_queued,
        ]
        count = "" if self._counts is not None else "1"
        return redis_keys, [self._holder, priority.value, count], per_key

    def added(self, keys: Sequence[ObjectKey], codes: Sequence[Any]) -> AddResult:
        """Sort add.lua's answer for `keys` and send a message for each key newly queued whose
        message the script did not push."""
        result = AddResult()
        sort = {
            1: result.queued,
            3: result.queued,
            0: result.coalesced,
            2: result.dirty,
            4: result.dirty,
        }
        unsent = []
        adds = 0
        for key, reply in zip(keys, codes, strict=True):
            code = int(reply)
            sort[code].append(key)
            adds += code in (1, 2, 3)
            if code == 1:
                unsent.append(key)
        if adds and self._counts is not None:
            self._counts.add([Increment(self.k_metrics, "adds", adds)])
        if unsent:
            self._publish(unsent)
        return result

    def add_after(self, keys: Iterable[str], seconds: float) -> None:
        """Queue keys once `seconds` have passed; an earlier pending due time is kept."""
        checked = [parse_key(k) for k in keys]
        if checked:
            self._add_after(keys=[self.k_timers, self.k_known], args=[_ms(seconds), *checked])

    def add_rate_limited(self, key: str) -> float:
        """Count a failure of `key` and queue it after its backoff; returns the delay (s)."""
        checked = parse_key(key)
        delay_ms = self._add_rate_limited(
            keys=[self.k_failures, self.k_timers, self.k_known, self.k_metrics],
            args=[checked, *self._backoff_args()],
        )
        return int(delay_ms) / 1000

    def forget(self, key: str) -> None:
        """Stop tracking failures of `key` (its backoff starts again from the base)."""
        self._redis.hdel(self.k_failures, parse_key(key))

    def remove(self, key: str) -> None:
        """Drop `key` from the known set, its timer and its failures (the object is gone)."""
        checked = parse_key(key)
        pipe = self._redis.pipeline(transaction=True)
        pipe.srem(self.k_known, checked)
        pipe.zrem(self.k_timers, checked)
        pipe.hdel(self.k_failures, checked)
        pipe.execute()

    # -- consumers -------------------------------------------------------------------------

    def claim(self, key: ObjectKey, token: str) -> Claimed:
        """Claim for a message sent for `key`: with fairness off that key, else the key whose
        turn it is (fair queueing over tenants, events before resyncs, oldest first)."""
        return self.claim_guarded(key, token)[0]

    def claim_guarded(
        self, key: ObjectKey, token: str, read: ClaimRead | None = None
    ) -> tuple[Claimed, bool, Any]:
        """`claim`, whether `claim_guard` existed as the key was claimed (True when there is
        none, or nothing was claimed), and what `read` returned for the key claimed (None when
        none was given or nothing was claimed)."""
        keys = [
            self.k_queued,
            self.k_active,
            self.k_leases,
            self.k_dirty,
            self.k_stats,
            self.k_metrics,
            self.k_held,
            self.k_dirty_own,
            self.k_fair,
            self.k_tenants,
            *self.k_fair_fixed,
        ]
        bounds = _BOUNDS_MS if self._counts is None else []
        args: list[Any] = [key, token, _ms(self._settings.lease_ttl), *bounds]
        guard_key = [self.claim_guard] if self.claim_guard is not None else []
        if read is None:
            code, claimed, *rest = self._claim(keys=[*keys, *guard_key], args=args)
        else:
            script = self._claim_reads.get(read.source)
            if script is None:
                script = self._claim_reads[read.source] = Script(
                    self._redis, claim_read_script(self._settings.fair_mode, read.source)
                )
            code, claimed, *rest = script(
                keys=[*keys, *guard_key, *read.keys],
                args=[len(keys), len(args), "1" if guard_key else "", *args, *read.args],
            )
        status = Claim(int(code))
        guard = rest[:1]
        if rest and self._counts is not None:
            waited = int(rest[1]) / 1000
            self._counts.add(observe(self.k_metrics, "queue", WORKQUEUE_BUCKETS, waited))
        if status is Claim.CLAIMED and self._replicas:
            # Replicated before the reconcile starts: a failover promotes a replica that holds
            # the claim, so no other worker can claim the key while this one reconciles it.
            acked = int(self._redis.wait(self._replicas, self._replicas_timeout_ms))
            if acked < self._replicas:
                log.warning(
                    "claim of %s %s reached %d of %d replicas in time; reconciling anyway",
                    self.kind, claimed, acked, self._replicas,
                )  # fmt: skip
        claim = Claimed(status, ObjectKey(_text(claimed)))
        return claim, not guard or bool(int(guard[0])), rest[2] if len(rest) > 2 else None

    def heartbeat(self, key: ObjectKey, token: str) -> bool:
        """Extend the lease; False means another owner has the key and the caller must stop."""
        owned = self._extend(
            keys=[self.k_active, self.k_leases], args=[key, token, _ms(self._settings.lease_ttl)]
        )
        return bool(int(owned))

    def done(
        self,
        key: ObjectKey,
        token: str,
        outcome: Outcome,
        *,
        delay: float = 0.0,
        duration: float = 0.0,
        increments: Sequence[Increment] = (),
        versions: Sequence[tuple[str, str]] = (),
        versions_ttl: int = 0,
        held: float | None = None,
    ) -> bool:
        """Release a claim and apply its outcome; False when the lease had been lost.

        `held`: the seconds since the claim answered, by the caller's monotonic clock; the
        script then takes the claim's time (Redis') plus that as the time now (a timer's start,
        the key's enqueue time) and reads no clock.

        `increments` (metric counters) are applied in the same script, only when the lease
        was still held, so they cost no round trip and count each reconcile once.
        `versions` ((Redis key, resourceVersion) pairs: the reconcile's writes, see
        cache/written.py) are kept for `versions_ttl` seconds unless a newer one is, first and
        whoever holds the key, so the own-event check below sees them.
        A key dirty only by the object's own watch events (see `add`'s `own`) is not queued
        again when its controller recorded writing that version (`keys.own_key`).
        """
        keys = [
            self.k_queued,
            self.k_active,
            self.k_leases,
            self.k_dirty,
            self.k_failures,
            self.k_timers,
            self.k_known,
            self.k_stats,
            self.k_durations,
            self.k_metrics,
            self.k_held,
            self.k_dirty_own,
            own_key(self._prefix, self.kind, key),
            self.k_fair,
            self.k_tenants,
            *self.k_fair_fixed,
            # Where `message` goes (an unused stand-in without one).
            self._envelope.list_key if self._envelope is not None else self.k_queued,
        ]
        message = self._envelope(key) if self._envelope is not None else ""
        extra: list[str | int] = [len(versions), versions_ttl]
        for name, version in versions:
            keys.append(name)
            extra += [len(keys), version]
        index: dict[str, int] = {}
        for inc in increments:
            if inc.key not in index:
                keys.append(inc.key)
                index[inc.key] = len(keys)
            extra += [index[inc.key], inc.field, inc.amount]
        owned, send = self._done(
            keys=keys,
            args=[
                key,
                token,
                outcome.value,
                _ms(delay),
                f"{duration * 1000:.3f}",
                *self._backoff_args(),
                DURATIONS_KEPT if self._counts is None else 0,
                self._holder,
                message,
                "" if held is None else str(math.ceil(held * 1000)),
                *extra,
            ],
        )
        if int(owned) and self._counts is not None:
            self._count_done(self._counts, outcome, duration)
        if int(send) == 1:  # queued again, its message not pushed by the script
            self._publish([key])
        return bool(int(owned))

    def _count_done(self, counts: PendingCounts, outcome: Outcome, duration: float) -> None:
        """What done.lua counts when the queue has no pending counters."""
        increments = [
            Increment(self.k_stats, "reconciles", 1),
            Increment(self.k_stats, outcome.value, 1),
        ]
        if outcome is Outcome.ERROR:
            increments.append(Increment(self.k_metrics, "retries", 1))
        counts.add(increments)
        counts.push(self.k_durations, f"{duration * 1000:.3f}", DURATIONS_KEPT)

    # -- hand-back on shutdown --------------------------------------------------------------

    def requeue(self, keys: Iterable[str]) -> list[ObjectKey]:
        """Send again, at once, the still-queued keys whose messages a stopping host reserved
        but will not start; returns the keys sent."""
        checked = [parse_key(k) for k in keys]
        if not checked:
            return []
        sent = [
            ObjectKey(_text(k))
            for k in self._requeue(
                keys=[self.k_queued, self.k_stats, self.k_held, self.k_fair, self.k_tenants],
                args=[self._holder, *checked],
            )
        ]
        if sent:
            self._publish(sent)
        return sent

    def release(self, token_prefixes: Sequence[str]) -> list[ObjectKey]:
        """Take back every key held under a token with one of these prefixes (a stopping host's
        processes), fencing the holders, and queue each again at once; returns the keys."""
        if not token_prefixes:
            return []
        reply = self._release(
            keys=[
                self.k_queued,
                self.k_active,
                self.k_leases,
                self.k_dirty,
                self.k_stats,
                self.k_held,
                self.k_dirty_own,
                self.k_fair,
                self.k_tenants,
                *self.k_fair_fixed,
            ],
            args=[self._holder, *token_prefixes],
        )
        sent = [ObjectKey(_text(k)) for k in reply]
        if sent:
            self._publish(sent)
        return sent

    # -- system ----------------------------------------------------------------------------

    def tick(self, every: float = 1.0, *, timers_only: bool = False) -> TickResult:
        """Queue due timers, requeue expired leases and the claims of lapsed hosts, resend
        messages of stale queued keys. `every`: the seconds between ticks; a gap of more than
        twice that plus a second (Redis or the beat was down) holds back taking claims from
        lapsed hosts until they have had `host_lapse` to stamp their heartbeats again.
        `timers_only`: queue the due timers and nothing else (the beat's timer pass, which
        runs more often than the tick so that a timer fires close to when it is due)."""
        limit = self._settings.tick_batch
        reply = self._tick(
            keys=[
                self.k_queued,
                self.k_active,
                self.k_leases,
                self.k_dirty,
                self.k_timers,
                self.k_stats,
                self.k_metrics,
                self.k_held,
                self.k_hosts,
                self.k_dirty_own,
                self.k_fair,
                self.k_tenants,
                # kombu's Redis transport keeps a queue's messages in a list of its name.
                self._settings.for_kind(self.kind),
                self.k_ticked,
                *self.k_fair_fixed,
            ],
            args=[
                limit,
                _ms(self._settings.stale_after),
                _ms(self._settings.host_lapse),
                _ms(FORGET_LAPSED * self._settings.host_lapse),
                _ms(self._settings.lost_after),
                _ms(self._settings.lease_ttl),
                _ms(2 * every + 1),
                "1" if timers_only else "",
            ],
        )
        *keys, due, expired, resent, lapsed, lost, taken, next_ms = reply
        to_send = [ObjectKey(_text(k)) for k in keys]
        if to_send:
            self._publish(to_send)
        return TickResult(
            sent=len(to_send),
            due=int(due),
            expired=int(expired),
            resent=int(resent),
            lapsed=int(lapsed),
            lost=int(lost),
            taken=int(taken),
            next_due=None if int(next_ms) < 0 else int(next_ms) / 1000,
        )

    def held(self) -> dict[ObjectKey, str]:
        """Who has each queued key's message in hand: a host, or `host|pub` (publishing)."""
        return {ObjectKey(_text(k)): _text(v) for k, v in self._redis.hgetall(self.k_held).items()}

    def known(self, namespace: str | None = None) -> list[ObjectKey]:
        """Every key this queue has been given and not removed, optionally in one namespace."""
        match = f"{namespace}/*" if namespace else None
        keys = self._redis.sscan_iter(self.k_known, match=match, count=1000)
        return sorted(ObjectKey(_text(k)) for k in keys)

    def resync(self, namespace: str | None = None, batch: int = 1000) -> AddResult:
        """Add every known key (the periodic resync, or `rollouts enqueue --all`)."""
        keys = self.known(namespace)
        total = AddResult()
        for i in range(0, len(keys), batch):
            part = self.add(keys[i : i + batch], priority=Priority.RESYNC)
            total.queued.extend(part.queued)
            total.coalesced.extend(part.coalesced)
            total.dirty.extend(part.dirty)
        return total

    def stats(self, top: int = 10) -> QueueStats:
        now_s, now_us = self._redis.time()
        now_ms = int(now_s) * 1000 + int(now_us) // 1000
        pipe = self._redis.pipeline(transaction=False)
        pipe.zcard(self.k_queued)
        pipe.hlen(self.k_active)
        pipe.scard(self.k_dirty)
        pipe.zcard(self.k_timers)
        pipe.zcount(self.k_timers, "-inf", now_ms)
        pipe.scard(self.k_known)
        pipe.hgetall(self.k_failures)
        pipe.hgetall(self.k_stats)
        for q in self.k_fair_queues.values():
            pipe.zrange(q, 0, -1)
        queued, active, dirty, timers, due, known, failures, counters, *classes = pipe.execute()
        failing = sorted(
            ((_text(k), int(v)) for k, v in failures.items()), key=lambda kv: (-kv[1], kv[0])
        )
        return QueueStats(
            kind=self.kind,
            queued=int(queued),
            active=int(active),
            dirty=int(dirty),
            timers=int(timers),
            timers_due=int(due),
            known=int(known),
            failing=failing[:top],
            counters={_text(k): int(v) for k, v in counters.items()},
            fairness=self._settings.fairness,
            tenants=self._tenant_depths(classes, top),
        )

    def _tenant_depths(self, classes: list[list[bytes]], top: int) -> list[TenantDepth]:
        """The `top` tenants with the most keys in the class queues (fair.lua)."""
        keys = [[_text(k) for k in members] for members in classes]
        labelled: dict[str, str] = {}
        if self._settings.fair_mode == "label" and any(keys):
            everyone = sorted({k for members in keys for k in members})
            found = self._redis.hmget(self.k_tenants, everyone)
            labelled = {k: _text(t) for k, t in zip(everyone, found, strict=True) if t}
        depth: dict[str, dict[Priority, int]] = {}
        for p, members in zip(Priority, keys, strict=True):
            for k in members:
                tenant = labelled.get(k) or k.partition("/")[0]
                counts = depth.setdefault(tenant, {})
                counts[p] = counts.get(p, 0) + 1
        ranked = [
            TenantDepth(t, d.get(Priority.EVENT, 0), d.get(Priority.RESYNC, 0))
            for t, d in depth.items()
        ]
        ranked.sort(key=lambda d: (-d.queued, d.tenant))
        return ranked[:top]

    def durations(self) -> list[float]:
        """The last DURATIONS_KEPT reconcile durations in seconds, newest first."""
        newest = self._redis.lrange(self.k_durations, 0, DURATIONS_KEPT - 1)
        return [float(v) / 1000 for v in newest]

    def _publish(self, keys: Sequence[ObjectKey]) -> None:
        """Send the keys' messages; a worker host then drops its "publishing" records (one
        script call per batch, only where a worker host publishes: dirty requeues, hand-backs)."""
        self._send(keys)
        if self._holder:
            try:
                self._sent(keys=[self.k_held], args=[self._holder, *keys])
            except redis.RedisError as err:
                # The messages are sent; a record left behind costs at most a duplicate.
                log.warning("cannot clear the publish records of %d keys: %s", len(keys), err)

    def _backoff_args(self) -> tuple[int, int]:
        return _ms(self._settings.backoff_base), _ms(self._settings.backoff_max)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
