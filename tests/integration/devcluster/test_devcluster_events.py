"""events.k8s.io/v1 and core/v1 events: one set of objects, two APIs (official client)."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client, watch

EVENT_TIME = "2026-01-01T00:00:00.000000Z"


def test_event_created_through_events_v1_reads_through_core(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    events = client.EventsV1Api(api_client)
    created = events.create_namespaced_event(
        namespace,
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e1"},
            "eventTime": EVENT_TIME,
            "regarding": {"kind": "Rollout", "name": "web", "namespace": namespace},
            "related": {"kind": "ReplicaSet", "name": "web-abc"},
            "note": "scaled up",
            "reason": "ScalingReplicaSet",
            "type": "Normal",
            "action": "Scale",
            "reportingController": "rollouts-controller",
            "reportingInstance": "worker-1",
            "series": {"count": 3, "lastObservedTime": EVENT_TIME},
        },
    )
    assert created.note == "scaled up" and created.regarding.name == "web"
    old = core.read_namespaced_event("e1", namespace)
    assert old.involved_object.kind == "Rollout" and old.involved_object.name == "web"
    assert old.message == "scaled up"
    assert old.reporting_component == "rollouts-controller"
    assert old.reporting_instance == "worker-1"
    assert old.related.name == "web-abc"
    assert (old.action, old.reason, old.type) == ("Scale", "ScalingReplicaSet", "Normal")
    assert old.series.count == 3
    # An update through one API shows in the other.
    events.patch_namespaced_event("e1", namespace, {"note": "scaled down"})
    assert core.read_namespaced_event("e1", namespace).message == "scaled down"
    core.patch_namespaced_event("e1", namespace, {"message": "again"})
    assert events.read_namespaced_event("e1", namespace).note == "again"
    events.delete_namespaced_event("e1", namespace)
    assert core.list_namespaced_event(namespace).items == []


def test_core_event_reads_through_events_v1(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
            "message": "pulled",
            "reason": "Pulled",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:01:00Z",
            "count": 4,
        },
    )
    # The official client refuses an events.k8s.io/v1 Event without eventTime (a required
    # field that old-style events leave null), so read the JSON as a real server sends it.
    response = api_client.call_api(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/e2",
        "GET",
        _preload_content=False,
    )
    body: dict[str, Any] = json.loads(response.data)
    assert body["apiVersion"] == "events.k8s.io/v1" and body["kind"] == "Event"
    assert body["regarding"] == {"kind": "Pod", "name": "p", "namespace": namespace}
    assert body["note"] == "pulled"
    assert body["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert body["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert body["deprecatedLastTimestamp"] == "2026-01-01T00:01:00Z"
    assert body["deprecatedCount"] == 4
    for core_only in ("involvedObject", "message", "source", "count", "firstTimestamp"):
        assert core_only not in body


def test_events_v1_list_and_watch(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    events = client.EventsV1Api(api_client)
    rv = events.list_namespaced_event(namespace).metadata.resource_version
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e3"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "message": "m",
            "eventTime": EVENT_TIME,
            "reportingComponent": "c",
            "reportingInstance": "i",
            "action": "A",
            "reason": "R",
            "type": "Normal",
        },
    )
    listed = events.list_namespaced_event(namespace).items
    assert [(e.metadata.name, e.note) for e in listed] == [("e3", "m")]
    selected = events.list_namespaced_event(
        namespace, field_selector="regarding.kind=Pod,regarding.name=p,reportingController=c"
    ).items
    assert [e.metadata.name for e in selected] == ["e3"]
    assert events.list_namespaced_event(namespace, field_selector="regarding.name=q").items == []
    stream = watch.Watch().stream(
        events.list_namespaced_event, namespace, resource_version=rv, timeout_seconds=1
    )
    seen = [(e["type"], e["object"].note, e["object"].api_version) for e in stream]
    assert seen == [("ADDED", "m", "events.k8s.io/v1")]
