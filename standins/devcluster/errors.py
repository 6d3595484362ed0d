"""Kubernetes API errors as the real API server shapes them.

Clients (client-go, the official Python client, kubectl) classify failures by the HTTP code and the
``reason`` of a ``Status`` object, so every error the devcluster raises carries both, with the
same messages and ``details`` a real server sends. The store raises these; the HTTP layer only
serialises them.
"""

from __future__ import annotations

from typing import Any

JSONDict = dict[str, Any]


class ApiError(Exception):
    """A failed API call, carrying the ``Status`` object that the server returns."""

    def __init__(
        self,
        *,
        code: int,
        reason: str,
        message: str,
        details: JSONDict | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JSONDict:
        """The ``Status`` object (kind Status, apiVersion v1) for the response body."""
        body: JSONDict = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(resource: str, group: str) -> str:
    """``replicasets.apps``, ``pods``: the group-qualified resource name used in messages."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> JSONDict:
    details: JSONDict = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(*, resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=404,
        reason="NotFound",
        message=f'{qualified(resource, group)} "{name}" not found',
        details=_details(name, group, resource),
    )


def already_exists(*, resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=409,
        reason="AlreadyExists",
        message=f'{qualified(resource, group)} "{name}" already exists',
        details=_details(name, group, resource),
    )


def conflict(*, resource: str, group: str, name: str, why: str | None = None) -> ApiError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    return ApiError(
        code=409,
        reason="Conflict",
        message=f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(name, group, resource),
    )


def invalid(
    *, kind: str, group: str, name: str, field: str, cause_reason: str, detail: str
) -> ApiError:
    """422 Invalid; ``details.kind`` is the Kind (not the resource), as the real server has it."""
    message = f'{qualified(kind, group)} "{name}" is invalid: {field}: {detail}'
    details = _details(name, group, kind)
    details["causes"] = [{"reason": cause_reason, "message": detail, "field": field}]
    return ApiError(code=422, reason="Invalid", message=message, details=details)


def invalid_causes(
    *, kind: str, group: str, name: str, causes: list[tuple[str, str, str]]
) -> ApiError:
    """422 Invalid with several ``(field, reason, detail)`` causes; the message lists them in
    brackets when there is more than one, as the real server's aggregate does."""
    parts = [f"{field}: {detail}" for field, _reason, detail in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(name, group, kind)
    details["causes"] = [
        {"reason": reason, "message": detail, "field": field} for field, reason, detail in causes
    ]
    return ApiError(
        code=422,
        reason="Invalid",
        message=f'{qualified(kind, group)} "{name}" is invalid: {joined}',
        details=details,
    )


def unprocessable(message: str) -> ApiError:
    """A patch that decodes but cannot be applied (RFC 6902 ``test`` failure, bad path)."""
    return ApiError(code=422, reason="Invalid", message=message)


def bad_request(message: str) -> ApiError:
    return ApiError(code=400, reason="BadRequest", message=message)


def forbidden(*, resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        code=403,
        reason="Forbidden",
        message=f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        details=_details(name, group, resource),
    )


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        code=405,
        reason="MethodNotAllowed",
        message=f"the server does not allow this method on the requested resource ({method})",
        details={},
    )


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        code=415,
        reason="UnsupportedMediaType",
        message=f"the body of the request was in an unknown format - accepted media types "
        f"include: application/json-patch+json, application/merge-patch+json "
        f"(got {content_type or 'none'})",
        details={},
    )


def expired(message: str) -> ApiError:
    """410 with reason Expired: what a real server sends for a too old resourceVersion."""
    return ApiError(code=410, reason="Expired", message=message)


def page_not_found(path: str) -> ApiError:
    return ApiError(
        code=404,
        reason="NotFound",
        message="the server could not find the requested resource",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": f"404 {path}"}]},
    )
