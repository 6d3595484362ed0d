"""The protobuf body decoder: bodies captured from kubectl v1.32, hand-built messages, bad input.

The ``kubectl_bodies/*.bin`` fixtures are the exact request bodies ``kubectl create ...`` sent to a
devcluster; each case expects the JSON a JSON client would have sent for the same object.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devcluster.errors import ApiError
from devcluster.protobuf import (
    MAGIC,
    DecodeError,
    UnsupportedKind,
    decode_object,
    decode_request_body,
)

BODIES = Path(__file__).parent / "kubectl_bodies"


# --- a minimal encoder for hand-built messages -------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers as Go writes them: 64-bit two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def vint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def ld(number: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *extra: bytes) -> bytes:
    return MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + b"".join(extra)


def meta(name: str) -> bytes:
    return ld(1, ld(1, name))


# --- kubectl's bodies ----------------------------------------------------------------------------

DEPLOYMENT_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]
    },
}


def service(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "demo", "labels": {"app": name}},
        "spec": {**spec, "selector": {"app": name}},
    }


KUBECTL_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "create-namespace",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
    ),
    (
        "create-deployment",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": DEPLOYMENT_TEMPLATE,
            },
        },
    ),
    (
        "create-deployment-two-images",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "multi", "namespace": "demo", "labels": {"app": "multi"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "multi"}},
                "template": {
                    "metadata": {"labels": {"app": "multi"}},
                    "spec": {
                        "containers": [
                            {"name": "nginx", "image": "nginx:1"},
                            {"name": "busybox", "image": "busybox:1"},
                        ]
                    },
                },
            },
        },
    ),
    (
        # replicas is a pointer in Go: an explicit 0 is on the wire and must survive.
        "create-deployment-zero-replicas",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "zero", "namespace": "demo", "labels": {"app": "zero"}},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "zero"}},
                "template": {
                    "metadata": {"labels": {"app": "zero"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]},
                },
            },
        },
    ),
    (
        "create-configmap",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "demo"},
            "data": {"a": "1", "b": "two"},
        },
    ),
    (
        "create-configmap-from-file",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "bin", "namespace": "demo"},
            "data": {"k": "v"},
            "binaryData": {"blob": "AP8QYmlu"},  # b"\x00\xff\x10bin"
        },
    ),
    (
        "create-secret-generic",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sec", "namespace": "demo"},
            "data": {"pw": "czNjcjN0", "user": "YWRtaW4="},
        },
    ),
    (
        "create-secret-docker-registry",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "reg", "namespace": "demo"},
            "data": {
                ".dockerconfigjson": "eyJhdXRocyI6eyJyLmlvIjp7InVzZXJuYW1lIjoidSIsInBhc3N3b3Jk"
                "IjoicCIsImF1dGgiOiJkVHB3In19fQ=="
            },
            "type": "kubernetes.io/dockerconfigjson",
        },
    ),
    (
        "create-service-clusterip",
        service(
            "svc",
            {
                "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                "type": "ClusterIP",
            },
        ),
    ),
    (
        "create-service-nodeport",
        service(
            "np",
            {
                "ports": [
                    {
                        "name": "80-8080",
                        "protocol": "TCP",
                        "port": 80,
                        "targetPort": 8080,
                        "nodePort": 30080,
                    }
                ],
                "type": "NodePort",
            },
        ),
    ),
    (
        "create-service-loadbalancer",
        service(
            "lb",
            {
                "ports": [{"name": "443-8443", "protocol": "TCP", "port": 443, "targetPort": 8443}],
                "type": "LoadBalancer",
            },
        ),
    ),
    (
        "create-service-externalname",
        service("ext", {"type": "ExternalName", "externalName": "example.com"}),
    ),
    (
        "create-job",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "jb", "namespace": "demo"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "jb", "image": "busybox:1", "command": ["echo", "hi"]}
                        ],
                        "restartPolicy": "Never",
                    }
                }
            },
        },
    ),
    (
        "create-ingress",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "ing", "namespace": "demo"},
            "spec": {
                "rules": [
                    {
                        "host": "foo.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/bar",
                                    "pathType": "Exact",
                                    "backend": {"service": {"name": "svc", "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ]
            },
        },
    ),
]


@pytest.mark.parametrize(
    ("fixture", "expected"), KUBECTL_CASES, ids=[name for name, _ in KUBECTL_CASES]
)
def test_kubectl_bodies_decode_to_the_json_a_json_client_sends(
    fixture: str, expected: dict[str, Any]
) -> None:
    assert decode_object((BODIES / f"{fixture}.bin").read_bytes()) == expected


def test_every_fixture_has_a_case() -> None:
    assert {p.stem for p in BODIES.glob("*.bin")} == {name for name, _ in KUBECTL_CASES}


# --- hand-built messages -------------------------------------------------------------------------


def container(*fields: bytes) -> bytes:
    return ld(2, ld(1, "c") + ld(2, "img") + b"".join(fields))


def pod(*container_fields: bytes, spec: bytes = b"") -> bytes:
    return envelope("v1", "Pod", meta("p") + ld(2, container(*container_fields) + spec))


def only_container(body: bytes) -> dict[str, Any]:
    containers = decode_object(body)["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


HAND_BUILT_CONTAINER_CASES: list[tuple[str, bytes, dict[str, Any]]] = [
    (
        "quantities as strings",
        ld(8, entry(1, "cpu", ld(1, "500m")) + entry(2, "memory", ld(1, "64Mi"))),
        {"resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}}},
    ),
    (
        "env value and a secretKeyRef whose LocalObjectReference is inlined",
        ld(7, ld(1, "A") + ld(2, "1"))
        + ld(7, ld(1, "B") + ld(3, ld(4, ld(1, ld(1, "creds")) + ld(2, "pw") + vint(3, 0)))),
        {
            "env": [
                {"name": "A", "value": "1"},
                {
                    "name": "B",
                    "valueFrom": {
                        "secretKeyRef": {"name": "creds", "key": "pw", "optional": False}
                    },
                },
            ]
        },
    ),
    (
        "probe with a named IntOrString port and an inlined handler",
        ld(11, ld(1, ld(2, ld(1, "/healthz") + ld(2, vint(1, 1) + ld(3, "http")))) + vint(4, 5)),
        {"readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5}},
    ),
    (
        "pointer fields keep their zero values, plain ones drop them",
        ld(15, vint(4, 0) + vint(2, 0)) + vint(16, 0) + ld(5, ""),
        {"securityContext": {"runAsUser": 0, "privileged": False}},
    ),
    (
        "negative int64 in two's complement",
        ld(15, vint(4, -1)),
        {"securityContext": {"runAsUser": -1}},
    ),
]


@pytest.mark.parametrize(
    ("field", "expected"),
    [(field, expected) for _, field, expected in HAND_BUILT_CONTAINER_CASES],
    ids=[name for name, _, _ in HAND_BUILT_CONTAINER_CASES],
)
def test_hand_built_container_fields(field: bytes, expected: dict[str, Any]) -> None:
    assert only_container(pod(field)) == {"name": "c", "image": "img", **expected}


def test_volumes_keep_empty_sources_and_pod_fields() -> None:
    # Volume.volumeSource (2) is an embedded struct; emptyDir (2) and configMap (19) sit inside.
    empty_dir = ld(2, b"")
    config_map = ld(19, ld(1, ld(1, "settings")) + vint(3, 420))
    volumes = ld(1, ld(1, "scratch") + ld(2, empty_dir)) + ld(1, ld(1, "cfg") + ld(2, config_map))
    spec = decode_object(pod(spec=volumes + vint(21, 0) + vint(4, 30)))["spec"]
    assert spec["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}},
    ]
    assert spec["automountServiceAccountToken"] is False
    assert spec["terminationGracePeriodSeconds"] == 30


def test_rolling_update_keeps_a_zero_max_unavailable() -> None:
    rolling = ld(1, vint(2, 0)) + ld(2, vint(1, 1) + ld(3, "25%"))
    spec = ld(4, ld(1, "RollingUpdate") + ld(2, rolling))
    obj = decode_object(envelope("apps/v1", "Deployment", meta("d") + ld(2, spec)))
    assert obj["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"},
    }


def test_timestamps_are_rfc3339_and_zero_times_are_dropped() -> None:
    created = ld(8, vint(1, 1_700_000_000) + vint(2, 123_000_000))
    event_time = ld(10, vint(1, 1_700_000_000) + vint(2, 123_456_789))
    body = ld(1, ld(1, "e") + created + ld(9, b"")) + event_time + ld(6, b"")
    obj = decode_object(envelope("v1", "Event", body))
    assert obj["metadata"] == {"name": "e", "creationTimestamp": "2023-11-14T22:13:20Z"}
    assert obj["eventTime"] == "2023-11-14T22:13:20.123456Z"
    assert "firstTimestamp" not in obj


def test_packed_and_unpacked_repeated_ints() -> None:
    packed = ld(4, varint(1000) + varint(2000))
    unpacked = vint(4, 3000)
    spec = ld(14, packed + unpacked)
    obj = decode_object(pod(spec=spec))
    assert obj["spec"]["securityContext"] == {"supplementalGroups": [1000, 2000, 3000]}


def test_owner_references_and_managed_fields() -> None:
    owner = ld(13, ld(1, "ReplicaSet") + ld(3, "rs") + ld(4, "u-1") + ld(5, "apps/v1") + vint(6, 1))
    managed = ld(17, ld(1, "kubectl") + ld(2, "Update") + ld(7, ld(1, '{"f:data":{}}')))
    obj = decode_object(envelope("v1", "ConfigMap", ld(1, ld(1, "c") + owner + managed)))
    assert obj["metadata"]["ownerReferences"] == [
        {
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u-1",
            "apiVersion": "apps/v1",
            "controller": True,
        }
    ]
    assert obj["metadata"]["managedFields"] == [
        {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {}}}
    ]


def test_delete_options_under_any_group_version() -> None:
    body = vint(1, 0) + ld(4, "Foreground") + ld(2, ld(1, "u-1"))
    obj = decode_object(envelope("meta.k8s.io/v1", "DeleteOptions", body))
    assert obj == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u-1"},
    }


def test_unknown_fields_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    unknown = vint(99, 7) + ld(98, b"\x01\x02") + varint(97 << 3 | 5) + b"abcd"
    unknown += varint(96 << 3 | 1) + b"12345678"
    body = envelope("v1", "ConfigMap", meta("c") + unknown + entry(2, "a", "1"))
    with caplog.at_level(logging.DEBUG, logger="devcluster.protobuf"):
        obj = decode_object(body)
    assert obj["data"] == {"a": "1"}
    assert "ConfigMap.99" in caplog.text and "ConfigMap.96" in caplog.text


def test_a_later_occurrence_of_a_field_wins() -> None:
    obj = decode_object(envelope("v1", "ConfigMap", ld(1, ld(1, "first") + ld(1, "second"))))
    assert obj["metadata"] == {"name": "second"}


# --- bad input ------------------------------------------------------------------------------------

MALFORMED_CASES: list[tuple[str, bytes, str]] = [
    ("no magic", b'{"kind":"Namespace"}', "magic"),
    ("empty envelope", MAGIC, "no kind"),
    ("truncated varint", MAGIC + b"\x0a\xff", "truncated varint"),
    ("length past the end", MAGIC + b"\x0a\x7f\x00", "past the end"),
    ("group wire type", MAGIC + b"\x0b", "wire type 3"),
    ("field number zero", MAGIC + b"\x00\x00", "field number 0"),
    ("string sent as varint", envelope("v1", "Namespace", ld(1, vint(1, 5))), "wire type 0"),
    ("invalid UTF-8", envelope("v1", "Namespace", ld(1, ld(1, b"\xff\xfe"))), "UTF-8"),
    ("overlong varint", MAGIC + b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
    (
        "timestamp out of range",
        envelope("v1", "Namespace", ld(1, ld(8, vint(1, 1 << 62)))),
        "out of range",
    ),
    (
        "negative nanos",
        envelope("v1", "Event", ld(10, vint(1, 1) + vint(2, -5))),
        "nanos -5 out of range",
    ),
    (
        "fieldsV1 that is not JSON",
        envelope("v1", "Namespace", ld(1, ld(17, ld(7, ld(1, "{not json"))))),
        "does not hold JSON",
    ),
]


@pytest.mark.parametrize(
    ("body", "message"),
    [(body, message) for _, body, message in MALFORMED_CASES],
    ids=[name for name, _, _ in MALFORMED_CASES],
)
def test_malformed_bodies_are_a_400(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_object(body)
    with pytest.raises(ApiError) as caught:
        decode_request_body(body)
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"
    assert "not valid protobuf" in caught.value.message and message in caught.value.message


UNSUPPORTED_CASES: list[tuple[str, bytes]] = [
    ("unknown kind", envelope("rbac.authorization.k8s.io/v1", "Role", meta("r"))),
    ("known kind in another group version", envelope("apps/v1beta1", "Deployment", meta("d"))),
    ("compressed raw", envelope("v1", "Namespace", meta("n"), ld(3, "gzip"))),
    ("JSON raw", envelope("v1", "Namespace", b"{}", ld(4, "application/json"))),
]


@pytest.mark.parametrize(
    "body", [body for _, body in UNSUPPORTED_CASES], ids=[name for name, _ in UNSUPPORTED_CASES]
)
def test_unsupported_envelopes_are_a_415(body: bytes) -> None:
    with pytest.raises(UnsupportedKind):
        decode_object(body)
    with pytest.raises(ApiError) as caught:
        decode_request_body(body)
    assert caught.value.code == 415 and caught.value.reason == "UnsupportedMediaType"


def test_an_empty_body_is_no_body() -> None:
    assert decode_request_body(b"") is None


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(tail: bytes) -> None:
    for body in (MAGIC + tail, envelope("apps/v1", "Deployment", tail)):
        try:
            decode_request_body(body)
        except ApiError as exc:
            assert exc.code in (400, 415)


@settings(deadline=None)  # what is tested is that nothing crashes; a loaded machine is slow
@given(st.lists(st.sampled_from(sorted(p.stem for p in BODIES.glob("*.bin")))), st.data())
def test_corrupted_kubectl_bodies_never_crash(names: list[str], data: st.DataObject) -> None:
    for name in names:
        body = bytearray((BODIES / f"{name}.bin").read_bytes())
        index = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
        body[index] = data.draw(st.integers(min_value=0, max_value=255))
        cut = data.draw(st.integers(min_value=0, max_value=len(body)))
        try:
            decode_request_body(bytes(body[:cut]))
        except ApiError as exc:
            assert exc.code in (400, 415)
