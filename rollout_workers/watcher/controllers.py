"""Which types a watcher mirrors, given the controllers it serves and its namespace.

A controller is served when its keys are queued; it needs every type its reconcile reads from
the cache, and every type whose events wake its keys (watcher/eventkeys.py). Like Argo's
analysis-only manager, `--controllers analysis` mirrors only analysis runs and their Jobs, so a
watcher (and its RBAC) can serve a subset; the worker pool for it consumes only that kind's
Celery queue.

With `--namespace`, cluster-scoped types (ClusterAnalysisTemplate) are not watched: a
namespaced install's Role cannot grant them, and a Rollout that references one is Degraded with
InvalidSpec "ClusterAnalysisTemplate '<name>' not found".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import KubeError
from rollout_workers.notifications.source import CONFIGMAP_NAME, SECRET_NAME
from rollout_workers.settings import CONTROLLERS, Settings

log = logging.getLogger(__name__)

#: The types each controller's reconcile reads from the cache or is woken by.
NEEDS: dict[str, frozenset[r.Resource]] = {
    "rollouts": frozenset(
        {
            r.ROLLOUTS,
            r.REPLICASETS,
            r.SERVICES,
            r.ANALYSISRUNS,
            r.ANALYSISTEMPLATES,
            r.CLUSTERANALYSISTEMPLATES,
            r.EXPERIMENTS,
            r.INGRESSES,
        }
    ),
    "analysis": frozenset({r.ANALYSISRUNS, r.JOBS}),
    "experiments": frozenset(
        {
            r.EXPERIMENTS,
            r.REPLICASETS,
            r.SERVICES,
            r.ANALYSISRUNS,
            r.ANALYSISTEMPLATES,
            r.CLUSTERANALYSISTEMPLATES,
        }
    ),
}


def watched(controllers: Iterable[str], *, namespace: str) -> list[r.Resource]:
    """The types to run a Reflector for, in `resources.WATCHED` order."""
    needed = set().union(*(NEEDS[c] for c in controllers))
    return [
        res for res in r.WATCHED.values() if res in needed and (res.namespaced or not namespace)
    ]


def notification_watches(settings: Settings) -> list[tuple[r.Resource, str | None, str]]:
    """The notifications ConfigMap and Secret, by name (type, namespace, field selector): in
    the controller's namespace, or in every namespace served with self-service notifications
    (Argo's --self-service-notification-enabled)."""
    config = settings.notifications
    namespace = (
        (settings.kube.namespace or None)
        if config.self_service
        else settings.notifications_namespace
    )
    return [
        (r.CONFIGMAPS, namespace, f"metadata.name={CONFIGMAP_NAME}"),
        (r.SECRETS, namespace, f"metadata.name={SECRET_NAME}"),
    ]


def served_version(resource: r.Resource, serves: Callable[[r.Resource], bool]) -> r.Resource:
    """The version to reflect a type at: for Ingresses the newest the API server serves (a
    cluster older than 1.19 has only a v1beta1 one; v1 when discovery cannot answer), for
    every other type its own."""
    if resource != r.INGRESSES:
        return resource
    try:
        return next((res for res in r.INGRESS_VERSIONS if serves(res)), resource)
    except KubeError as err:
        log.warning("cannot tell which Ingress version is served (%s): watching %s", err, resource)
        return resource


def queued_kinds(controllers: Iterable[str]) -> set[str]:
    """The task kinds whose keys this watcher queues."""
    return {CONTROLLERS[c] for c in controllers}
