"""Which subresources the API server serves for a type, learned from discovery.

A CRD decides whether its objects have a `/status` (and `/scale`) subresource: Argo Rollouts'
own CRDs declare both on Rollout and neither on AnalysisRun or Experiment, while other installs
may declare `status` everywhere. Writers therefore ask here instead of assuming.

The answer is cached per group-version for the life of the process, as client-go's cached
discovery is, with two ways to learn that a CRD was replaced under a running controller:
`forget` after a write that contradicts the cache (see `writer.KubeWriter.patch_status`), and a
time-to-live after which the next question reads discovery again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import Resource

#: Reads one discovery document (an APIResourceList) by path.
Fetch = Callable[[str], dict[str, object]]


@dataclass(frozen=True)
class _Entry:
    subresources: frozenset[tuple[str, str]]  # (plural, subresource); "" for the type itself
    fetched_at: float


class Discovery:
    """Per-process cache of the served `<plural>/<subresource>` names, per group-version."""

    def __init__(
        self, fetch: Fetch, *, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def has_subresource(self, resource: Resource, subresource: str) -> bool:
        """Whether `<plural>/<subresource>` is served (False when the group-version is not)."""
        return (resource.plural, subresource) in self._entry(resource).subresources

    def serves(self, resource: Resource) -> bool:
        """Whether the API server serves the type at its group-version (a CRD may serve some
        versions of a group and not others, or none)."""
        return (resource.plural, "") in self._entry(resource).subresources

    def forget(self, resource: Resource) -> None:
        """Drop what is known of the resource's group-version; the next question re-reads it."""
        with self._lock:
            self._entries.pop(_path(resource), None)

    def _entry(self, resource: Resource) -> _Entry:
        path = _path(resource)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None and now - entry.fetched_at < self._ttl:
                return entry
        # Fetched outside the lock: a slow API server must not block other group-versions.
        try:
            document = self._fetch(path)
        except NotFound:
            # The group-version is not served (yet): nothing to cache, ask again next time.
            return _Entry(subresources=frozenset(), fetched_at=now)
        entry = _Entry(subresources=_served_subresources(document), fetched_at=now)
        with self._lock:
            self._entries[path] = entry
        return entry


def _path(resource: Resource) -> str:
    return f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"


def _served_subresources(document: dict[str, object]) -> frozenset[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    resources = document.get("resources")
    for item in resources if isinstance(resources, list) else ():
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str):
            plural, _, sub = name.partition("/")
            found.add((plural, sub))
    return frozenset(found)
