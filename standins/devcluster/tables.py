"""Server-side printing of custom resources: the ``meta.k8s.io/v1`` Table of a CRD's columns.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the
columns the server chose; for a custom resource those are ``Name`` and the version's
``additionalPrinterColumns`` (``Age`` when it declares none), as apiextensions-apiserver's
table convertor builds them: simple JSONPaths into the object, ``date`` columns as a
human-readable age, ``priority`` > 0 only with ``-o wide``. Built-in types are not printed
server-side here (kubectl falls back to its own columns). Pure functions, no I/O.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from rollout_workers.timefmt import human_duration

JSONDict = dict[str, Any]

TABLE_MEDIA = "as=Table"
_DEFAULT_COLUMNS: tuple[Mapping[str, Any], ...] = (
    {
        "name": "Age",
        "type": "date",
        "jsonPath": ".metadata.creationTimestamp",
        "description": "CreationTimestamp is a timestamp representing the server time when this "
        "object was created.",
    },
)
_PATH_PART = re.compile(r"^([^\[\]]+)((?:\[\d+\])*)$")


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io/v1 Table (kubectl get does)."""
    for media in accept.split(","):
        params = {p.strip() for p in media.split(";")[1:]}
        if TABLE_MEDIA in params and "g=meta.k8s.io" in params and "v=v1" in params:
            return True
    return False


def calculate_table(
    columns: Iterable[Mapping[str, Any]],
    objects: list[JSONDict],
    *,
    list_meta: JSONDict,
    include_object: str,
    now: float,
) -> JSONDict:
    """The Table of ``objects``; ``include_object`` is the ``includeObject`` parameter
    (None, Object, or the default PartialObjectMetadata)."""
    printer = list(columns) or list(_DEFAULT_COLUMNS)
    definitions = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": "Name must be unique within a namespace.",
            "priority": 0,
        }
    ]
    for column in printer:
        definitions.append(
            {
                "name": column.get("name", ""),
                "type": "string" if column.get("type") == "date" else column.get("type", "string"),
                "format": column.get("format", ""),
                "description": column.get("description", ""),
                "priority": int(column.get("priority", 0)),
            }
        )
    rows = []
    for obj in objects:
        cells: list[Any] = [obj.get("metadata", {}).get("name", "")]
        cells.extend(_cell(obj, column, now=now) for column in printer)
        row: JSONDict = {"cells": cells}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": definitions,
        "rows": rows,
    }


def _cell(obj: JSONDict, column: Mapping[str, Any], *, now: float) -> Any:
    value = _at(obj, str(column.get("jsonPath", "")))
    if value is None:
        return None
    if column.get("type") == "date" and isinstance(value, str):
        try:
            then = calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            return value
        return human_duration(now - then)
    if isinstance(value, (dict, list)):
        return str(value)
    return value


def _at(obj: Any, path: str) -> Any:
    """A simple JSONPath (``.status.phase``, ``.spec.items[0].name``); None when absent."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if not path.startswith("."):
        return None
    current = obj
    for part in path[1:].split("."):
        m = _PATH_PART.match(part)
        if m is None:
            return None
        current = current.get(m.group(1)) if isinstance(current, dict) else None
        for index in re.findall(r"\[(\d+)\]", m.group(2)):
            i = int(index)
            current = current[i] if isinstance(current, list) and i < len(current) else None
        if current is None:
            return None
    return current
