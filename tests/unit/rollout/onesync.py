"""The one-sync fixture, after argo-rollouts' rollout/controller_test.go: seed objects, run one
reconcile at a controlled clock, assert the exact writes, events and requeue.

`OneSync` keeps the objects in a `RecordingWriter`, which answers writes as an API server would
(merge-applied, resourceVersion bumped); creations are stamped with the fixture's clock, so
creation order is real. Its kubelet plays the ReplicaSet controller between syncs: each
ReplicaSet gets `spec.replicas` pods with its template's labels and annotations, all available
unless their image is in `broken` (none) or `capped` (at most that many). Pods are read through
the context's pod reader, as the API's.

Options for the rest of what a worker hands a reconcile: `owned_only` (the ReplicaSets and
AnalysisRuns the rollout owns, as the cache's owner index returns them, rather than all seeded),
`template_lookup` (AnalysisTemplates), `step_plugins` and `traffic_plugins` (plugin
registries), `aws` (AWS target group verification, as ROLLOUTS_AWS_VERIFY_TARGET_GROUP turns it
on); a rollout with a `workloadRef` is reconciled with it resolved from the seeded objects, as
the worker resolves it from the cache.
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
from dataclasses import dataclass, field
from typing import Any

from rollout_workers.analysis.templates import TemplateLookup
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import Action, RecordingWriter
from rollout_workers.notifications.recorder import EventRecorder
from rollout_workers.rollout import templateref
from rollout_workers.rollout.context import Event, RolloutContext, RouterObjects
from rollout_workers.rollout.controller import reconcile
from rollout_workers.rollout.stepplugins.registry import StepPluginRegistry, StepPluginState
from rollout_workers.rollout.trafficrouting.elbv2 import TargetGroupVerification
from rollout_workers.rollout.trafficrouting.plugins import TrafficRouterPluginRegistry
from rollout_workers.routerrefs import RouterRef
from rollout_workers.timefmt import format_time

Obj = dict[str, Any]
NS = "default"
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)

RESOURCES = {
    "Rollout": r.ROLLOUTS,
    "ReplicaSet": r.REPLICASETS,
    "Service": r.SERVICES,
    "Pod": r.PODS,
    "AnalysisRun": r.ANALYSISRUNS,
    "Experiment": r.EXPERIMENTS,
    "Ingress": r.INGRESSES,
    "Deployment": r.DEPLOYMENTS,
}
#: Router kinds the fixture serves (their newest version), read by the routers from the
#: context as the worker reads them from the cache. A router object is seeded at its kind's
#: (App Mesh's VirtualService is not Istio's, though both are "virtualservices").
ROUTER_KINDS = {kind: versions[0] for kind, versions in r.ROUTER_OBJECTS.items()}
for _resource in ROUTER_KINDS.values():
    RESOURCES.setdefault(_resource.kind, _resource)  # Istio's VirtualService, the first


def template(image: str, **labels: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web", **labels}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


def rollout(*, strategy: Obj, replicas: int = 3, name: str = "web", **spec: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"{name}-uid",
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template("web:1"),
            "strategy": strategy,
            **spec,
        },
    }


def service(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "2"},
        "spec": {"selector": {"app": "web"}},
    }


class ClockedWriter(RecordingWriter):
    """A RecordingWriter whose creations carry a creationTimestamp from the fixture's clock."""

    def __init__(self, clock: OneSync) -> None:
        super().__init__()
        self.clock = clock

    def create(self, resource: r.Resource, namespace: str, body: Obj) -> Obj:
        created = super().create(resource, namespace, body)
        stamp = format_time(self.clock.now)
        self.objects[(resource.plural, namespace, created["metadata"]["name"])]["metadata"][
            "creationTimestamp"
        ] = stamp
        created["metadata"]["creationTimestamp"] = stamp
        return created

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        """Pods by an equality selector (`a=b,c=d`), as the API lists them."""
        wanted = dict(part.split("=", 1) for part in label_selector.split(",") if part)
        return [
            copy.deepcopy(pod)
            for (plural, ns, _), pod in self.objects.items()
            if plural == "pods"
            and ns == namespace
            and all((pod["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]


@dataclass
class Synced:
    """What one reconcile did."""

    actions: list[Action]  # API writes, events left out
    events: list[Event]
    requeue_after: float | None
    ctx: RolloutContext

    def verbs(self) -> list[str]:
        return [f"{a.verb} {a.resource}/{a.name}" for a in self.actions]

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]

    def kinds(self) -> list[str]:
        """`verb resource` of each write, without names."""
        return [f"{a.verb} {a.resource}" for a in self.actions]

    def writes(self, resource: str, name: str | None = None) -> list[Obj]:
        return [
            a.body
            for a in self.actions
            if a.resource == resource and (name is None or a.name == name)
        ]

    def status_patch(self) -> Obj:
        """The `status` of this sync's one status patch."""
        patches = [a.body for a in self.actions if a.verb == "patch-status"]
        assert len(patches) == 1, patches
        status: Obj = patches[0]["status"]
        return status


@dataclass
class OneSync:
    """A rollout and the objects around it, one reconcile at a time."""

    obj: Obj
    objects: list[Obj] = field(default_factory=list)
    now: dt.datetime = T0
    broken: set[str] = field(default_factory=lambda: {"web:bad"})
    #: Images of which at most this many pods per ReplicaSet become available.
    capped: dict[str, int] = field(default_factory=dict)
    kubelet_enabled: bool = True
    #: The kubelet runs before each of settle()'s syncs even when it is not enabled for every
    #: sync: pods come up only when the test lets the rollout settle (or calls kubelet()).
    settle_kubelet: bool = False
    #: The kubelet also reports status.observedGeneration (the ReplicaSet's generation, 1 when
    #: it has none).
    observed_generation: bool = False
    #: Hand the reconcile only the ReplicaSets and AnalysisRuns the rollout owns.
    owned_only: bool = False
    template_lookup: TemplateLookup | None = None
    step_plugins: StepPluginRegistry | None = None
    traffic_plugins: TrafficRouterPluginRegistry | None = None
    aws: TargetGroupVerification | None = None
    #: Events and their notifications (None: events only, through the writer).
    recorder: EventRecorder | None = None

    def __post_init__(self) -> None:
        self.writer = ClockedWriter(self)
        self._pod_ids = itertools.count()
        self.last: RolloutContext | None = None  # the last sync's context
        self.seed(self.obj)
        for obj in self.objects:
            self.seed(obj)

    def seed(self, obj: Obj) -> None:
        obj = copy.deepcopy(obj)
        obj["metadata"].setdefault("namespace", NS)
        obj["metadata"].setdefault("creationTimestamp", format_time(self.now))
        kind = r.router_kind_of(obj)
        self.writer.seed(ROUTER_KINDS[kind] if kind else RESOURCES[obj["kind"]], obj)

    # -- reading ----------------------------------------------------------------------------

    def _of(self, plural: str) -> list[Obj]:
        return [o for (p, _, _), o in self.writer.objects.items() if p == plural]

    def _owned(self, plural: str) -> list[Obj]:
        objs = self._of(plural)
        if not self.owned_only:
            return objs
        uid = self.rollout["metadata"].get("uid")
        return [
            o
            for o in objs
            if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])
        ]

    def of(self, resource: r.Resource) -> dict[str, Obj]:
        """The stored objects of one type, by name."""
        return {o["metadata"]["name"]: o for o in self._of(resource.plural)}

    @property
    def rollout(self) -> Obj:
        return self.writer.objects[(r.ROLLOUTS.plural, NS, self.obj["metadata"]["name"])]

    @property
    def status(self) -> Obj:
        return self.rollout.get("status") or {}

    def replicasets(self) -> list[Obj]:
        return self._of("replicasets")

    def rs(self, pod_hash: str) -> Obj:
        return next(
            rs
            for rs in self.replicasets()
            if rs["metadata"]["labels"]["rollouts-pod-template-hash"] == pod_hash
        )

    def pods(self, pod_hash: str | None = None) -> list[Obj]:
        return [
            pod
            for pod in self._of("pods")
            if pod_hash is None
            or pod["metadata"]["labels"].get("rollouts-pod-template-hash") == pod_hash
        ]

    def services(self) -> dict[str, Obj]:
        return {o["metadata"]["name"]: o for o in self._of("services")}

    def status_patch(self) -> Obj:
        """The `status` of the last status patch written, by any sync."""
        status: Obj = next(
            a.body for a in reversed(self.writer.actions) if a.verb == "patch-status"
        )["status"]
        return status

    def reasons(self) -> list[str]:
        """The reasons of every event recorded so far, by any sync."""
        return [a.body["reason"] for a in self.writer.actions if a.resource == "events"]

    # -- a user's changes and time ------------------------------------------------------------

    def edit_spec(self, **changes: Any) -> None:
        """A user's `kubectl apply`: a new spec and a new generation."""
        self.rollout["spec"].update(copy.deepcopy(changes))
        self.rollout["metadata"]["generation"] += 1

    def set_image(self, image: str) -> None:
        spec = copy.deepcopy(self.rollout["spec"]["template"])
        spec["spec"]["containers"][0]["image"] = image
        self.edit_spec(template=spec)

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)

    def at(self, seconds: float) -> None:
        """The clock at `seconds` after T0."""
        self.now = T0 + dt.timedelta(seconds=seconds)

    # -- the kubelet and the reconcile ----------------------------------------------------------

    def kubelet(self) -> None:
        """Pods follow each ReplicaSet's spec.replicas and template; RS status follows."""
        for rs in self.replicasets():
            meta = rs["metadata"]
            owned = [
                p
                for p in self._of("pods")
                if p["metadata"]["ownerReferences"][0]["uid"] == meta.get("uid")
            ]
            want = int(rs["spec"].get("replicas") or 0)
            for pod in owned[want:]:
                del self.writer.objects[("pods", NS, pod["metadata"]["name"])]
            tmeta = rs["spec"]["template"].get("metadata") or {}
            for _ in range(want - len(owned)):
                name = f"{meta['name']}-{next(self._pod_ids)}"
                self.writer.seed(
                    r.PODS,
                    {
                        "kind": "Pod",
                        "metadata": {
                            "name": name,
                            "namespace": NS,
                            "labels": dict(tmeta.get("labels") or {}),
                            "annotations": dict(tmeta.get("annotations") or {}),
                            "creationTimestamp": format_time(self.now),
                            "resourceVersion": "1",
                            "ownerReferences": [
                                {"kind": "ReplicaSet", "name": meta["name"], "uid": meta.get("uid")}
                            ],
                        },
                    },
                )
            image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
            ok = 0 if image in self.broken else min(want, self.capped.get(image, want))
            rs["status"] = {"replicas": want, "readyReplicas": ok, "availableReplicas": ok}
            if self.observed_generation:
                rs["status"]["observedGeneration"] = int(meta.get("generation") or 1)

    def _get(self, resource: r.Resource, key: str) -> Obj | None:
        namespace, _, name = key.partition("/")
        found = self.writer.objects.get((resource.plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def _router_objects(self) -> dict[RouterRef, Obj]:
        """Every stored router object, by its router kind (from its apiVersion and kind)."""
        found = {}
        for (_, namespace, name), obj in self.writer.objects.items():
            kind = r.router_kind_of(obj)
            if kind is not None:
                found[RouterRef(kind, namespace, name)] = copy.deepcopy(obj)
        return found

    def sync(self) -> Synced:
        if self.kubelet_enabled:
            self.kubelet()
        start = len(self.writer.actions)
        obj, resolved, resolve_error = copy.deepcopy(self.rollout), None, ""
        try:
            resolved = templateref.resolve(obj, self._get, listed=lambda _: True)
        except templateref.ResolveError as err:
            resolve_error = str(err)
        ctx = RolloutContext.build(
            obj=resolved.obj if resolved is not None else obj,
            rss=copy.deepcopy(self._owned("replicasets")),
            now=self.now,
            writer=self.writer,
            services=copy.deepcopy(self.services()),
            ingresses=copy.deepcopy(self.of(r.INGRESSES)),
            analysis_runs=copy.deepcopy(self._owned("analysisruns")),
            experiments=copy.deepcopy(self._of("experiments")),
            routed=RouterObjects(served=dict(ROUTER_KINDS), objects=self._router_objects()),
            pods=self.writer,
            template_lookup=self.template_lookup,
            workload_ref=resolved,
        )
        if self.step_plugins is not None:
            ctx.step_plugins = StepPluginState(registry=self.step_plugins)
        if self.traffic_plugins is not None:
            ctx.traffic_plugins = self.traffic_plugins
        ctx.aws = self.aws
        ctx.recorder = self.recorder
        self.last = ctx
        reconcile(ctx, resolve_error=resolve_error)
        actions = [a for a in self.writer.actions[start:] if a.resource != "events"]
        return Synced(actions, list(ctx.events), ctx.requeue_after, ctx)

    def settle(self, limit: int = 30) -> list[Synced]:
        """Reconcile until a sync writes nothing; every sync's result."""
        done = []
        for _ in range(limit):
            if self.settle_kubelet and not self.kubelet_enabled:
                self.kubelet()
            synced = self.sync()
            done.append(synced)
            if not synced.actions:
                return done
        raise AssertionError("the rollout never settled")
