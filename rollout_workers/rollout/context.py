"""The per-reconcile context: what one sync of one rollout knows and intends.

Built from the cache at the start of a sync (the rollout and its ReplicaSets, sorted into new,
stable, older and other), it carries the intents that steps record (pause and abort changes,
events, the earliest time the rollout must be looked at again) until the single status patch at
the end. The objects read from the cache are never modified; writes go through `writer`, and
their results replace the context's copies.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from rollout_workers.analysis.templates import TemplateLookup
from rollout_workers.api.rollout import (
    BlueGreenStrategy,
    CanaryStatus,
    CanaryStep,
    CanaryStrategy,
    Rollout,
    RolloutStatus,
    RolloutTrafficRouting,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import Writer
from rollout_workers.notifications.recorder import EventRecorder
from rollout_workers.objects import Obj
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.pause import PauseContext
from rollout_workers.rollout.phase import replicas_or_default
from rollout_workers.rollout.pods import PodReader, pod_reader_for
from rollout_workers.rollout.stepplugins.registry import StepPluginState
from rollout_workers.rollout.templateref import Resolved
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, not_served_message
from rollout_workers.rollout.trafficrouting.elbv2 import TargetGroupVerification
from rollout_workers.rollout.trafficrouting.plugins import TrafficRouterPluginRegistry
from rollout_workers.routerrefs import RouterRef
from rollout_workers.timefmt import format_time

log = logging.getLogger(__name__)


@dataclass
class RouterObjects:
    """The router objects a reconcile reads (routerrefs.py), by kind, namespace and name, with
    the version of each kind the API server serves."""

    served: dict[str, r.Resource] = field(default_factory=dict)  # kind -> version spoken
    objects: dict[RouterRef, Obj] = field(default_factory=dict)  # those that exist

    def resource(self, kind: str) -> r.Resource:
        """The version of `kind` to speak (TrafficRoutingError: the cluster does not serve
        it)."""
        resource = self.served.get(kind)
        if resource is None:
            raise TrafficRoutingError(not_served_message(kind))
        return resource

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(RouterRef(kind, namespace, name))

    def put(self, ref: RouterRef, obj: Obj) -> None:
        """Record `obj` as what a write returned for `ref`."""
        self.objects[ref] = obj


@dataclass
class Event:
    reason: str
    message: str
    warning: bool = False


@dataclass
class RolloutContext:
    obj: Obj  # the rollout as read; its metadata is refreshed after each write
    rollout: Rollout
    all_rss: list[Obj]
    new_rs: Obj | None
    stable_rs: Obj | None
    older_rss: list[Obj]
    other_rss: list[Obj]
    now: dt.datetime
    writer: Writer
    status: RolloutStatus  # working copy of the status read (conditions set along the way)
    pause: PauseContext
    # The Services the rollout names and those of its experiments' templates, by name.
    services: dict[str, Obj] = field(default_factory=dict)
    # Stable and canary Ingresses of the nginx router, by name; replaced after a write.
    ingresses: dict[str, Obj] = field(default_factory=dict)
    # The router objects the rollout names (TrafficSplit, VirtualService, HTTPRoute, ...), as
    # read before the reconcile; replaced after a write.
    routed: RouterObjects = field(default_factory=RouterObjects)
    analysis_runs: list[Obj] = field(default_factory=list)  # the AnalysisRuns it owns
    experiments: list[Obj] = field(default_factory=list)  # the Experiments it owns
    current_experiment: Obj | None = None  # the one the status named (set by its reconcile)
    template_lookup: TemplateLookup = field(default=lambda name, cluster: None)
    bluegreen_runs: dict[str, Obj | None] = field(default_factory=dict)  # this reconcile's pre/post
    new_status: RolloutStatus = field(default_factory=RolloutStatus)
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = None
    step_plugins: StepPluginState = field(default_factory=StepPluginState)  # set by the controller
    # The traffic router plugins enabled in settings (set by the controller).
    traffic_plugins: TrafficRouterPluginRegistry = field(
        default_factory=TrafficRouterPluginRegistry
    )
    workload_ref: Resolved | None = None  # the resolved spec.workloadRef (templateref)
    workload: Obj | None = None  # the referenced workload; replaced after a write
    pods: PodReader | None = None  # the API's pods (not cached); None: pod steps are skipped
    persisted: RolloutStatus | None = None  # the status the one status patch computed
    # The resourceVersion of this reconcile's last write to the rollout when every such write
    # was settled (see replaced_rollout); None after any other write, or none.
    settled_version: str | None = None
    unsettled: bool = False  # some write to the rollout needs the reconcile its event brings
    recorder: EventRecorder | None = None  # events and their notifications; None: events only
    # AWS target group verification (ROLLOUTS_AWS_VERIFY_TARGET_GROUP); None: off, as by default.
    aws: TargetGroupVerification | None = None
    # Whether the pods' IPs were found registered in the Service's target groups this reconcile
    # (targetgroups.py); None: not checked, or nothing to check (Argo's targetsVerified).
    targets_verified: bool | None = None

    @classmethod
    def build(
        cls,
        *,
        obj: Obj,
        rss: list[Obj],
        now: dt.datetime,
        writer: Writer,
        services: dict[str, Obj] | None = None,
        ingresses: dict[str, Obj] | None = None,
        routed: RouterObjects | None = None,
        analysis_runs: list[Obj] | None = None,
        experiments: list[Obj] | None = None,
        template_lookup: TemplateLookup | None = None,
        workload_ref: Resolved | None = None,
        pods: PodReader | None = None,
        parsed: Rollout | None = None,
    ) -> RolloutContext:
        """`parsed`: the model of `obj`, when the caller has it already."""
        rollout = parsed if parsed is not None else Rollout.from_dict(obj)
        status = (rollout.status or RolloutStatus()).model_copy(deep=True)
        new = rsutil.find_new(obj, rss)
        older = rsutil.find_old(rss, new)
        stable = rsutil.find_stable(status.stable_rs, new, older)
        other = [rs for rs in older if stable is None or rsutil.name(rs) != rsutil.name(stable)]
        # The weights describe the router's state: kept unless the traffic step sets new ones;
        # so does the ALB status (load balancer and target groups) unless verification runs.
        weights = status.canary.weights if status.canary else None
        new_status = RolloutStatus(canary=CanaryStatus(weights=weights) if weights else None)
        if status.alb is not None:
            new_status.alb = status.alb.model_copy(deep=True)
        if status.albs is not None:
            new_status.albs = [alb.model_copy(deep=True) for alb in status.albs]
        return cls(
            obj=obj,
            rollout=rollout,
            all_rss=list(rss),
            new_rs=new,
            stable_rs=stable,
            older_rss=older,
            other_rss=other,
            now=now,
            writer=writer,
            status=status,
            pause=PauseContext(status=rollout.status or RolloutStatus()),
            services=dict(services or {}),
            ingresses=dict(ingresses or {}),
            routed=routed or RouterObjects(),
            new_status=new_status,
            analysis_runs=list(analysis_runs or []),
            experiments=list(experiments or []),
            template_lookup=template_lookup or (lambda name, cluster: None),
            workload_ref=workload_ref,
            workload=workload_ref.workload if workload_ref is not None else None,
            pods=pods or pod_reader_for(writer),
        )

    # -- identity ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", "default"))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def replicas(self) -> int:
        return replicas_or_default(self.rollout.spec)

    @property
    def canary(self) -> CanaryStrategy | None:
        strategy = self.rollout.spec.strategy
        return strategy.canary if strategy else None

    @property
    def blue_green(self) -> BlueGreenStrategy | None:
        strategy = self.rollout.spec.strategy
        return strategy.blue_green if strategy else None

    @property
    def canary_spec(self) -> CanaryStrategy:
        """The canary strategy, where only a canary rollout's reconcile gets."""
        if self.canary is None:
            raise TypeError(f"{self.key}: not a canary rollout")
        return self.canary

    @property
    def routing_spec(self) -> RolloutTrafficRouting:
        """The canary's traffic routing, where only a traffic router's code gets."""
        routing = self.canary_spec.traffic_routing
        if routing is None:
            raise TypeError(f"{self.key}: no traffic routing")
        return routing

    @property
    def blue_green_spec(self) -> BlueGreenStrategy:
        """The blue-green strategy, where only a blue-green rollout's reconcile gets."""
        if self.blue_green is None:
            raise TypeError(f"{self.key}: not a blue-green rollout")
        return self.blue_green

    @property
    def steps(self) -> list[CanaryStep]:
        return list(self.canary.steps or []) if self.canary is not None else []

    def current_step(self) -> tuple[CanaryStep | None, int | None]:
        """The step at status.currentStepIndex (None past the end), and the index."""
        if not self.steps:
            return None, None
        index = self.rollout.status.current_step_index if self.rollout.status else None
        index = index or 0
        return (self.steps[index] if index < len(self.steps) else None), index

    def rollback_within_window(self) -> bool:
        """A change back to one of the last `spec.rollbackWindow.revisions` revisions: it skips
        the steps, pauses and analysis."""
        window = self.rollout.spec.rollback_window
        return rsutil.is_rollback_within_window(
            new=self.new_rs,
            stable=self.stable_rs,
            all_rss=self.all_rss,
            revisions=window.revisions if window is not None else None,
        )

    def now_text(self) -> str:
        return format_time(self.now)

    # -- intents -------------------------------------------------------------------------

    def requeue(self, seconds: float) -> None:
        """Look at this rollout again after `seconds` (the earliest request wins)."""
        seconds = max(0.0, seconds)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds

    def set_current_experiment(self, name: str) -> None:
        if self.new_status.canary is None:
            self.new_status.canary = CanaryStatus()
        self.new_status.canary.current_experiment = name

    def event(
        self, reason: str, message: str, *, warning: bool = False, notified: bool = False
    ) -> None:
        """Record an event about the rollout as it was read (its notifications render it so,
        as Argo's do: before this reconcile's status patch). `notified`: its notifications
        were queued ahead with `notify_ahead`."""
        self.events.append(Event(reason, message, warning))
        self._recorder().record(
            self.obj, reason=reason, message=message, warning=warning, now=self.now,
            notify=not notified,
        )  # fmt: skip

    def notify_ahead(self, obj: Obj, reason: str, message: str) -> None:
        """Queue the notifications of an event about `obj` (the rollout as a write is about to
        leave it) before that write: see EventRecorder.notify."""
        self._recorder().notify(obj, reason=reason, message=message, warning=False)

    def _recorder(self) -> EventRecorder:
        return self.recorder or EventRecorder(self.writer, r.ROLLOUTS)

    # -- keeping the context's copies current after writes --------------------------------

    def replaced_rs(self, old: Obj | None, new: Obj) -> None:
        """Swap a written ReplicaSet into every list that held its previous version."""
        name = rsutil.name(new)

        def swap(rs: Obj) -> Obj:
            return new if rsutil.name(rs) == name else rs

        self.all_rss = [swap(rs) for rs in self.all_rss]
        if old is None and all(rsutil.name(rs) != name for rs in self.all_rss):
            self.all_rss.append(new)
        self.older_rss = [swap(rs) for rs in self.older_rss]
        self.other_rss = [swap(rs) for rs in self.other_rss]
        if self.new_rs is not None and rsutil.name(self.new_rs) == name:
            self.new_rs = new
        if self.stable_rs is not None and rsutil.name(self.stable_rs) == name:
            self.stable_rs = new

    def replaced(self, rs: Obj) -> Obj:
        """The context's current copy of a ReplicaSet (after any write this reconcile made)."""
        name = rsutil.name(rs)
        return next((x for x in self.all_rss if rsutil.name(x) == name), rs)

    def replaced_rollout(self, written: Obj, *, settled: bool = False) -> None:
        """After a write of the rollout: keep its new metadata (resourceVersion, annotations).

        `settled`: a reconcile of the written object would find nothing more to do (see
        sync.SETTLED_STATUS), so the write's own watch event need not queue the rollout again.
        """
        self.obj = {**self.obj, "metadata": written.get("metadata", self.obj["metadata"])}
        self.unsettled = self.unsettled or not settled
        version = str(self.obj["metadata"].get("resourceVersion", ""))
        self.settled_version = None if self.unsettled else version
