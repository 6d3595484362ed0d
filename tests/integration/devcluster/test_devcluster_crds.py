"""CustomResourceDefinitions as a real API server serves them, through the official client.

Each test installs its own CRD in a group of its own (so tests sharing the session devcluster
cannot see each other's types) and deletes it at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from devcluster.server import DevClusterThread, run_in_thread
from tests.integration.devcluster.devcluster_helpers import wait_for
from tests.support.procs import checkout_env

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "size": {"x-kubernetes-int-or-string": True},
                "nested": {"type": "object", "properties": {"keep": {"type": "string"}}},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "weights": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"value": {"type": "integer"}},
                    },
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {}}},
                },
                "selector": {"type": "string"},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "phase": {"type": "string"},
                "selector": {"type": "string"},
                "known": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        },
    },
}


def crd_body(
    group: str,
    *,
    status: bool = True,
    scale: bool = False,
    schema: dict[str, Any] | None = None,
    beta: bool = False,
    scope: str = "Namespaced",
) -> dict[str, Any]:
    subresources: dict[str, Any] = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        }
    versions: list[dict[str, Any]] = [
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": schema or SCHEMA},
            "subresources": subresources,
        }
    ]
    if beta:
        versions.append(
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": "widgets",
                "kind": "Widget",
                "shortNames": ["wdg"],
                "categories": ["things"],
            },
            "versions": versions,
        },
    }


@pytest.fixture(scope="session")
def ext(api_client: client.ApiClient) -> client.ApiextensionsV1Api:
    return client.ApiextensionsV1Api(api_client)


@pytest.fixture
def group(ext: client.ApiextensionsV1Api) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:8]}.example.com"
    yield name
    try:
        ext.delete_custom_resource_definition(f"widgets.{name}")
    except client.ApiException as exc:
        assert exc.status == 404


def raw(api_client: client.ApiClient, path: str, method: str = "GET") -> Any:
    response = api_client.call_api(path, method, _preload_content=False)
    return json.loads(response.data)


def raw_status(
    api_client: client.ApiClient, path: str, method: str = "GET", body: Any = None
) -> int:
    try:
        response = api_client.call_api(
            path,
            method,
            body=body,
            _preload_content=False,
            header_params={"Content-Type": "application/merge-patch+json"},
        )
    except client.ApiException as exc:
        return int(exc.status)
    return int(response.status)


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def create_widget(
    custom: client.CustomObjectsApi, group: str, namespace: str, name: str, **spec: Any
) -> dict[str, Any]:
    body = {**widget(name, **spec), "apiVersion": f"{group}/v1"}
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        group, "v1", namespace, "widgets", body
    )
    return created


# --- the CRD object -----------------------------------------------------------------------


def test_crd_create_sets_status_and_is_served_at_once(
    ext: client.ApiextensionsV1Api, api_client: client.ApiClient, group: str
) -> None:
    created = ext.create_custom_resource_definition(crd_body(group, scale=True, beta=True))
    conditions = {c.type: c for c in created.status.conditions}
    assert conditions["NamesAccepted"].status == "True"
    assert conditions["Established"].status == "True"
    assert created.status.accepted_names.kind == "Widget"
    assert created.status.accepted_names.singular == "widget"
    assert created.status.accepted_names.list_kind == "WidgetList"
    assert created.status.stored_versions == ["v1"]
    assert created.spec.conversion.strategy == "None"
    assert created.metadata.generation == 1
    listed = ext.list_custom_resource_definition().items
    assert f"widgets.{group}" in [c.metadata.name for c in listed]

    groups = raw(api_client, "/apis")["groups"]
    mine = [g for g in groups if g["name"] == group]
    assert mine and mine[0]["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in mine[0]["versions"]] == ["v1", "v1beta1"]
    assert raw(api_client, f"/apis/{group}")["preferredVersion"]["groupVersion"] == f"{group}/v1"
    resources = {r["name"]: r for r in raw(api_client, f"/apis/{group}/v1")["resources"]}
    assert set(resources) == {"widgets", "widgets/status", "widgets/scale"}
    main = resources["widgets"]
    assert main["kind"] == "Widget" and main["singularName"] == "widget"
    assert main["namespaced"] is True
    assert main["shortNames"] == ["wdg"] and main["categories"] == ["things"]
    assert set(main["verbs"]) >= {"create", "get", "list", "watch", "update", "patch", "delete"}
    assert resources["widgets/scale"]["group"] == "autoscaling"
    beta = {r["name"] for r in raw(api_client, f"/apis/{group}/v1beta1")["resources"]}
    assert beta == {"widgets"}  # subresources are per version


INVALID_CASES = [
    (
        "name is not plural.group",
        lambda b: b["metadata"].update(name="wrong.example.com"),
        'metadata.name: Invalid value: "wrong.example.com": '
        'must be spec.names.plural+"."+spec.group',
    ),
    ("no versions", lambda b: b["spec"].update(versions=[]), "spec.versions: Required value"),
    (
        "no storage version",
        lambda b: b["spec"]["versions"][0].update(storage=False),
        "must have exactly one version marked as storage version",
    ),
    (
        "no kind",
        lambda b: b["spec"]["names"].pop("kind"),
        "spec.names.kind: Required value",
    ),
    (
        "no schema",
        lambda b: b["spec"]["versions"][0].pop("schema"),
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
    ),
    (
        "bad scope",
        lambda b: b["spec"].update(scope="Galaxy"),
        'spec.scope: Unsupported value: "Galaxy"',
    ),
    (
        "group without a dot",
        lambda b: b["spec"].update(group="nodot") or b["metadata"].update(name="widgets.nodot"),
        "should be a domain with at least one dot",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [c[1:] for c in INVALID_CASES],
    ids=[c[0] for c in INVALID_CASES],
)
def test_invalid_crds_are_refused_with_a_clear_message(
    ext: client.ApiextensionsV1Api, group: str, mutate: Any, message: str
) -> None:
    body = crd_body(group)
    mutate(body)
    with pytest.raises(client.ApiException) as info:
        ext.create_custom_resource_definition(body)
    status = json.loads(info.value.body)
    assert info.value.status == 422 and status["reason"] == "Invalid"
    assert message in status["message"], status["message"]
    assert status["details"]["kind"] == "CustomResourceDefinition"


def test_crd_watch_json_patch_and_delete(
    ext: client.ApiextensionsV1Api, api_client: client.ApiClient, group: str
) -> None:
    name = f"widgets.{group}"
    rv = ext.list_custom_resource_definition().metadata.resource_version
    ext.create_custom_resource_definition(crd_body(group))
    response = api_client.call_api(
        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
        "PATCH",
        body=[{"op": "add", "path": "/spec/names/shortNames/-", "value": "wdg2"}],
        header_params={"Content-Type": "application/json-patch+json"},
        _preload_content=False,
    )
    patched = json.loads(response.data)
    assert patched["spec"]["names"]["shortNames"] == ["wdg", "wdg2"]
    assert patched["status"]["acceptedNames"]["shortNames"] == ["wdg", "wdg2"]
    assert patched["metadata"]["generation"] == 2
    resources = {r["name"]: r for r in raw(api_client, f"/apis/{group}/v1")["resources"]}
    assert resources["widgets"]["shortNames"] == ["wdg", "wdg2"]
    ext.delete_custom_resource_definition(name)
    stream = watch.Watch().stream(
        ext.list_custom_resource_definition,
        resource_version=rv,
        field_selector=f"metadata.name={name}",
        timeout_seconds=1,
    )
    seen = [e["type"] for e in stream]
    # Added, patched, marked Terminating, finalized: the last event is the deletion.
    assert seen[0] == "ADDED" and seen[-1] == "DELETED" and "MODIFIED" in seen


def test_crd_scope_and_group_are_immutable(ext: client.ApiextensionsV1Api, group: str) -> None:
    ext.create_custom_resource_definition(crd_body(group))
    with pytest.raises(client.ApiException) as info:
        ext.patch_custom_resource_definition(f"widgets.{group}", {"spec": {"scope": "Cluster"}})
    assert (
        info.value.status == 422 and "field is immutable" in json.loads(info.value.body)["message"]
    )


# --- objects of a custom type -------------------------------------------------------------


def test_custom_objects_crud_and_versions(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group, beta=True))
    created = create_widget(custom, group, namespace, "w", replicas=1)
    assert created["metadata"]["generation"] == 1 and created["apiVersion"] == f"{group}/v1"
    got = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w")
    assert got["spec"] == {"replicas": 1}
    patched = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"spec": {"replicas": 2}}
    )
    assert patched["metadata"]["generation"] == 2
    response = custom.api_client.call_api(
        f"/apis/{group}/v1/namespaces/{namespace}/widgets/w",
        "PATCH",
        body=[{"op": "replace", "path": "/spec/replicas", "value": 3}],
        header_params={"Content-Type": "application/json-patch+json"},
        _preload_content=False,
    )
    json_patched = json.loads(response.data)
    assert json_patched["spec"]["replicas"] == 3
    replaced = custom.replace_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {**json_patched, "spec": {"replicas": 4}}
    )
    assert replaced["metadata"]["generation"] == 4
    # The other served version sees the same object under its own apiVersion.
    beta = custom.get_namespaced_custom_object(group, "v1beta1", namespace, "widgets", "w")
    assert beta["apiVersion"] == f"{group}/v1beta1" and beta["spec"] == {"replicas": 4}
    listed = custom.list_namespaced_custom_object(group, "v1beta1", namespace, "widgets")
    assert [i["apiVersion"] for i in listed["items"]] == [f"{group}/v1beta1"]
    custom.create_namespaced_custom_object(
        group,
        "v1beta1",
        namespace,
        "widgets",
        {**widget("b", replicas=1), "apiVersion": f"{group}/v1beta1"},
    )
    stored = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "b")
    assert stored["apiVersion"] == f"{group}/v1"
    custom.delete_namespaced_custom_object(group, "v1", namespace, "widgets", "w")
    with pytest.raises(client.ApiException) as info:
        custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w")
    assert info.value.status == 404


def test_status_subresource_present(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group, status=True))
    body = {**widget("w", replicas=1), "apiVersion": f"{group}/v1", "status": {"phase": "x"}}
    created = custom.create_namespaced_custom_object(group, "v1", namespace, "widgets", body)
    assert "status" not in created
    main = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"status": {"phase": "Main"}}
    )
    assert "status" not in main  # the main resource ignores status
    status = custom.patch_namespaced_custom_object_status(
        group, "v1", namespace, "widgets", "w", {"spec": {"replicas": 9}, "status": {"phase": "S"}}
    )
    assert status["status"] == {"phase": "S"} and status["spec"] == {"replicas": 1}
    assert status["metadata"]["generation"] == 1  # status writes never bump generation


def test_no_status_subresource(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    api_client: client.ApiClient,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group, status=False))
    body = {**widget("w", replicas=1), "apiVersion": f"{group}/v1", "status": {"phase": "x"}}
    created = custom.create_namespaced_custom_object(group, "v1", namespace, "widgets", body)
    assert created["status"] == {"phase": "x"}  # kept: there is no status subresource
    with pytest.raises(client.ApiException) as info:
        custom.patch_namespaced_custom_object_status(
            group, "v1", namespace, "widgets", "w", {"status": {"phase": "S"}}
        )
    assert info.value.status == 404
    patched = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"status": {"phase": "Main"}}
    )
    assert patched["status"] == {"phase": "Main"}
    # Without the status subresource any change (status too) bumps the generation.
    assert patched["metadata"]["generation"] == 2
    resources = {r["name"] for r in raw(api_client, f"/apis/{group}/v1")["resources"]}
    assert resources == {"widgets"}


def test_scale_subresource(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group, scale=True))
    create_widget(custom, group, namespace, "w", replicas=2)
    custom.patch_namespaced_custom_object_status(
        group, "v1", namespace, "widgets", "w", {"status": {"replicas": 1, "selector": "app=w"}}
    )
    scale = custom.get_namespaced_custom_object_scale(group, "v1", namespace, "widgets", "w")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=w"}
    custom.patch_namespaced_custom_object_scale(
        group, "v1", namespace, "widgets", "w", {"spec": {"replicas": 5}}
    )
    got = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w")
    assert got["spec"]["replicas"] == 5 and got["metadata"]["generation"] == 2


# --- pruning ------------------------------------------------------------------------------


def test_pruning_on_every_write_and_its_record(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    devcluster: DevClusterThread,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group))
    key = f"widgets.{group}"
    created = create_widget(
        custom,
        group,
        namespace,
        "w",
        replicas=1,
        size="50%",
        unknown=True,
        nested={"keep": "k", "drop": 1},
        items=[{"name": "a", "extra": 1}, {"name": "b"}],
        weights={"x": {"value": 1, "junk": 2}},
        free={"anything": {"deep": [1, {"x": 2}]}},
        template={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1},
            "spec": {"containers": []},
            "other": 1,
        },
    )
    assert created["spec"] == {
        "replicas": 1,
        "size": "50%",
        "nested": {"keep": "k"},
        "items": [{"name": "a"}, {"name": "b"}],
        "weights": {"x": {"value": 1}},
        "free": {"anything": {"deep": [1, {"x": 2}]}},
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {},
        },
    }
    # metadata is never pruned by the schema, only by ObjectMeta's own fields.
    assert created["metadata"]["name"] == "w"
    patched = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"spec": {"size": 3, "later": 1}}
    )
    assert patched["spec"]["size"] == 3 and "later" not in patched["spec"]
    status = custom.patch_namespaced_custom_object_status(
        group,
        "v1",
        namespace,
        "widgets",
        "w",
        {"status": {"phase": "ok", "foo": {"bar": 1}, "known": {"a": "x", "b": "y"}}},
    )
    assert status["status"] == {"phase": "ok", "known": {"a": "x"}}
    replaced = custom.replace_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {**status, "spec": {"replicas": 2, "put": 1}}
    )
    assert replaced["spec"] == {"replicas": 2}
    expected = [
        "spec.items[].extra",
        "spec.later",
        "spec.nested.drop",
        "spec.put",
        "spec.template.metadata.bogus",
        "spec.template.other",
        "spec.template.spec.containers",
        "spec.unknown",
        "spec.weights.*.junk",
        "status.foo",
        "status.known.b",
    ]
    assert devcluster.pruned_fields()[key] == expected
    assert raw(custom.api_client, "/_devcluster/pruned")[key] == expected
    # DELETE answers what was recorded and clears it (for tests that assert per test).
    assert raw(custom.api_client, "/_devcluster/pruned", "DELETE")[key] == expected
    assert key not in devcluster.pruned_fields()


def test_field_validation_strict_warn_ignore(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    devcluster: DevClusterThread,
    group: str,
    namespace: str,
) -> None:
    ext.create_custom_resource_definition(crd_body(group))
    key = f"widgets.{group}"
    body = {
        **widget("w", replicas=1, items=[{"name": "a"}, {"name": "b", "extra": 1}]),
        "apiVersion": f"{group}/v1",
    }
    with pytest.raises(client.ApiException) as info:
        custom.create_namespaced_custom_object(
            group, "v1", namespace, "widgets", body, field_validation="Strict"
        )
    status = json.loads(info.value.body)
    assert info.value.status == 400 and status["reason"] == "BadRequest"
    assert status["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.items[1].extra"'
    )
    assert key not in devcluster.pruned_fields()  # refused: nothing was written or pruned

    def warnings(validation: str, name: str) -> list[str]:
        response = custom.api_client.call_api(
            f"/apis/{group}/v1/namespaces/{namespace}/widgets",
            "POST",
            query_params=[("fieldValidation", validation)] if validation else [],
            body={**body, "metadata": {"name": name}},
            header_params={"Content-Type": "application/json"},
            _preload_content=False,
        )
        assert response.status == 201
        return list(response.headers.getlist("Warning"))

    expected = ['299 - "unknown field \\"spec.items[1].extra\\""']
    assert warnings("", "default-is-warn") == expected
    assert warnings("Warn", "warn") == expected
    assert warnings("Ignore", "ignore") == []
    assert devcluster.pruned_fields()[key] == ["spec.items[].extra"]


def test_preserve_unknown_fields_at_the_root_prunes_nothing(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    devcluster: DevClusterThread,
    group: str,
    namespace: str,
) -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    ext.create_custom_resource_definition(crd_body(group, schema=schema))
    created = create_widget(custom, group, namespace, "w", anything={"goes": [1, 2]})
    assert created["spec"] == {"anything": {"goes": [1, 2]}}
    body = {**created, "extra": {"top": 1}}
    assert custom.replace_namespaced_custom_object(group, "v1", namespace, "widgets", "w", body)[
        "extra"
    ] == {"top": 1}
    assert f"widgets.{group}" not in devcluster.pruned_fields()


# --- server-side printing ------------------------------------------------------------------


def test_kubectl_get_table_of_printer_columns(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    body = crd_body(group)
    body["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
    ]
    ext.create_custom_resource_definition(body)
    create_widget(custom, group, namespace, "w", replicas=2)
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    response = custom.api_client.call_api(
        f"/apis/{group}/v1/namespaces/{namespace}/widgets",
        "GET",
        header_params={"Accept": accept},
        _preload_content=False,
    )
    table = json.loads(response.data)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas", "Phase"]
    assert [r["cells"] for r in table["rows"]] == [["w", 2, None]]
    # Without the Table media type the same path answers the list.
    plain = custom.list_namespaced_custom_object(group, "v1", namespace, "widgets")
    assert plain["kind"] == "WidgetList"
    # A watch that asks for tables (kubectl get -w) gets one-row Tables.
    stream = custom.api_client.call_api(
        f"/apis/{group}/v1/namespaces/{namespace}/widgets",
        "GET",
        query_params=[
            ("watch", "true"),
            ("resourceVersion", plain["metadata"]["resourceVersion"]),
            ("timeoutSeconds", "1"),
        ],
        header_params={"Accept": accept},
        _preload_content=False,
    )
    custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"spec": {"replicas": 5}}
    )
    events = [json.loads(line) for line in stream.data.splitlines()]
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("MODIFIED", "Table")]
    assert events[0]["object"]["rows"][0]["cells"] == ["w", 5, None]


# --- CRD updates and deletion -------------------------------------------------------------


def test_crd_update_applies_at_once(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    name = f"widgets.{group}"
    ext.create_custom_resource_definition(crd_body(group, status=True))
    create_widget(custom, group, namespace, "w", replicas=1)
    custom.patch_namespaced_custom_object_status(
        group, "v1", namespace, "widgets", "w", {"status": {"phase": "a"}}
    )
    # Remove the status subresource and open the schema: /status is gone, nothing is pruned.
    current = ext.read_custom_resource_definition(name)
    body = crd_body(
        group, status=False, schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    body["metadata"]["resourceVersion"] = current.metadata.resource_version
    updated = ext.replace_custom_resource_definition(name, body)
    assert updated.metadata.generation == 2
    with pytest.raises(client.ApiException) as info:
        custom.get_namespaced_custom_object_status(group, "v1", namespace, "widgets", "w")
    assert info.value.status == 404
    patched = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"spec": {"new": 1}, "status": {"phase": "b"}}
    )
    assert patched["spec"]["new"] == 1 and patched["status"] == {"phase": "b"}
    # And back: a closed schema prunes again, what is stored too (as the real server prunes
    # what it reads from etcd).
    ext.patch_custom_resource_definition(
        name, {"spec": {"versions": crd_body(group)["spec"]["versions"]}}
    )
    stored = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w")
    assert stored["spec"] == {"replicas": 1}
    again = custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w", {"spec": {"newer": 1}}
    )
    assert "newer" not in again["spec"] and "new" not in again["spec"]


def test_crd_delete_deletes_objects_ends_watches_and_stops_serving(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    api_client: client.ApiClient,
    group: str,
    namespace: str,
) -> None:
    name = f"widgets.{group}"
    ext.create_custom_resource_definition(crd_body(group))
    for i in range(3):
        create_widget(custom, group, namespace, f"w{i}", replicas=i)
    rv = custom.list_namespaced_custom_object(group, "v1", namespace, "widgets")["metadata"][
        "resourceVersion"
    ]
    events: list[tuple[str, str]] = []
    ended = threading.Event()

    def consume() -> None:
        stream = watch.Watch().stream(
            custom.list_namespaced_custom_object,
            group,
            "v1",
            namespace,
            "widgets",
            resource_version=rv,
            timeout_seconds=60,
        )
        for event in stream:
            events.append((event["type"], event["object"]["metadata"]["name"]))
        ended.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    # A write after the watch started proves it is open before the delete.
    custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "w0", {"spec": {"replicas": 7}}
    )
    wait_for(lambda: ("MODIFIED", "w0") in events, what="the watch to be open")
    ext.delete_custom_resource_definition(name)
    wait_for(ended.is_set, what="the watch to end when its type goes")
    assert sorted(e for e in events if e[0] == "DELETED") == [
        ("DELETED", "w0"),
        ("DELETED", "w1"),
        ("DELETED", "w2"),
    ]
    with pytest.raises(client.ApiException) as info:
        custom.list_namespaced_custom_object(group, "v1", namespace, "widgets")
    assert info.value.status == 404
    with pytest.raises(client.ApiException) as info:
        ext.read_custom_resource_definition(name)
    assert info.value.status == 404
    assert group not in [g["name"] for g in raw(api_client, "/apis")["groups"]]
    assert raw_status(api_client, f"/apis/{group}") == 404
    assert raw_status(api_client, f"/apis/{group}/v1") == 404


def test_finalizers_on_objects_hold_the_crd_deletion(
    ext: client.ApiextensionsV1Api,
    custom: client.CustomObjectsApi,
    group: str,
    namespace: str,
) -> None:
    name = f"widgets.{group}"
    ext.create_custom_resource_definition(crd_body(group))
    body = {**widget("held"), "apiVersion": f"{group}/v1"}
    body["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_namespaced_custom_object(group, "v1", namespace, "widgets", body)
    ext.delete_custom_resource_definition(name)
    crd = ext.read_custom_resource_definition(name)
    terminating = {c.type: c.status for c in crd.status.conditions}
    assert crd.metadata.deletion_timestamp and terminating["Terminating"] == "True"
    with pytest.raises(client.ApiException) as info:
        create_widget(custom, group, namespace, "late")
    assert info.value.status == 405
    custom.patch_namespaced_custom_object(
        group, "v1", namespace, "widgets", "held", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(client.ApiException) as info:
        ext.read_custom_resource_definition(name)
    assert info.value.status == 404


# --- options of the devcluster --------------------------------------------------------------


def test_no_crds_option_and_state_keeps_crds(tmp_path: Path) -> None:
    from kubernetes import config

    state = tmp_path / "state.json"
    first = run_in_thread(install_crds=False, state_file=state)
    try:
        api = config.new_client_from_config(config_file=str(first.write_kubeconfig(tmp_path / "a")))
        groups = [g["name"] for g in raw(api, "/apis")["groups"]]
        assert "argoproj.io" not in groups and "apiextensions.k8s.io" in groups
        client.ApiextensionsV1Api(api).create_custom_resource_definition(
            crd_body("kept.example.com")
        )
        custom = client.CustomObjectsApi(api)
        create_widget(custom, "kept.example.com", "default", "w", replicas=3)
    finally:
        first.stop()
    second = run_in_thread(install_crds=False, state_file=state)
    try:
        api = config.new_client_from_config(
            config_file=str(second.write_kubeconfig(tmp_path / "b"))
        )
        custom = client.CustomObjectsApi(api)
        got = custom.get_namespaced_custom_object(
            "kept.example.com", "v1", "default", "widgets", "w"
        )
        assert got["spec"] == {"replicas": 3}
        create_widget(custom, "kept.example.com", "default", "w2")
    finally:
        second.stop()


KUBECTL_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: gadgets, kind: Gadget, shortNames: [gdg]}}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {{name: Size, type: integer, jsonPath: .spec.size}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{size: {{type: integer}}}}}}
"""
KUBECTL_OBJECT = """\
apiVersion: {group}/v1
kind: Gadget
metadata: {{name: g1}}
spec: {{size: {size}, junk: 1}}
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_apply_crd_then_object(
    kubeconfig: Path, namespace: str, tmp_path: Path, ext: client.ApiextensionsV1Api
) -> None:
    group = f"k{uuid.uuid4().hex[:8]}.example.com"

    def kubectl(*args: str, stdin: str | None = None, ok: bool = True) -> str:
        result = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                str(kubeconfig),
                "--cache-dir",
                str(tmp_path / "cache"),
                "-n",
                namespace,
                *args,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (result.returncode == 0) == ok, result.stderr
        return result.stdout + result.stderr

    try:
        assert "created" in kubectl("apply", "-f", "-", stdin=KUBECTL_CRD.format(group=group))
        obj = KUBECTL_OBJECT.format(group=group, size=3)
        # kubectl validates strictly by default: the server refuses a field the schema lacks.
        refused = kubectl("apply", "-f", "-", stdin=obj, ok=False)
        assert 'strict decoding error: unknown field "spec.junk"' in refused
        warned = kubectl("apply", "--validate=warn", "-f", "-", stdin=obj)
        assert "created" in warned and 'Warning: unknown field "spec.junk"' in warned
        assert kubectl("get", "gdg", "-o", "name").split() == [f"gadget.{group}/g1"]
        assert kubectl("get", "gdg", "g1", "-o", "jsonpath={.spec}") == '{"size":3}'
        # Server-side printing: the CRD's printer columns.
        header, row = kubectl("get", "gdg").splitlines()
        assert header.split() == ["NAME", "SIZE"] and row.split() == ["g1", "3"]
        assert "size\t<integer>" in kubectl("explain", "gadget.spec")  # the CRD's schema
        resources = kubectl("api-resources", f"--api-group={group}")
        assert "gadgets" in resources and "gdg" in resources and "Gadget" in resources
        obj = KUBECTL_OBJECT.format(group=group, size=4).replace(", junk: 1", "")
        assert "configured" in kubectl("apply", "-f", "-", stdin=obj)
        assert kubectl("get", "gdg", "g1", "-o", "jsonpath={.spec.size}") == "4"
        kubectl("delete", "crd", f"gadgets.{group}")
        assert "NotFound" in kubectl("get", "gdg", ok=False) or "doesn't have" in kubectl(
            "get", "gadgets", ok=False
        )
    finally:
        try:
            ext.delete_custom_resource_definition(f"gadgets.{group}")
        except client.ApiException as exc:
            assert exc.status == 404


@pytest.mark.parametrize(("flags", "served"), [([], True), (["--no-crds"], False)])
def test_cli_no_crds_flag(tmp_path: Path, flags: list[str], served: bool) -> None:
    from kubernetes import config

    state_dir = tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-m", "devcluster", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env({**os.environ, "ROLLOUTS_STATE_DIR": str(state_dir)}),
    )
    info = state_dir / "devcluster.json"
    try:
        wait_for(lambda: info.exists() and info.read_text(), what="devcluster.json")
        api = config.new_client_from_config(config_file=json.loads(info.read_text())["kubeconfig"])
        groups = [g["name"] for g in raw(api, "/apis")["groups"]]
        assert ("argoproj.io" in groups) is served
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        assert ("rollouts.argoproj.io" in [c.metadata.name for c in crds]) is served
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_a_test_can_install_a_modified_project_crd(tmp_path: Path) -> None:
    """How a test changes a project CRD: ``apply_crd`` with the edited generated document
    (or the official client's ApiextensionsV1Api). Here AnalysisRun loses its status
    subresource, as in Argo Rollouts' own CRDs."""
    from kubernetes import config

    from rollout_workers.api.crdgen import calculate_crds

    with run_in_thread() as cluster:
        (run_crd,) = [c for c in calculate_crds() if c["spec"]["names"]["kind"] == "AnalysisRun"]
        run_crd = json.loads(json.dumps(run_crd))
        for version in run_crd["spec"]["versions"]:
            version.get("subresources", {}).pop("status", None)
        stored = cluster.apply_crd(run_crd)
        assert stored["metadata"]["generation"] in (1, 2)
        api = config.new_client_from_config(
            config_file=str(cluster.write_kubeconfig(tmp_path / "c"))
        )
        names = {r["name"] for r in raw(api, "/apis/argoproj.io/v1alpha1")["resources"]}
        assert "analysisruns" in names and "analysisruns/status" not in names
        assert "rollouts/status" in names


def test_a_crd_whose_names_are_taken_is_not_served(
    ext: client.ApiextensionsV1Api, api_client: client.ApiClient, group: str
) -> None:
    ext.create_custom_resource_definition(crd_body(group))
    rival = crd_body(group)
    rival["metadata"]["name"] = f"gizmos.{group}"
    rival["spec"]["names"] = {"plural": "gizmos", "kind": "Gizmo", "shortNames": ["wdg"]}
    created = ext.create_custom_resource_definition(rival)
    try:
        conditions = {c.type: c for c in created.status.conditions}
        assert conditions["NamesAccepted"].status == "False"
        assert conditions["NamesAccepted"].reason == "ShortNamesConflict"
        assert conditions["NamesAccepted"].message == '"wdg" is already in use'
        assert conditions["Established"].status == "False"
        resources = {r["name"] for r in raw(api_client, f"/apis/{group}/v1")["resources"]}
        assert "gizmos" not in resources
        # Freed when the holder goes.
        ext.delete_custom_resource_definition(f"widgets.{group}")
        freed = ext.read_custom_resource_definition(f"gizmos.{group}")
        assert {c.type: c.status for c in freed.status.conditions}["Established"] == "True"
        resources = {r["name"] for r in raw(api_client, f"/apis/{group}/v1")["resources"]}
        assert "gizmos" in resources
    finally:
        ext.delete_custom_resource_definition(f"gizmos.{group}")
