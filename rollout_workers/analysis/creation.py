"""Creating an AnalysisRun under a name that may be taken (Argo's CreateWithCollisionCounter).

A rollout or experiment names its runs deterministically. When the name is taken, the run
there is ours if its spec is the one we would create and it has not finished (an earlier
reconcile created it and the cache has not caught up); otherwise the next free `<name>.<n>`
is used.
"""

from __future__ import annotations

from rollout_workers.cache.indexers import controller_owner
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists
from rollout_workers.kube.writer import Writer
from rollout_workers.objects import Obj

COMPLETED = frozenset({"Successful", "Failed", "Error", "Inconclusive"})
MAX_ATTEMPTS = 6


class RunNameExhausted(RuntimeError):
    """No free name for the run after MAX_ATTEMPTS tries."""


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _ours(existing: Obj, body: Obj) -> bool:
    phase = str((existing.get("status") or {}).get("phase") or "")
    owner = controller_owner(existing) or {}
    wanted = body["metadata"]["ownerReferences"][0]
    return (
        existing.get("spec") == body["spec"]
        and phase not in COMPLETED
        and owner.get("uid") == wanted.get("uid")
    )


def create_run(writer: Writer, namespace: str, body: Obj, known: list[Obj]) -> Obj:
    """Create `body` (or find it already created), counting the name up on collisions.
    `known` are the runs the owner already has, as read from the cache."""
    base = body["metadata"]["name"]
    for attempt in range(MAX_ATTEMPTS):
        name = f"{base}.{attempt}" if attempt else base
        body["metadata"]["name"] = name
        existing = next((x for x in known if _name(x) == name), None)
        if existing is not None and _ours(existing, body):
            return existing
        try:
            return writer.create(r.ANALYSISRUNS, namespace, body)
        except AlreadyExists:
            continue
    raise RunNameExhausted(f"cannot find a free name for AnalysisRun {base}")
