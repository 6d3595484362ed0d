"""Which reflectors a workloadRef starts on demand."""

from __future__ import annotations

from typing import Any

from rollout_workers.cache import Change
from rollout_workers.kube import resources as r
from rollout_workers.watcher.ondemand import ON_DEMAND, referenced_kinds


def rollout_change(kind: str, api_version: str, event: str = "ADDED") -> Change:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"workloadRef": {"apiVersion": api_version, "kind": kind, "name": "x"}},
    }
    return Change(event, "prod/web", obj, None)


def test_each_supported_kind_has_its_on_demand_types() -> None:
    assert ON_DEMAND == {
        "Deployment.apps": (r.DEPLOYMENTS,),
        # the labelled ReplicaSets are always watched; only the complement starts on demand
        "ReplicaSet.apps": (r.UNHASHED_REPLICASETS,),
        "PodTemplate": (r.PODTEMPLATES,),
    }
    assert not set(ON_DEMAND["Deployment.apps"]) & set(r.WATCHED.values())


def test_referenced_kinds_of_rollout_changes() -> None:
    changes = [
        rollout_change("Deployment", "apps/v1"),
        rollout_change("PodTemplate", "v1"),
        rollout_change("ReplicaSet", "apps/v1", event="DELETED"),  # a deletion starts nothing
        Change("ADDED", "prod/plain", {"metadata": {"name": "plain"}, "spec": {}}, None),
    ]
    assert referenced_kinds(changes) == {"Deployment.apps", "PodTemplate"}
