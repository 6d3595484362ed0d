"""Creating an object under a name that may be taken (Argo's CreateWithCollisionCounter and
createExperimentWithCollisionHandling).

A rollout or experiment names its AnalysisRuns and Experiments deterministically. When the name
is taken, the object there is ours if its controller is the owner we create it for, its spec is
semantically the one we would create and it has not finished: an earlier reconcile created it
and the cache has not caught up (after a worker was killed between the create and the status
write that names it, or simply a stale cache). Otherwise the next name is tried: `<name>.<n>`
for a run, `<name>-<n>` for an experiment. The cache is asked first; a create that finds the
name taken asks the API server, as Argo does, so a cache that has not seen the object yet
cannot make a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable

from rollout_workers.cache.indexers import controller_owner
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists
from rollout_workers.kube.writer import Writer
from rollout_workers.objects import Obj

COMPLETED = frozenset({"Successful", "Failed", "Error", "Inconclusive"})
MAX_ATTEMPTS = 6

#: The spec fields Argo's analysis IsSemanticallyEqual compares (the rest, e.g. `terminate`,
#: do not make a run another one).
RUN_SPEC_FIELDS = ("metrics", "dryRun", "measurementRetention", "args")


class NameExhausted(RuntimeError):
    """No free name for the object after MAX_ATTEMPTS tries."""


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def same_run_spec(left: Obj, right: Obj) -> bool:
    """Argo's analysis IsSemanticallyEqual: metrics, dryRun, measurementRetention and args
    (an empty list is no list, as Go's omitempty marshals it)."""
    a, b = left.get("spec") or {}, right.get("spec") or {}
    return all((a.get(f) or None) == (b.get(f) or None) for f in RUN_SPEC_FIELDS)


def same_experiment_spec(left: Obj, right: Obj) -> bool:
    """Argo's experiment IsSemanticallyEqual: the whole spec, `terminate` aside."""

    def strip(spec: Obj) -> Obj:
        return {k: v for k, v in spec.items() if k != "terminate"}

    return strip(left.get("spec") or {}) == strip(right.get("spec") or {})


def _ours(existing: Obj, body: Obj, same: Callable[[Obj, Obj], bool]) -> bool:
    phase = str((existing.get("status") or {}).get("phase") or "")
    owner = controller_owner(existing) or {}
    wanted = body["metadata"]["ownerReferences"][0]
    return owner.get("uid") == wanted.get("uid") and same(existing, body) and phase not in COMPLETED


def create_counted(
    writer: Writer,
    resource: r.Resource,
    namespace: str,
    body: Obj,
    known: list[Obj],
    *,
    separator: str,
    same: Callable[[Obj, Obj], bool],
) -> tuple[Obj, bool]:
    """Create `body` (or find it already created), counting the name up on collisions.
    `known` are the objects the owner already has, as read from the cache. Returns the object
    and whether this call created it."""
    base = body["metadata"]["name"]
    for attempt in range(MAX_ATTEMPTS):
        name = f"{base}{separator}{attempt}" if attempt else base
        body["metadata"]["name"] = name
        existing = next((x for x in known if _name(x) == name), None)
        if existing is not None and _ours(existing, body, same):
            return existing, False
        if existing is not None:
            continue
        try:
            return writer.create(resource, namespace, body), True
        except AlreadyExists:
            # Not in the cache yet, or not ours: the server's copy says which.
            existing = writer.get(resource, namespace, name)
            if _ours(existing, body, same):
                return existing, False
    raise NameExhausted(f"cannot find a free name for {resource.kind} {base}")


def create_run(writer: Writer, namespace: str, body: Obj, known: list[Obj]) -> Obj:
    """Create the AnalysisRun `body` (see `create_counted`)."""
    run, _ = create_counted(
        writer, r.ANALYSISRUNS, namespace, body, known, separator=".", same=same_run_spec
    )
    return run
