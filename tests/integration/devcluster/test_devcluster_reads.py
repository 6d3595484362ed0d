"""List (selectors, pagination, cluster-wide) and watch semantics, through the official client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch

from devcluster.server import DevClusterThread, run_in_thread
from tests.integration.devcluster.devcluster_helpers import replicaset, rollout_body, wait_for


def make_configmaps(core: client.CoreV1Api, namespace: str) -> None:
    for name, labels in [
        ("a", {"app": "web", "track": "stable"}),
        ("b", {"app": "web", "track": "canary"}),
        ("c", {"app": "api"}),
        ("d", {}),
    ]:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": labels}})


SELECTOR_CASES = [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("track in (stable,canary)", ["a", "b"]),
    ("app notin (web)", ["c", "d"]),
    ("track", ["a", "b"]),
    ("!track", ["c", "d"]),
    ("app=web,track!=canary", ["a"]),
]


def test_label_selectors(core: client.CoreV1Api, namespace: str) -> None:
    make_configmaps(core, namespace)
    for selector, expected in SELECTOR_CASES:
        items = core.list_namespaced_config_map(namespace, label_selector=selector).items
        assert [i.metadata.name for i in items] == expected, selector
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_config_map(namespace, label_selector="app in (web")
    assert info.value.status == 400 and json.loads(info.value.body)["reason"] == "BadRequest"


def test_field_selectors(core: client.CoreV1Api, namespace: str) -> None:
    make_configmaps(core, namespace)
    names = core.list_namespaced_config_map(namespace, field_selector="metadata.name=b").items
    assert [i.metadata.name for i in names] == ["b"]
    others = core.list_namespaced_config_map(namespace, field_selector="metadata.name!=b").items
    assert [i.metadata.name for i in others] == ["a", "c", "d"]
    everywhere = core.list_config_map_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace},metadata.name=c"
    ).items
    assert [(i.metadata.namespace, i.metadata.name) for i in everywhere] == [(namespace, "c")]
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_config_map(namespace, field_selector="data.x=1")
    assert info.value.status == 400


def test_pagination(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    first = core.list_namespaced_config_map(namespace, limit=3)
    assert first.metadata._continue and first.metadata.remaining_item_count == 4
    names = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
    assert names == [f"cm-{i}" for i in range(7)]


def test_cluster_wide_list(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    second = f"{namespace}-b"
    core.create_namespace({"metadata": {"name": second}})
    try:
        apps.create_namespaced_replica_set(namespace, replicaset("one", replicas=0))
        apps.create_namespaced_replica_set(second, replicaset("two", replicas=0))
        listed = apps.list_replica_set_for_all_namespaces(label_selector="app in (one,two)")
        assert {(i.metadata.namespace, i.metadata.name) for i in listed.items} == {
            (namespace, "one"),
            (second, "two"),
        }
        assert int(listed.metadata.resource_version) >= int(
            apps.read_namespaced_replica_set("two", second).metadata.resource_version
        )
    finally:
        core.delete_namespace(second)


def collect(stream: Iterator[dict[str, Any]], count: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for event in stream:
        out.append((event["type"], event["raw_object"]["metadata"].get("name", "")))
        if len(out) >= count:
            break
    return out


def test_watch_from_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("a", namespace)
    w = watch.Watch()
    events = collect(
        w.stream(
            core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=5
        ),
        3,
    )
    w.stop()
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_without_resource_version_lists_first(core: client.CoreV1Api, namespace: str) -> None:
    make_configmaps(core, namespace)
    w = watch.Watch()
    events = collect(
        w.stream(
            core.list_namespaced_config_map, namespace, label_selector="app=web", timeout_seconds=5
        ),
        2,
    )
    w.stop()
    assert sorted(events) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_selector_and_bookmarks_and_timeout(core: client.CoreV1Api, namespace: str) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "x", "labels": {"app": "other"}}}
    )
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "y", "labels": {"app": "web"}}}
    )
    started = time.monotonic()
    response = core.list_namespaced_config_map(
        namespace,
        watch=True,
        resource_version=rv,
        label_selector="app=web",
        allow_watch_bookmarks=True,
        timeout_seconds=1,
        _preload_content=False,
    )
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 5  # the stream ended cleanly at timeoutSeconds
    assert lines[0]["type"] == "ADDED" and lines[0]["object"]["metadata"]["name"] == "y"
    bookmarks = [e for e in lines if e["type"] == "BOOKMARK"]
    assert bookmarks, lines
    assert bookmarks[0]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": bookmarks[0]["object"]["metadata"]["resourceVersion"]},
    }
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(
        lines[0]["object"]["metadata"]["resourceVersion"]
    )


def test_force_gone_sends_410_in_the_stream(
    core: client.CoreV1Api, namespace: str, devcluster: DevClusterThread
) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    devcluster.force_gone()
    response = core.list_namespaced_config_map(
        namespace, watch=True, resource_version=rv, timeout_seconds=5, _preload_content=False
    )
    assert response.status == 200
    (line,) = [json.loads(x) for x in response.read().splitlines() if x.strip()]
    assert line["type"] == "ERROR"
    status = line["object"]
    assert status["kind"] == "Status" and status["code"] == 410
    assert status["reason"] == "Expired" and "too old resource version" in status["message"]
    # The official Watch turns a repeated 410 into ApiException(410).
    w = watch.Watch()
    with pytest.raises(client.ApiException) as info:
        for _ in w.stream(core.list_namespaced_config_map, namespace, resource_version=rv):
            pass
    assert info.value.status == 410


def test_compact_hook_over_http_ends_open_watches(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    response = core.list_namespaced_config_map(
        namespace, watch=True, resource_version=rv, timeout_seconds=10, _preload_content=False
    )
    compacted = api_client.call_api("/_devcluster/compact", "POST", _preload_content=False)
    assert compacted.status == 200
    events = [json.loads(x) for x in response.read().splitlines() if x.strip()]
    assert [e["type"] for e in events] == ["ERROR"] and events[0]["object"]["code"] == 410


@pytest.fixture
def small_history() -> Iterator[DevClusterThread]:
    handle = run_in_thread(history_size=3)
    yield handle
    handle.stop()


def test_bounded_history_expires_old_resource_versions(
    small_history: DevClusterThread, tmp_path: Any
) -> None:
    api = config.new_client_from_config(
        config_file=str(small_history.write_kubeconfig(tmp_path / "config"))
    )
    core = client.CoreV1Api(api)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    recent = core.list_namespaced_config_map(
        "default",
        watch=True,
        resource_version=start,
        timeout_seconds=1,
        _preload_content=False,
    )
    assert [json.loads(x)["type"] for x in recent.read().splitlines()] == ["ADDED"] * 3
    core.create_namespaced_config_map("default", {"metadata": {"name": "c3"}})
    old = core.list_namespaced_config_map(
        "default",
        watch=True,
        resource_version=start,
        timeout_seconds=1,
        _preload_content=False,
    )
    (error,) = [json.loads(x) for x in old.read().splitlines()]
    assert error["type"] == "ERROR" and error["object"]["code"] == 410


def test_watch_sees_status_writes_of_the_replicaset_controller(
    apps: client.AppsV1Api, namespace: str
) -> None:
    rv = apps.list_namespaced_replica_set(namespace).metadata.resource_version
    apps.create_namespaced_replica_set(namespace, replicaset("web", replicas=1))
    w = watch.Watch()
    seen: list[int] = []
    for event in w.stream(
        apps.list_namespaced_replica_set, namespace, resource_version=rv, timeout_seconds=10
    ):
        status = event["raw_object"].get("status") or {}
        seen.append(status.get("readyReplicas", 0))
        if status.get("readyReplicas") == 1:
            w.stop()
    assert seen[0] == 0 and seen[-1] == 1
    wait_for(lambda: apps.read_namespaced_replica_set("web", namespace).status.ready_replicas)


def test_watch_custom_objects(custom: client.CustomObjectsApi, namespace: str) -> None:
    start = custom.list_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "rollouts")[
        "metadata"
    ]["resourceVersion"]
    custom.create_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "rollouts", rollout_body("r")
    )
    custom.patch_namespaced_custom_object_status(
        "argoproj.io", "v1alpha1", namespace, "rollouts", "r", {"status": {"phase": "Healthy"}}
    )
    w = watch.Watch()
    stream = w.stream(
        custom.list_namespaced_custom_object,
        "argoproj.io",
        "v1alpha1",
        namespace,
        "rollouts",
        resource_version=start,
        timeout_seconds=5,
    )
    events = [next(stream), next(stream)]
    w.stop()
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    assert events[1]["object"]["status"] == {"phase": "Healthy"}
    assert w.resource_version == events[1]["object"]["metadata"]["resourceVersion"]


def test_watch_query_accepts_1(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    response = api_client.call_api(
        f"/api/v1/namespaces/{namespace}/configmaps",
        "GET",
        query_params=[("watch", "1"), ("timeoutSeconds", "1")],
        _preload_content=False,
    )
    events = [json.loads(x) for x in response.read().splitlines() if x.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


def test_legacy_watch_paths(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    for name in ("a", "b"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    for path, expected in [
        (f"/api/v1/watch/namespaces/{namespace}/configmaps", ["a", "b"]),
        (f"/api/v1/watch/namespaces/{namespace}/configmaps/b", ["b"]),
    ]:
        response = api_client.call_api(
            path, "GET", query_params=[("timeoutSeconds", "1")], _preload_content=False
        )
        events = [json.loads(x) for x in response.read().splitlines() if x.strip()]
        assert sorted(e["object"]["metadata"]["name"] for e in events) == expected
