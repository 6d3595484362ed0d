"""The HTTP face of the devcluster: Kubernetes REST paths on aiohttp.

This module only translates: it parses the URL the way the API server does (``/api/v1/...``,
``/apis/<group>/<version>/...``, optional ``namespaces/<ns>/``, ``/status`` and ``/scale``
subresources, the legacy ``/watch/`` prefix), calls the store, and writes JSON: objects, lists
assembled from each object's cached JSON, ``Status`` errors, discovery documents, and chunked
watch streams with bookmarks and ``timeoutSeconds``. Semantics live in ``store.py`` and the
modules beside it (``writerules.py``, ``history.py``, ``watches.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Callable
from typing import Any

from aiohttp import web

from devcluster import errors, protobuf
from devcluster.audit import AuditLog
from devcluster.conversion import storage_field_path
from devcluster.errors import ApiError, JSONDict
from devcluster.resources import Registry, ResourceType
from devcluster.selectors import (
    FieldRequirement,
    FieldSelector,
    parse_field_selector,
    parse_label_selector,
)
from devcluster.store import FIELD_VALIDATION_MODES, Store
from devcluster.stored import Stored, dumps
from devcluster.tables import calculate_table, wants_table
from devcluster.watches import WatchFilter

log = logging.getLogger(__name__)

JSON_CONTENT = "application/json"
DEFAULT_WATCH_TIMEOUT = 1800.0
VERSION_INFO: JSONDict = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-devcluster",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def json_response(body: Any, status: int = 200) -> web.Response:
    raw = body if isinstance(body, bytes) else dumps(body)
    return web.Response(body=raw, status=status, content_type=JSON_CONTENT)


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), status=error.code)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class ApiHandler:
    """The aiohttp request handler for every Kubernetes path the devcluster serves."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        bookmark_interval: float,
        server_address: Callable[[], str],
        on_compact: Callable[[], int],
    ) -> None:
        self.store = store
        self.registry = registry
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.on_compact = on_compact
        self._streams: set[asyncio.Event] = set()
        self._closing = False
        self.audit = AuditLog()

    def close_streams(self) -> None:
        """End every open watch stream (server shutdown)."""
        self._closing = True
        for wake in list(self._streams):
            wake.set()

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if (audited := self.audit.handle(request)) is not None:  # /_devcluster/audit
            return audited
        try:
            return await self._dispatch(request)
        except ApiError as exc:
            return error_response(exc)
        except Exception:
            log.exception("devcluster: %s %s failed", request.method, request.path)
            return error_response(
                ApiError(code=500, reason="InternalError", message="internal error")
            )

    # --- routing --------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        method = request.method
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts == ["version"]:
            return json_response(VERSION_INFO)
        if parts and parts[0] == "openapi":
            return self._openapi(request, parts[1:])
        if parts and parts[0] == "_devcluster":
            return self._admin(request, parts[1:])
        if parts == ["api"]:
            return json_response(self._api_versions())
        if parts == ["apis"]:
            return json_response(self._group_list())
        if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        elif len(parts) == 2 and parts[0] == "apis":
            found = self._group(parts[1])
            if found is None:
                raise errors.page_not_found(request.path)
            return json_response(found)
        else:
            raise errors.page_not_found(request.path)
        if not rest:
            resources = self.registry.in_group_version(group, version)
            if not resources:
                raise errors.page_not_found(request.path)
            return json_response(self._resource_list(group, version, resources))
        watch_path = False
        if rest[0] == "watch":
            watch_path, rest = True, rest[1:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and (rt_ns := self.registry.lookup(group, version, rest[2])) is not None
            and rt_ns.namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.page_not_found(request.path)
        rt = self.registry.lookup(group, version, rest[0])
        if rt is None:
            raise errors.page_not_found(request.path)
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (namespace is not None and not rt.namespaced) or (
            rt.namespaced and namespace is None and name is not None
        ):
            raise errors.page_not_found(request.path)
        if name is None:
            if method == "GET":
                if watch_path or _truthy(request.query.get("watch")):
                    return await self._watch(request, rt, namespace)
                return self._list(request, rt, namespace)
            if rt.namespaced and namespace is None:
                # Cluster-wide paths of namespaced types are read-only, as on a real server.
                raise errors.method_not_allowed(method)
            if method == "POST":
                body = await self._body(request)
                return self._validated(
                    request,
                    lambda: self.store.create(
                        rt, namespace=namespace, body=body, dry_run=self._dry_run(request)
                    ),
                    status=201,
                )
            if method == "DELETE":
                return await self._delete_collection(request, rt, namespace)
            raise errors.method_not_allowed(method)
        if watch_path:
            return await self._watch(request, rt, namespace, name=name)
        if sub is None:
            return await self._item(request, rt, namespace, name)
        if sub == "status" and rt.status_subresource:
            return await self._status(request, rt, namespace, name)
        if sub == "scale" and rt.scale is not None:
            return await self._scale(request, rt, namespace, name)
        raise errors.page_not_found(request.path)

    # --- discovery ------------------------------------------------------------------------

    def _api_versions(self) -> JSONDict:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address()}
            ],
        }

    def _group(self, group: str) -> JSONDict | None:
        versions = self.registry.group_versions().get(group)
        if not versions:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def _group_list(self) -> JSONDict:
        groups = [self._group(g) for g in self.registry.group_versions()]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _resource_list(self, group: str, version: str, resources: list[ResourceType]) -> JSONDict:
        entries: list[dict[str, object]] = []
        for rt in resources:
            entries.extend(rt.discovery_entries())
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": entries,
        }

    # --- OpenAPI ---------------------------------------------------------------------------

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        """A schema-less OpenAPI v3: enough for kubectl to find that every type supports the
        ``fieldValidation`` parameter (so it validates server-side instead of downloading
        schemas). No v2 document is served, as on servers that only publish v3."""
        if parts == ["v3"]:
            paths = {}
            for group, version in dict.fromkeys(rt.group_version for rt in self.registry.types):
                prefix = f"apis/{group}/{version}" if group else f"api/{version}"
                paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash=devcluster"}
            return json_response({"paths": paths})
        if len(parts) >= 3 and parts[0] == "v3":
            rest = parts[1:]
            if rest[0] == "api" and len(rest) == 2:
                group, version = "", rest[1]
            elif rest[0] == "apis" and len(rest) == 3:
                group, version = rest[1], rest[2]
            else:
                raise errors.page_not_found(request.path)
            resources = self.registry.in_group_version(group, version)
            if not resources:
                raise errors.page_not_found(request.path)
            return json_response(self._openapi_group_version(resources))
        raise errors.page_not_found(request.path)

    @staticmethod
    def _openapi_group_version(resources: list[ResourceType]) -> JSONDict:
        paths: JSONDict = {}
        for rt in resources:
            base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
            scope = "/namespaces/{namespace}" if rt.namespaced else ""
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            params = [
                {"name": name, "in": "query", "schema": {"type": "string"}}
                for name in ("dryRun", "fieldManager", "fieldValidation")
            ]
            operation = {
                "operationId": f"patch{rt.kind}",
                "parameters": params,
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}},
            }
            paths[f"{base}{scope}/{rt.plural}/{{name}}"] = {"patch": operation}
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
            "paths": paths,
            "components": {"schemas": _custom_resource_schemas(resources)},
        }

    # --- admin ----------------------------------------------------------------------------

    def _admin(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts == ["compact"] and request.method == "POST":
            return json_response({"resourceVersion": str(self.on_compact())})
        if parts == ["pruned"] and request.method in ("GET", "DELETE"):
            pruned = self.store.pruned_fields()
            if request.method == "DELETE":
                self.store.clear_pruned_fields()
            return json_response(pruned)
        if parts == ["stats"] and request.method == "GET":
            counts = {rt.key: self.store.count(rt) for rt in self.registry.storage_types}
            return json_response(
                {"resourceVersion": str(self.store.resource_version), "objects": counts}
            )
        raise errors.page_not_found(request.path)

    # --- helpers --------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if request.content_type == protobuf.CONTENT_TYPE:
            return protobuf.decode_request_body(raw)
        try:
            return json.loads(raw) if raw else None
        except ValueError as exc:
            raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        return bool(request.query.getall("dryRun", []))

    def _filter(self, request: web.Request, rt: ResourceType, namespace: str | None) -> WatchFilter:
        try:
            labels = parse_label_selector(request.query.get("labelSelector"))
            fields = parse_field_selector(
                request.query.get("fieldSelector"), supported=rt.field_labels
            )
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        return WatchFilter(
            namespace=namespace if rt.namespaced else None,
            labels=labels,
            fields=self._stored_fields(rt, fields),
        )

    @staticmethod
    def _stored_fields(rt: ResourceType, fields: FieldSelector) -> FieldSelector:
        """Field selectors of a served form that is not the stored one (events.k8s.io/v1's
        ``regarding.name``), rewritten for the stored objects they are matched against."""
        if rt.storage or fields.empty:
            return fields
        return FieldSelector(
            tuple(
                FieldRequirement(storage_field_path(rt, r.path), r.value, r.negate)
                for r in fields.requirements
            )
        )

    # --- collection verbs -----------------------------------------------------------------

    def _list(self, request: web.Request, rt: ResourceType, namespace: str | None) -> web.Response:
        flt = self._filter(request, rt, namespace)
        try:
            limit = int(request.query.get("limit") or 0)
        except ValueError:
            raise errors.bad_request("limit must be an integer") from None
        result = self.store.list(
            rt,
            namespace=namespace,
            flt=flt,
            limit=max(0, limit),
            continue_token=request.query.get("continue") or None,
        )
        meta: JSONDict = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        table = self._as_table(request, rt, result.items, meta)
        if table is not None:
            return table
        head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(s.raw() for s in result.items) + b"]}"
        return json_response(body)

    async def _delete_collection(
        self, request: web.Request, rt: ResourceType, namespace: str | None
    ) -> web.Response:
        flt = self._filter(request, rt, namespace)
        policy, _ = await self._delete_options(request)
        result = self.store.list(rt, namespace=namespace, flt=flt)
        deleted = []
        for stored in result.items:
            try:
                final, _gone = self.store.delete(
                    rt,
                    namespace=stored.metadata.get("namespace"),
                    name=stored.metadata["name"],
                    propagation=policy,
                    dry_run=self._dry_run(request),
                )
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(final)
        meta = {"resourceVersion": str(self.store.resource_version)}
        head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(s.raw() for s in deleted) + b"]}"
        return json_response(body)

    async def _delete_options(self, request: web.Request) -> tuple[str | None, JSONDict | None]:
        policy = request.query.get("propagationPolicy")
        orphan = request.query.get("orphanDependents")
        preconditions: JSONDict | None = None
        if request.can_read_body:
            body = await self._body(request)
            if isinstance(body, dict):
                policy = body.get("propagationPolicy") or policy
                if body.get("orphanDependents") is not None:
                    orphan = str(body["orphanDependents"])
                pre = body.get("preconditions")
                if isinstance(pre, dict) and any(pre.values()):
                    preconditions = {k: v for k, v in pre.items() if v}
        if policy is None and orphan is not None:
            policy = "Orphan" if _truthy(orphan) else "Background"
        return policy, preconditions

    def _as_table(
        self, request: web.Request, rt: ResourceType, items: list[Stored], meta: JSONDict
    ) -> web.Response | None:
        """A custom resource's Table when the client asks for one (kubectl get), else None."""
        if not rt.custom or not wants_table(request.headers.get("Accept", "")):
            return None
        return json_response(
            calculate_table(
                rt.printer_columns,
                [s.obj for s in items],
                list_meta=meta,
                include_object=request.query.get("includeObject", "PartialObjectMetadata"),
                now=self.store.clock(),
            )
        )

    # --- item verbs -----------------------------------------------------------------------

    async def _item(
        self, request: web.Request, rt: ResourceType, namespace: str | None, name: str
    ) -> web.Response:
        method = request.method
        if method == "GET":
            stored = self.store.get(rt, namespace=namespace, name=name)
            meta = {"resourceVersion": stored.metadata["resourceVersion"]}
            table = self._as_table(request, rt, [stored], meta)
            return table if table is not None else json_response(stored.raw())
        if method == "PUT":
            body = await self._body(request)
            return self._validated(
                request,
                lambda: self.store.update(
                    rt, namespace=namespace, name=name, body=body, dry_run=self._dry_run(request)
                ),
            )
        if method == "PATCH":
            return await self._patch(request, rt, namespace, name, subresource=None)
        if method == "DELETE":
            policy, preconditions = await self._delete_options(request)
            final, gone = self.store.delete(
                rt,
                namespace=namespace,
                name=name,
                propagation=policy,
                preconditions=preconditions,
                dry_run=self._dry_run(request),
            )
            if rt.delete_returns_object or not gone:
                return json_response(final.raw(), status=200 if gone else 202)
            details: JSONDict = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            details["uid"] = final.metadata.get("uid")
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        raise errors.method_not_allowed(method)

    def _validated(
        self, request: web.Request, write: Callable[[], Stored], *, status: int = 200
    ) -> web.Response:
        """Run a write under the request's ``fieldValidation``: fields the schema prunes fail
        it with 400 (Strict), come back as ``Warning`` headers (Warn, the default, what
        kubectl prints), or go silently (Ignore)."""
        mode = request.query.get("fieldValidation") or "Warn"
        if mode not in FIELD_VALIDATION_MODES:
            raise errors.bad_request(
                f'fieldValidation "{mode}" is not supported: use Ignore, Warn or Strict'
            )
        with self.store.field_validation(mode) as unknown:
            stored = write()
        response = json_response(stored.raw(), status=status)
        if mode == "Warn":
            for path in unknown:
                response.headers.add("Warning", f'299 - "unknown field \\"{path}\\""')
        return response

    async def _patch(
        self,
        request: web.Request,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        subresource: str | None,
    ) -> web.Response:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        body = await self._body(request)
        return self._validated(
            request,
            lambda: self.store.patch(
                rt,
                namespace=namespace,
                name=name,
                patch_type=content_type,
                patch=body,
                subresource=subresource,
                dry_run=self._dry_run(request),
            ),
        )

    async def _status(
        self, request: web.Request, rt: ResourceType, namespace: str | None, name: str
    ) -> web.Response:
        method = request.method
        if method == "GET":
            return json_response(self.store.get(rt, namespace=namespace, name=name).raw())
        if method == "PUT":
            body = await self._body(request)
            return self._validated(
                request,
                lambda: self.store.update(
                    rt,
                    namespace=namespace,
                    name=name,
                    body=body,
                    subresource="status",
                    dry_run=self._dry_run(request),
                ),
            )
        if method == "PATCH":
            return await self._patch(request, rt, namespace, name, subresource="status")
        raise errors.method_not_allowed(method)

    async def _scale(
        self, request: web.Request, rt: ResourceType, namespace: str | None, name: str
    ) -> web.Response:
        method = request.method
        if method == "GET":
            return json_response(self.store.get_scale(rt, namespace=namespace, name=name))
        if method in ("PUT", "PATCH"):
            body = await self._body(request)
            patch_type = None
            if method == "PATCH":
                patch_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            return json_response(
                self.store.update_scale(
                    rt, namespace=namespace, name=name, body=body, patch_type=patch_type
                )
            )
        raise errors.method_not_allowed(method)

    # --- watch ----------------------------------------------------------------------------

    async def _watch(
        self,
        request: web.Request,
        rt: ResourceType,
        namespace: str | None,
        *,
        name: str | None = None,
    ) -> web.StreamResponse:
        query = request.query
        flt = self._filter(request, rt, namespace)
        if name is not None:  # the legacy /watch/<plural>/<name> form
            by_name = FieldRequirement(("metadata", "name"), name, negate=False)
            flt = WatchFilter(
                namespace=flt.namespace,
                labels=flt.labels,
                fields=FieldSelector((*flt.fields.requirements, by_name)),
            )
        try:
            timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        except ValueError:
            raise errors.bad_request("timeoutSeconds must be a number") from None
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        initial_end = _truthy(query.get("sendInitialEvents"))
        resource_version = query.get("resourceVersion")
        if initial_end:
            resource_version = None
        watch = self.store.watch(rt, flt=flt, resource_version=resource_version)
        if initial_end and bookmarks:
            watch.pending.append(self._bookmark(rt, initial_events_end=True))
        as_table = rt.custom and wants_table(request.headers.get("Accept", ""))
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        watch.notify = wake.set
        self._streams.add(wake)
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON_CONTENT})
        response.enable_chunked_encoding()
        deadline = loop.time() + max(0.0, timeout)
        interval = self.bookmark_interval
        next_bookmark = loop.time() + interval if bookmarks else math.inf
        try:
            await response.prepare(request)
            while not self._closing:
                if watch.pending:
                    chunk = b"".join(watch.pending)
                    watch.pending.clear()
                    if as_table:
                        chunk = self._table_events(request, rt, chunk)
                    await response.write(chunk)
                    continue
                if watch.closed:
                    break
                now = loop.time()
                if now >= deadline:
                    break
                if now >= next_bookmark:
                    await response.write(self._bookmark(rt))
                    next_bookmark = now + interval
                    continue
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), min(deadline, next_bookmark) - now)
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            self._streams.discard(wake)
            self.store.stop_watch(watch)
        return response

    def _table_events(self, request: web.Request, rt: ResourceType, chunk: bytes) -> bytes:
        """Watch events re-encoded with Table objects (``kubectl get -w``), one row each, as a
        real server sends to a client that asked for tables. ERROR and BOOKMARK stay as are."""
        include = request.query.get("includeObject", "PartialObjectMetadata")
        out = []
        for line in chunk.splitlines():
            event = json.loads(line)
            obj = event.get("object") or {}
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and obj.get("kind") == rt.kind:
                meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
                event["object"] = calculate_table(
                    rt.printer_columns,
                    [obj],
                    list_meta=meta,
                    include_object=include,
                    now=self.store.clock(),
                )
            out.append(dumps(event) + b"\n")
        return b"".join(out)

    def _bookmark(self, rt: ResourceType, *, initial_events_end: bool = False) -> bytes:
        meta: JSONDict = {"resourceVersion": str(self.store.resource_version)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _custom_resource_schemas(resources: list[ResourceType]) -> JSONDict:
    """The OpenAPI v3 schemas a real server publishes for custom resources (named
    ``<reversed group>.<version>.<Kind>`` and tagged with their GVK), so that ``kubectl
    explain`` finds them. Built-in types stay schema-less here."""
    schemas: JSONDict = {}
    for rt in resources:
        if not rt.custom or rt.schema is None:
            continue
        name = ".".join([*reversed(rt.group.split(".")), rt.version, rt.kind])
        gvk = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
        schemas[name] = {**rt.schema, "x-kubernetes-group-version-kind": gvk}
    return schemas
