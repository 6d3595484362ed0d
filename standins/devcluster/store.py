"""The object store: the API's state and the write semantics every client observes.

Everything a client can observe about persistence lives here or in the modules beside it, free
of HTTP and of asyncio, so it is unit-tested directly. Here: one cluster-wide resourceVersion
counter and the commit that advances it; uid, creationTimestamp, generateName and per-type
defaults on create; the status subresource split and generation on update; no-op writes that
change nothing and do not bump the resourceVersion (as etcd's GuaranteedUpdate); finalizers and
deletionTimestamp; orphan and foreground deletion; list pagination; the scale subresource; the
serving of CRDs as they are written; snapshot and restore. Beside it: ``stored`` (the immutable
object versions), ``watches`` (events, filters and watch queues), ``history`` (per type, the
objects and the bounded event history from which watches resume; older resourceVersions get
410 Expired), ``writerules`` (the checks and rules that need only the written object:
validation, preconditions, generation), ``patches`` and ``scales``.

Invariants:

- Stored objects are immutable. A write builds a new dict (sharing unchanged subtrees), so an
  object handed to a watcher or a controller never changes under it, and its JSON is serialised
  once (``Stored.raw``) for every GET, LIST page and watch event that carries it.
- Every commit appends to the type's history and is pushed to the matching watches and to the
  in-process listeners (the controllers) synchronously, in resourceVersion order. Listeners must
  only record work; they never write back from inside the callback.
- Background garbage collection is not done here: a DELETED event is the signal the GC
  controller acts on (``get_by_uid``/``dependents_of`` are the indexes it uses).
"""

from __future__ import annotations

import contextlib
import copy
import random
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from devcluster import crds, errors
from devcluster.conversion import convert_to_storage
from devcluster.errors import ApiError, JSONDict
from devcluster.history import (
    DEFAULT_HISTORY_SIZE,
    ListResult,
    TypeState,
    decode_continue,
    encode_continue,
)
from devcluster.patches import MERGE_PATCH, STRATEGIC_MERGE_PATCH, apply_patch
from devcluster.pruning import calculate_pruned
from devcluster.resources import CRD_KEY, Registry, ResourceType
from devcluster.scales import scale_of
from devcluster.stored import Stored
from devcluster.watches import Event, Watch, WatchFilter, gone_line
from devcluster.writerules import (
    SYSTEM_METADATA,
    check_body,
    check_name,
    check_preconditions,
    fold_string_data,
    random_suffix,
    spec_changed,
    validate,
    without_rv,
)

Clock = Callable[[], float]
Listener = Callable[[Event], None]

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
FIELD_VALIDATION_MODES = ("Ignore", "Warn", "Strict")


def format_timestamp(seconds: float) -> str:
    """RFC 3339 with second precision and ``Z``, as metav1.Time serialises."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _owner_uids(obj: JSONDict) -> set[str]:
    return {
        str(ref["uid"])
        for ref in obj.get("metadata", {}).get("ownerReferences") or []
        if isinstance(ref, dict) and ref.get("uid")
    }


class Store:
    """The in-memory API state. Single-threaded: call it from one event loop only."""

    def __init__(
        self,
        registry: Registry,
        *,
        history_size: int = DEFAULT_HISTORY_SIZE,
        clock: Clock = time.time,
        rng: random.Random | None = None,
        max_watch_pending: int = 100_000,
    ) -> None:
        self.registry = registry
        self.history_size = history_size
        self.clock = clock
        self.rng = rng or random.Random()
        self.max_watch_pending = max_watch_pending
        self._rv = 0
        self._types = {rt.key: TypeState(rt, 0) for rt in registry.storage_types}
        # Per custom resource type (``<plural>.<group>``): pruned field path -> times pruned.
        self.pruned: dict[str, dict[str, int]] = {}
        # The current write's fieldValidation and the unknown fields it met (field_validation).
        self._validation: tuple[str, list[str]] = ("Ignore", [])
        self._by_uid: dict[str, tuple[str, str, str]] = {}
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}
        self._listeners: list[Listener] = []
        self._next_cluster_ip = 10
        self._ns_rt = registry.lookup("", "v1", "namespaces")

    # --- plumbing -------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The current (latest committed) resourceVersion."""
        return self._rv

    def pruned_fields(self) -> dict[str, list[str]]:
        """Per custom resource type, the field paths pruning has dropped so far."""
        return {key: sorted(paths) for key, paths in sorted(self.pruned.items())}

    def clear_pruned_fields(self) -> None:
        self.pruned.clear()

    @contextlib.contextmanager
    def field_validation(self, mode: str) -> Iterator[list[str]]:
        """Writes inside run with ``fieldValidation=mode``: under Strict a write that the
        schema would prune fails with 400 BadRequest naming the unknown fields; otherwise the
        yielded list collects them (for Warn's warnings), with exact list indices and map keys."""
        saved = self._validation
        unknown: list[str] = []
        self._validation = (mode, unknown)
        try:
            yield unknown
        finally:
            self._validation = saved

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def state(self, rt: ResourceType) -> TypeState:
        return self._types[rt.storage_key]

    def _storage(self, rt: ResourceType) -> ResourceType:
        """The type that holds ``rt``'s objects (``rt`` itself unless it is a view)."""
        if rt.storage:
            return rt
        found = self.registry.find_key(rt.storage_key)
        if found is None:
            raise errors.not_found(resource=rt.plural, group=rt.group, name="")
        return found

    def ensure_namespaces(self, names: Iterable[str] = INITIAL_NAMESPACES) -> None:
        assert self._ns_rt is not None
        for name in names:
            if self.state(self._ns_rt).get("", name) is None:
                self.create(self._ns_rt, namespace=None, body={"metadata": {"name": name}})

    def now_timestamp(self) -> str:
        return format_timestamp(self.clock())

    def _commit(
        self,
        ts: TypeState,
        *,
        event_type: str,
        namespace: str,
        name: str,
        obj: JSONDict,
        previous: Stored | None,
    ) -> Stored:
        self._rv += 1
        rv = self._rv
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}
        stored = Stored(obj)
        uid = str(obj["metadata"].get("uid", ""))
        key = (ts.rt.key, namespace, name)
        old_owners = _owner_uids(previous.obj) if previous is not None else set()
        if event_type == "DELETED":
            ts.remove(namespace, name)
            self._by_uid.pop(uid, None)
            new_owners: set[str] = set()
        else:
            ts.put(namespace, name, stored)
            self._by_uid[uid] = key
            new_owners = _owner_uids(obj)
        for owner in old_owners - new_owners:
            deps = self._dependents.get(owner)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[owner]
        for owner in new_owners - old_owners:
            self._dependents.setdefault(owner, set()).add(key)

        event = Event(event_type, rv, ts.rt, namespace, name, stored, previous)
        ts.history.append(event)
        if len(ts.history) > self.history_size:
            ts.compacted_rv = ts.history.popleft().rv
        for watch in list(ts.watches):
            if watch.closed:
                ts.watches.discard(watch)
                continue
            variant = watch.filter.classify(event)
            if variant is not None:
                watch.push(event.line(variant, watch.rt))
        for listener in self._listeners:
            listener(event)
        if ts.rt.key == CRD_KEY:
            self._crd_changed(event)
        elif event_type == "DELETED" and ts.rt.custom and ts.count == 0:
            self._finish_crd_deletion(ts.rt.key)
        return stored

    # --- indexes --------------------------------------------------------------------------

    def get_by_uid(self, uid: str) -> tuple[ResourceType, Stored] | None:
        key = self._by_uid.get(uid)
        if key is None:
            return None
        ts = self._types[key[0]]
        stored = ts.get(key[1], key[2])
        return None if stored is None else (ts.rt, stored)

    def dependents_of(self, uid: str) -> list[tuple[ResourceType, Stored]]:
        """Objects whose ownerReferences name ``uid`` (the GC index)."""
        out: list[tuple[ResourceType, Stored]] = []
        for type_key, ns, name in sorted(self._dependents.get(uid, ())):
            ts = self._types[type_key]
            stored = ts.get(ns, name)
            if stored is not None:
                out.append((ts.rt, stored))
        return out

    # --- reads ----------------------------------------------------------------------------

    def _ns_key(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def get(self, rt: ResourceType, *, namespace: str | None, name: str) -> Stored:
        stored = self.state(rt).get(self._ns_key(rt, namespace), name)
        if stored is None:
            raise errors.not_found(resource=rt.plural, group=rt.group, name=name)
        return stored.view(rt)

    def find(self, rt: ResourceType, *, namespace: str | None, name: str) -> Stored | None:
        stored = self.state(rt).get(self._ns_key(rt, namespace), name)
        return None if stored is None else stored.view(rt)

    def iter_objects(self, rt: ResourceType, namespace: str | None = None) -> Iterator[Stored]:
        ts = self.state(rt)
        if namespace is None:
            yield from ts.all()
        else:
            yield from ts.by_ns.get(namespace, {}).values()

    def count(self, rt: ResourceType) -> int:
        return self.state(rt).count

    def list(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        flt: WatchFilter | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> ListResult:
        """LIST, paginated by ``limit``/``continue``.

        Later pages show the objects as they were at the first page's resourceVersion (a
        consistent snapshot, like etcd's), rebuilt from the type's watch history. When the
        history no longer reaches back that far, they show current objects instead (a
        documented deviation); after ``force_gone`` such a token gets 410 Expired.
        """
        ts = self.state(rt)
        flt = flt or WatchFilter()
        ns = namespace if rt.namespaced else None
        list_rv = self._rv
        start: tuple[str, str] | None = None
        # Objects that changed since the snapshot: key -> the state at the snapshot, or None.
        as_of: dict[tuple[str, str], Stored | None] = {}
        if continue_token:
            token_rv, start = decode_continue(continue_token)
            if token_rv < ts.forced_rv:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
            list_rv = token_rv
            if token_rv >= ts.compacted_rv:
                as_of = ts.states_at(token_rv, ns)
        exact = flt.fields.exact_name()
        if exact is not None and start is None:
            candidates: list[tuple[str, str]] = (
                [(ns, exact)] if ns is not None else [(n, exact) for n in sorted(ts.by_ns)]
            )
        else:
            candidates = ts.sorted_keys(ns)
            gone = [k for k, v in as_of.items() if v is not None and ts.get(*k) is None]
            if gone:
                candidates = sorted([*candidates, *gone])
        index = bisect_right(candidates, start) if start is not None else 0
        items: list[Stored] = []
        last: tuple[str, str] | None = None
        while index < len(candidates):
            key = candidates[index]
            index += 1
            stored = as_of[key] if key in as_of else ts.get(*key)
            if stored is None or not flt.matches(stored.obj):
                continue
            items.append(stored)
            last = key
            if limit and len(items) >= limit:
                break
        token = None
        remaining = None
        if limit and last is not None and index < len(candidates):
            token = encode_continue(list_rv, *last)
            if flt.labels.empty and flt.fields.empty:
                remaining = len(candidates) - index
        if not rt.storage:
            items = [s.view(rt) for s in items]
        return ListResult(items, list_rv, token, remaining)

    # --- watches --------------------------------------------------------------------------

    def watch(self, rt: ResourceType, *, flt: WatchFilter, resource_version: str | None) -> Watch:
        """Open a watch. Without a resourceVersion (or "0") it starts with synthetic ADDED
        events for the current objects; from ``N`` it replays history after N, or yields one
        ERROR 410 event when N is older than the kept history."""
        ts = self.state(rt)
        watch = Watch(rt=rt, flt=flt, max_pending=self.max_watch_pending)
        if resource_version in (None, "", "0"):
            current = [
                s
                for s in (
                    ts.all() if flt.namespace is None else ts.by_ns.get(flt.namespace, {}).values()
                )
                if flt.matches(s.obj)
            ]
            current.sort(key=lambda s: s.resource_version)
            watch.max_pending += len(current)
            for s in current:
                watch.pending.append(b'{"type":"ADDED","object":' + s.view(rt).raw() + b"}\n")
        else:
            try:
                since = int(resource_version)
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{resource_version}"') from None
            if since < ts.compacted_rv:
                watch.close(gone_line(since, ts.compacted_rv))
                return watch
            backlog = [e for e in reversed(ts.history) if e.rv > since]
            backlog.reverse()
            watch.max_pending += len(backlog)
            for event in backlog:
                variant = flt.classify(event)
                if variant is not None:
                    watch.pending.append(event.line(variant, rt))
        ts.watches.add(watch)
        return watch

    def stop_watch(self, watch: Watch) -> None:
        watch.closed = True
        ts = self._types.get(watch.rt.storage_key)  # gone when its CRD was deleted
        if ts is not None:
            ts.watches.discard(watch)

    def force_gone(self, *, close_watches: bool = True) -> int:
        """Compact all history at the current resourceVersion: any watch (or continue token)
        from an older resourceVersion now gets 410. Open watches get an ERROR 410 event and are
        closed, so their clients must relist. Returns the compaction resourceVersion."""
        for ts in self._types.values():
            ts.history.clear()
            ts.compacted_rv = self._rv
            ts.forced_rv = self._rv
            if close_watches:
                for watch in list(ts.watches):
                    watch.close(gone_line(self._rv - 1, self._rv))
                ts.watches.clear()
        return self._rv

    # --- creates --------------------------------------------------------------------------

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        assert self._ns_rt is not None
        ns_obj = self.state(self._ns_rt).get("", namespace)
        if ns_obj is None:
            raise errors.not_found(resource="namespaces", group="", name=namespace)
        if ns_obj.metadata.get("deletionTimestamp"):
            raise errors.forbidden(
                resource=rt.plural,
                group=rt.group,
                name=name,
                why=f"unable to create new content in namespace {namespace} because it is "
                f"being terminated",
            )

    def create(
        self, rt: ResourceType, *, namespace: str | None, body: Any, dry_run: bool = False
    ) -> Stored:
        srt = self._storage(rt)
        obj = self._incoming(rt, srt, body)
        return self._create(
            srt, namespace=namespace, obj=obj, schema=rt.schema, dry_run=dry_run
        ).view(rt)

    def _incoming(self, rt: ResourceType, srt: ResourceType, body: Any) -> JSONDict:
        """A written body checked against the served type ``rt``, in ``srt``'s stored form."""
        obj = check_body(rt, body)
        return obj if rt.storage else convert_to_storage(rt, srt, obj)

    def _prune(self, rt: ResourceType, obj: JSONDict, schema: JSONDict | None) -> JSONDict:
        """Structural pruning of a custom resource write; records what was dropped."""
        if not rt.custom:
            return obj
        out, paths = calculate_pruned(obj, schema)
        if paths:
            mode, unknown = self._validation
            exact = calculate_pruned(obj, schema, exact=True)[1] if mode != "Ignore" else []
            if mode == "Strict":
                # Refused, so nothing is pruned or recorded.
                fields = ", ".join(f'unknown field "{p}"' for p in exact)
                raise errors.bad_request(
                    f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"strict decoding error: {fields}"
                )
            unknown.extend(exact)
            counts = self.pruned.setdefault(rt.key, {})
            for path in paths:
                counts[path] = counts.get(path, 0) + 1
        return out

    def _create(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        obj: JSONDict,
        schema: JSONDict | None,
        dry_run: bool,
    ) -> Stored:
        if rt.custom:
            self._check_crd_not_terminating(rt)
        meta: JSONDict = obj["metadata"]
        ns = ""
        if rt.namespaced:
            body_ns = meta.get("namespace")
            ns = namespace or body_ns or ""
            if body_ns and body_ns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            if not ns:
                raise errors.bad_request("a namespace is required for a namespaced resource")
        ts = self.state(rt)
        name = meta.get("name") or ""
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise errors.invalid(
                    kind=rt.kind,
                    group=rt.group,
                    name="",
                    field="metadata.name",
                    cause_reason="FieldValueRequired",
                    detail="Required value: name or generateName is required",
                )
            for _ in range(8):
                name = f"{prefix}{random_suffix(self.rng)}"
                if ts.get(ns, name) is None:
                    break
        check_name(rt, name)
        if rt.namespaced:
            self._check_namespace(rt, ns, name)
        if ts.get(ns, name) is not None:
            raise errors.already_exists(resource=rt.plural, group=rt.group, name=name)
        for key in (*SYSTEM_METADATA, "resourceVersion", "selfLink", "managedFields"):
            meta.pop(key, None)
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = self.now_timestamp()
        if rt.has_generation:
            meta["generation"] = 1
        obj = fold_string_data(rt, self._defaults_on_create(rt, obj))
        obj = self._prune(rt, obj, schema)
        validate(rt, obj, None)
        if dry_run:
            return Stored({**obj, "metadata": {**meta, "resourceVersion": str(self._rv)}})
        return self._commit(ts, event_type="ADDED", namespace=ns, name=name, obj=obj, previous=None)

    def _defaults_on_create(self, rt: ResourceType, obj: JSONDict) -> JSONDict:
        """What the real server defaults on create, per type."""
        if rt.status_subresource:
            obj.pop("status", None)
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        if rt.key == "namespaces":
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
            labels = dict(obj["metadata"].get("labels") or {})
            labels.setdefault("kubernetes.io/metadata.name", obj["metadata"]["name"])
            obj["metadata"]["labels"] = labels
        elif rt.key == "pods":
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
            spec.setdefault("restartPolicy", "Always")
            obj["spec"] = spec
        elif rt.key == "services":
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if spec["type"] != "ExternalName" and not spec.get("clusterIP"):
                ip = f"10.96.{self._next_cluster_ip // 250}.{self._next_cluster_ip % 250 + 1}"
                self._next_cluster_ip += 1
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
            spec["ports"] = [
                {"protocol": "TCP", "targetPort": p.get("port"), **p}
                for p in spec.get("ports") or []
                if isinstance(p, dict)
            ]
            obj["spec"] = spec
            obj["status"] = {"loadBalancer": {}}
        elif rt.key in ("replicasets.apps", "deployments.apps"):
            spec.setdefault("replicas", 1)
            if rt.kind == "Deployment":
                spec.setdefault("revisionHistoryLimit", 10)
                spec.setdefault("progressDeadlineSeconds", 600)
                spec.setdefault(
                    "strategy",
                    {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                    },
                )
            obj["spec"] = spec
            # ReplicaSetStatus.replicas is not omitempty; typed clients require it.
            obj["status"] = {"replicas": 0} if rt.kind == "ReplicaSet" else {}
        elif rt.key == "jobs.batch":
            uid = obj["metadata"]["uid"]
            name = obj["metadata"]["name"]
            spec.setdefault("parallelism", 1)
            spec.setdefault("completions", 1)
            spec.setdefault("backoffLimit", 6)
            template = dict(spec.get("template") or {})
            tmeta = dict(template.get("metadata") or {})
            labels = dict(tmeta.get("labels") or {})
            labels.update(
                {
                    "batch.kubernetes.io/controller-uid": uid,
                    "batch.kubernetes.io/job-name": name,
                    "controller-uid": uid,
                    "job-name": name,
                }
            )
            tmeta["labels"] = labels
            template["metadata"] = tmeta
            spec["template"] = template
            if not spec.get("manualSelector"):
                spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
            obj["spec"] = spec
            obj["status"] = {}
        elif rt.key == CRD_KEY:
            obj = crds.calculate_defaults(obj)
            obj["status"] = crds.calculate_status(
                obj, None, now=self.now_timestamp(), taken=self._names_taken(obj)
            )
        elif rt.status_subresource and not rt.custom:
            obj["status"] = {}
        return obj

    # --- updates --------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Stored:
        """PUT: replace the object (or only its status, for ``subresource="status"``)."""
        view, rt = rt, self._storage(rt)
        obj = self._incoming(view, rt, body)
        old = self.get(rt, namespace=namespace, name=name)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        rv = meta.get("resourceVersion")
        if not rv and not rt.allow_unconditional_update:
            # The real server names the resource, not the kind, in this one error.
            raise errors.invalid(
                kind=rt.plural,
                group=rt.group,
                name=name,
                field="metadata.resourceVersion",
                cause_reason="FieldValueInvalid",
                detail="Invalid value: 0x0: must be specified for an update",
            )
        return self._apply_update(
            rt, old, obj, subresource=subresource, dry_run=dry_run, schema=view.schema
        ).view(view)

    def _apply_update(
        self,
        rt: ResourceType,
        old: Stored,
        obj: JSONDict,
        *,
        subresource: str | None,
        dry_run: bool = False,
        schema: JSONDict | None = None,
    ) -> Stored:
        """Write ``obj`` over ``old`` (both stored forms). ``schema`` prunes a custom resource
        (default: ``rt``'s, the storage version's)."""
        check_preconditions(rt, old, obj["metadata"])
        prev = old.obj
        if subresource == "status":
            new: JSONDict = {**prev}
            if "status" in obj and obj["status"] is not None:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            new = self._prune(rt, new, schema if schema is not None else rt.schema)
            if rt.key == CRD_KEY:
                new["status"] = crds.calculate_status(
                    new, prev.get("status"), now=self.now_timestamp(), taken=self._names_taken(new)
                )
        else:
            meta = dict(obj["metadata"])
            for key in SYSTEM_METADATA:
                if key in prev["metadata"]:
                    meta[key] = prev["metadata"][key]
                else:
                    meta.pop(key, None)
            meta["name"] = prev["metadata"]["name"]
            if rt.namespaced:
                meta["namespace"] = prev["metadata"]["namespace"]
            for key in ("selfLink", "managedFields"):
                meta.pop(key, None)
            new = {**obj, "metadata": meta}
            if rt.status_subresource:
                if "status" in prev:
                    new["status"] = prev["status"]
                else:
                    new.pop("status", None)
            if rt.key == "namespaces":
                new["spec"] = prev.get("spec", {})
            if rt.key == CRD_KEY:
                new = crds.calculate_defaults(new)
            new = fold_string_data(rt, new)
            new = self._prune(rt, new, schema if schema is not None else rt.schema)
            validate(rt, new, prev)
            if rt.key == CRD_KEY:
                new["status"] = crds.calculate_status(
                    new, prev.get("status"), now=self.now_timestamp(), taken=self._names_taken(new)
                )
            if rt.has_generation and spec_changed(rt, prev, new):
                new["metadata"]["generation"] = int(prev["metadata"].get("generation", 0)) + 1
        if without_rv(new) == without_rv(prev):
            return old
        if dry_run:
            return Stored(new)
        ts = self.state(rt)
        ns = str(prev["metadata"].get("namespace", "")) if rt.namespaced else ""
        name = str(prev["metadata"]["name"])
        released = not new["metadata"].get("finalizers") and (
            rt.key != "namespaces" or not (new.get("spec") or {}).get("finalizers")
        )
        if new["metadata"].get("deletionTimestamp") and released:
            return self._commit(
                ts, event_type="DELETED", namespace=ns, name=name, obj=new, previous=old
            )
        return self._commit(
            ts, event_type="MODIFIED", namespace=ns, name=name, obj=new, previous=old
        )

    def patch(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Stored:
        """PATCH. A resourceVersion inside the patch is a precondition (409 on mismatch)."""
        view, rt = rt, self._storage(rt)
        old = self.get(rt, namespace=namespace, name=name)
        result = apply_patch(view, old.view(view).obj, patch_type, patch)
        if not isinstance(result, dict):
            raise errors.unprocessable("the patched object is not a JSON object")
        obj = self._incoming(view, rt, result)
        return self._apply_update(
            rt, old, obj, subresource=subresource, dry_run=dry_run, schema=view.schema
        ).view(view)

    # --- scale subresource ----------------------------------------------------------------

    def get_scale(self, rt: ResourceType, *, namespace: str | None, name: str) -> JSONDict:
        if rt.scale is None:
            raise errors.not_found(resource=f"{rt.plural}/scale", group=rt.group, name=name)
        return scale_of(rt, self.get(rt, namespace=namespace, name=name))

    def update_scale(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        name: str,
        body: Any,
        patch_type: str | None = None,
    ) -> JSONDict:
        """PUT (``patch_type=None``) or PATCH the scale subresource; returns the new Scale."""
        current = self.get_scale(rt, namespace=namespace, name=name)
        if patch_type is not None:
            if patch_type == STRATEGIC_MERGE_PATCH:
                patch_type = MERGE_PATCH
            body = apply_patch(rt, current, patch_type, body)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        replicas = (body.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                kind="Scale",
                group="autoscaling",
                name=name,
                field="spec.replicas",
                cause_reason="FieldValueInvalid",
                detail=f"Invalid value: {replicas}: must be greater than or equal to 0",
            )
        srt = self._storage(rt)
        old = self.get(srt, namespace=namespace, name=name)
        check_preconditions(srt, old, body.get("metadata") or {})
        assert rt.scale is not None
        new = copy.deepcopy(old.obj)
        cur: JSONDict = new
        for part in rt.scale.spec_replicas[:-1]:
            cur = cur.setdefault(part, {})
        cur[rt.scale.spec_replicas[-1]] = replicas
        stored = self._apply_update(srt, old, new, subresource=None, schema=rt.schema)
        return scale_of(rt, stored)

    # --- deletes --------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        name: str,
        propagation: str | None = None,
        preconditions: JSONDict | None = None,
        dry_run: bool = False,
    ) -> tuple[Stored, bool]:
        """Delete; returns the final object and whether it is gone now (False while
        finalizers, a terminating namespace or foreground dependents hold it)."""
        if not rt.storage:
            final, gone = self.delete(
                self._storage(rt),
                namespace=namespace,
                name=name,
                propagation=propagation,
                preconditions=preconditions,
                dry_run=dry_run,
            )
            return final.view(rt), gone
        if rt.key == CRD_KEY and not dry_run:
            return self._delete_crd(name, preconditions)
        old = self.get(rt, namespace=namespace, name=name)
        if preconditions:
            check_preconditions(rt, old, preconditions)
        policy = propagation or rt.default_propagation
        if policy not in ("Background", "Orphan", "Foreground"):
            raise errors.bad_request(f"unsupported propagationPolicy {policy!r}")
        if dry_run:
            return old, True
        uid = str(old.metadata.get("uid"))
        if policy == "Orphan":
            for dep_rt, dep in self.dependents_of(uid):
                self.remove_owner_reference(dep_rt, stored=dep, owner_uid=uid)
        elif policy == "Foreground":
            for dep_rt, dep in self.dependents_of(uid):
                if self.find(
                    dep_rt, namespace=dep.metadata.get("namespace"), name=dep.metadata["name"]
                ):
                    self.delete(
                        dep_rt,
                        namespace=dep.metadata.get("namespace"),
                        name=dep.metadata["name"],
                        propagation="Foreground",
                    )
        old = self.get(rt, namespace=namespace, name=name)
        meta = old.metadata
        pending = bool(meta.get("finalizers")) or rt.key == "namespaces"
        ts = self.state(rt)
        ns = str(meta.get("namespace", "")) if rt.namespaced else ""
        if pending:
            if meta.get("deletionTimestamp"):
                return old, False
            new_meta = {
                **meta,
                "deletionTimestamp": self.now_timestamp(),
                "deletionGracePeriodSeconds": 0,
            }
            new = {**old.obj, "metadata": new_meta}
            if rt.key == "namespaces":
                new["status"] = {**(old.obj.get("status") or {}), "phase": "Terminating"}
            return self._commit(
                ts,
                event_type="MODIFIED",
                namespace=ns,
                name=str(meta["name"]),
                obj=new,
                previous=old,
            ), False
        return self._commit(
            ts,
            event_type="DELETED",
            namespace=ns,
            name=str(meta["name"]),
            obj=old.obj,
            previous=old,
        ), True

    def remove_owner_reference(self, rt: ResourceType, *, stored: Stored, owner_uid: str) -> Stored:
        refs = [
            r for r in stored.metadata.get("ownerReferences") or [] if r.get("uid") != owner_uid
        ]
        meta = {**stored.metadata}
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        return self._apply_update(rt, stored, {**stored.obj, "metadata": meta}, subresource=None)

    def finalize_namespace(self, name: str) -> None:
        """Remove a terminating namespace once it is empty (the namespace controller's job)."""
        assert self._ns_rt is not None
        ts = self.state(self._ns_rt)
        stored = ts.get("", name)
        if stored is None or not stored.metadata.get("deletionTimestamp"):
            return
        self._commit(
            ts, event_type="DELETED", namespace="", name=name, obj=stored.obj, previous=stored
        )

    def namespace_is_empty(self, name: str) -> bool:
        return all(not ts.by_ns.get(name) for ts in self._types.values() if ts.rt.namespaced)

    # --- custom resource definitions ------------------------------------------------------

    def _crd_changed(self, event: Event) -> None:
        """A CRD was written: serve its versions as they now are, or stop serving."""
        if event.type == "DELETED":
            self._unserve(event.name)
            self._retry_names(str((event.current.obj.get("spec") or {}).get("group", "")))
        else:
            self._serve(event.current.obj)

    def _names_taken(self, crd: JSONDict) -> crds.TakenNames:
        """The names the other CRDs of ``crd``'s group hold."""
        group = (crd.get("spec") or {}).get("group")
        name = crd["metadata"].get("name")
        return crds.TakenNames.of(
            [
                s.obj
                for s in self._types[CRD_KEY].all()
                if s.obj["spec"].get("group") == group and s.metadata["name"] != name
            ]
        )

    def _retry_names(self, group: str) -> None:
        """After a CRD goes, the CRDs of its group whose names were refused try again (the
        naming controller requeues them)."""
        ts = self._types[CRD_KEY]
        for stored in sorted(ts.all(), key=lambda s: str(s.metadata["name"])):
            obj = stored.obj
            if obj["spec"].get("group") != group or crds.names_accepted(obj):
                continue
            status = crds.calculate_status(
                obj, obj.get("status"), now=self.now_timestamp(), taken=self._names_taken(obj)
            )
            if status != obj.get("status"):
                self._commit(
                    ts,
                    event_type="MODIFIED",
                    namespace="",
                    name=str(stored.metadata["name"]),
                    obj={**obj, "status": status},
                    previous=stored,
                )

    def _serve(self, crd: JSONDict) -> None:
        key = str(crd["metadata"]["name"])
        if not crds.is_established(crd):
            self._unserve(key)  # never established: nothing is stored under it
            return
        types = crds.calculate_resource_types(crd)
        storage = next(t for t in types if t.storage)
        ts = self._types.get(key)
        if ts is None:
            self._types[key] = TypeState(storage, self._rv)
        else:
            if ts.rt.api_version != storage.api_version or ts.rt.schema != storage.schema:
                # A new storage version or schema: the real server converts and prunes what it
                # reads from etcd, so every read now shows the objects in the new version and
                # pruned by the new schema. Rewrite them so, silently (no events, same
                # resourceVersions, nothing recorded: no client wrote these fields now).
                for bucket in ts.by_ns.values():
                    for name, stored in bucket.items():
                        obj, _paths = calculate_pruned(
                            {**stored.obj, "apiVersion": storage.api_version}, storage.schema
                        )
                        bucket[name] = Stored(obj)
            ts.rt = storage
        self.registry.serve(key, types)

    def _unserve(self, key: str) -> None:
        self.registry.unserve(key)
        ts = self._types.pop(key, None)
        if ts is None:
            return
        for watch in list(ts.watches):
            watch.close()
        ts.watches.clear()
        for stored in ts.all():  # left behind only when a client removed the finalizer
            self._by_uid.pop(str(stored.metadata.get("uid", "")), None)
        for owner, deps in list(self._dependents.items()):
            deps.difference_update({d for d in deps if d[0] == key})
            if not deps:
                del self._dependents[owner]

    def _check_crd_not_terminating(self, rt: ResourceType) -> None:
        crd_ts = self._types.get(CRD_KEY)
        crd = None if crd_ts is None else crd_ts.get("", rt.key)
        if crd is not None and crd.metadata.get("deletionTimestamp"):
            raise ApiError(
                code=405,
                reason="MethodNotAllowed",
                message="create not allowed while custom resource definition is terminating",
                details={},
            )

    def _delete_crd(self, name: str, preconditions: JSONDict | None) -> tuple[Stored, bool]:
        """Delete a CRD as apiextensions-apiserver does: mark it Terminating with the cleanup
        finalizer, delete every object of the type (their own finalizers still hold them), and
        remove it when the last one is gone; serving stops then."""
        ts = self._types[CRD_KEY]
        old = self.get(ts.rt, namespace=None, name=name)
        if preconditions:
            check_preconditions(ts.rt, old, preconditions)
        if not old.metadata.get("deletionTimestamp"):
            finalizers = list(old.metadata.get("finalizers") or [])
            if crds.CLEANUP_FINALIZER not in finalizers:
                finalizers.append(crds.CLEANUP_FINALIZER)
            meta = {
                **old.metadata,
                "deletionTimestamp": self.now_timestamp(),
                "deletionGracePeriodSeconds": 0,
                "finalizers": finalizers,
            }
            new = {**old.obj, "metadata": meta}
            new["status"] = crds.calculate_status(
                new, old.obj.get("status"), now=self.now_timestamp(), taken=self._names_taken(new)
            )
            old = self._commit(
                ts, event_type="MODIFIED", namespace="", name=name, obj=new, previous=old
            )
            rt = self.registry.find_key(name)
            if rt is not None:
                for stored in list(self.iter_objects(rt)):
                    if not stored.metadata.get("deletionTimestamp"):
                        self.delete(
                            rt,
                            namespace=stored.metadata.get("namespace"),
                            name=stored.metadata["name"],
                        )
            self._finish_crd_deletion(name)
        final = ts.get("", name)
        return (old, True) if final is None else (final, False)

    def _finish_crd_deletion(self, key: str) -> None:
        """Drop the cleanup finalizer of a terminating CRD once its type holds no objects."""
        crd_ts = self._types.get(CRD_KEY)
        crd = None if crd_ts is None else crd_ts.get("", key)
        if crd_ts is None or crd is None or not crd.metadata.get("deletionTimestamp"):
            return
        if crds.CLEANUP_FINALIZER not in (crd.metadata.get("finalizers") or []):
            return
        ts = self._types.get(key)
        if ts is not None and ts.count:
            return
        finalizers = [f for f in crd.metadata["finalizers"] if f != crds.CLEANUP_FINALIZER]
        meta = {**crd.metadata}
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        self._commit(
            crd_ts,
            event_type="MODIFIED" if finalizers else "DELETED",
            namespace="",
            name=key,
            obj={**crd.obj, "metadata": meta},
            previous=crd,
        )

    # --- persistence ----------------------------------------------------------------------

    def snapshot(self) -> JSONDict:
        return {
            "resourceVersion": self._rv,
            "objects": [s.obj for ts in self._types.values() for s in ts.all()],
        }

    def restore(self, data: JSONDict) -> None:
        """Load a snapshot into an empty store. History starts empty at the snapshot's
        resourceVersion, so watches from before it get 410, as after an etcd restore."""
        self._rv = int(data.get("resourceVersion", 0))
        objects = list(data.get("objects", []))
        # CRDs first: their types must be served before their objects can be placed.
        objects.sort(key=lambda o: o.get("kind") != crds.CRD_KIND)
        for obj in objects:
            found = self.registry.by_kind(str(obj.get("apiVersion")), str(obj.get("kind")))
            if found is None:
                continue
            rt = self.registry.find_key(found.storage_key)
            if rt is None:
                continue
            meta = obj["metadata"]
            ns = str(meta.get("namespace", "")) if rt.namespaced else ""
            stored = Stored(obj)
            self.state(rt).put(ns, str(meta["name"]), stored)
            key = (rt.key, ns, str(meta["name"]))
            self._by_uid[str(meta.get("uid", ""))] = key
            for owner in _owner_uids(obj):
                self._dependents.setdefault(owner, set()).add(key)
            self._rv = max(self._rv, int(meta.get("resourceVersion", 0)))
            if rt.key == CRD_KEY:
                self._serve(obj)
        for ts in self._types.values():
            ts.compacted_rv = self._rv
            ts.forced_rv = self._rv
