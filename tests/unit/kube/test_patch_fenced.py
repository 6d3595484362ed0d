"""patch_fenced: a write that lost its race only to the status bookkeeping of another controller
goes again, fenced by the newest version; any other lost race stands."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import pytest

from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import Conflict
from rollout_workers.kube.writer import RecordingWriter, patch_fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.replicasets import only_bookkeeping_moved


def replicaset(rv: str, *, replicas: int = 0, status: Obj | None = None) -> Obj:
    return {
        "metadata": {
            "name": "app-abc",
            "namespace": "ns",
            "resourceVersion": rv,
            "generation": 1,
            "annotations": {"rollout.argoproj.io/desired-replicas": "3"},
        },
        "spec": {"replicas": replicas},
        "status": status if status is not None else {},
    }


@dataclass
class Fenced(RecordingWriter):
    """Answers 409 to a patch whose fence is not the stored object's version; keeps the fences
    of every patch sent."""

    fences: list[str | None] = field(default_factory=list)

    def patch(
        self, resource: r.Resource, namespace: str, name: str, patch: Obj, *, status: bool = False
    ) -> Obj:
        fence = (patch.get("metadata") or {}).get("resourceVersion")
        self.fences.append(fence)
        stored = self.objects[(resource.plural, namespace, name)]["metadata"]["resourceVersion"]
        if fence != stored:
            raise Conflict(409, "Conflict", f"{name}: the object has been modified")
        return super().patch(resource, namespace, name, patch, status=status)


def scaled(writer: Fenced, base: Obj) -> Obj:
    return patch_fenced(
        writer,
        r.REPLICASETS,
        "ns",
        base,
        {"spec": {"replicas": 3}},
        unchanged=only_bookkeeping_moved,
    )


def test_an_unraced_write_goes_once() -> None:
    writer = Fenced()
    writer.seed(r.REPLICASETS, replicaset("10"))
    assert scaled(writer, replicaset("10"))["spec"]["replicas"] == 3
    assert writer.fences == ["10"]


def test_observed_generation_stamped_meanwhile_is_written_over() -> None:
    writer = Fenced()
    writer.seed(r.REPLICASETS, replicaset("11", status={"observedGeneration": 1}))
    written = scaled(writer, replicaset("10"))
    assert written["spec"]["replicas"] == 3
    assert written["status"] == {"observedGeneration": 1}
    assert writer.fences == ["10", "11"]


@pytest.mark.parametrize(
    "moved",
    [
        pytest.param(lambda o: o["status"].update(availableReplicas=1), id="status count"),
        pytest.param(lambda o: o["spec"].update(replicas=5), id="spec"),
        pytest.param(lambda o: o["metadata"]["annotations"].clear(), id="annotations"),
        pytest.param(
            lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
            id="deleting",
        ),
    ],
)
def test_a_race_lost_to_what_the_patch_was_computed_from_stands(moved: object) -> None:
    newest = replicaset("11")
    moved(newest)  # type: ignore[operator]
    writer = Fenced()
    writer.seed(r.REPLICASETS, copy.deepcopy(newest))
    with pytest.raises(Conflict):
        scaled(writer, replicaset("10"))
    assert writer.fences == ["10"]
    assert writer.objects[("replicasets", "ns", "app-abc")] == newest


def test_missing_and_zero_counts_are_the_same() -> None:
    base = replicaset("10", status={"replicas": 0})
    assert only_bookkeeping_moved(base, replicaset("11", status={"observedGeneration": 1}))
    assert not only_bookkeeping_moved(base, replicaset("11", status={"replicas": 1}))
