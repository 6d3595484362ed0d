"""The pods of a ReplicaSet, read from the API: the watcher does not cache pods, so the steps
that act on pods (restarts, ephemeral metadata) list them when they need them."""

from __future__ import annotations

from typing import Protocol

from rollout_workers.kube.client import Kube
from rollout_workers.kube.resources import PODS
from rollout_workers.kube.writer import KubeWriter, Writer
from rollout_workers.objects import Obj


class PodReader(Protocol):
    """Reads pods from the API (the watcher does not cache them)."""

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]: ...


class KubePodReader:
    """A `PodReader` over the API server."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        items, _ = self.kube.list(PODS, namespace=namespace, label_selector=label_selector)
        return items


def pod_reader_for(writer: Writer) -> PodReader | None:
    """The API the writer writes to, as a PodReader (None for a writer without one)."""
    return KubePodReader(writer.kube) if isinstance(writer, KubeWriter) else None


def format_selector(selector: Obj) -> str:
    """metav1.FormatLabelSelector: matchLabels then matchExpressions, comma separated."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key"), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def owned_by(pod: Obj, rs: Obj) -> bool:
    """The pod's ownerReferences name the ReplicaSet (by uid; by kind and name without one)."""
    meta = rs.get("metadata") or {}
    uid, name = meta.get("uid"), meta.get("name")
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if uid:
            if ref.get("uid") == uid:
                return True
        elif ref.get("kind") == "ReplicaSet" and ref.get("name") == name:
            return True
    return False


def replicaset_pods(rs: Obj, pods: PodReader, *, namespace: str) -> list[Obj]:
    """The pods the ReplicaSet owns: listed by its selector, kept when their ownerReferences
    name it (a selector alone can match another owner's pods)."""
    meta = rs.get("metadata") or {}
    selector = format_selector((rs.get("spec") or {}).get("selector") or {})
    listed = pods.list_pods(str(meta.get("namespace") or namespace), selector)
    return [pod for pod in listed if owned_by(pod, rs)]
