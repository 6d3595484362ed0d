"""The shared cluster cache in Redis: written by the watcher alone, read by every worker.

Per resource type: a hash of `namespace/name` (or `name`) -> the object's JSON as the server
sent it, a hash of `<resourceVersion> <index sets>` (the sets the object is in, as a JSON
list), and index sets (see `indexers`). Each write is one Lua script, so an object and its
index memberships never disagree. The type's latest applied resourceVersion is kept in the
versions hash too, under TYPE_RV (a field no object key can be).
"""

from __future__ import annotations

import builtins
import functools
import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from rollout_workers.cache.fence import COPY_FIELD, SET_FENCED, Fence, Fenced, fence_key
from rollout_workers.cache.indexers import NAMESPACE, OWNER, index_values, object_key
from rollout_workers.cache.written import WrittenVersions, behind, versions
from rollout_workers.keys import own_key
from rollout_workers.kube.resources import Resource
from rollout_workers.objects import Obj, decode, encode
from rollout_workers.redisclient import Script
from rollout_workers.settings import OBJECT_KINDS


@functools.cache
def apply_source() -> str:
    """The text of apply.lua (for a caller that runs it inside a script of its own)."""
    return resources.files(__package__).joinpath("apply.lua").read_text()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


#: The versions hash's field for the type's resourceVersion (apply.lua's TYPE_RV).
TYPE_RV = "!typerv"

#: The versions hash's fields that are not objects (no object key starts with '!').
NOT_OBJECTS = frozenset({TYPE_RV, COPY_FIELD})


def entry_version(entry: bytes | str) -> str:
    """The resourceVersion of a versions hash entry (`<rv> <sets>`, or a bare rv as the layout
    before kept it)."""
    return _text(entry).partition(" ")[0]


class Keys:
    """Redis key names of one type's cache."""

    def __init__(self, prefix: str, resource: Resource) -> None:
        base = f"{prefix}:cache:{resource.cache_name}"
        self.objects = f"{base}:obj"
        self.versions = f"{base}:rv"
        self.memberships = f"{base}:idx"  # the layout before; see apply.lua
        self._index = f"{base}:i"
        self._prefix, self._plural = prefix, resource.cache_name

    def index(self, name: str, value: str) -> str:
        return f"{self._index}:{name}:{value}"

    def own(self, key: str) -> str:
        return own_key(self._prefix, self._plural, key)


#: A watch event to apply: its type (ADDED, MODIFIED, DELETED), the object, and the object's
#: text as the server sent it (stored as it is; None: the object is encoded).
Event = tuple[str, Obj, bytes | None]


@dataclass(frozen=True)
class Change:
    """One applied change: the object (new, or last known for a delete) and what it replaced."""

    type: str  # ADDED, MODIFIED, DELETED
    key: str
    obj: Obj
    previous_rv: str | None
    # Exactly the last write of the object's own controller (see cache.written): the object
    # itself need not be reconciled again for it.
    own_write: bool = False
    # Older than the cached object, so not applied (see apply.lua): it changes nothing.
    older: bool = False


class CacheWriter:
    """The watcher's side: apply watch events, replace a type after a LIST."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str,
        resource: Resource,
        fence: Fence | None = None,
    ) -> None:
        self.resource = resource
        self.keys = Keys(prefix, resource)
        self._redis = client
        self._fence = fence or Fence(fence_key(prefix))
        self._apply = Script(client, apply_source())
        self._set_fenced = Script(client, SET_FENCED)

    def _call(
        self,
        changes: Sequence[Event],
        type_rv: str,
        *,
        ordered: bool,
    ) -> tuple[list[str], list[str | bytes]]:
        """apply.lua's Redis keys and arguments for `changes`, (op 'put' or 'del', object, its
        text as the server sent it or None) in order. `type_rv`: see apply.lua."""
        k, fence = self.keys, self._fence
        keys = [k.objects, k.versions, k.memberships, fence.key, fence.copies]
        args: list[str | bytes] = [
            type_rv,
            "1" if ordered else "",
            fence.token,
            "1" if self.resource.plural in OBJECT_KINDS else "",
        ]
        for op, obj, text in changes:
            key = object_key(obj)
            sets = [k.index(n, v) for n, v in index_values(self.resource, obj)]
            stored = b"" if op != "put" else encode(obj) if text is None else text
            rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            keys.append(k.own(key))
            args += [op, key, stored, rv, json.dumps(sets)]
        return keys, args

    def apply(self, event_type: str, obj: Obj, text: bytes | None = None) -> Change:
        """Apply one watch event (ADDED, MODIFIED, DELETED) and record its resourceVersion.
        `text`: `obj` as the server encoded it, stored as it is (else `obj` is encoded)."""
        return self.apply_events([(event_type, obj, text)])[0]

    def apply_events(self, events: Sequence[Event]) -> list[Change]:
        """Apply watch events in order in one script call, and record the last one's
        resourceVersion as the type's."""
        keys, args = self.events_call(events)
        return self.applied(events, self._apply(keys=keys, args=args))

    def events_call(self, events: Sequence[Event]) -> tuple[list[str], list[str | bytes]]:
        """The Redis keys and arguments of apply.lua for watch events (see `apply_events`)."""
        changes = [("del" if t == "DELETED" else "put", obj, text) for t, obj, text in events]
        return self._call(changes, "=", ordered=True)

    def applied(self, events: Sequence[Event], reply: Any) -> list[Change]:
        """The Changes apply.lua's answer describes; Fenced when it wrote nothing because the
        writer's token is not the current leader's."""
        if int(reply[0]):
            raise Fenced(f"{self.resource.plural}: not the leader's fencing token; nothing written")
        return [
            Change(
                event_type,
                object_key(obj),
                obj,
                _text(reply[3 * i + 1]) or None,
                own_write=bool(int(reply[3 * i + 2])),
                older=bool(int(reply[3 * i + 3])),
            )
            for i, (event_type, obj, _) in enumerate(events)
        ]

    def set_resource_version(self, rv: str) -> None:
        """A bookmark: nothing changed, but the type is now current up to `rv`."""
        fence = self._fence
        keys = [self.keys.versions, fence.key]
        if not self._set_fenced(keys=keys, args=[rv, fence.token, TYPE_RV]):
            raise Fenced(f"{self.resource.plural}: not the leader's fencing token; nothing written")

    def replacement(self, batch: int = 500) -> Replacement:
        """Start making the cache equal a fresh LIST that arrives page by page."""
        entries = self._redis.hgetall(self.keys.versions)
        known = {
            _text(k): entry_version(v) for k, v in entries.items() if _text(k) not in NOT_OBJECTS
        }
        return Replacement(self, known, batch)

    def replace(self, items: list[Obj], rv: str, batch: int = 500) -> list[Change]:
        """Make the cache equal a LIST held whole: one page, then the deletions."""
        replacement = self.replacement(batch)
        changes = replacement.apply_page(items)
        for deleted in replacement.delete_vanished():
            changes.extend(deleted)
        replacement.commit(rv)
        return changes

    def _write(self, pending: list[tuple[str, Obj]], batch: int) -> None:
        for chunk in _chunks(pending, batch):
            keys, args = self._call([(op, obj, None) for op, obj in chunk], "", ordered=False)
            if int(self._apply(keys=keys, args=args)[0]):
                raise Fenced(
                    f"{self.resource.plural}: not the leader's fencing token; the rest of this "
                    "relist is not written"
                )


class Replacement:
    """One relist applied as its pages arrive: DeltaFIFO's Replace, streamed.

    Each page's changed objects (resourceVersion differs from the cache's) are written at once
    and the page can then be dropped, so the watcher holds one page, not the whole list. No
    object is deleted before every page was seen: `delete_vanished` then removes what no page
    listed, and `commit` records the list's resourceVersion. Meanwhile a reader finds each
    object at its old or its new version, never missing. A list that fails part way has
    deleted nothing and left the type's resourceVersion as it was; the next relist completes it.
    """

    def __init__(self, writer: CacheWriter, known: dict[str, str], batch: int) -> None:
        self._writer = writer
        # Cached key -> resourceVersion; a listed key is taken out, so what is left vanished.
        self._unlisted = known
        self._batch = batch

    def apply_page(self, items: list[Obj]) -> list[Change]:
        """Write a page's new and changed objects; returns their changes (unchanged skipped)."""
        changes: list[Change] = []
        pending: list[tuple[str, Obj]] = []
        for obj in items:
            key = object_key(obj)
            previous = self._unlisted.pop(key, None)
            obj_rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            if previous != obj_rv:
                pending.append(("put", obj))
                changes.append(
                    Change("MODIFIED" if previous is not None else "ADDED", key, obj, previous)
                )
        self._writer._write(pending, self._batch)
        return changes

    def delete_vanished(self) -> Iterator[list[Change]]:
        """Delete, a batch at a time, every cached object no page listed; yields each batch's
        changes (the last cached copy of each object, or a stub when there is none)."""
        writer = self._writer
        vanished = sorted(self._unlisted)
        for i in range(0, len(vanished), self._batch):
            part = vanished[i : i + self._batch]
            stored = writer._redis.hmget(writer.keys.objects, part)
            pending: list[tuple[str, Obj]] = []
            changes: list[Change] = []
            for key, raw in zip(part, stored, strict=True):
                obj = decode(raw) if raw else _stub(writer.resource, key)
                pending.append(("del", obj))
                changes.append(Change("DELETED", key, obj, self._unlisted.pop(key)))
            writer._write(pending, self._batch)
            yield changes

    def commit(self, rv: str) -> None:
        """The whole list is applied: the type is current up to the list's resourceVersion."""
        self._writer.set_resource_version(rv)


def _stub(resource: Resource, key: str) -> Obj:
    namespace, _, name = key.rpartition("/")
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta}


def _chunks(items: list[tuple[str, Obj]], size: int) -> Iterator[list[tuple[str, Obj]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


#: An index's members and their objects in one round trip: KEYS index set, objects hash.
#: Only for small sets (an owner's objects): HMGET takes every member as an argument.
INDEXED_OBJECTS = """
local members = redis.call('SMEMBERS', KEYS[1])
if #members == 0 then return {} end
table.sort(members)
return redis.call('HMGET', KEYS[2], unpack(members))
"""


#: An owner and, per owned type, the objects of one owner-index set, with the versions workers
#: last wrote of the owner and of the owned objects, in one round trip: the function
#: `owner_and_owned(KEYS, ARGV, also)`, run by OWNER_AND_OWNED on its own and by
#: OWNER_CLAIM_READ inside a workqueue claim (`also`: more string keys to read, whose values
#: come back as a second result).
#: KEYS: the owner type's objects hash, the owner's written-version key, then an (index set,
#: objects hash) pair per owned type.
#: ARGV: the owner's key; '' when KEYS name the index sets, else '1': the caller does not know
#: the owner's uid, KEYS name each index set without it, and the script appends the first uid
#: in the owner's JSON (metadata's, where the API server writes it before any owner
#: reference's; the caller checks it against the decoded object); then per owned type the
#: prefix of its objects' written-version keys ('' for none: not read).
#: Returns {the owner's JSON, its written version, the uid found ('' when not asked), then per
#: owned type: the index set's members (sorted), their objects, their written versions ({}
#: when not read)}; nil for what is absent, and only the first three when the owner is absent
#: or no uid was found.
_OWNER_AND_OWNED_FN = """
local function owner_and_owned(KEYS, ARGV, also)
  -- Every string read (the owner's written version, the strings `also` names, then the owned
  -- objects' written versions of the types asked for) in one MGET at the end.
  local written, at = {KEYS[2]}, {}
  for _, key in ipairs(also or {}) do written[#written + 1] = key end
  local function strings()
    local got = redis.call('MGET', unpack(written))
    local extra = {}
    for j = 1, #written - 1 do extra[j] = got[j + 1] end
    return got, extra
  end
  local raw = redis.call('HGET', KEYS[1], ARGV[1])
  local out = {raw, false, ''}
  local uid = ''
  if raw and ARGV[2] ~= '' then
    uid = string.match(raw, '"uid"%s*:%s*"([^"]+)"')
    if uid then out[3] = uid end
  end
  if not raw or not uid then
    local got, extra = strings()
    out[2] = got[1]
    return out, extra
  end
  local nalso = #written
  for i = 3, #KEYS, 2 do
    local members, n = redis.call('SMEMBERS', KEYS[i] .. uid), #out
    out[n + 1], out[n + 2], out[n + 3] = members, {}, {}
    if #members > 0 then
      table.sort(members)
      out[n + 2] = redis.call('HMGET', KEYS[i + 1], unpack(members))
      local prefix = ARGV[(i - 1) / 2 + 2]
      if prefix ~= '' then
        at[#at + 1] = {n + 3, #written + 1, #members}
        for _, m in ipairs(members) do written[#written + 1] = prefix .. m end
      end
    end
  end
  local versions = redis.call('MGET', unpack(written))
  out[2] = versions[1]
  local extra = {}
  for j = 2, nalso do extra[j - 1] = versions[j] end
  for _, a in ipairs(at) do
    local part = {}
    for j = 1, a[3] do part[j] = versions[a[2] + j - 1] end
    out[a[1]] = part
  end
  return out, extra
end
"""

OWNER_AND_OWNED = _OWNER_AND_OWNED_FN + "local out = owner_and_owned(KEYS, ARGV)\nreturn out\n"

#: owner_and_owned as a workqueue ClaimRead of the key k claimed: KEYS the owner type's objects
#: hash, the prefix of its written-version keys, then owner_and_owned's (index set, objects
#: hash) pairs without the uid; ARGV the owned types' written-version prefixes. The claim's
#: guard key, when given, is read in the same MGET as the written versions.
OWNER_CLAIM_READ = (
    _OWNER_AND_OWNED_FN
    + """
local function claim_read(k, KEYS, ARGV, guard)
  local keys, args = {KEYS[1], KEYS[2] .. k}, {k, '1'}
  for i = 3, #KEYS do keys[#keys + 1] = KEYS[i] end
  for _, a in ipairs(ARGV) do args[#args + 1] = a end
  local out, extra = owner_and_owned(keys, args, {guard})
  return out, guard and (extra[1] and 1 or 0)
end
"""
)


class Lister:
    """The workers' read side of one type's cache."""

    def __init__(self, client: redis.Redis, *, prefix: str, resource: Resource) -> None:
        self.resource = resource
        self.keys = Keys(prefix, resource)
        self._redis = client
        self._indexed_objects = Script(client, INDEXED_OBJECTS)

    def get(self, key: str) -> Obj | None:
        raw = self._redis.hget(self.keys.objects, key)
        return decode(raw) if raw else None

    def get_many(self, keys: Iterable[str]) -> list[Obj]:
        wanted = sorted(keys)
        if not wanted:
            return []
        return [decode(raw) for raw in self._redis.hmget(self.keys.objects, wanted) if raw]

    def list(self, namespace: str | None = None) -> list[Obj]:
        if namespace:
            return self.by_index(NAMESPACE, namespace)
        return [decode(raw) for raw in self._redis.hvals(self.keys.objects)]

    def keys_by_index(self, index: str, value: str) -> builtins.list[str]:
        return sorted(_text(k) for k in self._redis.smembers(self.keys.index(index, value)))

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        return self.get_many(self.keys_by_index(index, value))

    def by_owner(self, uid: str) -> builtins.list[Obj]:
        """The objects an owner owns, in key order (one round trip)."""
        found = self._indexed_objects(keys=[self.keys.index(OWNER, uid), self.keys.objects])
        return [decode(raw) for raw in found if raw]

    def resource_version(self) -> str | None:
        raw = self._redis.hget(self.keys.versions, TYPE_RV)
        return _text(raw) if raw else None

    def count(self) -> int:
        return int(self._redis.hlen(self.keys.objects))

    def object_keys(self) -> builtins.list[str]:
        """The key of every cached object."""
        return sorted(_text(k) for k in self._redis.hkeys(self.keys.objects))


@dataclass(frozen=True)
class KeyRead:
    """A read of one key's objects for another script to run: `source` defines the Lua
    function `claim_read(k, KEYS, ARGV)`, given `keys` and `args`."""

    source: str
    keys: tuple[str, ...]
    args: tuple[str, ...]


class OwnerReads:
    """An owner and what it owns of some types (a rollout, its ReplicaSets, AnalysisRuns and
    Experiments), read in one round trip where `get`, a `by_owner` per type and the stale-cache
    guard's reads take one each; the guard's verdict comes with them (`written.behind`).

    The owner index is keyed by the owner's uid, which is inside the owner's object: the uid
    read last for each key is remembered and names the index sets; for a key this process has
    not read yet, the script takes the uid from the owner's JSON. An owner whose decoded uid
    is not the one the sets were read for (deleted and created again) costs the round trips of
    the plain reads, and its guard is left to the caller.
    """

    #: Keys remembered at most; past it the memory starts over (each key costs one read more).
    MAX_REMEMBERED = 100_000

    def __init__(
        self,
        client: redis.Redis,
        owner: Lister,
        owned: Sequence[Lister],
        *,
        written: WrittenVersions,
        checked: Collection[str] = (),
    ) -> None:
        """`checked`: the plurals of the owned types whose written versions are compared, as
        the owner's always are."""
        self.owner, self.owned, self.written = owner, list(owned), written
        self._prefixes = [
            written.key_prefix(x.resource.plural) if x.resource.plural in checked else ""
            for x in self.owned
        ]
        self._script = Script(client, OWNER_AND_OWNED)
        self._uids: dict[str, str] = {}

    def claim_read(self) -> KeyRead:
        """This read, made by a workqueue claim for the key it claims (a workqueue ClaimRead;
        its answer is `read`'s `prefetched`)."""
        keys = [self.owner.keys.objects, self.written.key_prefix(self.owner.resource.plural)]
        for lister in self.owned:
            keys += [lister.keys.index(OWNER, ""), lister.keys.objects]
        return KeyRead(OWNER_CLAIM_READ, tuple(keys), tuple(self._prefixes))

    def read(
        self, key: str, prefetched: Any = None
    ) -> tuple[Obj | None, list[list[Obj]], list[str] | None]:
        """The owner (None when it is not cached), its objects of each owned type, and the keys
        among the owner and the checked objects that the cache holds at an older version than
        a worker wrote (None: not compared, the plain reads were made). `prefetched`: what
        `claim_read` returned for `key` with its claim (else it is read now)."""
        known = self._uids.get(key, "")
        if prefetched is not None:
            known, reply = "", prefetched
        else:
            keys = [
                self.owner.keys.objects,
                self.written.key_prefix(self.owner.resource.plural) + key,
            ]
            for lister in self.owned:
                keys += [lister.keys.index(OWNER, known), lister.keys.objects]
            args = [key, "" if known else "1", *self._prefixes]
            reply = self._script(keys=keys, args=args)
        raw, owner_written, found_uid, *found = reply
        if not raw:
            self._uids.pop(key, None)
            return None, [[] for _ in self.owned], []
        obj: Obj = decode(raw)
        uid = known or _text(found_uid)
        if not uid or _uid(obj) != uid:
            return self._plain(key, obj)
        if not known:
            self._remember(key, uid)
        stale = behind(versions([obj]), {key: owner_written})
        owned: list[list[Obj]] = []
        for i in range(len(self.owned)):
            members, objects, written = found[3 * i : 3 * i + 3]
            objs = [decode(x) for x in objects if x]
            owned.append(objs)
            if written:
                stale += behind(
                    versions(objs), dict(zip(map(_text, members), written, strict=True))
                )
        return obj, owned, stale

    def _plain(self, key: str, obj: Obj) -> tuple[Obj | None, list[list[Obj]], list[str] | None]:
        uid = _uid(obj)
        self._remember(key, uid)
        return obj, [lister.by_owner(uid) for lister in self.owned], None

    def _remember(self, key: str, uid: str) -> None:
        if len(self._uids) >= self.MAX_REMEMBERED:
            self._uids.clear()
        self._uids[key] = uid


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
