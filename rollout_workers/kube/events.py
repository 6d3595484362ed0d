"""core/v1 Events about an object, as `kubectl describe` and the Argo plugin show them."""

from __future__ import annotations

from typing import Any

COMPONENT = "rollouts-controller"


def event_body(
    obj: dict[str, Any], *, reason: str, message: str, warning: bool, now: str
) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace", "default"))
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": namespace,
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
    }
