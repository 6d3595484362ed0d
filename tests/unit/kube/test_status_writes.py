"""Status writes follow the served API: `/status` where the CRD declares it, else the object.

A scripted API server stands in for the real one: these are pure tests of the writer's
decisions (which path, when discovery is read again). The same writes against the embedded API
with both CRD shapes are in tests/integration/test_crd_shapes.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.kube import resources as r
from rollout_workers.kube.discovery import Discovery
from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.writer import KubeWriter

Obj = dict[str, Any]


class ScriptedApi:
    """Serves one group-version whose `/status` subresources can be switched on and off."""

    def __init__(self, *, status_on: set[str]) -> None:
        self.status_on = set(status_on)
        self.objects: dict[str, Obj] = {}
        self.calls: list[str] = []
        self.now = 0.0
        self.discovery = Discovery(self.fetch, ttl=60.0, clock=lambda: self.now)

    def fetch(self, path: str) -> dict[str, object]:
        self.calls.append(f"GET {path}")
        resources: list[dict[str, object]] = []
        for plural in ("rollouts", "analysisruns", "experiments"):
            resources.append({"name": plural})
            if plural in self.status_on:
                resources.append({"name": f"{plural}/status"})
        return {"kind": "APIResourceList", "resources": resources}

    def patch(
        self, resource: r.Resource, namespace: str, name: str, body: Obj, *, subresource: str = ""
    ) -> Obj:
        self.calls.append(
            f"PATCH {resource.plural}/{name}{'/' + subresource if subresource else ''}"
        )
        has_status = resource.plural in self.status_on
        if subresource == "status" and not has_status:
            raise NotFound(404, "NotFound", "the server could not find the requested resource")
        obj = self.objects.get(name)
        if obj is None:
            raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        if (body.get("metadata") or {}).get("resourceVersion") != obj["metadata"][
            "resourceVersion"
        ]:
            raise AssertionError("fence mismatch in test")
        # A main-resource write ignores status when the subresource exists (as a real server).
        merged = {**obj.get("status", {}), **body.get("status", {})}
        if (
            "status" in body
            and (subresource == "status" or not has_status)
            and merged != obj.get("status")
        ):
            obj["status"] = merged
            obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(obj)


@pytest.fixture
def api() -> ScriptedApi:
    return ScriptedApi(status_on={"rollouts"})


def writer_for(api: ScriptedApi) -> KubeWriter:
    return KubeWriter(api)  # type: ignore[arg-type]


def seed(api: ScriptedApi, name: str) -> None:
    api.objects[name] = {"metadata": {"name": name, "resourceVersion": "10"}, "status": {}}


def status_patch(phase: str, rv: str = "10") -> Obj:
    return {"status": {"phase": phase}, "metadata": {"resourceVersion": rv}}


def test_status_goes_to_the_subresource_where_it_is_served(api: ScriptedApi) -> None:
    seed(api, "ro")
    writer_for(api).patch(r.ROLLOUTS, "ns", "ro", status_patch("Healthy"), status=True)
    assert api.calls == ["GET /apis/argoproj.io/v1alpha1", "PATCH rollouts/ro/status"]


def test_status_goes_to_the_object_where_no_subresource_is_served(api: ScriptedApi) -> None:
    seed(api, "run")
    written = writer_for(api).patch(
        r.ANALYSISRUNS, "ns", "run", status_patch("Running"), status=True
    )
    assert written["status"] == {"phase": "Running"}
    assert api.calls == ["GET /apis/argoproj.io/v1alpha1", "PATCH analysisruns/run"]


def test_discovery_is_read_once_per_group_version(api: ScriptedApi) -> None:
    for name in ("a", "b"):
        seed(api, name)
    writer = writer_for(api)
    writer.patch(r.ANALYSISRUNS, "ns", "a", status_patch("Running"), status=True)
    writer.patch(r.ROLLOUTS, "ns", "b", status_patch("Healthy"), status=True)
    assert [c for c in api.calls if c.startswith("GET")] == ["GET /apis/argoproj.io/v1alpha1"]


def test_a_crd_that_loses_its_status_subresource_is_noticed_on_404(api: ScriptedApi) -> None:
    seed(api, "ro")
    writer = writer_for(api)
    writer.patch(r.ROLLOUTS, "ns", "ro", status_patch("Progressing"), status=True)
    api.status_on.clear()  # the CRD is replaced by one without the subresource
    api.calls.clear()
    written = writer.patch(r.ROLLOUTS, "ns", "ro", status_patch("Healthy", "11"), status=True)
    assert written["status"] == {"phase": "Healthy"}
    assert api.calls == [
        "PATCH rollouts/ro/status",
        "GET /apis/argoproj.io/v1alpha1",
        "PATCH rollouts/ro",
    ]


def test_a_crd_that_gains_a_status_subresource_is_noticed_by_the_dropped_write(
    api: ScriptedApi,
) -> None:
    seed(api, "run")
    writer = writer_for(api)
    writer.patch(r.ANALYSISRUNS, "ns", "run", status_patch("Running"), status=True)
    api.status_on.add("analysisruns")
    api.calls.clear()
    written = writer.patch(
        r.ANALYSISRUNS, "ns", "run", status_patch("Successful", "11"), status=True
    )
    assert written["status"] == {"phase": "Successful"}
    assert api.calls == [
        "PATCH analysisruns/run",
        "GET /apis/argoproj.io/v1alpha1",
        "PATCH analysisruns/run/status",
    ]


def test_a_missing_object_is_not_found_either_way(api: ScriptedApi) -> None:
    writer = writer_for(api)
    with pytest.raises(NotFound):
        writer.patch(r.ROLLOUTS, "ns", "gone", status_patch("Healthy"), status=True)
    with pytest.raises(NotFound):
        writer.patch(r.ANALYSISRUNS, "ns", "gone", status_patch("Running"), status=True)


def test_discovery_is_read_again_after_its_ttl(api: ScriptedApi) -> None:
    seed(api, "run")
    writer = writer_for(api)
    writer.patch(r.ANALYSISRUNS, "ns", "run", status_patch("Running"), status=True)
    api.now += 61
    api.calls.clear()
    writer.patch(r.ANALYSISRUNS, "ns", "run", status_patch("Successful", "11"), status=True)
    assert api.calls == ["GET /apis/argoproj.io/v1alpha1", "PATCH analysisruns/run"]


def test_a_status_patch_touches_nothing_but_status(api: ScriptedApi) -> None:
    seed(api, "run")
    with pytest.raises(ValueError, match="only status"):
        writer_for(api).patch(
            r.ANALYSISRUNS, "ns", "run", {"status": {}, "spec": {"terminate": True}}, status=True
        )


def test_an_unserved_group_version_is_not_cached() -> None:
    calls: list[str] = []

    def fetch(path: str) -> dict[str, object]:
        calls.append(path)
        if len(calls) == 1:
            raise NotFound(404, "NotFound", "not served")
        return {"resources": [{"name": "analysisruns"}, {"name": "analysisruns/status"}]}

    discovery = Discovery(fetch)
    assert not discovery.has_subresource(r.ANALYSISRUNS, "status")
    assert discovery.has_subresource(r.ANALYSISRUNS, "status")
    assert discovery.has_subresource(r.ANALYSISRUNS, "status")
    assert len(calls) == 2


def test_a_delete_is_reported_even_when_the_object_was_gone() -> None:
    """The stale-cache guard forgets a deleted object (cache/written.py forget)."""

    class Deleting:
        def delete(
            self, resource: r.Resource, namespace: str, name: str, *, propagation: Any = None
        ) -> None:
            if name == "gone":
                raise NotFound(404, "NotFound", f'mappings "{name}" not found')

    deleted: list[tuple[str, str]] = []
    writer = KubeWriter(
        Deleting(),  # type: ignore[arg-type]
        on_deleted=lambda plural, key: deleted.append((plural, key)),
    )
    writer.delete(r.MAPPINGS[0], "ns", "m-canary")
    writer.delete(r.MAPPINGS[0], "ns", "gone")
    assert deleted == [("mappings", "ns/m-canary"), ("mappings", "ns/gone")]
