"""Kubernetes protobuf request bodies, turned into the JSON a JSON client would have sent.

kubectl sends built-in types as ``application/vnd.kubernetes.protobuf`` (``kubectl create
namespace|deployment|service|configmap|secret|job|ingress``) and does not fall back to JSON when
the server answers 415. The devcluster's store speaks JSON only, so this module decodes the
protobuf envelope and the typed object inside it; responses stay JSON, which kubectl accepts.

The wire format: the 4-byte magic ``k8s\\0``, then a ``runtime.Unknown`` message (typeMeta
{apiVersion, kind}, raw, contentEncoding, contentType) whose ``raw`` is the object encoded with
the field numbers of k8s.io/api's ``generated.proto``. The tables below hold those numbers for the
types the devcluster serves and the messages they nest; an unknown field number is skipped (and
logged at debug), so a newer client loses only that field.

Go's protobuf encoder writes every non-pointer field, zero or not, while its JSON encoder leaves
zero values out (``omitempty``). To produce the same JSON, zero scalars and empty messages are
dropped unless the Go field is a pointer (``Field.keep_zero``), where presence on the wire means
the client set it: ``replicas: 0`` and ``maxUnavailable: 0`` survive, ``clusterIP: ""`` does not.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from devcluster import errors
from devcluster.errors import ApiError, JSONDict

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# Wire types (the low three bits of a field key).
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class DecodeError(ValueError):
    """The body is not a well-formed Kubernetes protobuf message."""


class UnsupportedKind(ValueError):
    """The envelope is well formed but holds a kind this module has no table for."""


class FieldKind(Enum):
    STRING = "string"
    BYTES = "bytes"  # base64 in JSON, as Go's []byte
    INT = "int"  # int32/int64 varint, two's complement
    BOOL = "bool"
    MESSAGE = "message"
    MAP = "map"  # repeated {1: key, 2: value} entries


@dataclass(frozen=True, slots=True)
class Field:
    """One protobuf field: its JSON name, how to decode it, and how Go would marshal it."""

    name: str
    kind: FieldKind
    message: str | None = None  # MESSAGE: the nested message; MAP: the value's message, if any
    value: FieldKind = FieldKind.STRING  # MAP: the value's kind
    repeated: bool = False
    # A Go pointer (or a field Go's JSON encoder always writes): zero values are kept.
    keep_zero: bool = False
    # An embedded Go struct: its fields are lifted into the parent JSON object.
    inline: bool = False


def _s(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, FieldKind.STRING, keep_zero=keep_zero)


def _i(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, FieldKind.INT, keep_zero=keep_zero)


def _b(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, FieldKind.BOOL, keep_zero=keep_zero)


def _m(name: str, message: str, *, keep_zero: bool = False) -> Field:
    return Field(name, FieldKind.MESSAGE, message=message, keep_zero=keep_zero)


def _inline(message: str) -> Field:
    return Field("", FieldKind.MESSAGE, message=message, inline=True)


def _rs(name: str) -> Field:
    return Field(name, FieldKind.STRING, repeated=True)


def _ri(name: str) -> Field:
    return Field(name, FieldKind.INT, repeated=True)


def _rm(name: str, message: str) -> Field:
    return Field(name, FieldKind.MESSAGE, message=message, repeated=True)


def _map(name: str, value: FieldKind = FieldKind.STRING, message: str | None = None) -> Field:
    return Field(name, FieldKind.MAP, value=value, message=message)


def _quantities(name: str) -> Field:
    return _map(name, FieldKind.MESSAGE, "Quantity")


# Messages whose JSON form is not an object: see _special().
_SPECIAL = frozenset({"Quantity", "IntOrString", "Time", "MicroTime", "RawExtension", "FieldsV1"})

# Field tables from k8s.io/api and k8s.io/apimachinery generated.proto, keyed by message name.
# Only the numbers, names and Go pointer-ness matter here; nothing else of the schema is checked.
MESSAGES: dict[str, dict[int, Field]] = {
    # --- k8s.io/apimachinery -----------------------------------------------------------------
    "TypeMeta": {1: _s("apiVersion"), 2: _s("kind")},
    "ObjectMeta": {
        1: _s("name"),
        2: _s("generateName"),
        3: _s("namespace"),
        4: _s("selfLink"),
        5: _s("uid"),
        6: _s("resourceVersion"),
        7: _i("generation"),
        8: _m("creationTimestamp", "Time"),
        9: _m("deletionTimestamp", "Time"),
        10: _i("deletionGracePeriodSeconds", keep_zero=True),
        11: _map("labels"),
        12: _map("annotations"),
        13: _rm("ownerReferences", "OwnerReference"),
        14: _rs("finalizers"),
        17: _rm("managedFields", "ManagedFieldsEntry"),
    },
    "OwnerReference": {
        1: _s("kind"),
        3: _s("name"),
        4: _s("uid"),
        5: _s("apiVersion"),
        6: _b("controller", keep_zero=True),
        7: _b("blockOwnerDeletion", keep_zero=True),
    },
    "ManagedFieldsEntry": {
        1: _s("manager"),
        2: _s("operation"),
        3: _s("apiVersion"),
        4: _m("time", "Time"),
        6: _s("fieldsType"),
        7: _m("fieldsV1", "FieldsV1"),
        8: _s("subresource"),
    },
    "LabelSelector": {
        1: _map("matchLabels"),
        2: _rm("matchExpressions", "LabelSelectorRequirement"),
    },
    "LabelSelectorRequirement": {1: _s("key"), 2: _s("operator"), 3: _rs("values")},
    "Condition": {
        1: _s("type"),
        2: _s("status"),
        3: _i("observedGeneration"),
        4: _m("lastTransitionTime", "Time"),
        5: _s("reason"),
        6: _s("message"),
    },
    "DeleteOptions": {
        1: _i("gracePeriodSeconds", keep_zero=True),
        2: _m("preconditions", "Preconditions", keep_zero=True),
        3: _b("orphanDependents", keep_zero=True),
        4: _s("propagationPolicy", keep_zero=True),
        5: _rs("dryRun"),
        6: _b("ignoreStoreReadErrorWithClusterBreakingPotential", keep_zero=True),
    },
    "Preconditions": {
        1: _s("uid", keep_zero=True),
        2: _s("resourceVersion", keep_zero=True),
    },
    # --- core/v1: the served objects ----------------------------------------------------------
    "Namespace": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "NamespaceSpec"),
        3: _m("status", "NamespaceStatus"),
    },
    "NamespaceSpec": {1: _rs("finalizers")},
    "NamespaceStatus": {1: _s("phase"), 2: _rm("conditions", "NamespaceCondition")},
    "NamespaceCondition": {
        1: _s("type"),
        2: _s("status"),
        4: _m("lastTransitionTime", "Time"),
        5: _s("reason"),
        6: _s("message"),
    },
    "PodTemplate": {1: _m("metadata", "ObjectMeta"), 2: _m("template", "PodTemplateSpec")},
    "ConfigMap": {
        1: _m("metadata", "ObjectMeta"),
        2: _map("data"),
        3: _map("binaryData", FieldKind.BYTES),
        4: _b("immutable", keep_zero=True),
    },
    "Secret": {
        1: _m("metadata", "ObjectMeta"),
        2: _map("data", FieldKind.BYTES),
        3: _s("type"),
        4: _map("stringData"),
        5: _b("immutable", keep_zero=True),
    },
    "Service": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "ServiceSpec"),
        3: _m("status", "ServiceStatus"),
    },
    "ServiceSpec": {
        1: _rm("ports", "ServicePort"),
        2: _map("selector"),
        3: _s("clusterIP"),
        4: _s("type"),
        5: _rs("externalIPs"),
        7: _s("sessionAffinity"),
        8: _s("loadBalancerIP"),
        9: _rs("loadBalancerSourceRanges"),
        10: _s("externalName"),
        11: _s("externalTrafficPolicy"),
        12: _i("healthCheckNodePort"),
        13: _b("publishNotReadyAddresses"),
        14: _m("sessionAffinityConfig", "SessionAffinityConfig", keep_zero=True),
        17: _s("ipFamilyPolicy", keep_zero=True),
        18: _rs("clusterIPs"),
        19: _rs("ipFamilies"),
        20: _b("allocateLoadBalancerNodePorts", keep_zero=True),
        21: _s("loadBalancerClass", keep_zero=True),
        22: _s("internalTrafficPolicy", keep_zero=True),
        23: _s("trafficDistribution", keep_zero=True),
    },
    "ServicePort": {
        1: _s("name"),
        2: _s("protocol"),
        3: _i("port"),
        4: _m("targetPort", "IntOrString"),
        5: _i("nodePort"),
        6: _s("appProtocol", keep_zero=True),
    },
    "SessionAffinityConfig": {1: _m("clientIP", "ClientIPConfig", keep_zero=True)},
    "ClientIPConfig": {1: _i("timeoutSeconds", keep_zero=True)},
    "ServiceStatus": {
        1: _m("loadBalancer", "LoadBalancerStatus"),
        2: _rm("conditions", "Condition"),
    },
    "LoadBalancerStatus": {1: _rm("ingress", "LoadBalancerIngress")},
    "LoadBalancerIngress": {
        1: _s("ip"),
        2: _s("hostname"),
        3: _s("ipMode", keep_zero=True),
        4: _rm("ports", "PortStatus"),
    },
    "PortStatus": {1: _i("port"), 2: _s("protocol"), 3: _s("error", keep_zero=True)},
    "Pod": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "PodSpec"),
        3: _m("status", "PodStatus"),
    },
    "PodStatus": {
        1: _s("phase"),
        3: _s("message"),
        4: _s("reason"),
        5: _s("hostIP"),
        6: _s("podIP"),
        7: _m("startTime", "Time", keep_zero=True),
        9: _s("qosClass"),
        11: _s("nominatedNodeName"),
    },
    "Event": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("involvedObject", "ObjectReference"),
        3: _s("reason"),
        4: _s("message"),
        5: _m("source", "EventSource"),
        6: _m("firstTimestamp", "Time"),
        7: _m("lastTimestamp", "Time"),
        8: _i("count"),
        9: _s("type"),
        10: _m("eventTime", "MicroTime"),
        12: _s("action"),
        13: _m("related", "ObjectReference", keep_zero=True),
        14: _s("reportingComponent"),
        15: _s("reportingInstance"),
    },
    "EventSource": {1: _s("component"), 2: _s("host")},
    "ObjectReference": {
        1: _s("kind"),
        2: _s("namespace"),
        3: _s("name"),
        4: _s("uid"),
        5: _s("apiVersion"),
        6: _s("resourceVersion"),
        7: _s("fieldPath"),
    },
    # --- core/v1: pod templates ---------------------------------------------------------------
    "PodTemplateSpec": {1: _m("metadata", "ObjectMeta"), 2: _m("spec", "PodSpec")},
    "PodSpec": {
        1: _rm("volumes", "Volume"),
        2: _rm("containers", "Container"),
        3: _s("restartPolicy"),
        4: _i("terminationGracePeriodSeconds", keep_zero=True),
        5: _i("activeDeadlineSeconds", keep_zero=True),
        6: _s("dnsPolicy"),
        7: _map("nodeSelector"),
        8: _s("serviceAccountName"),
        9: _s("serviceAccount"),
        10: _s("nodeName"),
        11: _b("hostNetwork"),
        12: _b("hostPID"),
        13: _b("hostIPC"),
        14: _m("securityContext", "PodSecurityContext", keep_zero=True),
        15: _rm("imagePullSecrets", "LocalObjectReference"),
        16: _s("hostname"),
        17: _s("subdomain"),
        19: _s("schedulerName"),
        20: _rm("initContainers", "Container"),
        21: _b("automountServiceAccountToken", keep_zero=True),
        22: _rm("tolerations", "Toleration"),
        23: _rm("hostAliases", "HostAlias"),
        24: _s("priorityClassName"),
        25: _i("priority", keep_zero=True),
        27: _b("shareProcessNamespace", keep_zero=True),
        29: _s("runtimeClassName", keep_zero=True),
        30: _b("enableServiceLinks", keep_zero=True),
        31: _s("preemptionPolicy", keep_zero=True),
        32: _quantities("overhead"),
        35: _b("setHostnameAsFQDN", keep_zero=True),
        37: _b("hostUsers", keep_zero=True),
    },
    "Container": {
        1: _s("name"),
        2: _s("image"),
        3: _rs("command"),
        4: _rs("args"),
        5: _s("workingDir"),
        6: _rm("ports", "ContainerPort"),
        7: _rm("env", "EnvVar"),
        8: _m("resources", "ResourceRequirements"),
        9: _rm("volumeMounts", "VolumeMount"),
        10: _m("livenessProbe", "Probe", keep_zero=True),
        11: _m("readinessProbe", "Probe", keep_zero=True),
        12: _m("lifecycle", "Lifecycle", keep_zero=True),
        13: _s("terminationMessagePath"),
        14: _s("imagePullPolicy"),
        15: _m("securityContext", "SecurityContext", keep_zero=True),
        16: _b("stdin"),
        17: _b("stdinOnce"),
        18: _b("tty"),
        19: _rm("envFrom", "EnvFromSource"),
        20: _s("terminationMessagePolicy"),
        22: _m("startupProbe", "Probe", keep_zero=True),
        24: _s("restartPolicy", keep_zero=True),
    },
    "ContainerPort": {
        1: _s("name"),
        2: _i("hostPort"),
        3: _i("containerPort", keep_zero=True),  # not omitempty in Go's JSON
        4: _s("protocol"),
        5: _s("hostIP"),
    },
    "EnvVar": {1: _s("name"), 2: _s("value"), 3: _m("valueFrom", "EnvVarSource", keep_zero=True)},
    "EnvVarSource": {
        1: _m("fieldRef", "ObjectFieldSelector", keep_zero=True),
        2: _m("resourceFieldRef", "ResourceFieldSelector", keep_zero=True),
        3: _m("configMapKeyRef", "ConfigMapKeySelector", keep_zero=True),
        4: _m("secretKeyRef", "SecretKeySelector", keep_zero=True),
    },
    "EnvFromSource": {
        1: _s("prefix"),
        2: _m("configMapRef", "ConfigMapEnvSource", keep_zero=True),
        3: _m("secretRef", "SecretEnvSource", keep_zero=True),
    },
    "ObjectFieldSelector": {1: _s("apiVersion"), 2: _s("fieldPath")},
    "ResourceFieldSelector": {
        1: _s("containerName"),
        2: _s("resource"),
        3: _m("divisor", "Quantity"),
    },
    "LocalObjectReference": {1: _s("name")},
    "ConfigMapKeySelector": {
        1: _inline("LocalObjectReference"),
        2: _s("key"),
        3: _b("optional", keep_zero=True),
    },
    "SecretKeySelector": {
        1: _inline("LocalObjectReference"),
        2: _s("key"),
        3: _b("optional", keep_zero=True),
    },
    "ConfigMapEnvSource": {1: _inline("LocalObjectReference"), 2: _b("optional", keep_zero=True)},
    "SecretEnvSource": {1: _inline("LocalObjectReference"), 2: _b("optional", keep_zero=True)},
    "ResourceRequirements": {
        1: _quantities("limits"),
        2: _quantities("requests"),
        3: _rm("claims", "ResourceClaim"),
    },
    "ResourceClaim": {1: _s("name"), 2: _s("request")},
    "VolumeMount": {
        1: _s("name"),
        2: _b("readOnly"),
        3: _s("mountPath"),
        4: _s("subPath"),
        5: _s("mountPropagation", keep_zero=True),
        6: _s("subPathExpr"),
        7: _s("recursiveReadOnly", keep_zero=True),
    },
    "Volume": {1: _s("name"), 2: _inline("VolumeSource")},
    "VolumeSource": {
        1: _m("hostPath", "HostPathVolumeSource", keep_zero=True),
        2: _m("emptyDir", "EmptyDirVolumeSource", keep_zero=True),
        6: _m("secret", "SecretVolumeSource", keep_zero=True),
        10: _m("persistentVolumeClaim", "PersistentVolumeClaimVolumeSource", keep_zero=True),
        16: _m("downwardAPI", "DownwardAPIVolumeSource", keep_zero=True),
        19: _m("configMap", "ConfigMapVolumeSource", keep_zero=True),
        26: _m("projected", "ProjectedVolumeSource", keep_zero=True),
    },
    "HostPathVolumeSource": {1: _s("path"), 2: _s("type", keep_zero=True)},
    "EmptyDirVolumeSource": {1: _s("medium"), 2: _m("sizeLimit", "Quantity", keep_zero=True)},
    "SecretVolumeSource": {
        1: _s("secretName"),
        2: _rm("items", "KeyToPath"),
        3: _i("defaultMode", keep_zero=True),
        4: _b("optional", keep_zero=True),
    },
    "ConfigMapVolumeSource": {
        1: _inline("LocalObjectReference"),
        2: _rm("items", "KeyToPath"),
        3: _i("defaultMode", keep_zero=True),
        4: _b("optional", keep_zero=True),
    },
    "PersistentVolumeClaimVolumeSource": {1: _s("claimName"), 2: _b("readOnly")},
    "DownwardAPIVolumeSource": {
        1: _rm("items", "DownwardAPIVolumeFile"),
        2: _i("defaultMode", keep_zero=True),
    },
    "DownwardAPIVolumeFile": {
        1: _s("path"),
        2: _m("fieldRef", "ObjectFieldSelector", keep_zero=True),
        3: _m("resourceFieldRef", "ResourceFieldSelector", keep_zero=True),
        4: _i("mode", keep_zero=True),
    },
    "ProjectedVolumeSource": {
        1: _rm("sources", "VolumeProjection"),
        2: _i("defaultMode", keep_zero=True),
    },
    "VolumeProjection": {
        1: _m("secret", "SecretProjection", keep_zero=True),
        2: _m("downwardAPI", "DownwardAPIProjection", keep_zero=True),
        3: _m("configMap", "ConfigMapProjection", keep_zero=True),
        4: _m("serviceAccountToken", "ServiceAccountTokenProjection", keep_zero=True),
    },
    "SecretProjection": {
        1: _inline("LocalObjectReference"),
        2: _rm("items", "KeyToPath"),
        4: _b("optional", keep_zero=True),
    },
    "ConfigMapProjection": {
        1: _inline("LocalObjectReference"),
        2: _rm("items", "KeyToPath"),
        4: _b("optional", keep_zero=True),
    },
    "DownwardAPIProjection": {1: _rm("items", "DownwardAPIVolumeFile")},
    "ServiceAccountTokenProjection": {
        1: _s("audience"),
        2: _i("expirationSeconds", keep_zero=True),
        3: _s("path"),
    },
    "KeyToPath": {1: _s("key"), 2: _s("path"), 3: _i("mode", keep_zero=True)},
    "Probe": {
        1: _inline("ProbeHandler"),
        2: _i("initialDelaySeconds"),
        3: _i("timeoutSeconds"),
        4: _i("periodSeconds"),
        5: _i("successThreshold"),
        6: _i("failureThreshold"),
        7: _i("terminationGracePeriodSeconds", keep_zero=True),
    },
    "ProbeHandler": {
        1: _m("exec", "ExecAction", keep_zero=True),
        2: _m("httpGet", "HTTPGetAction", keep_zero=True),
        3: _m("tcpSocket", "TCPSocketAction", keep_zero=True),
        4: _m("grpc", "GRPCAction", keep_zero=True),
    },
    "Lifecycle": {
        1: _m("postStart", "LifecycleHandler", keep_zero=True),
        2: _m("preStop", "LifecycleHandler", keep_zero=True),
        3: _s("stopSignal", keep_zero=True),
    },
    "LifecycleHandler": {
        1: _m("exec", "ExecAction", keep_zero=True),
        2: _m("httpGet", "HTTPGetAction", keep_zero=True),
        3: _m("tcpSocket", "TCPSocketAction", keep_zero=True),
        4: _m("sleep", "SleepAction", keep_zero=True),
    },
    "ExecAction": {1: _rs("command")},
    "HTTPGetAction": {
        1: _s("path"),
        2: _m("port", "IntOrString", keep_zero=True),
        3: _s("host"),
        4: _s("scheme"),
        5: _rm("httpHeaders", "HTTPHeader"),
    },
    "HTTPHeader": {1: _s("name"), 2: _s("value", keep_zero=True)},
    "TCPSocketAction": {1: _m("port", "IntOrString", keep_zero=True), 2: _s("host")},
    "GRPCAction": {1: _i("port", keep_zero=True), 2: _s("service", keep_zero=True)},
    "SleepAction": {1: _i("seconds", keep_zero=True)},
    "SecurityContext": {
        1: _m("capabilities", "Capabilities", keep_zero=True),
        2: _b("privileged", keep_zero=True),
        3: _m("seLinuxOptions", "SELinuxOptions", keep_zero=True),
        4: _i("runAsUser", keep_zero=True),
        5: _b("runAsNonRoot", keep_zero=True),
        6: _b("readOnlyRootFilesystem", keep_zero=True),
        7: _b("allowPrivilegeEscalation", keep_zero=True),
        8: _i("runAsGroup", keep_zero=True),
        9: _s("procMount", keep_zero=True),
        11: _m("seccompProfile", "SeccompProfile", keep_zero=True),
    },
    "PodSecurityContext": {
        1: _m("seLinuxOptions", "SELinuxOptions", keep_zero=True),
        2: _i("runAsUser", keep_zero=True),
        3: _b("runAsNonRoot", keep_zero=True),
        4: _ri("supplementalGroups"),
        5: _i("fsGroup", keep_zero=True),
        6: _i("runAsGroup", keep_zero=True),
        7: _rm("sysctls", "Sysctl"),
        9: _s("fsGroupChangePolicy", keep_zero=True),
        10: _m("seccompProfile", "SeccompProfile", keep_zero=True),
    },
    "Capabilities": {1: _rs("add"), 2: _rs("drop")},
    "SELinuxOptions": {1: _s("user"), 2: _s("role"), 3: _s("type"), 4: _s("level")},
    "SeccompProfile": {1: _s("type"), 2: _s("localhostProfile", keep_zero=True)},
    "Sysctl": {1: _s("name"), 2: _s("value")},
    "Toleration": {
        1: _s("key"),
        2: _s("operator"),
        3: _s("value"),
        4: _s("effect"),
        5: _i("tolerationSeconds", keep_zero=True),
    },
    "HostAlias": {1: _s("ip"), 2: _rs("hostnames")},
    # --- apps/v1 ------------------------------------------------------------------------------
    "Deployment": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "DeploymentSpec"),
        3: _m("status", "DeploymentStatus"),
    },
    "DeploymentSpec": {
        1: _i("replicas", keep_zero=True),
        2: _m("selector", "LabelSelector", keep_zero=True),
        3: _m("template", "PodTemplateSpec"),
        4: _m("strategy", "DeploymentStrategy"),
        5: _i("minReadySeconds"),
        6: _i("revisionHistoryLimit", keep_zero=True),
        7: _b("paused"),
        9: _i("progressDeadlineSeconds", keep_zero=True),
    },
    "DeploymentStrategy": {
        1: _s("type"),
        2: _m("rollingUpdate", "RollingUpdateDeployment", keep_zero=True),
    },
    "RollingUpdateDeployment": {
        1: _m("maxUnavailable", "IntOrString", keep_zero=True),
        2: _m("maxSurge", "IntOrString", keep_zero=True),
    },
    "DeploymentStatus": {
        1: _i("observedGeneration"),
        2: _i("replicas"),
        3: _i("updatedReplicas"),
        4: _i("availableReplicas"),
        5: _i("unavailableReplicas"),
        7: _i("readyReplicas"),
        8: _i("collisionCount", keep_zero=True),
        9: _i("terminatingReplicas", keep_zero=True),
    },
    "ReplicaSet": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "ReplicaSetSpec"),
        3: _m("status", "ReplicaSetStatus"),
    },
    "ReplicaSetSpec": {
        1: _i("replicas", keep_zero=True),
        2: _m("selector", "LabelSelector", keep_zero=True),
        3: _m("template", "PodTemplateSpec"),
        4: _i("minReadySeconds"),
    },
    "ReplicaSetStatus": {
        1: _i("replicas", keep_zero=True),  # not omitempty in Go's JSON
        2: _i("fullyLabeledReplicas"),
        3: _i("observedGeneration"),
        4: _i("readyReplicas"),
        5: _i("availableReplicas"),
        7: _i("terminatingReplicas", keep_zero=True),
    },
    # --- batch/v1 -----------------------------------------------------------------------------
    "Job": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "JobSpec"),
        3: _m("status", "JobStatus"),
    },
    "JobSpec": {
        1: _i("parallelism", keep_zero=True),
        2: _i("completions", keep_zero=True),
        3: _i("activeDeadlineSeconds", keep_zero=True),
        4: _m("selector", "LabelSelector", keep_zero=True),
        5: _b("manualSelector", keep_zero=True),
        6: _m("template", "PodTemplateSpec"),
        7: _i("backoffLimit", keep_zero=True),
        8: _i("ttlSecondsAfterFinished", keep_zero=True),
        9: _s("completionMode", keep_zero=True),
        10: _b("suspend", keep_zero=True),
        12: _i("backoffLimitPerIndex", keep_zero=True),
        13: _i("maxFailedIndexes", keep_zero=True),
        14: _s("podReplacementPolicy", keep_zero=True),
        16: _s("managedBy", keep_zero=True),
    },
    "JobStatus": {
        1: _rm("conditions", "JobCondition"),
        2: _m("startTime", "Time", keep_zero=True),
        3: _m("completionTime", "Time", keep_zero=True),
        4: _i("active"),
        5: _i("succeeded"),
        6: _i("failed"),
        7: _s("completedIndexes"),
        9: _i("ready", keep_zero=True),
        11: _i("terminating", keep_zero=True),
    },
    "JobCondition": {
        1: _s("type"),
        2: _s("status"),
        3: _m("lastProbeTime", "Time"),
        4: _m("lastTransitionTime", "Time"),
        5: _s("reason"),
        6: _s("message"),
    },
    # --- networking.k8s.io/v1 -----------------------------------------------------------------
    "Ingress": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "IngressSpec"),
        3: _m("status", "IngressStatus"),
    },
    "IngressSpec": {
        1: _m("defaultBackend", "IngressBackend", keep_zero=True),
        2: _rm("tls", "IngressTLS"),
        3: _rm("rules", "IngressRule"),
        4: _s("ingressClassName", keep_zero=True),
    },
    "IngressTLS": {1: _rs("hosts"), 2: _s("secretName")},
    "IngressRule": {1: _s("host"), 2: _inline("IngressRuleValue")},
    "IngressRuleValue": {1: _m("http", "HTTPIngressRuleValue", keep_zero=True)},
    "HTTPIngressRuleValue": {1: _rm("paths", "HTTPIngressPath")},
    "HTTPIngressPath": {
        1: _s("path"),
        2: _m("backend", "IngressBackend", keep_zero=True),  # not omitempty in Go's JSON
        3: _s("pathType", keep_zero=True),
    },
    "IngressBackend": {
        3: _m("resource", "TypedLocalObjectReference", keep_zero=True),
        4: _m("service", "IngressServiceBackend", keep_zero=True),
    },
    "IngressServiceBackend": {1: _s("name"), 2: _m("port", "ServiceBackendPort")},
    "ServiceBackendPort": {1: _s("name"), 2: _i("number")},
    "TypedLocalObjectReference": {
        1: _s("apiGroup", keep_zero=True),
        2: _s("kind"),
        3: _s("name"),
    },
    "IngressStatus": {1: _m("loadBalancer", "IngressLoadBalancerStatus")},
    "IngressLoadBalancerStatus": {1: _rm("ingress", "IngressLoadBalancerIngress")},
    "IngressLoadBalancerIngress": {
        1: _s("ip"),
        2: _s("hostname"),
        4: _rm("ports", "IngressPortStatus"),
    },
    "IngressPortStatus": {1: _i("port"), 2: _s("protocol"), 3: _s("error", keep_zero=True)},
    # --- autoscaling/v1 -----------------------------------------------------------------------
    "Scale": {
        1: _m("metadata", "ObjectMeta"),
        2: _m("spec", "ScaleSpec"),
        3: _m("status", "ScaleStatus"),
    },
    "ScaleSpec": {1: _i("replicas")},
    "ScaleStatus": {1: _i("replicas", keep_zero=True), 2: _s("selector")},
}

# (apiVersion, kind) of a body -> its message. DeleteOptions may come under any group version.
ROOTS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "PodTemplate"): "PodTemplate",
    ("v1", "Secret"): "Secret",
    ("v1", "Service"): "Service",
    ("v1", "Pod"): "Pod",
    ("v1", "Event"): "Event",
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("batch/v1", "Job"): "Job",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
    ("autoscaling/v1", "Scale"): "Scale",
}


# --- the wire format ----------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise DecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint longer than 10 bytes")


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, value) for each field of one message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise DecodeError(f"field {number} runs past the end of its message")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (_I64, _I32):
            size = 8 if wire == _I64 else 4
            if pos + size > len(data):
                raise DecodeError(f"field {number} runs past the end of its message")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        else:
            raise DecodeError(f"unsupported wire type {wire} for field {number}")
        yield number, wire, value


def _signed(value: int) -> int:
    """Go's int32/int64 varints are two's complement in 64 bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: bytes, where: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise DecodeError(f"{where} is not valid UTF-8") from None


def _expect(wire: int, want: int, where: str) -> None:
    if wire != want:
        raise DecodeError(f"{where} has wire type {wire}, expected {want}")


def _scalar(kind: FieldKind, wire: int, value: int | bytes, where: str) -> Any:
    if kind is FieldKind.INT:
        _expect(wire, _VARINT, where)
        assert isinstance(value, int)
        return _signed(value)
    if kind is FieldKind.BOOL:
        _expect(wire, _VARINT, where)
        return bool(value)
    _expect(wire, _LEN, where)
    assert isinstance(value, bytes)
    if kind is FieldKind.BYTES:
        return base64.b64encode(value).decode()
    return _text(value, where)


def _is_zero(value: Any) -> bool:
    # A tuple, not a set: decoded messages are dicts, which are unhashable. False == 0.
    return value in (None, "", 0) or value == {}


def _time(data: bytes, *, micro: bool) -> str | None:
    seconds = nanos = 0
    for number, wire, value in _fields(data):
        if number in (1, 2):
            _expect(wire, _VARINT, "Time")
            assert isinstance(value, int)
            if number == 1:
                seconds = _signed(value)
            else:
                nanos = _signed(value)
    if seconds == 0 and nanos == 0:
        return None  # Go's zero time: null in JSON
    if not 0 <= nanos < 1_000_000_000:
        raise DecodeError(f"timestamp nanos {nanos} out of range")
    try:
        when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    except OverflowError:
        raise DecodeError(f"timestamp {seconds} out of range") from None
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if micro:
        text += f".{nanos // 1000:06d}"
    return text + "Z"


def _int_or_string(data: bytes) -> int | str:
    kind = int_val = 0
    str_val = ""
    for number, wire, value in _fields(data):
        if number == 1:
            kind = _scalar(FieldKind.INT, wire, value, "IntOrString.type")
        elif number == 2:
            int_val = _scalar(FieldKind.INT, wire, value, "IntOrString.intVal")
        elif number == 3:
            str_val = _scalar(FieldKind.STRING, wire, value, "IntOrString.strVal")
    return str_val if kind == 1 else int_val


def _raw_json(data: bytes, where: str) -> Any:
    raw = b""
    for number, wire, value in _fields(data):
        if number == 1:
            _expect(wire, _LEN, where)
            assert isinstance(value, bytes)
            raw = value
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise DecodeError(f"{where} does not hold JSON") from None


def _special(message: str, data: bytes) -> Any:
    if message == "Quantity":
        text = ""
        for number, wire, value in _fields(data):
            if number == 1:
                text = _scalar(FieldKind.STRING, wire, value, "Quantity.string")
        return text or None
    if message == "IntOrString":
        return _int_or_string(data)
    if message in ("Time", "MicroTime"):
        return _time(data, micro=message == "MicroTime")
    return _raw_json(data, message)


def _decode_value(message: str | None, data: bytes) -> Any:
    assert message is not None, "a MESSAGE field or message-valued MAP names its message"
    if message in _SPECIAL:
        return _special(message, data)
    return decode_message(message, data)


def _map_entry(field: Field, data: bytes, where: str) -> tuple[str, Any]:
    key = ""
    entry_value: Any = None
    for number, wire, value in _fields(data):
        if number == 1:
            key = _scalar(FieldKind.STRING, wire, value, f"{where} key")
        elif number == 2:
            if field.value is FieldKind.MESSAGE:
                _expect(wire, _LEN, f"{where}[{key}]")
                assert isinstance(value, bytes)
                entry_value = _decode_value(field.message, value)
            else:
                entry_value = _scalar(field.value, wire, value, f"{where}[{key}]")
    if entry_value is None:  # an entry without a value: the zero value, as Go decodes it
        entry_value = {FieldKind.INT: 0, FieldKind.BOOL: False}.get(field.value, "")
    return key, entry_value


def decode_message(message: str, data: bytes) -> JSONDict:
    """Decode one message into its JSON object, dropping zero values as Go's JSON would.

    The tables have no cycles, so recursion depth is bounded by the deepest type (no guard).
    """
    table = MESSAGES[message]
    out: JSONDict = {}
    for number, wire, value in _fields(data):
        field = table.get(number)
        if field is None:
            log.debug("devcluster: skipping unknown protobuf field %s.%d", message, number)
            continue
        where = f"{message}.{field.name or field.message}"
        if field.kind is FieldKind.MAP:
            _expect(wire, _LEN, where)
            assert isinstance(value, bytes)
            key, entry = _map_entry(field, value, where)
            out.setdefault(field.name, {})[key] = entry
            continue
        if field.kind is FieldKind.MESSAGE:
            _expect(wire, _LEN, where)
            assert isinstance(value, bytes)
            decoded = _decode_value(field.message, value)
            if field.inline:
                out.update(decoded)
                continue
        elif field.repeated and field.kind is FieldKind.INT and wire == _LEN:
            assert isinstance(value, bytes)  # a packed repeated varint
            out.setdefault(field.name, []).extend(_packed_ints(value))
            continue
        else:
            decoded = _scalar(field.kind, wire, value, where)
        if field.repeated:
            out.setdefault(field.name, []).append(decoded)
        elif (field.keep_zero and decoded is not None) or not _is_zero(decoded):
            out[field.name] = decoded
        else:
            out.pop(field.name, None)  # a later zero overrides an earlier value, as in Go
    return out


def _packed_ints(data: bytes) -> Iterator[int]:
    pos = 0
    while pos < len(data):
        value, pos = _varint(data, pos)
        yield _signed(value)


def _envelope(data: bytes) -> tuple[str, str, bytes, str, str]:
    """The fields of ``runtime.Unknown``: apiVersion, kind, raw, contentEncoding, contentType."""
    type_meta: JSONDict = {}
    raw = b""
    encoding = content_type = ""
    for number, wire, value in _fields(data):
        if number == 1:
            _expect(wire, _LEN, "Unknown.typeMeta")
            assert isinstance(value, bytes)
            type_meta = decode_message("TypeMeta", value)
        elif number == 2:
            _expect(wire, _LEN, "Unknown.raw")
            assert isinstance(value, bytes)
            raw = value
        elif number == 3:
            encoding = _scalar(FieldKind.STRING, wire, value, "Unknown.contentEncoding")
        elif number == 4:
            content_type = _scalar(FieldKind.STRING, wire, value, "Unknown.contentType")
    api_version = str(type_meta.get("apiVersion", ""))
    return api_version, str(type_meta.get("kind", "")), raw, encoding, content_type


def decode_object(body: bytes) -> JSONDict:
    """Decode a ``k8s\\0``-prefixed body into the object's JSON, with apiVersion and kind."""
    if not body.startswith(MAGIC):
        raise DecodeError("the body does not start with the Kubernetes protobuf magic 'k8s\\x00'")
    api_version, kind, raw, encoding, content_type = _envelope(body[len(MAGIC) :])
    if not kind:
        raise DecodeError("the envelope has no kind")
    if encoding:
        raise UnsupportedKind(f"content encoding {encoding!r} is not supported")
    if content_type and content_type != CONTENT_TYPE:
        raise UnsupportedKind(f"inner content type {content_type!r} is not supported")
    message = ROOTS.get((api_version, kind))
    if message is None and kind == "DeleteOptions":
        message = "DeleteOptions"
    if message is None:
        raise UnsupportedKind(
            f"the devcluster cannot decode protobuf {api_version} {kind}; send it as JSON"
        )
    return {"apiVersion": api_version, "kind": kind, **decode_message(message, raw)}


def decode_request_body(body: bytes) -> JSONDict | None:
    """``decode_object`` for the HTTP layer: a malformed body is a 400, an unknown kind a 415."""
    if not body:
        return None
    try:
        return decode_object(body)
    except UnsupportedKind as exc:
        raise ApiError(code=415, reason="UnsupportedMediaType", message=str(exc)) from None
    except DecodeError as exc:
        raise errors.bad_request(f"the request body is not valid protobuf: {exc}") from None
