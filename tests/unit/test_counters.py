"""The pure side of the Redis-backed counters: buckets, request labels, pending increments."""

from __future__ import annotations

import time

import pytest

from rollout_workers.counters import (
    RECONCILE_BUCKETS,
    WORKQUEUE_BUCKETS,
    Increment,
    Keys,
    PendingCounts,
    bucket_index,
    reconcile_increments,
    request_labels,
)


def test_buckets_are_argos_and_client_gos() -> None:
    assert RECONCILE_BUCKETS == (0.01, 0.15, 0.25, 0.5, 1.0)
    assert pytest.approx([1e-8 * 10**i for i in range(10)]) == WORKQUEUE_BUCKETS
    # Go multiplies step by step; so do we, and the `le` labels match client-go's exactly.
    assert WORKQUEUE_BUCKETS[3] == 9.999999999999999e-06


@pytest.mark.parametrize(
    ("value", "index"),
    [
        pytest.param(0.0, 0, id="zero in the first bucket"),
        pytest.param(0.01, 0, id="on a bound: le is inclusive"),
        pytest.param(0.011, 1, id="just above a bound"),
        pytest.param(0.3, 3, id="middle"),
        pytest.param(1.0, 4, id="last bound"),
        pytest.param(7.5, 5, id="+Inf"),
    ],
)
def test_bucket_index(value: float, index: int) -> None:
    assert bucket_index(RECONCILE_BUCKETS, value) == index


@pytest.mark.parametrize(
    ("method", "path", "watch", "labels"),
    [
        pytest.param(
            "GET", "/apis/argoproj.io/v1alpha1/namespaces/ns/rollouts/web", False,
            ("rollouts", "ns", "web", "Get"), id="get a rollout",
        ),
        pytest.param(
            "PATCH", "/apis/argoproj.io/v1alpha1/namespaces/ns/rollouts/web/status", False,
            ("rollouts", "ns", "web", "Patch"), id="status subresource",
        ),
        pytest.param(
            "GET", "/apis/argoproj.io/v1alpha1/rollouts", False,
            ("rollouts", "", "N/A", "List"), id="cluster-wide list has no name",
        ),
        pytest.param(
            "GET", "/apis/apps/v1/namespaces/ns/replicasets", True,
            ("replicasets", "ns", "N/A", "Watch"), id="watch",
        ),
        pytest.param(
            "POST", "/api/v1/namespaces/ns/events", False,
            ("events", "ns", "N/A", "Create"), id="events never carry a name",
        ),
        pytest.param(
            "PATCH", "/apis/apps/v1/namespaces/ns/replicasets/web-abc", False,
            ("replicasets", "ns", "N/A", "Patch"), id="replicasets never carry a name",
        ),
        pytest.param(
            "PUT", "/api/v1/namespaces/ns/services/web", False,
            ("services", "ns", "web", "Update"), id="update a service",
        ),
        pytest.param(
            "DELETE", "/apis/argoproj.io/v1alpha1/namespaces/ns/analysisruns/r1", False,
            ("analysisruns", "ns", "N/A", "Delete"), id="analysis runs never carry a name",
        ),
        pytest.param(
            "GET", "/apis/argoproj.io/v1alpha1", False,
            ("Unknown", "Unknown", "Unknown", "Unknown"), id="discovery is Unknown",
        ),
        pytest.param(
            "OPTIONS", "/api/v1/namespaces/ns/services/web", False,
            ("Unknown", "Unknown", "Unknown", "Unknown"), id="unknown verb",
        ),
    ],
)  # fmt: skip
def test_request_labels(
    method: str, path: str, watch: bool, labels: tuple[str, str, str, str]
) -> None:
    assert request_labels(method, path, watch=watch) == labels


def test_pending_counts_drain_and_restore() -> None:
    counts = PendingCounts(Keys("p"))
    counts.request("GET", "/api/v1/namespaces/ns/services/web", 200)
    counts.request("GET", "/api/v1/namespaces/ns/services/web", 200)
    counts.request("GET", "/api/v1/namespaces/ns/services/web", 404)
    counts.event(namespace="ns", name="web", type="Normal", reason="RolloutUpdated")
    counts.event_dropped("spam")
    drained = counts.drain()
    assert drained == [
        Increment("p:metrics:events", "ns|web|Normal|RolloutUpdated", 1),
        Increment("p:metrics:events_dropped", "spam", 1),
        Increment("p:metrics:k8s_requests", "services|ns|web|Get|200", 2),
        Increment("p:metrics:k8s_requests", "services|ns|web|Get|404", 1),
    ]
    assert counts.drain() == []
    counts.restore(drained)
    counts.request("GET", "/api/v1/namespaces/ns/services/web", 200)
    assert Increment("p:metrics:k8s_requests", "services|ns|web|Get|200", 3) in counts.drain()


def test_reconcile_increments() -> None:
    keys = Keys("p")
    incs = reconcile_increments(keys, kind="rollouts", key="ns/web", seconds=0.2, error=True)
    assert incs == [
        Increment("p:metrics:rollouts:workqueue", "work|b8", 1),
        Increment("p:metrics:rollouts:workqueue", "work|sum", 200_000),
        Increment("p:metrics:rollouts:reconcile", "ns/web|b2", 1),
        Increment("p:metrics:rollouts:reconcile", "ns/web|sum", 200_000),
        Increment("p:metrics:rollouts:reconcile", "ns/web|err", 1),
    ]
    gone = reconcile_increments(
        keys, kind="rollouts", key="ns/web", seconds=0.2, error=False, gone=True
    )
    assert [i.key for i in gone] == ["p:metrics:rollouts:workqueue"] * 2


def test_pending_counts_go_out_summed_at_most_once_an_interval() -> None:
    keys = Keys("rw")
    counts = PendingCounts(keys, interval=0.2)
    assert not counts.due() and counts.drain_due() == []  # nothing pending
    counts.request("GET", "/api/v1/namespaces/ns/services/a", 200)
    first = counts.drain_due()  # the first hand-over is never held back
    assert [i.amount for i in first] == [1]
    for _ in range(3):
        counts.request("GET", "/api/v1/namespaces/ns/services/a", 200)
        counts.add([Increment(keys.events, "ns|a|Normal|X", 2)])
    assert counts.drain_due() == []  # within the interval: kept, summed
    time.sleep(0.25)
    assert sorted(i.amount for i in counts.drain_due()) == [3, 6]
