"""Traffic-router objects (TrafficSplit, VirtualService, DestinationRule, HTTPRoute, ...), read
from the API server at the newest version it serves.

Router CRDs are optional and come in several versions, so which version to speak is learned
from discovery (cached per group-version, see discovery.py), newest first as listed in
`resources.ROUTER_OBJECTS`. A kind the cluster does not serve reads as None. The API access
only: which objects a rollout names is routerrefs.py (with the map of the router-object code),
the reads through the cache cache/routerobjects.py.
"""

from __future__ import annotations

from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import NotFound
from rollout_workers.objects import Obj


class ApiRouterObjects:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def served(self, kind: str) -> r.Resource | None:
        """The newest version of the router kind the API server serves (None: not installed)."""
        versions = r.ROUTER_OBJECTS.get(kind, ())
        return next((res for res in versions if self.kube.discovery.serves(res)), None)

    def get(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        try:
            return self.kube.get(resource, namespace, name)
        except NotFound:
            # The object, or its whole kind (a CRD removed): discovery is asked again.
            self.kube.discovery.forget(resource)
            return None
