"""Pointing Services at ReplicaSets: the `rollouts-pod-template-hash` selector switch.

A Service a rollout manages carries the `argo-rollouts.argoproj.io/managed-by-rollouts`
annotation; its selector gains the hash of the ReplicaSet it should send traffic to. A switch to
a ReplicaSet none of whose pods are available yet is delayed when availability is required.
"""

from __future__ import annotations

import logging

from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout import conditions as c
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext

log = logging.getLogger(__name__)


MANAGED_BY = "argo-rollouts.argoproj.io/managed-by-rollouts"
SWITCH_MESSAGE = "Switched selector for service '{}' from '{}' to '{}'"


class ServiceNotFound(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(c.SERVICE_NOT_FOUND_MESSAGE.format(name))
        self.name = name


def selector_hash(service: Obj | None) -> str:
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    return str(selector.get(r.POD_TEMPLATE_HASH_LABEL) or "")


def partially_available(rs: Obj | None) -> bool:
    return rsutil.status_count(rs, "availableReplicas") > 0


def switch_selector(ctx: RolloutContext, service: Obj, new_hash: str) -> Obj:
    name = rsutil.name(service)
    old_hash = selector_hash(service)
    patch = fenced(
        {
            "metadata": {"annotations": {MANAGED_BY: ctx.name}},
            "spec": {"selector": {r.POD_TEMPLATE_HASH_LABEL: new_hash}},
        },
        (service.get("metadata") or {}).get("resourceVersion"),
    )
    written = ctx.writer.patch(r.SERVICES, ctx.namespace, name, patch)
    ctx.services[name] = written
    ctx.event(c.SWITCH_SERVICE_REASON, SWITCH_MESSAGE.format(name, old_hash, new_hash))
    return written


def ensure_targets(
    ctx: RolloutContext, service_name: str | None, rs: Obj | None, *, check_available: bool
) -> None:
    """Point the named Service at `rs` (when it differs), waiting for availability if asked."""
    if not service_name or rs is None:
        return
    service = ctx.services.get(service_name)
    if service is None:
        raise ServiceNotFound(service_name)
    wanted = rsutil.pod_hash(rs)
    if not wanted or selector_hash(service) == wanted:
        return
    if check_available and not partially_available(rs):
        log.info(
            "delaying the switch of service %s to %s: no pod available yet", service_name, wanted
        )
        return
    switch_selector(ctx, service, wanted)
