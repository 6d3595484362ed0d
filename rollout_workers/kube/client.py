"""Raw JSON requests through the official client: list pages, watch streams, writes.

Every request passes a client-side rate limiter (QPS with a burst, as client-go's), and every
failure is turned into a typed error from `errors`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast
from urllib.parse import urlencode

import urllib3
from kubernetes import client as k8s

from rollout_workers.counters import PendingCounts
from rollout_workers.kube.discovery import Discovery
from rollout_workers.kube.errors import KubeError, Unavailable, from_status
from rollout_workers.kube.resources import Resource
from rollout_workers.objects import Obj, decode, encode
from rollout_workers.settings import KubeSettings


class RateLimiter:
    """Token bucket: `qps` tokens a second, at most `burst` saved up."""

    def __init__(self, qps: float, burst: int) -> None:
        self._qps, self._burst = qps, float(burst)
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1
            delay = -self._tokens / self._qps if self._tokens < 0 else 0.0
        if delay:
            time.sleep(delay)


class _Endpoint:
    """The connection pool of the API server's URL, taken once from the client's pool manager
    (its TLS and client-certificate settings), so that a request skips the manager's parsing
    of every URL and its pool lookup. Through a proxy, every request goes through the manager
    (which speaks to the proxy), as before."""

    def __init__(self, manager: urllib3.PoolManager, host: str) -> None:
        self._manager, self._host = manager, host
        self._base = (urllib3.util.parse_url(host).path or "").rstrip("/")
        self._direct = not isinstance(manager, urllib3.ProxyManager)
        self._pool: urllib3.HTTPConnectionPool | None = None

    def urlopen(self, method: str, path: str, **kwargs: Any) -> urllib3.HTTPResponse:
        if not self._direct:
            return cast(
                urllib3.HTTPResponse, self._manager.urlopen(method, self._host + path, **kwargs)
            )
        pool = self._pool
        if pool is None or pool.pool is None:  # not taken yet, or closed by the manager
            pool = self._pool = self._manager.connection_from_url(self._host)
        # What the manager passes for a URL of its pool's host (no redirects: the API
        # server answers them as errors).
        response = pool.urlopen(
            method, self._base + path, assert_same_host=False, redirect=False, **kwargs
        )
        return cast(urllib3.HTTPResponse, response)  # preload_content=False: never preloaded


class Kube:
    def __init__(
        self, api: k8s.ApiClient, settings: KubeSettings, counts: PendingCounts | None = None
    ) -> None:
        self.api = api
        self.settings = settings
        self.counts = counts
        self.limiter = RateLimiter(settings.qps, settings.burst)
        self.requests = 0
        self._endpoint = _Endpoint(api.rest_client.pool_manager, api.configuration.host)
        self.discovery = Discovery(lambda path: self.json("GET", path), ttl=settings.discovery_ttl)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
    ) -> urllib3.HTTPResponse:
        """One API request; the response is returned unread (the caller reads or streams it).

        Sent straight through the client's own urllib3 pool manager (its TLS, client
        certificates and proxy; see `_Endpoint`), with its configuration's headers and
        credentials (refreshed as it refreshes them), but not through `ApiClient.call_api`: that
        walks every body and header to sanitize it and builds the request twice over, about a
        fifth of a request's CPU here, for raw JSON that needs none of it."""
        self.limiter.wait()
        self.requests += 1
        api = self.api
        target = path
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        if params:
            target += "?" + urlencode(params)
        headers = {**api.default_headers, "Accept": "application/json"}
        headers["Content-Type"] = content_type
        api.update_params_for_auth(headers, [], ["BearerToken"])
        data = None
        if body is not None:
            data = encode(body, default=api.sanitize_for_serialization)
        seconds = timeout or self.settings.request_timeout
        if isinstance(seconds, tuple):
            limit = urllib3.Timeout(connect=seconds[0], read=seconds[1])
        else:
            limit = urllib3.Timeout(total=seconds)
        try:
            response = self._endpoint.urlopen(
                method, target, body=data, headers=headers, preload_content=False, timeout=limit
            )
        except (urllib3.exceptions.HTTPError, OSError) as err:
            self._count(method, path, query, 0)
            raise Unavailable(0, "Unavailable", str(err)) from None
        status = response.status
        self._count(method, path, query, status)
        if not 200 <= status <= 299:
            try:
                payload = response.data
            except (urllib3.exceptions.HTTPError, OSError):
                payload = b""
            finally:
                response.release_conn()
            raise from_status(status, payload)
        return response

    def _count(self, method: str, path: str, query: dict[str, Any] | None, status: int) -> None:
        """controller_clientset_k8s_request_total, as Argo counts it."""
        if self.counts is not None:
            watch = (query or {}).get("watch") == "true"
            self.counts.request(method, path, status, watch=watch)

    def json(self, method: str, path: str, **kwargs: Any) -> Obj:
        response = self.request(method, path, **kwargs)
        try:
            data: Obj = decode(response.data)
        except ValueError as err:
            raise KubeError(response.status, "BadResponse", f"not JSON: {err}") from None
        return data

    # -- reads -----------------------------------------------------------------------------

    def list_page(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        return self.json(
            "GET",
            resource.path(namespace),
            query={
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "limit": limit,
                "continue": continue_token,
            },
        )

    def list_pages(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Iterator[Obj]:
        """The pages of a paginated LIST, one at a time (each page's metadata carries the
        list's resourceVersion), so a caller can hold one page instead of the whole list."""
        token: str | None = None
        while True:
            page = self.list_page(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=self.settings.page_size,
                continue_token=token,
            )
            token = (page.get("metadata") or {}).get("continue") or None
            yield page
            if not token:
                return

    def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> tuple[list[Obj], str]:
        """Every object (paginated), and the list's resourceVersion."""
        items: list[Obj] = []
        rv = ""
        for page in self.list_pages(resource, namespace=namespace, label_selector=label_selector):
            items.extend(page.get("items") or [])
            rv = str((page.get("metadata") or {}).get("resourceVersion", ""))
        return items, rv

    def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[], None] | None = None,
        on_response: Callable[[urllib3.HTTPResponse], None] | None = None,
    ) -> Iterator[Obj]:
        """Watch events as parsed JSON, until the server ends the stream. `on_open` is called
        once the server has answered (the watch is established, events or not); `on_response`
        gets the open response, so another thread can end the stream (`shutdown()`)."""
        response = self.request(
            "GET",
            resource.path(namespace),
            query={
                "watch": "true",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "timeoutSeconds": timeout_seconds,
            },
            # Connect timeout, then a read timeout past the server's own end of the stream.
            timeout=(self.settings.request_timeout, timeout_seconds + 30),
        )
        if on_open is not None:
            on_open()
        if on_response is not None:
            on_response(response)
        try:
            for line in iter_lines(response):
                yield parse_watch_line(line)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise Unavailable(0, "Unavailable", f"watch stream broke: {err}") from None
        finally:
            response.release_conn()

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self.json("GET", resource.path(namespace, name))

    # -- writes ----------------------------------------------------------------------------

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        # (rollout_events_total is counted where events are recorded: kube/eventsink.py.)
        return self.json("POST", resource.path(namespace), body=body)

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        patch_type: str = "application/merge-patch+json",
    ) -> Obj:
        """Patch; a `metadata.resourceVersion` in a merge patch is a precondition (409 if stale)."""
        return self.json(
            "PATCH", resource.path(namespace, name, subresource), body=body, content_type=patch_type
        )

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
    ) -> Obj:
        """Delete; `propagation` is Foreground, Background or Orphan for the dependents."""
        body = {"propagationPolicy": propagation} if propagation else None
        return self.json("DELETE", resource.path(namespace, name), body=body)


class WatchEvent(dict[str, Any]):
    """A watch event as parsed JSON, with its object's text exactly as the server sent it
    (`object_text`), so a cache can store the object without encoding it again."""

    object_text: bytes | None = None


#: The start of a watch event's line, as the API server encodes it (type first, then the
#: object), by event type.
_EVENT_HEADS = {
    t: b'{"type":"' + t.encode() + b'","object":' for t in ("ADDED", "MODIFIED", "DELETED")
}


def parse_watch_line(line: bytes) -> Any:
    """One line of a watch stream, parsed; a WatchEvent with `object_text` set when the line
    is exactly `{"type":"<T>","object":{...}}` (any other shape parses, without it)."""
    parsed = decode(line)
    if not isinstance(parsed, dict):
        return parsed
    event = WatchEvent(parsed)
    head = _EVENT_HEADS.get(parsed.get("type"))  # type: ignore[arg-type]
    if head is not None and len(parsed) == 2 and isinstance(parsed.get("object"), dict):
        body = line.rstrip()
        # Two keys, the type's first: the object is the rest, up to the closing brace.
        if body.startswith(head) and body.endswith(b"}"):
            event.object_text = body[len(head) : -1]
    return event


def iter_lines(response: urllib3.HTTPResponse) -> Iterator[bytes]:
    """Split a chunked stream into lines as they arrive."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
