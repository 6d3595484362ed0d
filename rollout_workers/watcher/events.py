"""From cache changes to queued keys: what each change wakes, added to the workqueues.

Two paths with one meaning:

* `changes` takes changes already written to the cache (a relist's pages and deletions) and adds
  the keys they wake, in batches.
* `events` applies a batch of watch events of one type (what the reflector read within a few
  milliseconds) and adds the keys they wake in a single Redis round trip: the keys are found
  before the write (eventkeys.py reads only the objects and the indexes of *other* types, which
  the write does not touch), and one script runs apply.lua over the batch and then add.lua for
  each task kind, leaving out a key that only events older than the cache woke, or only its
  own controller's last write (cache/written.py), and everything when the writer is not the
  leader (cache/fence.py). add.lua pushes the messages of newly queued keys itself. Both
  scripts cost a fixed number of Redis commands whatever the batch's size.

Either way the cache write comes before the add, so a reconcile that claims a key reads state at
least as new as the change that woke it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from rollout_workers.cache import CacheWriter, Change, Event
from rollout_workers.cache.indexers import object_key
from rollout_workers.cache.store import apply_source
from rollout_workers.keys import InvalidKey, ObjectKey, parse_key
from rollout_workers.kube.resources import Resource
from rollout_workers.objects import Obj
from rollout_workers.redisclient import Script
from rollout_workers.watcher.eventkeys import Lookup, own_event, own_tenant, woken_keys
from rollout_workers.workqueue import WorkQueue

log = logging.getLogger(__name__)


ADD_BATCH = 1000

#: KEYS: apply.lua's, then per task kind add.lua's. ARGV: how many keys and arguments apply.lua
#: takes, its arguments, the number of kinds, then per kind: how many Redis keys, leading
#: arguments and keys; the leading arguments; per key, add.lua's arguments (own '') and then
#: its wakers, the events that woke it: space-separated `i` (the i-th event) or `i:rv` (the
#: i-th event, of the key's own object, at resourceVersion rv). A key is added when an event
#: that woke it was applied (not older than the cache) and is not its own controller's last
#: write; its `own` is the newest such own version when no other event woke it. Returns
#: apply.lua's answer, then per kind add.lua's code for each key (-1 for a key not added).
_GLUE = """
local nak, na = tonumber(ARGV[1]), tonumber(ARGV[2])
local akeys, aargs = {}, {}
for i = 1, nak do akeys[i] = KEYS[i] end
for i = 1, na do aargs[i] = ARGV[2 + i] end
local applied = apply_lua(akeys, aargs)
local out = {applied}
if applied[1] == 1 then return out end
local ki, ai = nak + 1, 3 + na
local kinds = tonumber(ARGV[ai])
ai = ai + 1
for _ = 1, kinds do
  local nk, nhead, n = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1]), tonumber(ARGV[ai + 2])
  ai = ai + 3
  local keys, args = {}, {}
  for j = 0, nk - 1 do keys[#keys + 1] = KEYS[ki + j] end
  ki = ki + nk
  for j = 0, nhead - 1 do args[#args + 1] = ARGV[ai + j] end
  ai = ai + nhead
  local taken = {}
  for p = 1, n do
    local woken, other, newest = false, false, nil
    for w in string.gmatch(ARGV[ai + 4], '%S+') do
      local i, rv = string.match(w, '^(%d+):?(%d*)$')
      i = tonumber(i)
      if applied[3 * i + 1] == 0 then
        if rv == '' then
          woken, other = true, true
        elseif applied[3 * i] == 0 then
          woken = true
          if not newest or tonumber(rv) > tonumber(newest) then newest = rv end
        end
      end
    end
    if woken then
      local own = newest
      if other then own = '' end
      args[#args + 1], args[#args + 2] = ARGV[ai], own
      args[#args + 1], args[#args + 2] = ARGV[ai + 2], ARGV[ai + 3]
      taken[#taken + 1] = p
    end
    ai = ai + 5
  end
  local codes = {}
  if #taken > 0 then codes = add_lua(keys, args) end
  local full = {}
  for p = 1, n do full[p] = -1 end
  for i, p in ipairs(taken) do full[p] = codes[i] end
  out[#out + 1] = full
end
return out
"""


def event_script(add_source: str) -> str:
    """apply.lua and a queue's add script as functions of their own KEYS and ARGV, then the
    glue above."""
    return (
        f"local function apply_lua(KEYS, ARGV)\n{apply_source()}\nend\n"
        f"local function add_lua(KEYS, ARGV)\n{add_source}\nend\n{_GLUE}"
    )


def valid_keys(kind: str, keys: Iterable[str]) -> list[ObjectKey]:
    """The keys that are valid object keys, sorted; the others are logged and left out."""
    valid = []
    for key in sorted(keys):
        try:
            valid.append(parse_key(key))
        except InvalidKey as err:
            log.error("not queueing %s: %s", kind, err)
    return valid


@dataclass
class Wanted:
    """The keys some changes wake, per task kind, which were woken only by the object's own
    events (with the newest such resourceVersion: see WorkQueue.add `own`), and the tenants the
    changed objects name (fairness by label: see WorkQueue.add `tenants`)."""

    label: str | None = None  # the tenant label, when fairness is by label
    keys: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    own: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    other: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    tenants: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, resource: Resource, change: Change, lookup: Lookup) -> None:
        tenant = own_tenant(resource, change, self.label) if self.label else None
        if tenant is not None:
            self.tenants[tenant[0]][change.key] = tenant[1]
        mine = own_event(resource, change)
        for kind, keys in woken_keys(resource, change, lookup).items():
            self.keys[kind].update(keys)
            for key in keys:
                if mine is not None and mine[0] == kind and key == change.key:
                    self.own[kind][key] = max(self.own[kind].get(key, mine[1]), mine[1], key=int)
                else:
                    self.other[kind].add(key)

    def only_own(self, kind: str) -> dict[str, str]:
        return {k: v for k, v in self.own[kind].items() if k not in self.other[kind]}


class EventQueuer:
    """Adds what changes wake to the queues of the task kinds this watcher serves."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        kinds: Iterable[str],
        queue: Callable[[str], WorkQueue],
        lookup: Lookup,
        add_source: str,
        tenant_label: str | None = None,
    ) -> None:
        """`add_source`: the queues' add script (WorkQueue.add_source, the same for every kind
        of one process' settings)."""
        self.kinds = set(kinds)
        self._queue, self._lookup, self._label = queue, lookup, tenant_label
        self._script = Script(client, event_script(add_source))

    def changes(self, resource: Resource, changes: list[Change]) -> None:
        """Queue what changes already written to the cache wake."""
        wanted = Wanted(self._label)
        for change in changes:
            wanted.add(resource, change, self._lookup)
        for kind, keys in wanted.keys.items():
            if kind not in self.kinds:  # a controller this watcher does not serve
                continue
            self._add(kind, valid_keys(kind, keys), wanted)

    def _add(self, kind: str, valid: list[ObjectKey], wanted: Wanted) -> None:
        queue, own, tenants = self._queue(kind), wanted.only_own(kind), wanted.tenants[kind]
        for i in range(0, len(valid), ADD_BATCH):
            queue.add(valid[i : i + ADD_BATCH], own=own, tenants=tenants)

    def event(
        self, writer: CacheWriter, event_type: str, obj: Obj, text: bytes | None = None
    ) -> Change:
        """Apply one watch event to the cache and queue what it wakes (see `events`)."""
        return self.events(writer, [(event_type, obj, text)])[0]

    def events(self, writer: CacheWriter, batch: Sequence[Event]) -> list[Change]:
        """Apply watch events of one type to the cache, in order, and queue what they wake,
        in one script call."""
        resource = writer.resource
        wakers: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        tenants: dict[str, dict[str, str]] = defaultdict(dict)
        for i, (event_type, obj, _) in enumerate(batch, 1):
            provisional = Change(event_type, object_key(obj), obj, None)
            tenant = own_tenant(resource, provisional, self._label) if self._label else None
            if tenant is not None:
                tenants[tenant[0]][provisional.key] = tenant[1]
            mine = own_event(resource, provisional)
            for kind, woken_now in woken_keys(resource, provisional, self._lookup).items():
                for key in woken_now:
                    itself = mine is not None and mine[0] == kind and key == provisional.key
                    wakers[kind][key].append(f"{i}:{mine[1]}" if mine and itself else str(i))
        keys, apply_args = writer.events_call(batch)
        head_args = [len(keys), len(apply_args), *apply_args]
        groups: list[Any] = []
        batches: list[tuple[WorkQueue, list[ObjectKey]]] = []
        later: list[str] = []  # kinds woken in more keys than one call takes
        for kind, woken in sorted(wakers.items()):
            if kind not in self.kinds:  # a controller this watcher does not serve
                continue
            if len(woken) > ADD_BATCH:
                later.append(kind)
                continue
            valid = valid_keys(kind, woken)
            if not valid:
                continue
            queue = self._queue(kind)
            add_keys, head, per_key = queue.add_call(valid, {}, tenants[kind])
            keys += add_keys
            groups += [len(add_keys), len(head), len(valid), *head]
            for key, args in zip(valid, per_key, strict=True):
                groups += [*args, " ".join(woken[key])]
            batches.append((queue, valid))
        reply = self._script(keys=keys, args=[*head_args, len(batches), *groups])
        changes = writer.applied(batch, reply[0])
        for (queue, valid), codes in zip(batches, reply[1:], strict=False):
            taken = [(k, c) for k, c in zip(valid, codes, strict=True) if int(c) >= 0]
            queue.added([k for k, _ in taken], [c for _, c in taken])
        applied = [c for c in changes if not c.older]
        if later and applied:  # the ordinary path, after the write
            wanted = Wanted(self._label)
            for change in applied:
                wanted.add(resource, change, self._lookup)
            for kind in later:
                self._add(kind, valid_keys(kind, wanted.keys[kind]), wanted)
        return changes
