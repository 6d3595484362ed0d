"""CRDs in the store: validation, serving, persistence; and the events.k8s.io/v1 view."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from devcluster.crds import calculate_defaults, calculate_validation_causes
from devcluster.errors import ApiError
from devcluster.patches import MERGE_PATCH
from devcluster.resources import CRD_KEY, Registry, ResourceType, version_priority
from devcluster.store import Store
from devcluster.watches import WatchFilter
from rollout_workers.api.crdgen import calculate_crds


def crd(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {}}},
                }
            ],
        },
    }
    base["spec"].update(spec)
    return base


def version(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}


@pytest.fixture
def store() -> Store:
    s = Store(Registry(), clock=lambda: 1_700_000_000.0, rng=random.Random(3))
    s.ensure_namespaces(["default"])
    return s


def served(store: Store, group: str, version: str, plural: str) -> ResourceType:
    found = store.registry.lookup(group, version, plural)
    assert found is not None
    return found


VALIDATION_CASES = [
    ("valid", crd(), []),
    ("no group", crd(group=""), ["spec.group", "metadata.name"]),
    (
        "kind equals listKind",
        crd(names={"plural": "widgets", "kind": "W", "listKind": "W"}),
        ["spec.names.listKind"],
    ),
    (
        "two storage versions",
        crd(
            versions=[
                {
                    "name": n,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for n in ("v1", "v2")
            ]
        ),
        ["spec.versions"],
    ),
    (
        "duplicate version",
        crd(
            versions=[
                {
                    "name": "v1",
                    "served": True,
                    "storage": s,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for s in (True, False)
            ]
        ),
        ["spec.versions[1].name"],
    ),
    (
        "protected group without approval",
        {**crd(group="x.k8s.io"), "metadata": {"name": "widgets.x.k8s.io"}},
        ["metadata.annotations[api-approved.kubernetes.io]"],
    ),
    (
        "protected group with approval",
        {
            **crd(group="x.k8s.io"),
            "metadata": {
                "name": "widgets.x.k8s.io",
                "annotations": {"api-approved.kubernetes.io": "https://example.com/pr/1"},
            },
        },
        [],
    ),
    (
        "field without a type",
        crd(versions=[version({"type": "object", "properties": {"spec": {"properties": {}}}})]),
        ["spec.versions[0].schema.openAPIV3Schema.properties[spec].type"],
    ),
    (
        "array items without a type",
        crd(
            versions=[
                version(
                    {
                        "type": "object",
                        "properties": {"xs": {"type": "array", "items": {"description": "x"}}},
                    }
                )
            ]
        ),
        ["spec.versions[0].schema.openAPIV3Schema.properties[xs].items.type"],
    ),
    (
        "properties beside additionalProperties",
        crd(
            versions=[
                version(
                    {
                        "type": "object",
                        "properties": {
                            "m": {
                                "type": "object",
                                "properties": {"a": {"type": "string"}},
                                "additionalProperties": {"type": "string"},
                            }
                        },
                    }
                )
            ]
        ),
        ["spec.versions[0].schema.openAPIV3Schema.properties[m].additionalProperties"],
    ),
    (
        "int-or-string with a type",
        crd(
            versions=[
                version(
                    {
                        "type": "object",
                        "properties": {"n": {"type": "string", "x-kubernetes-int-or-string": True}},
                    }
                )
            ]
        ),
        ["spec.versions[0].schema.openAPIV3Schema.properties[n].type"],
    ),
    (
        "untyped fields that preserve unknown fields or are int-or-string are fine",
        crd(
            versions=[
                version(
                    {
                        "type": "object",
                        "properties": {
                            "any": {"x-kubernetes-preserve-unknown-fields": True},
                            "n": {"x-kubernetes-int-or-string": True},
                        },
                    }
                )
            ]
        ),
        [],
    ),
    (
        "root schema not an object",
        crd(
            versions=[
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "string"}},
                }
            ]
        ),
        ["spec.versions[0].schema.openAPIV3Schema.type"],
    ),
    (
        "scale path outside spec",
        crd(
            versions=[
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                    "subresources": {
                        "scale": {
                            "specReplicasPath": ".status.x",
                            "statusReplicasPath": ".status.y",
                        }
                    },
                }
            ]
        ),
        ["spec.versions[0].subresources.scale.specReplicasPath"],
    ),
]


@pytest.mark.parametrize(
    ("body", "fields"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
def test_crd_validation(body: dict[str, Any], fields: list[str]) -> None:
    causes = calculate_validation_causes(calculate_defaults(body), None)
    assert [c[0] for c in causes] == fields


def test_the_project_crds_are_valid() -> None:
    for body in calculate_crds():
        assert calculate_validation_causes(calculate_defaults(body), None) == []


def test_version_priority() -> None:
    versions = ["v1alpha1", "foo", "v2", "v1beta1", "v1", "v1beta2", "v10"]
    assert sorted(versions, key=version_priority) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]


def test_crd_serves_its_type_and_delete_removes_objects(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    store.create(crds, namespace=None, body=crd())
    widgets = served(store, "example.com", "v1", "widgets")
    store.create(widgets, namespace="default", body={"metadata": {"name": "a"}, "x": 1})
    assert store.pruned_fields() == {"widgets.example.com": ["x"]}
    watch = store.watch(widgets, flt=WatchFilter(), resource_version=str(store.resource_version))
    final, gone = store.delete(crds, namespace=None, name="widgets.example.com")
    assert gone and final.metadata["deletionTimestamp"]
    assert watch.closed and b'"DELETED"' in b"".join(watch.pending)
    assert store.registry.lookup("example.com", "v1", "widgets") is None
    assert store.find(crds, namespace=None, name="widgets.example.com") is None


def test_snapshot_keeps_crds_and_their_objects(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    store.create(crds, namespace=None, body=crd())
    widgets = served(store, "example.com", "v1", "widgets")
    store.create(widgets, namespace="default", body={"metadata": {"name": "a"}})
    data = json.loads(json.dumps(store.snapshot()))
    data["objects"].reverse()  # CRDs need not come first
    other = Store(Registry())
    other.restore(data)
    again = served(other, "example.com", "v1", "widgets")
    assert other.get(again, namespace="default", name="a").obj == (
        store.get(widgets, namespace="default", name="a").obj
    )


def test_events_v1_is_a_view_of_core_events(store: Store) -> None:
    core = served(store, "", "v1", "events")
    v1 = served(store, "events.k8s.io", "v1", "events")
    created = store.create(
        v1,
        namespace="default",
        body={
            "metadata": {"name": "e"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "p"},
            "note": "hello",
            "reason": "Started",
            "type": "Normal",
            "action": "Start",
            "reportingController": "ctl",
            "reportingInstance": "ctl-1",
            "deprecatedCount": 2,
        },
    )
    assert created.obj["apiVersion"] == "events.k8s.io/v1" and created.obj["note"] == "hello"
    stored = store.get(core, namespace="default", name="e").obj
    assert stored["apiVersion"] == "v1"
    assert stored["involvedObject"] == {"kind": "Pod", "name": "p"}
    assert (stored["message"], stored["reportingComponent"], stored["count"]) == ("hello", "ctl", 2)
    assert stored["reportingInstance"] == "ctl-1" and "note" not in stored
    patched = store.patch(
        v1, namespace="default", name="e", patch_type=MERGE_PATCH, patch={"note": "bye"}
    )
    assert patched.obj["note"] == "bye"
    assert store.get(core, namespace="default", name="e").obj["message"] == "bye"
    body = copy.deepcopy(stored)
    assert store.list(v1, namespace="default").items[0].obj["regarding"] == body["involvedObject"]


def test_writes_through_a_crd_version_must_name_it(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    store.create(crds, namespace=None, body=crd())
    widgets = served(store, "example.com", "v1", "widgets")
    with pytest.raises(ApiError) as info:
        store.create(
            widgets,
            namespace="default",
            body={"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}},
        )
    assert info.value.code == 400


def test_another_version_is_pruned_by_its_own_schema_on_read(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    open_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    closed = {"type": "object", "properties": {"spec": {"type": "object", "properties": {}}}}
    store.create(
        crds,
        namespace=None,
        body=crd(
            versions=[
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": open_schema},
                },
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": False,
                    "schema": {"openAPIV3Schema": closed},
                },
            ]
        ),
    )
    v1 = served(store, "example.com", "v1", "widgets")
    beta = served(store, "example.com", "v1beta1", "widgets")
    store.create(v1, namespace="default", body={"metadata": {"name": "a"}, "spec": {"x": 1}})
    assert store.get(v1, namespace="default", name="a").obj["spec"] == {"x": 1}
    got = store.get(beta, namespace="default", name="a").obj
    assert got["apiVersion"] == "example.com/v1beta1" and got["spec"] == {}
    assert store.pruned_fields() == {}  # a read records nothing


def test_a_crd_cannot_shadow_a_built_in_type(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    body = crd(group="events.k8s.io", names={"plural": "events", "kind": "Event"})
    body["metadata"] = {
        "name": "events.events.k8s.io",
        "annotations": {"api-approved.kubernetes.io": "https://example.com/pr/1"},
    }
    body["spec"]["versions"][0]["name"] = "v1"
    store.create(crds, namespace=None, body=body)
    served_type = served(store, "events.k8s.io", "v1", "events")
    assert not served_type.custom and served_type.conversion == "events"


def test_unserved_versions_and_a_new_storage_version(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    versions = [
        {"name": "v1", "served": True, "storage": True, "schema": schema},
        {"name": "v1alpha1", "served": False, "storage": False, "schema": schema},
    ]
    store.create(crds, namespace=None, body=crd(versions=versions))
    assert store.registry.lookup("example.com", "v1alpha1", "widgets") is None
    assert store.registry.group_versions()["example.com"] == ["v1"]
    v1 = served(store, "example.com", "v1", "widgets")
    store.create(v1, namespace="default", body={"metadata": {"name": "a"}, "spec": {"x": 1}})
    # v2 becomes the storage version: the stored objects move to it, v1 still serves them.
    current = store.get(crds, namespace=None, name="widgets.example.com").obj
    new_versions = [
        {"name": "v2", "served": True, "storage": True, "schema": schema},
        {**versions[0], "storage": False},
    ]
    updated = store.update(
        crds,
        namespace=None,
        name="widgets.example.com",
        body={**current, "spec": {**current["spec"], "versions": new_versions}},
    )
    assert updated.obj["status"]["storedVersions"] == ["v1", "v2"]
    assert store.registry.group_versions()["example.com"] == ["v2", "v1"]
    v2 = served(store, "example.com", "v2", "widgets")
    assert store.get(v2, namespace="default", name="a").obj["apiVersion"] == "example.com/v2"
    v1 = served(store, "example.com", "v1", "widgets")
    assert store.get(v1, namespace="default", name="a").obj["apiVersion"] == "example.com/v1"


def test_conflicting_names_are_not_accepted_until_freed(store: Store) -> None:
    crds = store.registry.by_key(CRD_KEY)
    first = crd(names={"plural": "widgets", "kind": "Widget", "shortNames": ["w"]})
    store.create(crds, namespace=None, body=first)
    second = crd(names={"plural": "gadgets", "kind": "Widget", "shortNames": ["w", "g"]})
    second["metadata"] = {"name": "gadgets.example.com"}
    created = store.create(crds, namespace=None, body=second).obj
    conditions = {c["type"]: c for c in created["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] in ("KindConflict", "ShortNamesConflict")
    assert conditions["Established"]["status"] == "False"
    assert conditions["Established"]["reason"] == "NotAccepted"
    assert created["status"]["acceptedNames"]["kind"] == ""  # refused: not omitted, empty
    assert store.registry.lookup("example.com", "v1", "gadgets") is None  # not served
    store.delete(crds, namespace=None, name="widgets.example.com")
    freed = store.get(crds, namespace=None, name="gadgets.example.com").obj
    assert {c["type"]: c["status"] for c in freed["status"]["conditions"]} == {
        "NamesAccepted": "True",
        "Established": "True",
    }
    assert freed["status"]["acceptedNames"]["shortNames"] == ["w", "g"]
    assert served(store, "example.com", "v1", "gadgets").short_names == ("w", "g")
