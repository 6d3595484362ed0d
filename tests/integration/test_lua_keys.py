"""Every key a Lua script touches is declared in its KEYS, or is on the allowlist below.

Redis Cluster routes a script by its KEYS and refuses a key in another slot, so a script that
computes a key name (from a prefix, or from what it reads) cannot run there as it is. Here
every script the code registers is run with `redis` shadowed by a table whose `call`/`pcall`
check each key argument against KEYS (by the command's key positions, the table below) and
record what was not declared; then a realistic workload runs through the real Python APIs.
The undeclared keys, as patterns, must be exactly the allowlist: a new computed key fails,
and so does an allowlist entry that no longer happens. docs/redis-cluster.md says what each
entry would become on a Cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.commands.core import Script

from rollout_workers import redisclient
from rollout_workers.cache import CacheWriter, Change
from rollout_workers.cache.fence import SET_FENCED, Fence, fence_key
from rollout_workers.cache.store import (
    INDEXED_OBJECTS,
    OWNER_AND_OWNED,
    OWNER_CLAIM_READ,
    Lister,
    OwnerReads,
    apply_source,
)
from rollout_workers.cache.written import _RECORD, WrittenVersions
from rollout_workers.celeryapp import transport
from rollout_workers.celeryapp.sender import SyncSender
from rollout_workers.counters import Increment
from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.notifications.outbox import _CREATE, Outbox
from rollout_workers.notifications.source import CONFIGMAP_NAME, ConfigCache
from rollout_workers.settings import QueueSettings, Settings
from rollout_workers.watcher import leader
from rollout_workers.watcher.events import EventQueuer, event_script
from rollout_workers.watcher.leader import LeaderLease
from rollout_workers.workqueue import Claim, Hosts, Outcome, Priority, WorkQueue
from rollout_workers.workqueue.queue import claim_read_script, hosts_key, script_source
from tests.integration.conftest import SentLog, consume, host_app, set_lease

Obj = dict[str, Any]

#: Each command our scripts run -> (first, last, step) positions of its key arguments, as
#: Redis' COMMAND INFO gives them (last -1: through the last argument; 0: no keys). A command
#: missing here fails the test: add it with its positions.
KEY_POSITIONS: dict[str, tuple[int, int, int]] = {
    "DEL": (1, -1, 1),
    "EXISTS": (1, -1, 1),
    "EXPIRE": (1, 1, 1),
    "GET": (1, 1, 1),
    "HDEL": (1, 1, 1),
    "HEXISTS": (1, 1, 1),
    "HGET": (1, 1, 1),
    "HGETALL": (1, 1, 1),
    "HINCRBY": (1, 1, 1),
    "HMGET": (1, 1, 1),
    "MGET": (1, -1, 1),
    "HSET": (1, 1, 1),
    "HSETNX": (1, 1, 1),
    "INCR": (1, 1, 1),
    "LLEN": (1, 1, 1),
    "LPUSH": (1, 1, 1),
    "LTRIM": (1, 1, 1),
    "PEXPIRE": (1, 1, 1),
    "RPOP": (1, 1, 1),
    "SADD": (1, 1, 1),
    "SET": (1, 1, 1),
    "SMEMBERS": (1, 1, 1),
    "SMISMEMBER": (1, 1, 1),
    "SREM": (1, 1, 1),
    "TIME": (0, 0, 0),
    "ZADD": (1, 1, 1),
    "ZCARD": (1, 1, 1),
    "ZPOPMIN": (1, 1, 1),
    "ZRANGE": (1, 1, 1),
    "ZRANGEBYSCORE": (1, 1, 1),
    "ZREM": (1, 1, 1),
    "ZREMRANGEBYSCORE": (1, 1, 1),
    "ZSCORE": (1, 1, 1),
    "ZMSCORE": (1, 1, 1),
}

OLD_FAIR = "<prefix>:wq:<kind>:fair:{of,e,r,<class>:<tenant>}"
INDEX_SET = "<prefix>:cache:<type>:i:<index>:<value>"
WRITTEN = "<prefix>:written:<plural>:<key>"
EVENT_SCRIPT = "watcher/events.py event_script"
CLAIM_READ = "workqueue claim_read_script with cache/store.py OWNER_CLAIM_READ"

#: (script, key pattern) -> why the script computes the key instead of taking it in KEYS.
ALLOWLIST: dict[tuple[str, str], str] = {
    ("workqueue/tick.lua", OLD_FAIR): "fair_migrate: the layout before start-time fair "
    "queueing, read (one EXISTS) to move what a pool upgraded with keys queued left there",
    ("cache/apply.lua", INDEX_SET): "the new index sets come in ARGV (JSON), the old ones "
    "are read from the object's versions entry; an object's sets are known only per object",
    (EVENT_SCRIPT, INDEX_SET): "apply.lua inside the event script (as above)",
    ("cache/store.py OWNER_AND_OWNED", WRITTEN): "the written versions of an owner's objects, "
    "named by the owner index's members, read in the same script",
    ("cache/store.py OWNER_AND_OWNED", INDEX_SET): "a key the process reads for the first "
    "time: the owner index sets are named by the uid in the owner's JSON, read in the script",
    (CLAIM_READ, WRITTEN): "the owner read made with a claim, for the key claimed (with "
    "fairness, known only once claimed): its written version and its objects' (as above)",
    (CLAIM_READ, INDEX_SET): "the owner read made with a claim: the index sets are named by the "
    "uid in the claimed owner's JSON (as above)",
}

_PREFIX = r"lk\d"
#: Undeclared keys as patterns; a key matching none stays literal, so it fails the test.
SHAPES = [
    (re.compile(rf"^{_PREFIX}:wq:[^:]+:fair:(of|e|r|[er]:.+)$"), OLD_FAIR),
    (re.compile(rf"^{_PREFIX}:cache:[^:]+:i:[^:]+:.+$"), INDEX_SET),
    (re.compile(rf"^{_PREFIX}:written:[^:]+:.+$"), WRITTEN),
]

MODES = ("off", "namespace", "label")
FAIRNESS = ("off", "namespace", "label:team")
VIOLATIONS = "lua-keys:undeclared"
UNKNOWN = "lua-keys:unknown"
RAN = "lua-keys:ran"


def known_scripts() -> dict[str, str]:
    """Every script source the code may register -> its name."""
    names: dict[str, str] = {}
    for name in ("add", "claim", "done", "tick", "requeue", "release"):
        for mode in MODES:
            names[script_source(name, mode)] = f"workqueue/{name}.lua"
    for name in ("extend", "add_after", "add_rate_limited", "sent", "alive"):
        names[script_source(name)] = f"workqueue/{name}.lua"
    for mode in MODES:
        names[event_script(script_source("add", mode))] = EVENT_SCRIPT
    names[apply_source()] = "cache/apply.lua"
    names[SET_FENCED] = "cache/fence.py SET_FENCED"
    names[INDEXED_OBJECTS] = "cache/store.py INDEXED_OBJECTS"
    names[OWNER_AND_OWNED] = "cache/store.py OWNER_AND_OWNED"
    for mode in MODES:
        names[claim_read_script(mode, OWNER_CLAIM_READ)] = CLAIM_READ
    names[_RECORD] = "cache/written.py _RECORD"
    names[leader._ACQUIRE] = "watcher/leader.py _ACQUIRE"
    names[leader._HOLD] = "watcher/leader.py _HOLD"
    names[leader._RELEASE] = "watcher/leader.py _RELEASE"
    names[_CREATE] = "notifications/outbox.py _CREATE"
    names[transport._POP_HELD] = "celeryapp/transport.py _POP_HELD"
    return names


def prelude(name: str) -> str:
    """Lua that shadows `redis` for the rest of the script: each key argument not in KEYS is
    recorded as `script <tab> command <tab> key` (with the real `redis`, unchecked)."""
    spec = ", ".join(f"{cmd} = {{{a}, {b}, {c}}}" for cmd, (a, b, c) in KEY_POSITIONS.items())
    return f"""local lk_real = redis
local lk_declared = {{}}
for _, k in ipairs(KEYS) do lk_declared[k] = true end
local lk_spec = {{{spec}}}
local function lk_check(cmd, ...)
  local args = {{...}}
  local spec = lk_spec[string.upper(cmd)]
  if not spec then
    lk_real.call('SADD', '{UNKNOWN}', '{name} ' .. cmd)
    error('lua-keys: no key positions for ' .. cmd)
  end
  local first, last, step = spec[1], spec[2], spec[3]
  if first == 0 then return end
  if last < 0 then last = #args + 1 + last end
  for i = first, last, step do
    if not lk_declared[args[i]] then
      lk_real.call('SADD', '{VIOLATIONS}',
        '{name}' .. '\\t' .. string.upper(cmd) .. '\\t' .. tostring(args[i]))
    end
  end
end
lk_real.call('SADD', '{RAN}', '{name}')
local redis = setmetatable({{
  call = function(cmd, ...) lk_check(cmd, ...) return lk_real.call(cmd, ...) end,
  pcall = function(cmd, ...) lk_check(cmd, ...) return lk_real.pcall(cmd, ...) end,
}}, {{__index = lk_real}})
"""


@dataclass
class Instrumented:
    names: dict[str, str] = field(default_factory=known_scripts)
    shas: set[str] = field(default_factory=set)
    unnamed: list[str] = field(default_factory=list)  # sources no entry of known_scripts names
    uninstrumented: list[str] = field(default_factory=list)  # EVAL/EVALSHA of other scripts


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> Instrumented:
    state = Instrumented()

    real_init, real_call = redisclient.Script.__init__, redisclient.Direct.call

    def instrument(script: str) -> str:
        name = state.names.get(script)
        if name is None:
            state.unnamed.append(script[:200])
            name = "?"
        return prelude(name) + script

    def init(self: redisclient.Script, client: redis.Redis, source: str) -> None:
        real_init(self, client, instrument(source))
        state.shas.add(self.sha)

    def register_script(self: redis.Redis, script: str) -> Script:
        wrapped = Script(self, instrument(script))
        state.shas.add(wrapped.sha)
        return wrapped

    def call(self: redisclient.Direct, *args: Any) -> Any:
        if str(args[0]).upper() == "EVALSHA" and args[1] not in state.shas:
            state.uninstrumented.append(args[1])
        return real_call(self, *args)

    real_evalsha = redis.Redis.evalsha

    def evalsha(self: redis.Redis, sha: str, numkeys: int, *args: Any) -> Any:
        if sha not in state.shas:
            state.uninstrumented.append(sha)
        return real_evalsha(self, sha, numkeys, *args)

    def eval_(self: redis.Redis, script: str, numkeys: int, *args: Any) -> Any:
        state.uninstrumented.append(script[:200])
        raise AssertionError("EVAL outside register_script: not instrumented")

    monkeypatch.setattr(redisclient.Script, "__init__", init)
    # Sent by the broker transport as it is, with EVAL on its consumer connection.
    monkeypatch.setattr(transport, "_POP_HELD", instrument(transport._POP_HELD))
    monkeypatch.setattr(redisclient.Direct, "call", call)
    monkeypatch.setattr(redis.Redis, "register_script", register_script)
    monkeypatch.setattr(redis.Redis, "evalsha", evalsha)
    monkeypatch.setattr(redis.Redis, "eval", eval_)
    return state


# -- the workload ---------------------------------------------------------------------------

KEYS_ = [ObjectKey(f"{ns}/r{i}") for ns in ("team-a", "team-b", "team-c") for i in (1, 2, 3)]
A1, A2, A3, B1, B2, B3, C1, C2, C3 = KEYS_


def claim_one(wq: WorkQueue, sent: SentLog, token: str) -> ObjectKey:
    """Deliver sent messages in order until one claims a key."""
    while sent.sent:
        claimed = wq.claim(sent.sent.pop(0), token)
        if claimed.status is Claim.CLAIMED:
            return claimed.key
    raise AssertionError("no message claimed a key")


class StubEnvelope:
    """A key's "message" is the key itself, pushed on `list_key`."""

    def __init__(self, list_key: str) -> None:
        self.list_key = list_key

    def __call__(self, key: ObjectKey) -> str:
        return str(key)


def drive_queue(rdb: redis.Redis, prefix: str, qs: QueueSettings) -> None:
    sent = SentLog()
    wq = WorkQueue(
        rdb,
        kind="rollouts",
        prefix=prefix,
        settings=qs,
        send=sent,
        host="h1",
        claim_guard=f"{prefix}:cache:epoch",
    )
    label = qs.tenant_label is not None
    tenants = {A1: "blue", B1: "green", C1: "blue"} if label else {}
    wq.add([A1, A2, B1, B2], tenants=tenants, priority=Priority.RESYNC)
    wq.add([A2, C1, C2, A3, B3, C3], tenants=tenants)  # A2 moves up to the event class
    # A claim, a heartbeat, an add while held (dirty), done with metrics: queued again.
    k = claim_one(wq, sent, "h1-p1")
    assert wq.heartbeat(k, "h1-p1")
    assert wq.add([k]).dirty == [k]
    metrics = f"{prefix}:metrics:test"
    assert wq.done(k, "h1-p1", Outcome.OK, duration=0.01, increments=[Increment(metrics, "x", 1)])
    # The same, by a queue whose `done` pushes the key's message itself.
    broker = f"{prefix}:broker"
    pushing = WorkQueue(
        rdb, kind="rollouts", prefix=prefix, settings=qs, send=sent, host="h1",
        envelope=StubEnvelope(broker),
    )  # fmt: skip
    k = claim_one(pushing, sent, "h1-p1")
    assert pushing.add([k]).dirty == [k]
    assert pushing.done(k, "h1-p1", Outcome.OK)
    assert rdb.lrange(broker, 0, -1) == [k.encode()]
    # The object's own write only: not queued again.
    k = claim_one(wq, sent, "h1-p1")
    WrittenVersions(rdb, prefix=prefix, own="rollouts").record_own("rollouts", k, "7")
    assert wq.add([k], own={k: "7"}).dirty == [k]
    assert wq.done(k, "h1-p1", Outcome.AFTER, delay=60)
    # Failures and backoff.
    k = claim_one(wq, sent, "h1-p1")
    assert wq.done(k, "h1-p1", Outcome.ERROR)
    assert wq.add_rate_limited(k) > 0
    # Due timers, and an expired lease, queued by the tick.
    wq.add_after([k, B2], 0)
    k = claim_one(wq, sent, "h2-p1")
    set_lease(rdb, wq, k, 0)
    tick = wq.tick()
    assert tick.due >= 1 and tick.expired == 1
    # A lapsed host's message is sent again; a lost one too (no broker list, lost_after ~0).
    Hosts(rdb, prefix=prefix).alive("h-dead")
    rdb.zadd(hosts_key(prefix), {"h-dead": 0})
    queued = [ObjectKey(m.decode()) for m in rdb.zrange(wq.k_queued, 0, -1)]
    rdb.hset(wq.k_held, queued[0], "h-dead")
    assert wq.tick().lapsed >= 1
    # A stopping host hands back a held key and its reserved messages.
    k = claim_one(wq, sent, "h3-p1")
    assert wq.release(["h3-"]) == [k]
    assert wq.requeue([k, *queued[:2]])
    # Gone, then the periodic resync and the stats.
    k = claim_one(wq, sent, "h1-p2")
    assert wq.done(k, "h1-p2", Outcome.GONE)
    resynced = wq.resync()
    assert resynced.queued or resynced.coalesced
    stats = wq.stats()
    assert stats.queued > 0
    assert bool(stats.tenants) == (qs.fair_mode != "off")
    while sent.sent:  # drain: every remaining message claimed and done
        claimed = wq.claim(sent.sent.pop(0), "h1-p3")
        if claimed.status is Claim.CLAIMED:
            assert wq.done(claimed.key, "h1-p3", Outcome.OK)


def run(name: str, rv: int, owner: str, team: str = "blue") -> Obj:
    ref = {"kind": "Rollout", "name": "web", "uid": owner, "controller": True}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "resourceVersion": str(rv),
            "labels": {"team": team},
            "ownerReferences": [ref],
        },
        "spec": {},
    }


def drive_watcher(rdb: redis.Redis, prefix: str, qs: QueueSettings) -> None:
    lease = LeaderLease(
        rdb, key=f"{prefix}:watcher:leader", identity="w1", ttl=10, fence=Fence(fence_key(prefix))
    )
    standby = LeaderLease(
        rdb, key=f"{prefix}:watcher:leader", identity="w2", ttl=10, fence=Fence(fence_key(prefix))
    )
    assert lease.try_acquire() and lease.renew()
    assert not standby.try_acquire() and not standby.renew()
    writer = CacheWriter(rdb, prefix=prefix, resource=r.ANALYSISRUNS, fence=lease.fence)
    writer.apply("ADDED", run("a", 1, "u1"))
    writer.apply("MODIFIED", run("a", 2, "u2"))  # leaves one owner's index set for another
    writer.apply("DELETED", run("a", 3, "u2"))
    changes = writer.replace([run("b", 4, "u1"), run("c", 5, "u1")], "10")
    writer.set_resource_version("11")
    queues = {
        k: WorkQueue(rdb, kind=k, prefix=prefix, settings=qs, send=SentLog())
        for k in ("rollouts", "analysisruns")
    }
    queuer = EventQueuer(
        rdb,
        kinds=set(queues),
        queue=queues.__getitem__,
        lookup=lambda *_: [],
        add_source=queues["rollouts"].add_source,
        tenant_label=qs.tenant_label,
    )
    queuer.changes(r.ANALYSISRUNS, changes)
    events: list[Change] = [
        queuer.event(writer, "ADDED", run("d", 20, "u1")),
        queuer.event(writer, "MODIFIED", run("d", 21, "u3", team="green")),
        queuer.event(writer, "DELETED", run("b", 22, "u1")),
    ]
    assert [c.type for c in events] == ["ADDED", "MODIFIED", "DELETED"]
    owned = Lister(rdb, prefix=prefix, resource=r.ANALYSISRUNS).by_owner("u1")
    assert [o["metadata"]["name"] for o in owned] == ["c"]  # d moved to u3, b is gone
    assert Lister(rdb, prefix=prefix, resource=r.ANALYSISRUNS).by_owner("nobody") == []
    owner = run("u1", 23, "none")
    owner["metadata"]["uid"] = "u1"  # the owner of c
    writer.apply("ADDED", owner)
    runs = Lister(rdb, prefix=prefix, resource=r.ANALYSISRUNS)
    written = WrittenVersions(rdb, prefix=prefix)
    reads = OwnerReads(rdb, runs, [runs], written=written, checked={"analysisruns"})
    reads.read("team-a/u1")  # the second read is the one script call
    assert reads.read("team-a/u1")[1] == [owned] and reads.read("team-a/u1")[2] == []
    # The same read, made by a claim, of the key claimed (with fairness, whose turn it is).
    sent = SentLog()
    claiming = WorkQueue(rdb, kind="analysisruns", prefix=prefix, settings=qs, send=sent)
    claiming.add(["team-a/u1"])
    (claim, key), _, prefetched = claiming.claim_guarded(
        ObjectKey("team-a/u1"), "t1", reads.claim_read()
    )
    assert claim is Claim.CLAIMED and reads.read(key, prefetched)[:2] == reads.read(key)[:2]
    WrittenVersions(rdb, prefix=prefix, own="analysisruns").record("analysisruns", "team-a/c", "30")
    lease.release()
    assert lease.holder() is None


ROLLOUT: Obj = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Rollout",
    "metadata": {
        "namespace": "team-a",
        "name": "web",
        "uid": "u-1",
        "annotations": {"notifications.argoproj.io/subscribe.on-rollout-step-completed.x": "a"},
    },
    "status": {"phase": "Progressing", "currentStepIndex": 1},
}


def drive_notifications(rdb: redis.Redis, prefix: str, qs: QueueSettings) -> None:
    configmap = {
        "metadata": {"uid": "cm", "resourceVersion": "1"},
        "data": {"trigger.on-rollout-step-completed": "- send: [step]"},
    }
    configs = ConfigCache(
        configmaps=lambda ns, name: configmap if name == CONFIGMAP_NAME else None,
        secrets=lambda ns, name: None,
        controller_namespace="argo-rollouts",
        self_service=False,
    )
    queue = WorkQueue(rdb, kind="notifications", prefix=prefix, settings=qs, send=SentLog())
    outbox = Outbox(rdb, prefix=prefix, configs=configs, queue=queue, remember=60)
    for _ in range(2):  # the second finds its job and coalesces
        key = outbox.event(ROLLOUT, reason="RolloutStepCompleted", message="m", warning=False)
        assert key is not None


def drive_transport(settings: Settings) -> None:
    """A worker host's consumer takes two messages: the second off the pop that records it."""
    app = host_app(settings, "h1")
    name = settings.queue.for_kind("rollouts")
    SyncSender(app, name="rollouts.sync", queue=name)([A1, A2])
    assert consume(app, name, 2) == [A1, A2]


def undeclared(rdb: redis.Redis) -> dict[tuple[str, str], set[str]]:
    """(script, key pattern) -> the commands that touched such keys undeclared."""
    found: dict[tuple[str, str], set[str]] = {}
    for raw in rdb.smembers(VIOLATIONS):
        script, command, key = raw.decode().split("\t")
        pattern = next((p for shape, p in SHAPES if shape.match(key)), key)
        found.setdefault((script, pattern), set()).add(command)
    return found


# -- the tests ------------------------------------------------------------------------------


def test_every_key_a_script_touches_is_declared_or_allowlisted(
    rdb: redis.Redis, settings: Settings, instrumented: Instrumented
) -> None:
    drives: list[Callable[[redis.Redis, str, QueueSettings], None]] = [
        drive_queue,
        drive_watcher,
        drive_notifications,
    ]
    for i, fairness in enumerate(FAIRNESS):
        qs = settings.queue.model_copy(update={"fairness": fairness, "lost_after": 0.001})
        for drive in drives:
            drive(rdb, f"lk{i}", qs)
    drive_transport(settings)

    assert instrumented.unnamed == [], "a script known_scripts does not name"
    assert instrumented.uninstrumented == [], "a script run without register_script"
    assert rdb.smembers(UNKNOWN) == set(), "a command missing from KEY_POSITIONS"
    ran = {m.decode() for m in rdb.smembers(RAN)}
    assert ran == set(instrumented.names.values()), "a known script the workload never ran"
    found = undeclared(rdb)
    assert set(found) == set(ALLOWLIST), "\n".join(
        [
            "undeclared keys not on the allowlist:",
            *(f"  {s} {p} {sorted(c)}" for (s, p), c in found.items() if (s, p) not in ALLOWLIST),
            "allowlist entries that no longer happen:",
            *(f"  {s} {p}" for s, p in ALLOWLIST if (s, p) not in found),
        ]
    )


def _lua_sources() -> Iterator[tuple[str, str]]:
    for package in ("rollout_workers.workqueue", "rollout_workers.cache"):
        for entry in resources.files(package).iterdir():
            if entry.name.endswith(".lua"):
                yield f"{package}/{entry.name}", entry.read_text()


def test_the_instrumentation_knows_every_script_and_command(rdb: redis.Redis) -> None:
    """Every .lua file is a known script (clock.lua, owner.lua and fair.lua are prepended), every
    command any known script names has key positions, and those agree with the server's COMMAND
    INFO."""
    known = known_scripts()
    sources = set(known)  # a workqueue script with a fairness mode ends with its file's text
    for path, text in _lua_sources():
        prelude = path.endswith(("/fair.lua", "/owner.lua", "/clock.lua"))
        assert prelude or any(s.endswith(text) for s in sources), path
    named = {m.upper() for s in known for m in re.findall(r"redis\.p?call\(\s*'([A-Za-z]+)'", s)}
    assert named <= set(KEY_POSITIONS), named - set(KEY_POSITIONS)
    for command, positions in KEY_POSITIONS.items():
        info = rdb.execute_command("COMMAND", "INFO", command)[command.lower()]
        fields = ("first_key_pos", "last_key_pos", "step_count")
        assert tuple(int(info[f]) for f in fields) == positions, command
    # Every module that registers a script is one whose scripts known_scripts names.
    root = Path(__file__).resolve().parents[2] / "rollout_workers"
    registering = {
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"register_script|\bScript\(|\.evalsha\(|EVAL", p.read_text())
    }
    assert registering == {
        "cache/store.py",
        "cache/written.py",
        "celeryapp/transport.py",
        "notifications/outbox.py",
        "redisclient.py",
        "watcher/events.py",
        "watcher/leader.py",
        "workqueue/hosts.py",
        "workqueue/queue.py",
    }


def test_the_check_records_an_undeclared_key_and_refuses_an_unknown_command(
    rdb: redis.Redis, instrumented: Instrumented
) -> None:
    """The shadowed `redis` itself: a declared key passes, a computed one is recorded."""
    instrumented.names["redis.call('SET', KEYS[1], 1) redis.call('SET', ARGV[1], 1)"] = "probe"
    probe = rdb.register_script("redis.call('SET', KEYS[1], 1) redis.call('SET', ARGV[1], 1)")
    probe(keys=["lk0:declared"], args=["lk0:computed"])
    assert undeclared(rdb) == {("probe", "lk0:computed"): {"SET"}}
    instrumented.names["return redis.call('PING')"] = "ping"
    with pytest.raises(redis.ResponseError, match="no key positions for PING"):
        rdb.register_script("return redis.call('PING')")()
    assert rdb.smembers(UNKNOWN) == {b"ping PING"}
