"""The resource registry: which types the devcluster serves and how each one behaves.

One table drives URL routing, discovery (``/api``, ``/apis``, the per group-version resource lists
that kubectl and dynamic clients read) and the per-type rules of the store (status and scale
subresources, generation, unconditional updates, the default garbage-collection policy). Adding a
type is one entry here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

READ_WRITE_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
SUBRESOURCE_VERBS = ("get", "patch", "update")


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """Where the scale subresource reads and writes (the CRD ``subresources.scale`` paths)."""

    spec_replicas: tuple[str, ...] = ("spec", "replicas")
    status_replicas: tuple[str, ...] = ("status", "replicas")
    label_selector: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource, e.g. ``apps/v1 replicasets``."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale: ScaleSpec | None = None
    # metadata.generation is set to 1 and bumped on spec changes.
    has_generation: bool = False
    # Custom resources: generation bumps on any non-metadata, non-status change, PUT needs a
    # resourceVersion, strategic merge patch is refused (all as for a real CRD).
    custom: bool = False
    # Deleting without propagationPolicy: "Background", or "Orphan" (batch/v1 Jobs).
    default_propagation: str = "Background"
    # DELETE answers with the deleted object (pods, services, namespaces, custom resources) or
    # with a Success Status (most built-in types).
    delete_returns_object: bool = False
    # Extra field selectors besides metadata.name / metadata.namespace.
    field_labels: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)

    @property
    def key(self) -> str:
        """A unique name for the type, e.g. ``replicasets.apps`` or ``pods``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def allow_unconditional_update(self) -> bool:
        return not self.custom

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def discovery_entries(self) -> list[dict[str, object]]:
        """The APIResource entries for this type (the resource and its subresources)."""
        main: dict[str, object] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(READ_WRITE_VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        if self.status_subresource:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": list(SUBRESOURCE_VERBS),
                }
            )
        if self.scale is not None:
            entries.append(
                {
                    "name": f"{self.plural}/scale",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": list(SUBRESOURCE_VERBS),
                }
            )
        return entries


ARGO = "argoproj.io"
ARGO_VERSION = "v1alpha1"

DEFAULT_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        group="",
        version="v1",
        plural="namespaces",
        singular="namespace",
        kind="Namespace",
        namespaced=False,
        short_names=("ns",),
        status_subresource=True,
        delete_returns_object=True,
        field_labels=("status.phase",),
    ),
    ResourceType(
        group="",
        version="v1",
        plural="services",
        singular="service",
        kind="Service",
        short_names=("svc",),
        categories=("all",),
        status_subresource=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group="",
        version="v1",
        plural="pods",
        singular="pod",
        kind="Pod",
        short_names=("po",),
        categories=("all",),
        status_subresource=True,
        delete_returns_object=True,
        field_labels=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
        ),
    ),
    ResourceType(
        group="",
        version="v1",
        plural="events",
        singular="event",
        kind="Event",
        short_names=("ev",),
        field_labels=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
    ),
    ResourceType(
        group="",
        version="v1",
        plural="secrets",
        singular="secret",
        kind="Secret",
        field_labels=("type",),
    ),
    ResourceType(
        group="",
        version="v1",
        plural="configmaps",
        singular="configmap",
        kind="ConfigMap",
        short_names=("cm",),
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="replicasets",
        singular="replicaset",
        kind="ReplicaSet",
        short_names=("rs",),
        categories=("all",),
        status_subresource=True,
        scale=ScaleSpec(),
        has_generation=True,
        field_labels=("status.replicas",),
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="deployments",
        singular="deployment",
        kind="Deployment",
        short_names=("deploy",),
        categories=("all",),
        status_subresource=True,
        scale=ScaleSpec(),
        has_generation=True,
    ),
    ResourceType(
        group="batch",
        version="v1",
        plural="jobs",
        singular="job",
        kind="Job",
        categories=("all",),
        status_subresource=True,
        has_generation=True,
        default_propagation="Orphan",
        field_labels=("status.successful",),
    ),
    ResourceType(
        group="networking.k8s.io",
        version="v1",
        plural="ingresses",
        singular="ingress",
        kind="Ingress",
        short_names=("ing",),
        status_subresource=True,
        has_generation=True,
    ),
    ResourceType(
        group=ARGO,
        version=ARGO_VERSION,
        plural="rollouts",
        singular="rollout",
        kind="Rollout",
        short_names=("ro",),
        categories=("all",),
        status_subresource=True,
        scale=ScaleSpec(
            status_replicas=("status", "HPAReplicas"),
            label_selector=("status", "selector"),
        ),
        has_generation=True,
        custom=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group=ARGO,
        version=ARGO_VERSION,
        plural="analysistemplates",
        singular="analysistemplate",
        kind="AnalysisTemplate",
        has_generation=True,
        custom=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group=ARGO,
        version=ARGO_VERSION,
        plural="clusteranalysistemplates",
        singular="clusteranalysistemplate",
        kind="ClusterAnalysisTemplate",
        namespaced=False,
        has_generation=True,
        custom=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group=ARGO,
        version=ARGO_VERSION,
        plural="analysisruns",
        singular="analysisrun",
        kind="AnalysisRun",
        # Argo's CRD declares no status subresource: status is written with the object.
        has_generation=True,
        custom=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group=ARGO,
        version=ARGO_VERSION,
        plural="experiments",
        singular="experiment",
        kind="Experiment",
        short_names=("exp",),
        # Argo's CRD declares no status subresource: status is written with the object.
        has_generation=True,
        custom=True,
        delete_returns_object=True,
    ),
)


class Registry:
    """Lookup of served types by group/version/plural and by apiVersion/kind."""

    def __init__(self, resources: Iterable[ResourceType] = DEFAULT_RESOURCES) -> None:
        self._types = tuple(resources)
        self._by_path = {(r.group, r.version, r.plural): r for r in self._types}
        self._by_kind = {(r.api_version, r.kind): r for r in self._types}
        self._by_key = {r.key: r for r in self._types}

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types)

    @property
    def types(self) -> tuple[ResourceType, ...]:
        return self._types

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def by_key(self, key: str) -> ResourceType:
        return self._by_key[key]

    def group_versions(self) -> dict[str, list[str]]:
        """Non-core groups and their versions, in registration order."""
        out: dict[str, list[str]] = {}
        for r in self._types:
            if r.group and r.version not in out.setdefault(r.group, []):
                out[r.group].append(r.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self._types if r.group == group and r.version == version]
