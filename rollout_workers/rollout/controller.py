"""The `rollouts` task kind's handler: sync_handler for one rollout key.

Reads the rollout, its ReplicaSets and the Services it references from the shared cache,
refuses to act on a cache older than this controller's own last write (requeue shortly), then
validates and reconciles: scaling event or pause → replicas only; blue-green; canary. Writes go
through a fenced writer; a lost write race (409) is a quiet retry with the key's backoff.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

import pydantic

from rollout_workers.analysis.providers.auth import elbv2_clients
from rollout_workers.analysis.templates import TemplateLookup, spec_lookup
from rollout_workers.api.analysis import AnalysisTemplate, ClusterAnalysisTemplate
from rollout_workers.api.base import ConditionStatus as S
from rollout_workers.api.rollout import PauseReason, Rollout
from rollout_workers.api.rollout import RolloutConditionType as T
from rollout_workers.cache import Lister
from rollout_workers.cache.indexers import (
    CLUSTER_TEMPLATE,
    SERVICE,
    TEMPLATE,
    rollout_references,
)
from rollout_workers.cache.reader import (
    ObjectReader,
    OwnerReader,
    RouterObjectReader,
    WrittenGuard,
)
from rollout_workers.cache.routerobjects import CachedRouterObjects
from rollout_workers.cache.store import OwnerReads
from rollout_workers.cache.synced import is_synced
from rollout_workers.cache.written import WrittenVersions
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.kube.errors import Conflict, NotFound, Unavailable
from rollout_workers.kube.eventsink import EventSink
from rollout_workers.kube.routerobjects import ApiRouterObjects
from rollout_workers.kube.writer import KubeWriter, Writer, fenced
from rollout_workers.notifications.outbox import Outbox, make_outbox
from rollout_workers.notifications.recorder import EventRecorder
from rollout_workers.objects import Clock, Obj
from rollout_workers.reconcile.handlers import Handler, Result, SyncRequest, when_cache_synced
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.rollout import (
    bluegreen,
    canary,
    sync,
    templateref,
    validation,
    workload,
)
from rollout_workers.rollout import conditions as c
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.analysis import AnalysisTemplateError
from rollout_workers.rollout.context import RolloutContext, RouterObjects
from rollout_workers.rollout.experiment import ExperimentStepError
from rollout_workers.rollout.experiment import service_names as experiment_service_names
from rollout_workers.rollout.service import ServiceNotFound
from rollout_workers.rollout.stepplugins import statemachine
from rollout_workers.rollout.stepplugins.registry import (
    StepPluginRegistry,
    StepPluginState,
    StepPluginTimings,
)
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, WeightNotVerified
from rollout_workers.rollout.trafficrouting.elbv2 import (
    TargetGroupVerification,
    target_group_verification,
)
from rollout_workers.rollout.trafficrouting.nginx import canary_ingress_name
from rollout_workers.rollout.trafficrouting.plugins import (
    TrafficRouterPluginRegistry,
    unsupported_router,
)
from rollout_workers.rollout.trafficrouting.weights import VERIFY_RETRY_SECONDS
from rollout_workers.rollout.trafficstep import router_reference_error
from rollout_workers.rollout.validation.messages import ValidationError, invalid_spec_message
from rollout_workers.rollout.validation.references import ReferencedResources
from rollout_workers.routerrefs import (
    RouterRef,
    dependent_router_refs,
    router_refs,
    traffic_routing,
)
from rollout_workers.settings import AwsSettings, PluginSettings
from rollout_workers.timefmt import format_time, utcnow

log = logging.getLogger(__name__)


#: How soon a rollout whose cache lags its own last write is looked at again.
STALE_REQUEUE = 0.5
#: InvalidSpec is re-checked this often: the cause may be timing (a Service applied later).
INVALID_SPEC_REQUEUE = 20.0
#: How soon a workloadRef rollout is looked at again while its workload type is being listed.
WORKLOAD_LIST_REQUEUE = 1.0

#: Whether the watcher has listed a type into the cache (on-demand workload reflectors).
Listed = Callable[[r.Resource], bool]


class RolloutController:
    def __init__(
        self,
        *,
        rollouts: ObjectReader,
        replicasets: ObjectReader,
        services: ObjectReader,
        written: WrittenGuard,
        ingresses: ObjectReader | None = None,
        router_objects: RouterObjectReader | None = None,
        writer: Writer,
        templates: ObjectReader | None = None,
        cluster_templates: ObjectReader | None = None,
        analysis_runs: ObjectReader | None = None,
        experiments: ObjectReader | None = None,
        workloads: dict[str, ObjectReader] | None = None,
        listed: Listed = lambda resource: True,
        clock: Clock = utcnow,
        step_plugins: StepPluginRegistry | None = None,
        traffic_plugins: TrafficRouterPluginRegistry | None = None,
        outbox: Outbox | None = None,
        events: EventSink | None = None,
        target_groups: TargetGroupVerification | None = None,
        owner_reads: OwnerReader | None = None,
    ) -> None:
        """`owner_reads`: a rollout with its ReplicaSets, AnalysisRuns and Experiments read
        together (else `rollouts.get` and a `by_owner` each)."""
        self.owner_reads = owner_reads
        self.target_groups = target_groups  # AWS target group verification; None: off
        self.workloads, self.listed = dict(workloads or {}), listed
        self.step_plugins = step_plugins or StepPluginRegistry()
        self.traffic_plugins = traffic_plugins or TrafficRouterPluginRegistry()
        self.recorder = EventRecorder(writer, r.ROLLOUTS, outbox=outbox, sink=events)
        self.analysis_runs, self.experiments = analysis_runs, experiments
        self.rollouts, self.replicasets, self.services = rollouts, replicasets, services
        self.ingresses, self.router_objects = ingresses, router_objects
        self.templates, self.cluster_templates = templates, cluster_templates
        self.written, self.writer, self.clock = written, writer, clock

    def sync(self, request: SyncRequest) -> Result:
        obj, rss, runs, experiments, stale = self._read(request.key, request.prefetched)
        if obj is None:
            return Result.gone()
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return Result.done()
        if stale is None:
            stale = self._stale(request.key, obj, rss)
        if stale or self._unseen(obj, runs, experiments):
            log.info("cache behind our last write for %s; requeueing", request.key)
            return Result.requeue_after(STALE_REQUEUE)
        resolve_error = ""
        resolved = None
        try:
            resolved = templateref.resolve(obj, self._workload, listed=self.listed)
        except templateref.NotListed as err:
            log.info("%s: waiting for the watcher to list %s", request.key, err)
            return Result.requeue_after(WORKLOAD_LIST_REQUEUE)
        except templateref.ResolveError as err:
            resolve_error = str(err)
        namespace = str(meta.get("namespace", ""))
        names = {name for index, name in rollout_references(obj) if index == SERVICE}
        names |= experiment_service_names(experiments)
        found = self.services.get_many(f"{namespace}/{name}" for name in names)
        services = {str(s["metadata"]["name"]): s for s in found}
        ingresses, canary_keys = self._ingresses(obj)
        cached = {f"{namespace}/{name}" for name in ingresses}
        if self.written.stale_objects(
            r.INGRESSES.plural, list(ingresses.values())
        ) or self.written.unseen(r.INGRESSES.plural, canary_keys, cached):
            log.info("ingress cache behind our last write for %s; requeueing", request.key)
            return Result.requeue_after(STALE_REQUEUE)
        request.lease.check()
        try:
            routed = self._router_objects(obj)
        except Unavailable as err:
            log.info("API unavailable reading the router objects of %s (%s)", request.key, err)
            return Result.retry()
        if self._routers_stale(obj, routed):
            log.info("router cache behind our last write for %s; requeueing", request.key)
            return Result.requeue_after(STALE_REQUEUE)
        references = ReferencedResources(
            services=services,
            ingresses=ingresses,
            router_objects=routed.objects,
            served_router_kinds=frozenset(routed.served) if self.router_objects else None,
            router_versions=routed.served,
            analysis_templates=self._templates(self.templates, namespace, obj, TEMPLATE),
            cluster_analysis_templates=self._templates(
                self.cluster_templates, None, obj, CLUSTER_TEMPLATE
            ),
        )
        target = resolved.obj if resolved is not None else obj
        now = self.clock()
        try:
            rollout: Rollout | None = Rollout.from_dict(target)
        except pydantic.ValidationError:
            rollout = None
        # Parsed once: a plain rollout is validated as it is reconciled.
        if resolved is None:
            error = validation.validate_raw(obj, references, parsed=rollout)
        else:
            checked = templateref.unresolved_for_validation(resolved.obj)
            error = validation.validate_raw(checked, references)
        if rollout is None:
            assert error is not None
            write_unparseable(
                self.writer,
                obj,
                invalid_spec_message(request.key.split("/")[1], error),
                now,
            )
            return Result.requeue_after(INVALID_SPEC_REQUEUE)
        ctx = RolloutContext.build(
            obj=target,
            parsed=rollout,
            rss=rss,
            now=now,
            writer=self.writer,
            services=services,
            ingresses=ingresses,
            routed=routed,
            analysis_runs=runs,
            experiments=experiments,
            template_lookup=self._lookup(namespace),
            workload_ref=resolved,
        )
        ctx.step_plugins = StepPluginState(registry=self.step_plugins)
        ctx.traffic_plugins = self.traffic_plugins
        ctx.recorder = self.recorder
        ctx.aws = self.target_groups
        try:
            reconcile(ctx, error, resolve_error=resolve_error)
        except Conflict as err:
            log.info("write race on %s (%s); retrying", request.key, err.message)
            return Result.retry()
        except NotFound as err:
            log.info("object gone while reconciling %s (%s); retrying", request.key, err.message)
            return Result.retry()
        except Unavailable as err:
            # The API server is down or overloaded: the key's backoff spaces the retries.
            log.info("API unavailable while reconciling %s (%s); backing off", request.key, err)
            return Result.retry()
        except sync.HashCollision:
            return Result.requeue_after(0)
        except WeightNotVerified as err:
            log.info("%s: %s", request.key, err)
            return Result.requeue_after(VERIFY_RETRY_SECONDS)
        except TrafficRoutingError as err:
            log.warning("traffic routing of %s failed (%s); retrying", request.key, err)
            return Result.retry()
        if ctx.settled_version:
            self.written.record_own(r.ROLLOUTS.plural, request.key, ctx.settled_version)
        if ctx.requeue_after is not None:
            return Result.requeue_after(ctx.requeue_after)
        return Result.done()

    def _read(
        self, key: str, prefetched: Any = None
    ) -> tuple[Obj | None, list[Obj], list[Obj], list[Obj], list[str] | None]:
        """The rollout, its ReplicaSets, AnalysisRuns and Experiments, and the keys of the
        rollout and its ReplicaSets that the cache holds older than our last write (None: the
        guard is yet to be asked). `prefetched`: the owner read made with the claim."""
        if self.owner_reads is not None:
            obj, (rss, runs, experiments), stale = self.owner_reads.read(key, prefetched)
            return obj, rss, runs, experiments, stale
        obj = self.rollouts.get(key)
        if obj is None:
            return None, [], [], [], []
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        return (
            obj,
            self.replicasets.by_owner(uid),
            self.analysis_runs.by_owner(uid) if self.analysis_runs is not None else [],
            self.experiments.by_owner(uid) if self.experiments is not None else [],
            None,
        )

    def _ingresses(self, obj: Obj) -> tuple[dict[str, Obj], list[str]]:
        """The Ingresses the rollout routes through, by name (those found): the nginx router's
        stable Ingresses and the canary Ingresses made from them, the ALB router's Ingresses;
        and the keys of the canary Ingresses (ours: the cache must hold them once written)."""
        if self.ingresses is None:
            return {}, []
        namespace = str(obj["metadata"].get("namespace", ""))
        routing = traffic_routing(obj)
        nginx = routing.get("nginx") or {}
        stable = {
            n
            for n in [nginx.get("stableIngress"), *(nginx.get("stableIngresses") or [])]
            if isinstance(n, str) and n
        }
        canary = {canary_ingress_name(str(obj["metadata"]["name"]), n) for n in stable}
        alb = routing.get("alb") or {}
        routed = {
            n
            for n in [alb.get("ingress"), *(alb.get("ingresses") or [])]
            if isinstance(n, str) and n
        }
        names = stable | canary | routed
        found = self.ingresses.get_many(f"{namespace}/{name}" for name in names)
        canary_keys = sorted(f"{namespace}/{name}" for name in canary)
        return {str(i["metadata"]["name"]): i for i in found}, canary_keys

    def _router_objects(self, obj: Obj) -> RouterObjects:
        """The router objects the rollout names (routerrefs.py) that exist, then those they name
        (App Mesh's VirtualRouter), at the version of each kind the API server serves; a kind
        it does not serve is left out."""
        routed = RouterObjects()
        if self.router_objects is None:
            return routed
        self._read_router_objects(router_refs(obj), routed)
        self._read_router_objects(dependent_router_refs(routed.objects), routed)
        return routed

    def _read_router_objects(self, refs: list[RouterRef], routed: RouterObjects) -> None:
        assert self.router_objects is not None
        for ref in refs:
            resource = routed.served.get(ref.kind) or self.router_objects.served(ref.kind)
            if resource is None:
                continue
            routed.served[ref.kind] = resource
            found = self.router_objects.get(resource, ref.namespace, ref.name)
            if found is not None:
                routed.objects[ref] = found

    def _routers_stale(self, obj: Obj, routed: RouterObjects) -> bool:
        """A router object read older than our last write to it, or one we wrote (created: the
        TrafficSplit) that the cache does not hold yet: acting now would undo our own write or
        create it again. Objects read from the API are never older than our writes."""
        by_kind: dict[str, tuple[list[Obj], list[str], set[str]]] = {}
        for ref in [*router_refs(obj), *dependent_router_refs(routed.objects)]:
            if ref.kind not in routed.served:
                continue
            found, keys, have = by_kind.setdefault(ref.kind, ([], [], set()))
            key = f"{ref.namespace}/{ref.name}"
            keys.append(key)
            if ref in routed.objects:
                found.append(routed.objects[ref])
                have.add(key)
        for kind, (found, keys, have) in by_kind.items():
            plural = routed.served[kind].plural
            if self.written.stale_objects(plural, found) or self.written.unseen(plural, keys, have):
                return True
        return False

    def _workload(self, resource: r.Resource, key: str) -> Obj | None:
        lister = self.workloads.get(resource.cache_name)
        return lister.get(key) if lister is not None else None

    def _lookup(self, namespace: str) -> TemplateLookup:
        return spec_lookup(self.templates, self.cluster_templates, namespace)

    @staticmethod
    def _templates(
        lister: ObjectReader | None, namespace: str | None, obj: Obj, index: str
    ) -> dict[str, Any]:
        """The analysis templates the rollout names, parsed (unparseable ones count as absent)."""
        if lister is None:
            return {}
        names = {name for i, name in rollout_references(obj) if i == index}
        keys = [f"{namespace}/{n}" if namespace else n for n in names]
        model = AnalysisTemplate if namespace else ClusterAnalysisTemplate
        found: dict[str, Any] = {}
        for raw in lister.get_many(keys):
            try:
                found[str(raw["metadata"]["name"])] = model.from_dict(raw)
            except pydantic.ValidationError:
                log.warning("ignoring malformed template %s", raw["metadata"].get("name"))
        return found

    def _stale(self, key: str, obj: Obj, rss: list[Obj]) -> list[str]:
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        return self.written.stale(r.ROLLOUTS.plural, {key: rv}) or self.written.stale_objects(
            r.REPLICASETS.plural, rss
        )

    def _unseen(self, obj: Obj, runs: list[Obj], experiments: list[Obj]) -> bool:
        """The status names an AnalysisRun or Experiment this controller created lately that the
        cache does not hold yet: acting now would start it again under a new name."""
        namespace = str(obj["metadata"].get("namespace", ""))
        status = obj.get("status") or {}
        canary, bluegreen = status.get("canary") or {}, status.get("blueGreen") or {}
        named_runs = [
            (section.get(field) or {}).get("name")
            for section, field in (
                (canary, "currentStepAnalysisRunStatus"),
                (canary, "currentBackgroundAnalysisRunStatus"),
                (bluegreen, "prePromotionAnalysisRunStatus"),
                (bluegreen, "postPromotionAnalysisRunStatus"),
            )
        ]
        checks = (
            (r.ANALYSISRUNS, [n for n in named_runs if n], runs),
            (
                r.EXPERIMENTS,
                [canary["currentExperiment"]] if canary.get("currentExperiment") else [],
                experiments,
            ),
        )
        for resource, names, cached in checks:
            keys = [f"{namespace}/{name}" for name in names]
            have = {f"{namespace}/{x['metadata']['name']}" for x in cached}
            if self.written.unseen(resource.plural, keys, have):
                return True
        return False


def reconcile(
    ctx: RolloutContext,
    error: ValidationError | None = None,
    *,
    resolve_error: str = "",
) -> None:
    if resolve_error:  # Argo resolves the workloadRef first: its error wins
        message = f'The Rollout "{ctx.name}" is invalid: {resolve_error}'
    else:
        message = invalid_spec_message(ctx.name, error) if error else unsupported(ctx)
    message = message or statemachine.spec_error(ctx)
    if message:
        invalid_spec(ctx, message)
        return
    failure = router_reference_error(ctx)
    if failure:
        # Argo's sync fails on it before anything is reconciled, with no condition: retried.
        raise TrafficRoutingError(failure)
    c.remove_condition(ctx.status, T.INVALID_SPEC)
    workload.persist_workload_generation(ctx)
    sync.check_paused_conditions(ctx)
    inconclusive = ctx.pause.get(PauseReason.INCONCLUSIVE_ANALYSIS) is not None
    try:
        if sync.is_scaling_event(ctx) or ctx.rollout.spec.paused or inconclusive:
            sync_replicas_only(ctx)
        elif ctx.blue_green is not None:
            bluegreen.reconcile_bluegreen(ctx)
        else:
            canary.reconcile_canary(ctx)
    except ServiceNotFound as err:
        invalid_spec(ctx, str(err), reason=c.SERVICE_NOT_FOUND_REASON)
    except AnalysisTemplateError as err:
        invalid_spec(ctx, f"cannot create the AnalysisRun: {err}")
    except ExperimentStepError as err:
        invalid_spec(ctx, f"cannot create the Experiment: {err}")
        return
    workload.reconcile_workload_scale_down(ctx)


def unsupported(ctx: RolloutContext) -> str:
    """What this controller cannot reconcile yet, as an InvalidSpec message ('' if nothing)."""
    if ctx.canary is None:
        return ""
    return unsupported_router(ctx.canary.traffic_routing, ctx.traffic_plugins)


def invalid_spec(ctx: RolloutContext, message: str, *, reason: str = c.INVALID_SPEC_REASON) -> None:
    condition = c.new_condition(T.INVALID_SPEC, S.TRUE, reason, message, now=ctx.now_text())
    previous = c.get_condition(ctx.status, T.INVALID_SPEC)
    if previous is None or previous.message != message:
        c.remove_condition(ctx.status, T.INVALID_SPEC)
        c.set_condition(ctx.status, condition)
    new = ctx.status.model_copy(deep=True)
    sync.persist_status(ctx, new)
    ctx.requeue(INVALID_SPEC_REQUEUE)


def write_unparseable(writer: Writer, obj: Obj, message: str, now: dt.datetime) -> None:
    """InvalidSpec for a rollout the model cannot even read: patch the raw status conditions."""
    meta = obj["metadata"]
    status = obj.get("status") or {}
    when = format_time(now)
    conditions = [x for x in status.get("conditions") or [] if x.get("type") != T.INVALID_SPEC]
    previous = next(
        (x for x in status.get("conditions") or [] if x.get("type") == T.INVALID_SPEC), None
    )
    if previous is not None and previous.get("message") == message:
        conditions.append(previous)
    else:
        conditions.append(
            {
                "type": "InvalidSpec",
                "status": "True",
                "reason": c.INVALID_SPEC_REASON,
                "message": message,
                "lastUpdateTime": when,
                "lastTransitionTime": when,
            }
        )
    patch = {
        "conditions": conditions,
        "phase": "Degraded",
        "message": f"InvalidSpec: {message}",
        "observedGeneration": str(meta.get("generation", 0)),
    }
    if all(status.get(k) == v for k, v in patch.items()):
        return
    body = fenced({"status": patch}, meta.get("resourceVersion"))
    writer.patch(r.ROLLOUTS, str(meta.get("namespace", "")), str(meta["name"]), body, status=True)


def sync_replicas_only(ctx: RolloutContext) -> None:
    """A scaling event or a paused rollout: resize, keep the step, refresh the counts."""
    sync.ensure_new_rs(ctx, create=False)
    new = ctx.status.model_copy(deep=True)
    if ctx.blue_green is not None:
        bluegreen.reconcile_replicas_only(ctx)
        active_hash = new.blue_green.active_selector if new.blue_green else None
        counted = (
            [bluegreen.by_hash(ctx, active_hash)]
            if bluegreen.by_hash(ctx, active_hash)
            else ctx.all_rss
        )
    else:
        canary.reconcile_replicasets(ctx)
        counted = ctx.all_rss
    new.available_replicas = rsutil.total(counted, "availableReplicas")
    new.hpa_replicas = rsutil.total(counted, "replicas")
    sync.persist_status(ctx, new)


def make_handler(runtime: Runtime) -> Handler:
    """The handler factory named in settings (`reconcile.handlers.rollouts`)."""
    settings = runtime.settings
    prefix = settings.redis.key_prefix
    kube = Kube(api_client(settings), settings.kube, counts=runtime.counts)
    written = WrittenVersions(runtime.redis, prefix=prefix)
    rollouts = Lister(runtime.redis, prefix=prefix, resource=r.ROLLOUTS)
    replicasets = Lister(runtime.redis, prefix=prefix, resource=r.REPLICASETS)
    analysis_runs = Lister(runtime.redis, prefix=prefix, resource=r.ANALYSISRUNS)
    experiments = Lister(runtime.redis, prefix=prefix, resource=r.EXPERIMENTS)
    owner_reads = OwnerReads(
        runtime.redis,
        rollouts,
        [replicasets, analysis_runs, experiments],
        written=written,
        checked={r.REPLICASETS.plural},
    )
    controller = RolloutController(
        rollouts=rollouts,
        replicasets=replicasets,
        owner_reads=owner_reads,
        services=Lister(runtime.redis, prefix=prefix, resource=r.SERVICES),
        ingresses=Lister(runtime.redis, prefix=prefix, resource=r.INGRESSES),
        router_objects=CachedRouterObjects(
            runtime.redis, prefix=prefix, api=ApiRouterObjects(kube)
        ),
        templates=Lister(runtime.redis, prefix=prefix, resource=r.ANALYSISTEMPLATES),
        cluster_templates=Lister(runtime.redis, prefix=prefix, resource=r.CLUSTERANALYSISTEMPLATES),
        analysis_runs=analysis_runs,
        experiments=experiments,
        workloads={
            res.cache_name: Lister(runtime.redis, prefix=prefix, resource=res)
            for resources in r.WORKLOADS.values()
            for res in resources
        },
        listed=lambda res: is_synced(runtime.redis, prefix, res),
        written=written,
        writer=KubeWriter(kube, on_written=written.record, on_deleted=written.forget),
        step_plugins=step_plugin_registry(settings.plugins),
        traffic_plugins=TrafficRouterPluginRegistry(enabled=frozenset(settings.plugins.traffic)),
        outbox=make_outbox(runtime),
        events=runtime.events,
        target_groups=aws_verification(kube, settings.aws),
    )
    return when_cache_synced(runtime, controller.sync, owner_reads.claim_read())


def aws_verification(kube: Kube, aws: AwsSettings) -> TargetGroupVerification | None:
    """AWS target group verification when the settings turn it on (off by default, as Argo's
    --aws-verify-target-group)."""
    if not aws.verify_target_group:
        return None
    return target_group_verification(
        kube,
        api_version=aws.target_group_binding_api_version,
        tag_key_resource_id=aws.alb_tag_key_resource_id,
        clients=elbv2_clients(),
    )


def step_plugin_registry(plugins: PluginSettings) -> StepPluginRegistry:
    """The step plugins the settings enable, with Argo's timings unless tuned."""
    return StepPluginRegistry(
        enabled=frozenset(plugins.step),
        timings=StepPluginTimings(
            requeue_min=plugins.step_requeue_min,
            requeue_default=plugins.step_requeue_default,
            error_backoff=plugins.step_error_backoff,
            backoff_delay=plugins.step_backoff_delay,
        ),
    )
