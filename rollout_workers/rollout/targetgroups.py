"""AWS target group IP verification: before the old pods go, the new ones must be registered in
the load balancer (Argo's awsVerifyTargetGroups, rollout/service.go).

With the AWS Load Balancer Controller in IP mode the pods' IPs are the targets, and a Service's
selector change reaches the target group only when that controller has registered the new
endpoints. Scaling the old pods down before then sends requests to pods that are gone. With
`ROLLOUTS_AWS_VERIFY_TARGET_GROUP` on (off by default, as Argo's `--aws-verify-target-group`):

- blue-green: after the active Service is switched to the new pods, each TargetGroupBinding of
  the active Service must hold every address of its Endpoints before the new ReplicaSet is
  marked stable (which is what scales the old one down) and before post-promotion analysis
  starts;
- an ALB canary: once the new pods are the stable ones, the stable Service's target groups must
  hold them before any old ReplicaSet is scaled down (or given its scale-down deadline; one
  with a deadline was verified already, so no AWS call is made for it).

Each binding verified is a TargetGroupVerified event; one not yet is a TargetGroupUnverified
warning and the rollout is looked at again after the verify interval; an error is a
TargetGroupVerifyError warning and the reconcile is retried. A Service without bindings (an
in-cluster Service) needs nothing.
"""

from __future__ import annotations

import logging

from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.objects import Obj
from rollout_workers.rollout import replicasets as rsutil
from rollout_workers.rollout import service as svc
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.scaledown import has_deadline
from rollout_workers.rollout.trafficrouting import pingpong
from rollout_workers.rollout.trafficrouting.elbv2 import (
    AwsError,
    bindings_of_service,
    verify_target_group_binding,
)
from rollout_workers.rollout.trafficrouting.weights import VERIFY_RETRY_SECONDS

log = logging.getLogger(__name__)

VERIFIED_REASON = "TargetGroupVerified"
VERIFIED_MESSAGE = "Service {} (TargetGroup {}) verified: {} endpoints registered"
UNVERIFIED_REASON = "TargetGroupUnverified"
UNVERIFIED_MESSAGE = "Service {} (TargetGroup {}) not verified: {}/{} endpoints registered"
VERIFY_ERROR_REASON = "TargetGroupVerifyError"
VERIFY_ERROR_MESSAGE = "Failed to verify Service {} (TargetGroup {}): {}"


def targets_verified(ctx: RolloutContext) -> bool:
    """Verified, or nothing was checked (Argo's areTargetsVerified)."""
    return ctx.targets_verified is None or ctx.targets_verified


def should_verify(ctx: RolloutContext, service: Obj) -> bool:
    """Whether the Service's target groups are to be checked now (Argo's
    shouldVerifyTargetGroup): blue-green right after the active switch (the new pods not yet
    stable, the active Service on them, no post-promotion analysis started); an ALB canary once
    the new pods are the stable ones."""
    if ctx.aws is None or ctx.new_rs is None:
        return False
    status = ctx.rollout.status or RolloutStatus()
    desired = rsutil.pod_hash(ctx.new_rs)
    if ctx.blue_green is not None:
        if status.stable_rs == desired or svc.selector_hash(service) != desired:
            return False
        return (
            status.blue_green is None
            or status.blue_green.post_promotion_analysis_run_status is None
        )
    routing = ctx.canary.traffic_routing if ctx.canary is not None else None
    if routing is None or routing.alb is None:
        return False
    return status.stable_rs == desired


def reconcile_target_groups(ctx: RolloutContext, service: Obj) -> None:
    """Check the target groups bound to `service` and record the verdict in
    `ctx.targets_verified` (raises AwsError, with its warning event, when AWS cannot tell)."""
    if not should_verify(ctx, service):
        return
    assert ctx.aws is not None
    name = str((service.get("metadata") or {}).get("name") or "")
    log.info("%s: verifying the target groups of service %s", ctx.key, name)
    bindings = bindings_of_service(ctx.aws.reader.target_group_bindings(ctx.namespace), service)
    if not bindings:
        return  # an in-cluster Service: nothing to verify
    ctx.targets_verified = False
    endpoints = ctx.aws.reader.endpoints(ctx.namespace, name)
    for binding in bindings:
        arn = str((binding.get("spec") or {}).get("targetGroupARN") or "")
        try:
            result = verify_target_group_binding(ctx.aws.elbv2(), binding, endpoints, service)
        except AwsError as err:
            ctx.event(
                VERIFY_ERROR_REASON, VERIFY_ERROR_MESSAGE.format(name, arn, err), warning=True
            )
            raise
        if result is None:
            continue  # instance targets, or an unmatched port: not applicable
        if not result.verified:
            message = UNVERIFIED_MESSAGE.format(
                name, arn, result.endpoints_registered, result.endpoints_total
            )
            ctx.event(UNVERIFIED_REASON, message, warning=True)
            ctx.requeue(VERIFY_RETRY_SECONDS)
            return
        ctx.event(VERIFIED_REASON, VERIFIED_MESSAGE.format(name, arn, result.endpoints_registered))
    ctx.targets_verified = True


def can_scale_down(ctx: RolloutContext, old_rss: list[Obj]) -> bool:
    """An ALB canary's old ReplicaSets may be scaled down (or given a deadline): none of them is
    left to, or the stable Service's target groups hold the stable pods (Argo's
    canProceedWithScaleDownAnnotation)."""
    routing = ctx.canary.traffic_routing if ctx.canary is not None else None
    if routing is None or routing.alb is None:
        return True
    # A deadline is only ever set after a verification: such a ReplicaSet needs no AWS call.
    if not any(rsutil.spec_replicas(rs) > 0 and not has_deadline(rs) for rs in old_rss):
        return True
    stable, _ = pingpong.stable_and_canary_services(
        ctx.canary_spec, ctx.rollout.status, ping_pong_preferred=True
    )
    service = ctx.services.get(stable)
    if service is None:
        raise svc.ServiceNotFound(stable)
    reconcile_target_groups(ctx, service)
    proceed = targets_verified(ctx)
    log.info("%s: proceed with scale-down: %s", ctx.key, proceed)
    return proceed
