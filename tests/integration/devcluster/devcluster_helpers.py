"""Helpers for the devcluster conformance tests: polling with a deadline and object bodies."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
READY_DELAY = 0.3
BOOKMARK_INTERVAL = 0.3


def wait_for(probe: Callable[[], T | None], *, timeout: float = 10.0, what: str = "") -> T:
    """Poll ``probe`` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or probe} (last value: {last!r})")


def replicaset(
    name: str, *, replicas: int = 1, image: str = "nginx:1", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def rollout_body(name: str, *, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
            },
            "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {}}]}},
        },
    }
