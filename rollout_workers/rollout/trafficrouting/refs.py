"""Which router objects a Rollout's `trafficRouting` names: the pure answer lives in
cache/routerrefs.py, below the cache (which indexes rollouts by it); re-exported here for the
reconcile code."""

from __future__ import annotations

from rollout_workers.cache.routerrefs import (
    GATEWAY_API_PLUGIN,
    GATEWAY_ROUTE_FIELDS,
    RouterRef,
    canary_mapping_name,
    dependent_router_refs,
    gateway_api_config,
    gateway_route_names,
    router_refs,
    split_namespaced,
    traffic_routing,
    virtual_router_ref,
)

__all__ = [
    "GATEWAY_API_PLUGIN",
    "GATEWAY_ROUTE_FIELDS",
    "RouterRef",
    "canary_mapping_name",
    "dependent_router_refs",
    "gateway_api_config",
    "gateway_route_names",
    "router_refs",
    "split_namespaced",
    "traffic_routing",
    "virtual_router_ref",
]
