"""Conversion between a type's stored form and the other forms it is served in.

A real API server stores one version of each resource and converts on the way in and out. Two
cases matter here:

- the served versions of a CRD with the ``None`` strategy: only ``apiVersion`` is rewritten;
- ``events.k8s.io/v1`` events, stored as ``core/v1`` events (one set of objects, readable and
  writable through both APIs), with the field mapping of ``pkg/apis/events/v1/conversion.go``:
  regarding↔involvedObject, note↔message, deprecatedSource↔source,
  deprecatedFirstTimestamp/LastTimestamp/Count↔firstTimestamp/lastTimestamp/count,
  reportingController↔reportingComponent; reportingInstance, related, series, action, reason,
  type and eventTime keep their names.

Pure functions; the input is never mutated.
"""

from __future__ import annotations

from typing import Any

from devcluster.resources import ResourceType

JSONDict = dict[str, Any]

#: events.k8s.io/v1 field -> core/v1 field.
EVENTS_V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
CORE_TO_EVENTS_V1 = {core: v1 for v1, core in EVENTS_V1_TO_CORE.items()}


def _rename(obj: JSONDict, mapping: dict[str, str]) -> JSONDict:
    # A field of the target form that has no source in this one is dropped (it could not be
    # stored), as the generated conversion functions do.
    out: JSONDict = {}
    for key, value in obj.items():
        if key in mapping.values() and key not in mapping:
            continue
        out[mapping.get(key, key)] = value
    return out


def storage_field_path(view: ResourceType, path: tuple[str, ...]) -> tuple[str, ...]:
    """A field selector path of ``view`` (``regarding.name``) as a path in the stored object
    (``involvedObject.name``); selectors are matched against stored objects."""
    if view.conversion != "events" or not path:
        return path
    return (EVENTS_V1_TO_CORE.get(path[0], path[0]), *path[1:])


def convert_from_storage(view: ResourceType, obj: JSONDict) -> JSONDict:
    """The stored object ``obj`` as ``view`` serves it."""
    if view.conversion == "events":
        out = _rename(obj, CORE_TO_EVENTS_V1)
        # core/v1's empty-string defaults have no place in events.k8s.io/v1.
        for key in ("deprecatedSource", "regarding"):
            if out.get(key) == {}:
                del out[key]
        if not out.get("deprecatedCount"):
            out.pop("deprecatedCount", None)
    else:
        out = dict(obj)
    out["apiVersion"] = view.api_version
    out["kind"] = view.kind
    return out


def convert_to_storage(view: ResourceType, storage: ResourceType, obj: JSONDict) -> JSONDict:
    """An object written through ``view``, in the stored form of ``storage``."""
    out = _rename(obj, EVENTS_V1_TO_CORE) if view.conversion == "events" else dict(obj)
    out["apiVersion"] = storage.api_version
    out["kind"] = storage.kind
    return out
