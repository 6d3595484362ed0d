"""The nginx router's canary Ingress, after Argo's rollout/trafficrouting/nginx/nginx_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.api.rollout import NginxTrafficRouting
from rollout_workers.kube import resources as r
from rollout_workers.rollout.trafficrouting import TrafficRoutingError
from rollout_workers.rollout.trafficrouting.nginx import (
    build_canary_ingress,
    calculate_ingress_patch,
    canary_ingress_name,
    ingress_resource,
    uses_service,
)

Obj = dict[str, Any]
OWNER: Obj = {"metadata": {"name": "rollout", "uid": "ro-uid"}}


def stable_ingress(name: str = "stable-ingress", service: str = "stable-service") -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"annotation-key1": "annotation-value1"},
            "labels": {"label-key1": "label-value1"},
        },
        "spec": {
            "ingressClassName": "ingress-name",
            "defaultBackend": {"service": {"name": service, "port": {"number": 80}}},
            "rules": [
                {
                    "host": "fakehost.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/foo",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": service, "port": {"name": "http"}}},
                            }
                        ]
                    },
                },
                {
                    "host": "other.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "other", "port": {"number": 80}}},
                            }
                        ]
                    },
                },
            ],
        },
    }


def build(stable: Obj, weight: int = 10, max_weight: int | None = None, **nginx: Any) -> Obj:
    return build_canary_ingress(
        stable,
        name=canary_ingress_name("rollout", stable["metadata"]["name"]),
        owner=OWNER,
        stable_service="stable-service",
        canary_service="canary-service",
        weight=weight,
        nginx=NginxTrafficRouting.model_validate({"stableIngress": "stable-ingress", **nginx}),
        max_traffic_weight=max_weight,
    )


def test_canary_ingress_is_named_after_the_rollout_and_the_stable_ingress() -> None:
    assert canary_ingress_name("rollout", "stable-ingress") == "rollout-stable-ingress-canary"
    long = canary_ingress_name("r" * 200, "i" * 100)
    assert len(long) == 253 and long.endswith("-canary")


def test_canary_ingress_points_the_stable_rules_at_the_canary_service() -> None:
    desired = build(stable_ingress())
    assert desired["metadata"]["name"] == "rollout-stable-ingress-canary"
    assert desired["metadata"]["annotations"] == {
        "nginx.ingress.kubernetes.io/canary": "true",
        "nginx.ingress.kubernetes.io/canary-weight": "10",
    }
    assert "labels" not in desired["metadata"]
    owner = desired["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Rollout", "ro-uid", True)
    spec = desired["spec"]
    assert spec["ingressClassName"] == "ingress-name"
    assert "defaultBackend" not in spec
    assert [rule["host"] for rule in spec["rules"]] == ["fakehost.example.com"]  # only stable's
    assert spec["rules"][0]["http"]["paths"][0]["backend"]["service"] == {
        "name": "canary-service",
        "port": {"name": "http"},
    }


def test_canary_ingress_keeps_ingress_class_annotation_and_tls() -> None:
    stable = stable_ingress()
    stable["metadata"]["annotations"]["kubernetes.io/ingress.class"] = "nginx-foo"
    stable["spec"]["tls"] = [{"hosts": ["fakehost.example.com"], "secretName": "tls-secret"}]
    desired = build(stable, weight=15)
    assert desired["metadata"]["annotations"]["kubernetes.io/ingress.class"] == "nginx-foo"
    assert desired["spec"]["tls"] == stable["spec"]["tls"]


def test_additional_annotations_prefix_and_weight_total() -> None:
    desired = build(
        stable_ingress(),
        weight=200,
        max_weight=1000,
        annotationPrefix="custom.nginx.io",
        additionalIngressAnnotations={
            "canary-by-header": "X-Canary",
            "custom.nginx.io/canary-by-header-value": "yes",
        },
    )
    assert desired["metadata"]["annotations"] == {
        "custom.nginx.io/canary-by-header": "X-Canary",
        "custom.nginx.io/canary-by-header-value": "yes",
        "custom.nginx.io/canary": "true",
        "custom.nginx.io/canary-weight": "200",
        "custom.nginx.io/canary-weight-total": "1000",
    }


def test_canary_ingress_annotations_are_kept_whole() -> None:
    desired = build(
        stable_ingress(),
        weight=10,
        canaryIngressAnnotations={"mygroup.com/key": "value", "canary-by-cookie": "c"},
    )
    annotations = desired["metadata"]["annotations"]
    assert annotations["mygroup.com/key"] == "value"
    assert annotations["canary-by-cookie"] == "c"  # no prefix added
    assert annotations["nginx.ingress.kubernetes.io/canary-weight"] == "10"


def test_a_stable_ingress_without_the_stable_service_is_an_error() -> None:
    with pytest.raises(TrafficRoutingError, match="has no rules using service stable-service"):
        build(stable_ingress(service="elsewhere"))


def test_patch_changes_only_the_weight() -> None:
    current = {**build(stable_ingress(), weight=10), "status": {}}
    current["metadata"] = {**current["metadata"], "resourceVersion": "7", "uid": "u"}
    desired = build(stable_ingress(), weight=15)
    assert calculate_ingress_patch(current, desired) == {
        "metadata": {"annotations": {"nginx.ingress.kubernetes.io/canary-weight": "15"}}
    }
    assert calculate_ingress_patch(current, build(stable_ingress(), weight=10)) == {}


def test_patch_undoes_changes_made_by_others() -> None:
    current = build(stable_ingress())
    current["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"] = "90"
    current["metadata"]["labels"] = {"added": "by-someone"}
    current["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/bar"
    patch = calculate_ingress_patch(current, build(stable_ingress()))
    assert patch["metadata"] == {
        "annotations": {"nginx.ingress.kubernetes.io/canary-weight": "10"},
        "labels": None,
    }
    assert patch["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/foo"


def legacy_stable_ingress(api_version: str | None) -> Obj:
    """A v1beta1 Ingress (networking.k8s.io or extensions): backends name `serviceName`."""
    backend = {"serviceName": "stable-service", "servicePort": 80}
    ingress: Obj = {
        "metadata": {"name": "stable-ingress", "namespace": "default"},
        "spec": {
            "backend": dict(backend),
            "rules": [{"host": "h", "http": {"paths": [{"path": "/", "backend": backend}]}}],
        },
    }
    if api_version:
        ingress["apiVersion"] = api_version
    return ingress


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        ("extensions/v1beta1", "extensions/v1beta1"),
        ("networking.k8s.io/v1beta1", "networking.k8s.io/v1beta1"),
        # A LIST's items carry no apiVersion: the shape tells.
        (None, "networking.k8s.io/v1beta1"),
    ],
)
def test_a_v1beta1_stable_ingress_gets_a_v1beta1_canary_ingress(
    api_version: str | None, expected: str
) -> None:
    stable = legacy_stable_ingress(api_version)
    assert ingress_resource(stable).api_version == expected
    assert uses_service(stable, "stable-service") and not uses_service(stable, "nope")
    desired = build(stable, weight=30)
    assert desired["apiVersion"] == expected
    [rule] = desired["spec"]["rules"]
    assert rule["http"]["paths"][0]["backend"] == {
        "serviceName": "canary-service",
        "servicePort": 80,
    }
    assert desired["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"] == "30"


def test_a_v1_stable_ingress_without_apiversion_is_v1() -> None:
    assert ingress_resource(stable_ingress()).api_version == "networking.k8s.io/v1"


def test_several_stable_ingresses_get_a_canary_ingress_each() -> None:
    """nginx.stableIngresses (Argo's TestReconcileCanaryIngress... with several ingresses): one
    canary Ingress per stable Ingress, each at the step's weight."""
    from tests.unit.rollout.onesync import OneSync, rollout, service

    nginx = {"stableIngresses": ["ing-a", "ing-b"]}
    obj = rollout(
        strategy={
            "canary": {
                "stableService": "stable-service",
                "canaryService": "canary-service",
                "trafficRouting": {"nginx": nginx},
                "steps": [{"setWeight": 20}, {"pause": {}}],
            }
        },
        replicas=2,
    )
    ingresses = [
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", **stable_ingress(name)}
        for name in ("ing-a", "ing-b")
    ]
    sim = OneSync(obj, [service("stable-service"), service("canary-service"), *ingresses])
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    stored = sim.of(r.INGRESSES)
    for name in ("ing-a", "ing-b"):
        canary = stored[canary_ingress_name("web", name)]
        annotations = canary["metadata"]["annotations"]
        assert annotations["nginx.ingress.kubernetes.io/canary"] == "true"
        assert annotations["nginx.ingress.kubernetes.io/canary-weight"] == "20"
