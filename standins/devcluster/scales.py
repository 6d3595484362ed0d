"""The autoscaling/v1 Scale that a type's ``/scale`` subresource shows of an object.

Separate from the store because it is a representation, as tables.py is: a pure function of the
stored object and the type's scale paths (``ScaleSpec``), which the store's ``get_scale`` and
``update_scale`` answer with.
"""

from __future__ import annotations

from typing import Any

from devcluster.errors import JSONDict
from devcluster.resources import ResourceType
from devcluster.selectors import format_label_selector, selector_from_label_selector_object
from devcluster.stored import Stored


def scale_of(rt: ResourceType, stored: Stored) -> JSONDict:
    """The Scale of ``stored``: replicas and selector read at ``rt.scale``'s paths."""
    assert rt.scale is not None
    obj = stored.obj

    def at(path: tuple[str, ...]) -> Any:
        cur: Any = obj
        for part in path:
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur

    if rt.scale.label_selector is not None:
        selector = at(rt.scale.label_selector) or ""
    else:
        try:
            selector = format_label_selector(
                selector_from_label_selector_object((obj.get("spec") or {}).get("selector"))
            )
        except ValueError:
            selector = ""
    meta = obj["metadata"]
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    status: JSONDict = {"replicas": int(at(rt.scale.status_replicas) or 0)}
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": int(at(rt.scale.spec_replicas) or 0)},
        "status": status,
    }
