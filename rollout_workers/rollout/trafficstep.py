"""The traffic step of the canary reconcile (Argo's reconcileTrafficRouting).

Runs after the Services are pointed and before any ReplicaSet is scaled: it tells each router
the weight `weights.calculate_desired_weight` allows, records `status.canary.weights` (with a
TrafficWeightUpdated event when they change) and whether the router verified them. Because the
weight only moves to a step's setWeight once the ReplicaSets are at that step's counts, a
reconcile scales first and a later one shifts the traffic; on abort or at the end the weight
goes back to the stable here, before the canary is scaled down in the same or a later reconcile.

A module of rollout/, not of trafficrouting/, as Argo's rollout/trafficrouting.go sits beside its
routers' packages: it drives the routers and calls the experiment and Service steps, so it sits
above them all, and the routers never import it.
"""

from __future__ import annotations

import logging

import pydantic

from rollout_workers.api.analysis import AnalysisPhase
from rollout_workers.api.experiment import Experiment, ExperimentStatus
from rollout_workers.api.rollout import (
    CanaryStatus,
    RolloutExperimentStep,
    RolloutStatus,
    WeightDestination,
)
from rollout_workers.plugins import PluginLoadError, PluginNotEnabled
from rollout_workers.rollout import annotations as ann
from rollout_workers.rollout import experiment, service
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import (
    NATIVE_PLUGINS,
    TrafficRouter,
    TrafficRoutingError,
    WeightNotVerified,
    WeightVerifyError,
    appmesh,
)
from rollout_workers.rollout.trafficrouting import weights as w
from rollout_workers.rollout.trafficrouting.alb import ALBRouter
from rollout_workers.rollout.trafficrouting.ambassador import AmbassadorRouter
from rollout_workers.rollout.trafficrouting.apisix import ApisixRouter
from rollout_workers.rollout.trafficrouting.gatewayapi import GatewayAPIRouter, config_of
from rollout_workers.rollout.trafficrouting.istio import IstioRouter
from rollout_workers.rollout.trafficrouting.nginx import NginxRouter
from rollout_workers.rollout.trafficrouting.plugins import PluginRouter
from rollout_workers.rollout.trafficrouting.smi import SMIRouter
from rollout_workers.rollout.trafficrouting.traefik import TraefikRouter

log = logging.getLogger(__name__)

DEFAULT_MAX_TRAFFIC_WEIGHT = 100


def routers_for(ctx: RolloutContext) -> list[TrafficRouter]:
    """The routers the rollout configures (the controller has refused any it cannot drive)."""
    routing = ctx.canary.traffic_routing if ctx.canary is not None else None
    if routing is None:
        return []
    routers: list[TrafficRouter] = []
    if routing.nginx is not None:
        routers.append(NginxRouter(ctx, routing.nginx))
    if routing.alb is not None:
        routers.append(ALBRouter(ctx, routing.alb))
    if routing.smi is not None:
        routers.append(SMIRouter(ctx, routing.smi))
    if routing.istio is not None:
        routers.append(IstioRouter(ctx, routing.istio))
    if routing.ambassador is not None:
        routers.append(AmbassadorRouter(ctx, routing.ambassador))
    if routing.app_mesh is not None:
        routers.append(appmesh.AppMeshRouter(ctx, routing.app_mesh))
    if routing.traefik is not None:
        routers.append(TraefikRouter(ctx, routing.traefik))
    if routing.apisix is not None:
        routers.append(ApisixRouter(ctx, routing.apisix))
    gateway_api = config_of(routing)
    if gateway_api is not None:
        routers.append(GatewayAPIRouter(ctx, gateway_api))
    for name, config in (routing.plugins or {}).items():
        if name in NATIVE_PLUGINS:
            continue
        try:
            plugin = ctx.traffic_plugins.resolve(name)
        except (PluginNotEnabled, PluginLoadError) as err:
            # Not enabled: refused as InvalidSpec before the traffic step (unsupported_router),
            # unless the settings changed under it; not loadable: retried with backoff.
            raise TrafficRoutingError(str(err)) from err
        given = dict(config) if isinstance(config, dict) else {}
        routers.append(PluginRouter(lambda: ctx.obj, name, given, plugin))
    return routers


def router_reference_error(ctx: RolloutContext) -> str:
    """A router object look-up that fails Argo's sync before anything is reconciled without
    being a spec error (App Mesh: a VirtualService whose provider is not a VirtualRouter); ''
    when there is none."""
    return appmesh.reference_error(ctx)


def max_traffic_weight(ctx: RolloutContext) -> int:
    routing = ctx.canary.traffic_routing if ctx.canary is not None else None
    if routing is not None and routing.max_traffic_weight is not None:
        return int(routing.max_traffic_weight)
    return DEFAULT_MAX_TRAFFIC_WEIGHT


def fully_promoted(ctx: RolloutContext) -> bool:
    status = ctx.rollout.status or RolloutStatus()
    return (status.stable_rs or "") == (status.current_pod_hash or "")


def rolling_back_from(ctx: RolloutContext) -> str | None:
    """The pod hash the traffic is still weighted to while the rollout dynamically rolls back
    to its stable (Argo's isDynamicallyRollingBackToStable): fully promoted, because the
    template went back to the stable's during an update, with dynamicStableScale, the weights
    still naming another canary, and the stable not yet fully available. None otherwise."""
    canary = ctx.canary_spec
    if not (fully_promoted(ctx) and canary.dynamic_stable_scale and canary.traffic_routing):
        return None
    status = ctx.rollout.status or RolloutStatus()
    weights = status.canary.weights if status.canary else None
    if weights is None or ctx.new_rs is None:
        return None
    previous = weights.canary.pod_template_hash or ""
    if previous == _hash(ctx.new_rs):
        return None
    if rsutil.status_count(ctx.new_rs, "availableReplicas") >= ctx.replicas:
        return None
    return previous


def weight_inputs(ctx: RolloutContext, *, at_desired_counts: bool) -> w.WeightInputs:
    status = ctx.rollout.status or RolloutStatus()
    previous = status.canary.weights if status.canary else None
    _, index = ctx.current_step()
    steps = ctx.steps
    before = [s.set_weight for s in steps[: index or 0] if s.set_weight is not None]
    current = [s.set_weight for s in steps[: (index or 0) + 1] if s.set_weight is not None]
    past_end = index is None or index >= len(steps)
    return w.WeightInputs(
        max_weight=max_traffic_weight(ctx),
        replicas=ctx.replicas,
        fully_promoted=fully_promoted(ctx),
        aborted=ctx.pause.is_aborted(),
        promote_full=bool(status.promote_full),
        dynamic_stable_scale=bool(ctx.canary_spec.dynamic_stable_scale),
        stable_available=rsutil.status_count(ctx.stable_rs, "availableReplicas"),
        new_available=(
            None if ctx.new_rs is None else rsutil.status_count(ctx.new_rs, "availableReplicas")
        ),
        current_canary_weight=previous.canary.weight if previous is not None else None,
        step_index=index,
        step_count=len(steps),
        at_desired_counts=at_desired_counts,
        previous_set_weight=before[-1] if before else 0,
        current_set_weight=100 if past_end else (current[-1] if current else 0),
        rolling_back=rolling_back_from(ctx) is not None,
    )


def current_experiment_step(ctx: RolloutContext) -> RolloutExperimentStep | None:
    """The last experiment step at or before the current step (Argo's
    GetCurrentExperimentStep; None past the last step)."""
    step, index = ctx.current_step()
    if step is None or index is None:
        return None
    return next((s.experiment for s in reversed(ctx.steps[: index + 1]) if s.experiment), None)


def experiment_destinations(ctx: RolloutContext) -> list[WeightDestination]:
    """The weight of each template of the running experiment that set one, to its Service
    (Argo's calculateWeightDestinationsFromExperiment)."""
    step = current_experiment_step(ctx)
    current = experiment.current_experiment(ctx)
    if step is None or current is None or experiment.ex_phase(current) != AnalysisPhase.RUNNING:
        return []
    weights = {t.name: t.weight for t in step.templates}
    try:
        statuses = (Experiment.from_dict(current).status or ExperimentStatus()).template_statuses
    except pydantic.ValidationError:
        return []
    return [
        WeightDestination(
            weight=int(weights[t.name] or 0),
            service_name=t.service_name,
            pod_template_hash=t.pod_template_hash,
        )
        for t in statuses or []
        if weights.get(t.name) is not None
    ]


def _hash(rs: dict[str, object] | None) -> str:
    return (rsutil.pod_hash(rs) if rs is not None else None) or ""


def reconcile_traffic_routing(ctx: RolloutContext, *, at_desired_counts: bool) -> None:
    """Apply this reconcile's weight through every router and record the weights status."""
    if ctx.new_status.canary is None:
        ctx.new_status.canary = CanaryStatus()
    routers = routers_for(ctx)
    if not routers:
        ctx.new_status.canary.weights = None
        return
    status = ctx.rollout.status or RolloutStatus()
    previous = status.canary.weights if status.canary else None
    inputs = weight_inputs(ctx, at_desired_counts=at_desired_counts)
    desired = w.calculate_desired_weight(inputs)
    additional = experiment_destinations(ctx) if w.experiment_weights_apply(inputs) else []
    step, _ = ctx.current_step()
    canary_hash = rolling_back_from(ctx) or _hash(ctx.new_rs)
    if (
        inputs.aborted
        and not inputs.rolling_back
        and (not inputs.dynamic_stable_scale or desired == 0)
    ):
        # The traffic is all back on the stable: so is the canary Service (without waiting for
        # availability, as Argo: the stable's pods may all be unready behind readiness gates).
        service.ensure_targets(
            ctx, ctx.canary_spec.canary_service, ctx.stable_rs, check_available=False
        )
    for router in routers:
        if not inputs.rolling_back and (
            inputs.fully_promoted
            or inputs.aborted
            or (inputs.promote_full and (inputs.new_available or 0) > 0)
        ):
            router.remove_managed_routes()
        # Not on the first revision: its steps run once when the rollout is created.
        if step is not None and ann.revision(ctx.obj) > 1:
            if step.set_header_route is not None:
                router.set_header_route(step.set_header_route)
            if step.set_mirror_route is not None:
                router.set_mirror_route(step.set_mirror_route)
        router.update_hash(canary_hash, _hash(ctx.stable_rs), additional)
        try:
            router.set_weight(desired, additional)
        except TrafficRoutingError as err:
            ctx.event("TrafficRoutingError", str(err), warning=True)
            raise
        changed, new = w.calculate_weight_status(
            previous,
            desired=desired,
            max_weight=inputs.max_weight,
            canary_hash=canary_hash,
            stable_hash=_hash(ctx.stable_rs),
            canary_service=ctx.canary_spec.canary_service,
            stable_service=ctx.canary_spec.stable_service,
            additional=additional,
        )
        if changed:
            ctx.event(w.WEIGHT_UPDATED_REASON, w.weight_updated_message(previous, new))
        elif previous is not None:
            new = previous.model_copy(deep=True)
        ctx.new_status.canary.weights = new
        try:
            new.verified = router.verify_weight(desired, additional)
        except TrafficRoutingError as err:
            # Argo goes on with the reconcile, with what the router returned beside its error.
            new.verified = err.verified if isinstance(err, WeightVerifyError) else None
            ctx.event(w.WEIGHT_VERIFY_ERROR_REASON, w.WEIGHT_VERIFY_ERROR_MESSAGE.format(err))
            continue
        if new.verified is False:
            log.info("%s: weight %d not yet verified by %s", ctx.key, desired, router.type)
            ctx.requeue(w.VERIFY_RETRY_SECONDS)
            # At the end of the update nothing else holds the promotion and the scale-down of
            # the old stable: the reconcile stops here (mid-update the step is held instead).
            index = status.current_step_index or 0
            if desired == inputs.max_weight and len(ctx.steps) >= index:
                raise WeightNotVerified(
                    f"end of rollout, desired weight {desired} not yet verified"
                )
