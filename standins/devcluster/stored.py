"""One stored object version (``Stored``) and the compact JSON every response carries.

Separate from the store because every layer holds these values (the store's state, watch events,
the HTTP handlers, the controllers) without needing the store itself. A ``Stored`` is
immutable: its JSON is serialised once and shared by every GET, LIST page and watch event that
carries it, and its views through other served versions are converted once.
"""

from __future__ import annotations

import json
from typing import Any

from devcluster.conversion import convert_from_storage
from devcluster.errors import JSONDict
from devcluster.pruning import calculate_pruned
from devcluster.resources import ResourceType


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class Stored:
    """One immutable object version and its JSON, serialised on first use."""

    __slots__ = ("_raw", "_views", "obj")

    def __init__(self, obj: JSONDict) -> None:
        self.obj = obj
        self._raw: bytes | None = None
        self._views: dict[str, tuple[JSONDict | None, Stored]] | None = None

    def view(self, rt: ResourceType) -> Stored:
        """This object as ``rt`` serves it (itself for the storage type), converted once. A
        custom resource read through another version is pruned by that version's schema, as
        the real server prunes the conversion's output."""
        if rt.storage:
            return self
        if self._views is None:
            self._views = {}
        found = self._views.get(rt.api_version)
        # Keyed by the schema object too: a CRD update replaces it, and the view with it.
        if found is None or found[0] is not rt.schema:
            obj = convert_from_storage(rt, self.obj)
            if rt.custom:
                obj, _paths = calculate_pruned(obj, rt.schema)
            found = self._views[rt.api_version] = (rt.schema, Stored(obj))
        return found[1]

    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = dumps(self.obj)
        return self._raw

    @property
    def metadata(self) -> JSONDict:
        meta: JSONDict = self.obj["metadata"]
        return meta

    @property
    def resource_version(self) -> int:
        return int(self.metadata["resourceVersion"])
