"""An audit log of the devcluster's API requests: who asked for what.

The devcluster has no authentication, so RBAC cannot be enforced; it can be proven instead. Each
request is recorded as the attributes RBAC authorizes on (verb, API group, resource,
subresource, whether it is namespace-scoped; or the non-resource path) and the identity making
it: the bearer token of the kubeconfig it came through (``write_kubeconfig(token=...)``), so each
process kind gets its own kubeconfig and its calls can be compared with the Roles deploy/ grants
it (tests/e2e/test_rbac.py). Requests without a token are recorded as ``anonymous``.

``GET /_devcluster/audit`` answers the distinct calls with their counts; ``DELETE`` clears them.
Only the request line and the Authorization header are read, never a body.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

ANONYMOUS = "anonymous"

#: Path prefixes that name no resource (discovery, health, version, OpenAPI).
_NON_RESOURCE_ROOTS = {"api", "apis", "version", "healthz", "livez", "readyz", "openapi"}


@dataclass(frozen=True, order=True)
class Call:
    """One kind of request, as RBAC sees it."""

    user: str
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespaced: bool = False
    #: The object's name: from the path, or a list's or watch's `metadata.name=` field
    #: selector (as the API server's RequestInfo takes it, so `resourceNames` can allow it).
    name: str = ""
    #: For requests that name no resource (discovery): the path.
    path: str = ""

    @property
    def rbac_resource(self) -> str:
        """The resource as an RBAC rule names it: ``rollouts/status``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _user(authorization: str | None) -> str:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or ANONYMOUS
    return ANONYMOUS


def classify(method: str, path: str, query: dict[str, str], authorization: str | None) -> Call:
    """The RBAC attributes of one request (the rules of the API server's RequestInfoFactory)."""
    user = _user(authorization)
    parts = [p for p in path.split("/") if p]
    if parts and parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts and parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return Call(user=user, verb=method.lower(), path=path)
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespaced = False
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespaced, rest = True, rest[2:]
    if not rest:
        return Call(user=user, verb=method.lower(), path=path)
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    watch = watch or query.get("watch", "").lower() in ("1", "true")
    verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
    }.get(method, "")
    if method == "GET":
        verb = "watch" if watch else ("get" if name else "list")
        if not name:
            name = _selected_name(query.get("fieldSelector", ""))
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    return Call(
        user=user,
        verb=verb or method.lower(),
        group=group,
        resource=resource,
        subresource=subresource,
        namespaced=namespaced,
        name=name,
    )


def _selected_name(field_selector: str) -> str:
    """The name a `metadata.name=<name>` (or `==`) field selector picks, else ""."""
    for term in field_selector.split(","):
        key, sep, value = term.replace("==", "=").partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


class AuditLog:
    """The calls seen so far, counted. Lives on the server's event loop (not thread-safe)."""

    def __init__(self) -> None:
        self._calls: Counter[Call] = Counter()

    def handle(self, request: web.Request) -> web.Response | None:
        """Record a request, or answer it when it is for the audit log itself."""
        if request.path.rstrip("/") == "/_devcluster/audit":
            if request.method == "DELETE":
                self.clear()
            return web.json_response(self.calls())
        if not request.path.startswith("/_devcluster/"):
            call = classify(
                request.method,
                request.path,
                dict(request.query),
                request.headers.get("Authorization"),
            )
            self._calls[call] += 1
        return None

    def calls(self) -> list[dict[str, Any]]:
        """Each distinct call with its ``count``, sorted."""
        return [{**asdict(call), "count": n} for call, n in sorted(self._calls.items())]

    def clear(self) -> None:
        self._calls.clear()
