"""SMI TrafficSplits, read straight from the API server at the newest version it serves.

The watcher does not cache TrafficSplits (the SMI CRDs are optional and come in three
versions), so the rollout reconcile GETs the one its router manages. Which version to speak is
learned from discovery (cached per group-version, see discovery.py): v1alpha3, else v1alpha2,
else v1alpha1, as a cluster may serve any of them.
"""

from __future__ import annotations

from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import NotFound

Obj = dict[str, Any]


class ApiTrafficSplits:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def served(self) -> r.Resource | None:
        """The newest TrafficSplit version the API server serves (None: SMI is not installed)."""
        return next((res for res in r.TRAFFICSPLITS if self.kube.discovery.serves(res)), None)

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        try:
            return self.kube.get(resource, namespace, name)
        except NotFound:
            return None
