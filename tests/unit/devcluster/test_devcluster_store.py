"""The store's write and watch semantics, without HTTP or an event loop."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from devcluster.crds import calculate_defaults, calculate_resource_types
from devcluster.errors import ApiError
from devcluster.patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from devcluster.resources import CRD_KEY, Registry, ResourceType
from devcluster.selectors import parse_label_selector
from devcluster.store import Store
from devcluster.watches import WatchFilter

REGISTRY = Registry()


def rt(group: str, version: str, plural: str) -> ResourceType:
    found = REGISTRY.lookup(group, version, plural)
    assert found is not None
    return found


PODS = rt("", "v1", "pods")
CONFIGMAPS = rt("", "v1", "configmaps")
NAMESPACES = rt("", "v1", "namespaces")
RS = rt("apps", "v1", "replicasets")
CRDS = REGISTRY.by_key(CRD_KEY)
# A custom resource with a status subresource that keeps unknown fields (no pruning here;
# pruning has its own tests).
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
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
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
WIDGETS = calculate_resource_types(calculate_defaults(WIDGET_CRD))[0]


@pytest.fixture
def store() -> Store:
    s = Store(Registry(), history_size=5, clock=lambda: 1_700_000_000.0, rng=random.Random(7))
    s.ensure_namespaces(["default"])
    s.create(CRDS, namespace=None, body=WIDGET_CRD)
    return s


def replicaset(name: str = "web", replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}},
        },
    }


def expect_error(code: int, reason: str, fn: Any, *args: Any, **kwargs: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        fn(*args, **kwargs)
    assert (info.value.code, info.value.reason) == (code, reason), info.value.message
    return info.value


def lines(watch: Any) -> list[dict[str, Any]]:
    out = [json.loads(line) for line in watch.pending]
    watch.pending.clear()
    return out


def test_create_sets_metadata_and_increments_resource_version(store: Store) -> None:
    first = store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}})
    second = store.create(
        CONFIGMAPS, namespace="default", body={"metadata": {"generateName": "b-"}}
    )
    meta = second.metadata
    assert int(meta["resourceVersion"]) == int(first.metadata["resourceVersion"]) + 1
    assert meta["name"].startswith("b-") and len(meta["name"]) == 7
    assert meta["uid"] and meta["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert "generation" not in meta  # configmaps have no generation
    assert second.obj["kind"] == "ConfigMap" and second.obj["apiVersion"] == "v1"


def test_secret_string_data_is_folded_into_data_on_every_write(store: Store) -> None:
    secrets = rt("", "v1", "secrets")
    made = store.create(secrets, namespace="default", body={
        "metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="},
        "stringData": {"b": "two", "c": "three"}})  # fmt: skip
    assert "stringData" not in made.obj
    assert made.obj["data"] == {"a": "eA==", "b": "dHdv", "c": "dGhyZWU="}
    patched = store.patch(secrets, namespace="default", name="s", patch_type=MERGE_PATCH,
                          patch={"stringData": {"a": "one"}})  # fmt: skip
    assert "stringData" not in patched.obj
    assert patched.obj["data"]["a"] == "b25l"


def test_create_errors(store: Store) -> None:
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}})
    err = expect_error(
        409,
        "AlreadyExists",
        store.create,
        CONFIGMAPS,
        namespace="default",
        body={"metadata": {"name": "a"}},
    )
    assert err.message == 'configmaps "a" already exists'
    err = expect_error(
        404,
        "NotFound",
        store.create,
        CONFIGMAPS,
        namespace="nope",
        body={"metadata": {"name": "a"}},
    )
    assert err.status()["details"] == {"name": "nope", "kind": "namespaces"}
    expect_error(
        422, "Invalid", store.create, CONFIGMAPS, namespace="default", body={"metadata": {}}
    )
    expect_error(
        422,
        "Invalid",
        store.create,
        CONFIGMAPS,
        namespace="default",
        body={"metadata": {"name": "Bad_Name"}},
    )
    expect_error(
        400,
        "BadRequest",
        store.create,
        CONFIGMAPS,
        namespace="default",
        body={"kind": "Secret", "metadata": {"name": "x"}},
    )


def test_replicaset_validation(store: Store) -> None:
    bad = replicaset()
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    err = expect_error(422, "Invalid", store.create, RS, namespace="default", body=bad)
    assert err.status()["details"]["kind"] == "ReplicaSet"
    assert err.message.startswith(
        'ReplicaSet.apps "web" is invalid: spec.template.metadata.labels: Invalid value'
    )
    store.create(RS, namespace="default", body=replicaset())
    changed = replicaset()
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "x": "y"}}
    expect_error(422, "Invalid", store.update, RS, namespace="default", name="web", body=changed)


def test_generation_bumps_only_on_spec_change(store: Store) -> None:
    created = store.create(RS, namespace="default", body=replicaset())
    assert created.metadata["generation"] == 1
    labelled = store.patch(
        RS,
        namespace="default",
        name="web",
        patch_type=MERGE_PATCH,
        patch={"metadata": {"labels": {"x": "y"}}},
    )
    assert labelled.metadata["generation"] == 1
    scaled = store.patch(
        RS, namespace="default", name="web", patch_type=MERGE_PATCH, patch={"spec": {"replicas": 3}}
    )
    assert scaled.metadata["generation"] == 2
    status = store.patch(
        RS,
        namespace="default",
        name="web",
        patch_type=MERGE_PATCH,
        patch={"status": {"replicas": 3}},
        subresource="status",
    )
    assert status.metadata["generation"] == 2


def test_custom_resource_generation_counts_any_non_status_field(store: Store) -> None:
    ro = store.create(
        WIDGETS, namespace="default", body={"metadata": {"name": "r"}, "spec": {"replicas": 1}}
    )
    assert ro.metadata["generation"] == 1
    ro = store.patch(
        WIDGETS, namespace="default", name="r", patch_type=MERGE_PATCH, patch={"extra": {"a": 1}}
    )
    assert ro.metadata["generation"] == 2


def test_status_subresource_split(store: Store) -> None:
    created = store.create(
        WIDGETS,
        namespace="default",
        body={"metadata": {"name": "r"}, "spec": {"replicas": 1}, "status": {"phase": "x"}},
    )
    assert "status" not in created.obj  # status is dropped on create
    with_status = store.update(
        WIDGETS,
        namespace="default",
        name="r",
        body={**created.obj, "spec": {"replicas": 9}, "status": {"phase": "Healthy"}},
        subresource="status",
    )
    assert with_status.obj["spec"] == {"replicas": 1}
    assert with_status.obj["status"] == {"phase": "Healthy"}
    main = store.update(
        WIDGETS,
        namespace="default",
        name="r",
        body={**with_status.obj, "spec": {"replicas": 2}, "status": {"phase": "Degraded"}},
    )
    assert main.obj["spec"] == {"replicas": 2}
    assert main.obj["status"] == {"phase": "Healthy"}


def test_stale_resource_version_conflicts(store: Store) -> None:
    first = store.create(RS, namespace="default", body=replicaset())
    store.patch(
        RS, namespace="default", name="web", patch_type=MERGE_PATCH, patch={"spec": {"replicas": 2}}
    )
    stale = {**first.obj, "spec": {**first.obj["spec"], "replicas": 5}}
    err = expect_error(
        409, "Conflict", store.update, RS, namespace="default", name="web", body=stale
    )
    assert "the object has been modified" in err.message
    assert err.message.startswith('Operation cannot be fulfilled on replicasets.apps "web"')
    fenced = {
        "metadata": {"resourceVersion": first.metadata["resourceVersion"]},
        "spec": {"replicas": 7},
    }
    expect_error(
        409,
        "Conflict",
        store.patch,
        RS,
        namespace="default",
        name="web",
        patch_type=MERGE_PATCH,
        patch=fenced,
    )
    # Without a resourceVersion a built-in PUT is unconditional...
    unconditional = {**stale, "metadata": {"name": "web"}}
    assert (
        store.update(RS, namespace="default", name="web", body=unconditional).obj["spec"][
            "replicas"
        ]
        == 5
    )
    # ...but a custom resource requires one.
    store.create(WIDGETS, namespace="default", body={"metadata": {"name": "r"}, "spec": {}})
    expect_error(
        422,
        "Invalid",
        store.update,
        WIDGETS,
        namespace="default",
        name="r",
        body={"metadata": {"name": "r"}, "spec": {"replicas": 1}},
    )


def test_noop_write_keeps_resource_version(store: Store) -> None:
    created = store.create(
        CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}, "data": {"k": "v"}}
    )
    same = store.patch(
        CONFIGMAPS,
        namespace="default",
        name="a",
        patch_type=MERGE_PATCH,
        patch={"data": {"k": "v"}},
    )
    assert same.metadata["resourceVersion"] == created.metadata["resourceVersion"]
    assert store.resource_version == int(created.metadata["resourceVersion"])


def test_patch_formats(store: Store) -> None:
    store.create(
        PODS,
        namespace="default",
        body={
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "app", "image": "a:1", "ports": [{"containerPort": 80}]}]
            },
        },
    )
    smp = store.patch(
        PODS,
        namespace="default",
        name="p",
        patch_type=STRATEGIC_MERGE_PATCH,
        patch={"spec": {"containers": [{"name": "app", "image": "a:2"}]}},
    )
    assert smp.obj["spec"]["containers"] == [
        {"name": "app", "image": "a:2", "ports": [{"containerPort": 80}]}
    ]
    expect_error(
        422,
        "Invalid",
        store.patch,
        PODS,
        namespace="default",
        name="p",
        patch_type=JSON_PATCH,
        patch=[{"op": "test", "path": "/spec/containers/0/image", "value": "a:1"}],
    )
    expect_error(
        400,
        "BadRequest",
        store.patch,
        PODS,
        namespace="default",
        name="p",
        patch_type=JSON_PATCH,
        patch={"spec": {}},
    )
    expect_error(
        415,
        "UnsupportedMediaType",
        store.patch,
        PODS,
        namespace="default",
        name="p",
        patch_type="application/apply-patch+yaml",
        patch={},
    )
    store.create(WIDGETS, namespace="default", body={"metadata": {"name": "r"}, "spec": {}})
    expect_error(
        415,
        "UnsupportedMediaType",
        store.patch,
        WIDGETS,
        namespace="default",
        name="r",
        patch_type=STRATEGIC_MERGE_PATCH,
        patch={"spec": {}},
    )


def test_finalizers_hold_deletion(store: Store) -> None:
    store.create(
        CONFIGMAPS, namespace="default", body={"metadata": {"name": "a", "finalizers": ["x/y"]}}
    )
    final, gone = store.delete(CONFIGMAPS, namespace="default", name="a")
    assert not gone and final.metadata["deletionTimestamp"]
    store.patch(
        CONFIGMAPS,
        namespace="default",
        name="a",
        patch_type=MERGE_PATCH,
        patch={"metadata": {"finalizers": None}},
    )
    assert store.find(CONFIGMAPS, namespace="default", name="a") is None


def test_orphan_and_foreground_deletion(store: Store) -> None:
    owner = store.create(RS, namespace="default", body=replicaset())
    ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": owner.metadata["uid"],
        "controller": True,
    }
    store.create(
        PODS, namespace="default", body={"metadata": {"name": "p", "ownerReferences": [ref]}}
    )
    assert [s.metadata["name"] for _, s in store.dependents_of(owner.metadata["uid"])] == ["p"]
    store.delete(RS, namespace="default", name="web", propagation="Orphan")
    pod = store.get(PODS, namespace="default", name="p")
    assert "ownerReferences" not in pod.metadata
    assert store.dependents_of(owner.metadata["uid"]) == []

    owner = store.create(RS, namespace="default", body=replicaset())
    ref["uid"] = owner.metadata["uid"]
    store.create(
        PODS, namespace="default", body={"metadata": {"name": "q", "ownerReferences": [ref]}}
    )
    store.delete(RS, namespace="default", name="web", propagation="Foreground")
    assert store.find(PODS, namespace="default", name="q") is None


def test_precondition_on_delete(store: Store) -> None:
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}})
    expect_error(
        409,
        "Conflict",
        store.delete,
        CONFIGMAPS,
        namespace="default",
        name="a",
        preconditions={"uid": "other"},
    )


def test_list_pagination_and_selectors(store: Store) -> None:
    for i in range(7):
        store.create(
            CONFIGMAPS,
            namespace="default",
            body={"metadata": {"name": f"cm{i}", "labels": {"even": str(i % 2 == 0)}}},
        )
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = store.list(CONFIGMAPS, namespace="default", limit=3, continue_token=token)
        pages += 1
        seen += [s.metadata["name"] for s in page.items]
        token = page.continue_token
        if token is None:
            break
    assert seen == [f"cm{i}" for i in range(7)] and pages == 3
    flt = WatchFilter(namespace="default", labels=parse_label_selector("even=True"))
    assert [
        s.metadata["name"] for s in store.list(CONFIGMAPS, namespace="default", flt=flt).items
    ] == [
        "cm0",
        "cm2",
        "cm4",
        "cm6",
    ]


def test_later_pages_are_a_snapshot_at_the_first_page(store: Store) -> None:
    for i in range(4):
        store.create(
            CONFIGMAPS,
            namespace="default",
            body={"metadata": {"name": f"cm{i}"}, "data": {"v": "0"}},
        )
    first = store.list(CONFIGMAPS, namespace="default", limit=2)
    assert [s.metadata["name"] for s in first.items] == ["cm0", "cm1"]
    store.patch(
        CONFIGMAPS,
        namespace="default",
        name="cm2",
        patch_type=MERGE_PATCH,
        patch={"data": {"v": "1"}},
    )
    store.delete(CONFIGMAPS, namespace="default", name="cm3")
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "cm2a"}})
    rest = store.list(
        CONFIGMAPS, namespace="default", limit=10, continue_token=first.continue_token
    )
    assert rest.resource_version == first.resource_version
    assert [(s.metadata["name"], s.obj["data"]["v"]) for s in rest.items] == [
        ("cm2", "0"),
        ("cm3", "0"),
    ]


def test_continue_token_expires_on_compaction(store: Store) -> None:
    for i in range(3):
        store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": f"cm{i}"}})
    page = store.list(CONFIGMAPS, namespace="default", limit=1)
    assert page.continue_token
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "later"}})
    store.force_gone()
    expect_error(
        410,
        "Expired",
        store.list,
        CONFIGMAPS,
        namespace="default",
        limit=1,
        continue_token=page.continue_token,
    )


def test_watch_from_resource_version_replays_and_expires(store: Store) -> None:
    start = store.resource_version
    for i in range(3):
        store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": f"cm{i}"}})
    watch = store.watch(
        CONFIGMAPS, flt=WatchFilter(namespace="default"), resource_version=str(start)
    )
    assert [e["object"]["metadata"]["name"] for e in lines(watch)] == ["cm0", "cm1", "cm2"]
    store.delete(CONFIGMAPS, namespace="default", name="cm0")
    (deleted,) = lines(watch)
    assert deleted["type"] == "DELETED"
    assert int(deleted["object"]["metadata"]["resourceVersion"]) == store.resource_version
    for i in range(3, 9):  # history_size=5: start falls out of the window
        store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": f"cm{i}"}})
    old = store.watch(CONFIGMAPS, flt=WatchFilter(), resource_version=str(start))
    (error,) = lines(old)
    assert error["type"] == "ERROR" and old.closed
    assert error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert error["object"]["message"].startswith(f"too old resource version: {start} (")


def test_watch_without_resource_version_starts_with_current_objects(store: Store) -> None:
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}})
    watch = store.watch(CONFIGMAPS, flt=WatchFilter(), resource_version=None)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines(watch)] == [("ADDED", "a")]


def test_watch_selector_transitions(store: Store) -> None:
    flt = WatchFilter(namespace="default", labels=parse_label_selector("app=web"))
    store.create(CONFIGMAPS, namespace="default", body={"metadata": {"name": "a"}})
    watch = store.watch(CONFIGMAPS, flt=flt, resource_version=str(store.resource_version))

    def label(value: str | None) -> None:
        store.patch(
            CONFIGMAPS,
            namespace="default",
            name="a",
            patch_type=MERGE_PATCH,
            patch={"metadata": {"labels": {"app": value}}},
        )

    label("web")
    label("web2")
    label("web")
    store.patch(
        CONFIGMAPS,
        namespace="default",
        name="a",
        patch_type=MERGE_PATCH,
        patch={"data": {"k": "v"}},
    )
    events = lines(watch)
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED", "MODIFIED"]
    assert events[1]["object"]["metadata"]["labels"] == {"app": "web"}  # previous content


def test_force_gone_closes_open_watches(store: Store) -> None:
    watch = store.watch(CONFIGMAPS, flt=WatchFilter(), resource_version=str(store.resource_version))
    rv = store.force_gone()
    (error,) = lines(watch)
    assert watch.closed and error["object"]["code"] == 410
    fresh = store.watch(CONFIGMAPS, flt=WatchFilter(), resource_version=str(rv))
    assert not fresh.closed


def test_namespace_deletion_is_two_phase(store: Store) -> None:
    store.create(NAMESPACES, namespace=None, body={"metadata": {"name": "t"}})
    store.create(CONFIGMAPS, namespace="t", body={"metadata": {"name": "a"}})
    final, gone = store.delete(NAMESPACES, namespace=None, name="t")
    assert not gone and final.obj["status"]["phase"] == "Terminating"
    expect_error(
        403, "Forbidden", store.create, CONFIGMAPS, namespace="t", body={"metadata": {"name": "b"}}
    )
    store.delete(CONFIGMAPS, namespace="t", name="a")
    assert store.namespace_is_empty("t")
    store.finalize_namespace("t")
    assert store.find(NAMESPACES, namespace=None, name="t") is None


def test_scale_subresource(store: Store) -> None:
    store.create(RS, namespace="default", body=replicaset(replicas=2))
    scale = store.get_scale(RS, namespace="default", name="web")
    assert scale["spec"] == {"replicas": 2} and scale["status"]["selector"] == "app=web"
    scaled = store.update_scale(RS, namespace="default", name="web", body={"spec": {"replicas": 4}})
    assert scaled["spec"]["replicas"] == 4
    assert store.get(RS, namespace="default", name="web").metadata["generation"] == 2
    patched = store.update_scale(
        RS, namespace="default", name="web", body={"spec": {"replicas": 0}}, patch_type=MERGE_PATCH
    )
    assert patched["spec"]["replicas"] == 0


def test_snapshot_round_trip(store: Store) -> None:
    store.create(RS, namespace="default", body=replicaset())
    data = json.loads(json.dumps(store.snapshot()))
    other = Store(Registry())
    other.restore(data)
    assert other.resource_version == store.resource_version
    assert (
        other.get(RS, namespace="default", name="web").obj
        == store.get(RS, namespace="default", name="web").obj
    )
    # History starts at the snapshot: an older watch gets 410.
    old = other.watch(RS, flt=WatchFilter(), resource_version="1")
    assert old.closed
