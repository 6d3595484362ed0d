"""The resource registry: which types the devcluster serves and how each one behaves.

One table drives URL routing, discovery (``/api``, ``/apis``, the per group-version resource lists
that kubectl and dynamic clients read) and the per-type rules of the store (status and scale
subresources, generation, unconditional updates, the default garbage-collection policy). Adding a
built-in type is one entry here; custom resources are added and removed at run time from their
CustomResourceDefinitions (crds.py), one ``ResourceType`` per served version.

Several served types may share one storage (``storage_key``): the served versions of a CRD, and
events.k8s.io/v1 events, which are core/v1 events seen through a field mapping
(``conversion``). Exactly one of them, the one with ``storage=True``, owns the stored form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

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
    # The field whose changes bump the generation (a PodTemplate has `template`, no spec).
    generation_field: str = "spec"
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
    # False for a served form that is not the stored one (a CRD's non-storage versions,
    # events.k8s.io/v1 events): reads and writes go through ``conversion``.
    storage: bool = True
    # False for a CRD's storage version that is not served: it holds the objects, nothing more.
    served: bool = True
    # The key of the type that holds the objects, when not this type's own key.
    storage_of: str = ""
    # "" rewrites apiVersion only (a CRD's ``None`` strategy); "events" maps core/v1 events to
    # events.k8s.io/v1 (see conversion.py).
    conversion: str = ""
    # A custom resource version's openAPIV3Schema: every write is pruned by it (pruning.py).
    schema: dict[str, Any] | None = field(default=None, compare=False)
    # A custom resource version's additionalPrinterColumns (server-side printing, tables.py).
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False)

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
    def storage_key(self) -> str:
        """The key of the stored objects this type serves (its own key unless a view)."""
        return self.storage_of or self.key

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


CRD_GROUP = "apiextensions.k8s.io"
CRD_KEY = f"customresourcedefinitions.{CRD_GROUP}"

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
        plural="podtemplates",
        singular="podtemplate",
        kind="PodTemplate",
        has_generation=True,
        generation_field="template",
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
        group=CRD_GROUP,
        version="v1",
        plural="customresourcedefinitions",
        singular="customresourcedefinition",
        kind="CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        status_subresource=True,
        has_generation=True,
        delete_returns_object=True,
    ),
    ResourceType(
        group="events.k8s.io",
        version="v1",
        plural="events",
        singular="event",
        kind="Event",
        short_names=("ev",),
        storage=False,
        storage_of="events",
        conversion="events",
        field_labels=(
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ),
    ),
)


class Registry:
    """Lookup of served types by group/version/plural and by apiVersion/kind.

    Built-in types are fixed; ``serve``/``unserve`` add and remove the versions of one custom
    resource (keyed by its CRD name, ``<plural>.<group>``) while the server runs."""

    def __init__(self, resources: Iterable[ResourceType] = DEFAULT_RESOURCES) -> None:
        self._builtin = tuple(resources)
        self._custom: dict[str, tuple[ResourceType, ...]] = {}
        self._reindex()

    def _reindex(self) -> None:
        custom = tuple(rt for rts in self._custom.values() for rt in rts)
        every = self._builtin + custom
        self._types = tuple(r for r in every if r.served)
        # A built-in type wins over a CRD of the same name (an approved CRD in a protected
        # group cannot shadow one), so the custom ones go in first.
        self._by_path = {
            (r.group, r.version, r.plural): r for r in (*custom, *self._builtin) if r.served
        }
        self._by_kind = {(r.api_version, r.kind): r for r in every}
        self._by_key = {r.key: r for r in every if r.storage}

    def serve(self, key: str, types: Iterable[ResourceType]) -> None:
        """Serve (or re-serve, replacing the previous versions) the types of one CRD."""
        self._custom[key] = tuple(types)
        self._reindex()

    def unserve(self, key: str) -> None:
        if self._custom.pop(key, None) is not None:
            self._reindex()

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types)

    @property
    def types(self) -> tuple[ResourceType, ...]:
        return self._types

    @property
    def storage_types(self) -> tuple[ResourceType, ...]:
        """One type per storage: what holds objects (iterate these to visit each object once)."""
        return tuple(self._by_key.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def by_key(self, key: str) -> ResourceType:
        return self._by_key[key]

    def find_key(self, key: str) -> ResourceType | None:
        return self._by_key.get(key)

    def group_versions(self) -> dict[str, list[str]]:
        """Non-core groups and their versions, the preferred (highest priority) first."""
        out: dict[str, list[str]] = {}
        for r in self._types:
            if r.group and r.version not in out.setdefault(r.group, []):
                out[r.group].append(r.version)
        return {g: sorted(vs, key=version_priority) for g, vs in out.items()}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self._types if r.group == group and r.version == version]


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version priority: GA before beta before alpha, higher major
    first, then other names alphabetically (``v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo``)."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")
