"""The ALB router: annotations on the user's Ingress tell the AWS Load Balancer Controller how to
split the traffic (Argo's rollout/trafficrouting/alb).

The Ingress (`ingress`, or each of `ingresses`) must route a path to the action Service,
`rootService` or else the stable Service, on the port `use-annotation`. The controller writes:

- `<prefix>/actions.<action Service>`: a forward action, JSON as Argo marshals it (fields in Go's
  order, `<`, `>`, `&` escaped):
  `{"Type":"forward","ForwardConfig":{"TargetGroups":[{"ServiceName":"<canary>",
  "ServicePort":"<servicePort>","Weight":<weight>}, <one per experiment Service>,
  {"ServiceName":"<stable>",...,"Weight":<100 - the others>}]}}`, plus
  `"TargetGroupStickinessConfig":{"Enabled":true,"DurationSeconds":<n>}` when
  `stickinessConfig.enabled` (n from 1 to 604800, else the weight cannot be set). The prefix is
  `annotationPrefix`, by default `alb.ingress.kubernetes.io`. With `pingPong`, the ping and pong
  Services stand for the canary and stable ones (by `status.canary.stablePingPong`).
- `rollouts.argoproj.io/managed-alb-annotations`: `{"<rollout>":[<annotation keys it manages>]}`
  (sorted by rollout), so several rollouts can share an Ingress. (Argo's docs still call it
  managed-alb-actions, the annotation of releases before v1.2 that its Ingress controller
  deletes.)
- A `setHeaderRoute` step: `<prefix>/actions.<route>` forwarding everything to the canary and
  `<prefix>/conditions.<route>` with one `http-header` condition per header name (exact values
  only; two matches on one name share its `values`), and a path `/*` to the route's action,
  first in every rule; the rules' paths are ordered by `managedRoutes`. A step without matches
  takes them away, as does the end of the update or an abort (`remove_managed_routes`).

Only these annotations (and, for header routes, the rules) are owned: each reconcile compares
them with the desired ones and merge-patches the difference, fenced by the resourceVersion read,
so an edit someone else made to them is put back and every other annotation is left alone.
Argo stops at the first Ingress that needs no change; here each Ingress is looked at.

With `ROLLOUTS_AWS_VERIFY_TARGET_GROUP` (Argo's `--aws-verify-target-group`), the weight is
verified against AWS during an update at a setWeight step or at its end: the load balancer whose
DNS name each Ingress's status reports, and the weight its listener rules forward to the target
groups tagged for the canary (and experiment) Services; `status.alb` and `status.albs` record
the load balancer and target groups found. A weight not verified holds the step; at the end it
holds the promotion. Off, `status.alb`/`albs` are cleared and the weight is not verified.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from typing import NoReturn

from rollout_workers.api.rollout import (
    ALBStatus,
    ALBTrafficRouting,
    AwsResourceRef,
    RolloutStatus,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube.errors import Conflict, KubeError, NotFound, Unavailable
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.writer import fenced
from rollout_workers.notifications.services.gojson import Struct, marshal
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, WeightVerifyError, pingpong
from rollout_workers.rollout.trafficrouting.elbv2 import (
    AwsError,
    Elbv2,
    TargetGroupMeta,
    load_balancer_hostnames,
    target_group_resource_id,
)
from rollout_workers.rollout.trafficrouting.nginx import backend_service, ingress_resource

log = logging.getLogger(__name__)


TYPE = "ALB"
DEFAULT_ANNOTATION_PREFIX = "alb.ingress.kubernetes.io"
MANAGED_ANNOTATIONS = "rollouts.argoproj.io/managed-alb-annotations"
ACTION_PREFIX = "/actions."
CONDITION_PREFIX = "/conditions."
USE_ANNOTATION = "use-annotation"
PATCHING_REASON = "PatchingALBIngress"
#: The AWS API's range of a target group stickiness duration, in seconds.
MAX_STICKINESS_SECONDS = 604800
STICKINESS_DURATION_MESSAGE = (
    "TargetGroupStickinessConfig's duration must be between 1 and 604800 seconds (7 days)!"
)
#: Argo's events of a weight verification.
TARGET_GROUP_VERIFIED_REASON = "TargetGroupVerified"
TARGET_GROUP_VERIFIED_WEIGHTS = "Service {} (TargetGroup {}) verified: canary weight {} set"
TARGET_GROUP_UNVERIFIED_REASON = "TargetGroupUnverified"
TARGET_GROUP_UNVERIFIED_WEIGHTS = (
    "Service {} (TargetGroup {}) not verified: canary weight {} not yet set (current: {})"
)
TARGET_GROUP_VERIFY_ERROR_REASON = "TargetGroupVerifyError"
TARGET_GROUP_VERIFY_ERROR_MESSAGE = "Failed to verify Service {} (TargetGroup {}): {}"
LOAD_BALANCER_NOT_FOUND_REASON = "LoadBalancerNotFound"
LOAD_BALANCER_NOT_FOUND_MESSAGE = "Failed to find load balancer: {}"
#: Go prints a heap address where a header route's pointers are; no stable rendering matches.
_GO_POINTER = 824633720832


def ingress_names(alb: ALBTrafficRouting) -> list[str]:
    """`ingresses` when set, else `ingress`."""
    if alb.ingresses is not None:
        return list(alb.ingresses)
    return [alb.ingress or ""]


def annotation_prefix(alb: ALBTrafficRouting) -> str:
    return alb.annotation_prefix or DEFAULT_ANNOTATION_PREFIX


def action_service(alb: ALBTrafficRouting, stable_service: str) -> str:
    """The Service whose action carries the weights: `rootService`, else the stable one."""
    return alb.root_service or stable_service


def action_key(alb: ALBTrafficRouting, service: str) -> str:
    return f"{annotation_prefix(alb)}{ACTION_PREFIX}{service}"


def condition_key(alb: ALBTrafficRouting, service: str) -> str:
    return f"{annotation_prefix(alb)}{CONDITION_PREFIX}{service}"


def _target_group(service: str, port: str, weight: int) -> Struct:
    group = Struct()
    if service:  # omitempty
        group["ServiceName"] = service
    group["ServicePort"] = port
    group["Weight"] = weight
    return group


def _forward(groups: list[Struct], alb: ALBTrafficRouting) -> str:
    config = Struct(TargetGroups=groups)
    stickiness = alb.stickiness_config
    if stickiness is not None and stickiness.enabled:
        if not 1 <= stickiness.duration_seconds <= MAX_STICKINESS_SECONDS:
            raise TrafficRoutingError(STICKINESS_DURATION_MESSAGE)
        config["TargetGroupStickinessConfig"] = Struct(
            Enabled=True, DurationSeconds=stickiness.duration_seconds
        )
    return marshal(Struct(Type="forward", ForwardConfig=config)).decode()


def calculate_forward_action(
    alb: ALBTrafficRouting,
    *,
    canary_service: str,
    stable_service: str,
    weight: int,
    additional: Sequence[WeightDestination] = (),
) -> str:
    """The weighted forward action: canary, experiment Services, stable (Argo's
    getForwardActionString)."""
    port = str(alb.service_port)
    groups = [_target_group(canary_service, port, weight)]
    stable_weight = 100 - weight
    for destination in additional:
        groups.append(_target_group(destination.service_name or "", port, destination.weight))
        stable_weight -= destination.weight
    groups.append(_target_group(stable_service, port, stable_weight))
    return _forward(groups, alb)


def calculate_header_action(alb: ALBTrafficRouting, *, canary_service: str) -> str:
    """The action of a header route: everything to the canary."""
    return _forward([_target_group(canary_service, str(alb.service_port), 100)], alb)


def calculate_conditions(route: SetHeaderRoute) -> str:
    """One `http-header` condition per header name, its exact values in order (Argo's
    getTrafficForwardConditionString); `null` without matches, as Go marshals a nil slice."""
    if route.match is None:
        return "null"
    conditions: list[Struct] = []
    by_name: dict[str, list[str]] = {}
    for match in route.match:
        value = (match.header_value.exact if match.header_value else None) or ""
        if match.header_name in by_name:
            by_name[match.header_name].append(value)
            continue
        by_name[match.header_name] = [value]
        header = Struct(httpHeaderName=match.header_name, values=by_name[match.header_name])
        conditions.append(Struct(field="http-header", httpHeaderConfig=header))
    return marshal(conditions).decode()


def parse_managed(annotations: dict[str, str]) -> dict[str, list[str]]:
    """The managed-alb-annotations annotation ({} when absent); TrafficRoutingError when it is
    not a JSON object of string lists (Argo's json.Unmarshal fails then)."""
    text = annotations.get(MANAGED_ANNOTATIONS, "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as err:
        raise TrafficRoutingError(f"invalid {MANAGED_ANNOTATIONS} annotation: {err}") from None
    if not isinstance(value, dict) or not all(
        v is None or (isinstance(v, list) and all(isinstance(k, str) for k in v))
        for v in value.values()
    ):
        raise TrafficRoutingError(
            f"invalid {MANAGED_ANNOTATIONS} annotation: not an object of string lists"
        )
    return {name: list(keys or []) for name, keys in value.items()}


def calculate_managed(
    annotations: dict[str, str], rollout: str, *, add: bool, keys: Sequence[str]
) -> dict[str, str]:
    """`annotations` with the rollout's entry of managed-alb-annotations gaining (or losing) the
    keys (Argo's modifyManagedAnnotation)."""
    managed = parse_managed(annotations)
    mine = managed.get(rollout) or []
    for key in keys:
        if add and key not in mine:
            mine.append(key)
        elif not add:
            mine = [k for k in mine if k != key]
    managed[rollout] = mine
    return {**annotations, MANAGED_ANNOTATIONS: marshal(managed).decode()}


# -- the Ingress's rules (header routes) -------------------------------------------------------


def _paths(rule: Obj) -> list[Obj] | None:
    http = rule.get("http")
    return http.get("paths") if isinstance(http, dict) else None


def has_rule_with_service(ingress: Obj, service: str) -> bool:
    """A path of a rule sends traffic to `service` (either Ingress version)."""
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for path in _paths(rule) or []:
            if backend_service(path.get("backend") or {}) == service:
                return True
    return False


def _action_path(ingress: Obj, action: str) -> Obj:
    if ingress_resource(ingress).version == "v1":
        backend: Obj = {"service": {"name": action, "port": {"name": USE_ANNOTATION}}}
    else:
        backend = {"serviceName": action, "servicePort": USE_ANNOTATION}
    return {"path": "/*", "pathType": "ImplementationSpecific", "backend": backend}


def add_action_path(ingress: Obj, action: str) -> None:
    """A path `/*` to the action, first in every rule (Argo's CreateAnnotationBasedPath)."""
    if has_rule_with_service(ingress, action):
        return
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        paths = _paths(rule)
        if paths is not None:
            paths.insert(0, _action_path(ingress, action))


def remove_action_path(ingress: Obj, action: str) -> None:
    """The first path of each rule to the action, removed (Argo's RemovePathByServiceName)."""
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        paths = _paths(rule) or []
        for i, path in enumerate(paths):
            if backend_service(path.get("backend") or {}) == action:
                del paths[i]
                break


def sort_paths(ingress: Obj, managed_routes: Sequence[str]) -> None:
    """Each rule's paths in the order of `managedRoutes`, the others after them in their own
    order (Argo's SortHttpPaths)."""
    order = {name: i for i, name in enumerate(managed_routes)}
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        paths = _paths(rule)
        if paths:
            paths.sort(
                key=lambda p: order.get(backend_service(p.get("backend") or {}) or "", len(order))
            )


def _view(ingress: Obj, *, spec: bool) -> Obj:
    view: Obj = {"metadata": {"annotations": (ingress.get("metadata") or {}).get("annotations")}}
    if spec:
        view["spec"] = ingress.get("spec")
    return view


def _go_header_route(route: SetHeaderRoute) -> str:
    """The route as Go's `%d` prints a *SetHeaderRoute (in Argo's PatchingALBIngress event)."""

    def bad(value: str) -> str:
        return f"%!d(string={value})"

    matches = " ".join(
        f"{{{bad(m.header_name)} {_GO_POINTER if m.header_value is not None else 0}}}"
        for m in route.match or []
    )
    return f"&{{{bad(route.name or '')} [{matches}]}}"


class ALBRouter:
    """Argo's ALB reconciler; reads the Ingresses from the context, writes through its writer."""

    def __init__(self, ctx: RolloutContext, alb: ALBTrafficRouting) -> None:
        self.ctx, self.alb = ctx, alb

    @property
    def type(self) -> str:
        return TYPE

    def _services(self) -> tuple[str, str]:
        """(stable, canary) as the router sees them: the ping-pong Services when set."""
        return pingpong.stable_and_canary_services(
            self.ctx.canary_spec, self.ctx.rollout.status, ping_pong_preferred=True
        )

    def _ingress(self, name: str) -> Obj:
        ingress = self.ctx.ingresses.get(name)
        if ingress is None:
            raise TrafficRoutingError(f'ingress.networking.k8s.io "{name}" not found')
        return ingress

    def _patch(self, name: str, current: Obj, desired: Obj, *, spec: bool, event: str) -> None:
        patch = merge_patch(_view(current, spec=spec), _view(desired, spec=spec))
        if not patch:
            return
        ctx = self.ctx
        log.info("%s: %s", ctx.key, event)
        ctx.event(PATCHING_REASON, event)
        version = (current.get("metadata") or {}).get("resourceVersion")
        try:
            written = ctx.writer.patch(
                ingress_resource(current), ctx.namespace, name, fenced(patch, version)
            )
        except (Conflict, NotFound, Unavailable):
            raise  # a lost race or an outage: requeued, as every write's
        except KubeError as err:
            raise TrafficRoutingError(
                f"error patching alb ingress `{name}`: {err.message}"
            ) from err
        ctx.ingresses[name] = written

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """ALB selects by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        stable, canary = self._services()
        action = action_service(self.alb, self.ctx.canary_spec.stable_service or "")
        key = action_key(self.alb, action)
        for name in ingress_names(self.alb):
            current = self._ingress(name)
            if not has_rule_with_service(current, action):
                raise TrafficRoutingError(f"ingress does not have service `{action}` in rules")
            annotations = dict((current.get("metadata") or {}).get("annotations") or {})
            annotations[key] = calculate_forward_action(
                self.alb,
                canary_service=canary,
                stable_service=stable,
                weight=weight,
                additional=additional,
            )
            annotations = calculate_managed(annotations, self.ctx.name, add=True, keys=[key])
            desired = copy.deepcopy(current)
            desired.setdefault("metadata", {})["annotations"] = annotations
            self._patch(
                name,
                current,
                desired,
                spec=False,
                event=f"Updating Ingress `{name}` to desiredWeight '{weight}'",
            )

    def set_header_route(self, route: SetHeaderRoute) -> None:
        _, canary = self._services()
        routing = self.ctx.canary_spec.traffic_routing
        managed = [m.name for m in (routing.managed_routes if routing else None) or []]
        route_name = route.name or ""
        action, condition = action_key(self.alb, route_name), condition_key(self.alb, route_name)
        add = route.match is not None
        for name in ingress_names(self.alb):
            current = self._ingress(name)
            annotations = dict((current.get("metadata") or {}).get("annotations") or {})
            if add:
                annotations[action] = calculate_header_action(self.alb, canary_service=canary)
                annotations[condition] = calculate_conditions(route)
            else:
                annotations.pop(action, None)
                annotations.pop(condition, None)
            annotations = calculate_managed(
                annotations, self.ctx.name, add=add, keys=[action, condition]
            )
            desired = copy.deepcopy(current)
            desired.setdefault("metadata", {})["annotations"] = annotations
            has_rule = has_rule_with_service(current, route_name)
            if has_rule and not add:
                remove_action_path(desired, route_name)
            if not has_rule and add:
                add_action_path(desired, route_name)
            sort_paths(desired, managed)
            self._patch(
                name,
                current,
                desired,
                spec=True,
                event=f"Updating Ingress `{name}` to headerRoute '{_go_header_route(route)}'",
            )

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Mirror routes are not an ALB feature in Argo (validation rejects the step)."""

    def remove_managed_routes(self) -> None:
        managed = [m.name for m in self.ctx.routing_spec.managed_routes or []]
        if not managed:
            return
        for name in ingress_names(self.alb):
            current = self._ingress(name)
            annotations = dict((current.get("metadata") or {}).get("annotations") or {})
            keys: list[str] = []
            for route in managed:
                action, condition = action_key(self.alb, route), condition_key(self.alb, route)
                annotations.pop(action, None)
                annotations.pop(condition, None)
                keys += [action, condition]
            annotations = calculate_managed(annotations, self.ctx.name, add=False, keys=keys)
            desired = copy.deepcopy(current)
            desired.setdefault("metadata", {})["annotations"] = annotations
            for route in managed:
                remove_action_path(desired, route)
            self._patch(
                name,
                current,
                desired,
                spec=True,
                event=f"Updating Ingress `{name}` removing managed routes",
            )

    # -- verification ----------------------------------------------------------------------

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """The weight as the load balancer applies it (Argo's VerifyWeight); None when
        verification is off, or not needed now and already recorded in `status.alb`."""
        ctx = self.ctx
        new = ctx.new_status
        if ctx.aws is None:
            new.alb, new.albs = None, None
            return None
        status = ctx.rollout.status or RolloutStatus()
        # Only mid-update at a setWeight step or at its end: every check calls AWS. A rollout
        # with no ALB status yet is checked once to record its load balancer.
        if not should_verify_weight(ctx, weight) and (
            status.albs is not None or status.alb is not None
        ):
            return None
        if new.alb is None:
            new.alb = ALBStatus()
        names = self.alb.ingresses if self.alb.ingresses else [self.alb.ingress or ""]
        if len(new.albs or []) != len(names):
            new.albs = [ALBStatus() for _ in names]
        return self._verify_each(weight, names, additional)

    def _verify_each(
        self, weight: int, names: list[str], additional: Sequence[WeightDestination]
    ) -> bool:
        ctx = self.ctx
        assert ctx.aws is not None and ctx.new_status.alb is not None and ctx.new_status.albs
        tag = ctx.aws.tag_key_resource_id
        stable, canary = self._services()
        port = int(self.alb.service_port)
        verified = 0
        elbv2: Elbv2 | None = None
        for i, name in enumerate(names):
            ingress = ctx.ingresses.get(name)
            if ingress is None:
                raise WeightVerifyError(f'ingress.networking.k8s.io "{name}" not found')

            def resource_id(service: str, ingress_name: str = name) -> str:
                return target_group_resource_id(
                    namespace=ctx.namespace, ingress=ingress_name, service=service, port=port
                )

            canary_id, stable_id = resource_id(canary), resource_id(stable)
            destinations = {resource_id(d.service_name or ""): d for d in additional}
            hostnames = list(load_balancer_hostnames(ingress))
            if not hostnames:
                log.info("%s: LoadBalancer not yet allocated", ctx.key)
            for hostname in hostnames:
                if not hostname:
                    continue
                try:
                    elbv2 = elbv2 or ctx.aws.elbv2()
                    lb = elbv2.find_load_balancer(hostname)
                except AwsError as err:
                    self._verify_error(canary, err)
                if lb is None or not lb.get("LoadBalancerArn"):
                    ctx.event(
                        LOAD_BALANCER_NOT_FOUND_REASON,
                        LOAD_BALANCER_NOT_FOUND_MESSAGE.format(hostname),
                        warning=True,
                    )
                    return False
                for alb_status in (ctx.new_status.albs[i], ctx.new_status.alb):
                    alb_status.ingress = name
                    alb_status.load_balancer = calculate_load_balancer_ref(lb)
                try:
                    groups = elbv2.target_group_metadata(str(lb["LoadBalancerArn"]))
                except AwsError as err:
                    self._verify_error(canary, err)
                for group in groups:
                    for alb_status in (ctx.new_status.albs[i], ctx.new_status.alb):
                        update_target_group_status(
                            alb_status, group, tag=tag, canary_id=canary_id, stable_id=stable_id
                        )
                    if group.weight is None:
                        continue
                    group_id = group.tags.get(tag)
                    if group_id == canary_id:
                        verified += self._check(canary, group, weight)
                    elif group_id in destinations:
                        destination = destinations[group_id]
                        service = destination.service_name or ""
                        verified += self._check(service, group, destination.weight)
        return verified == len(names) + len(additional)

    def _verify_error(self, canary: str, err: AwsError) -> NoReturn:
        self.ctx.event(
            TARGET_GROUP_VERIFY_ERROR_REASON,
            TARGET_GROUP_VERIFY_ERROR_MESSAGE.format(canary, "unknown", err),
            warning=True,
        )
        raise WeightVerifyError(str(err), verified=False) from None

    def _check(self, service: str, group: TargetGroupMeta, desired: int) -> int:
        """1 when the target group is at the desired weight (with Argo's event either way)."""
        log.info(
            "%s: weight of %s (desired: %d, current: %s)",
            self.ctx.key,
            service,
            desired,
            group.weight,
        )
        if group.weight == desired:
            self.ctx.event(
                TARGET_GROUP_VERIFIED_REASON,
                TARGET_GROUP_VERIFIED_WEIGHTS.format(service, group.arn, desired),
            )
            return 1
        self.ctx.event(
            TARGET_GROUP_UNVERIFIED_REASON,
            TARGET_GROUP_UNVERIFIED_WEIGHTS.format(service, group.arn, desired, group.weight),
            warning=True,
        )
        return 0


def should_verify_weight(ctx: RolloutContext, weight: int) -> bool:
    """Mid-update (a stable, not fully promoted) at a setWeight step, or past the last step at
    the full weight (Argo's ShouldVerifyWeight)."""
    status = ctx.rollout.status or RolloutStatus()
    if not status.stable_rs or status.stable_rs == status.current_pod_hash:
        return False
    step, _ = ctx.current_step()
    if step is not None:
        return step.set_weight is not None
    return weight == 100


def _full_name(arn: str, skip: int) -> str:
    parts = arn.split("/")
    if len(parts) > skip:
        return "/".join(parts[skip:])
    log.error("error parsing arn: '%s'", arn)
    return ""


def calculate_load_balancer_ref(lb: Obj) -> AwsResourceRef:
    """The load balancer as status.alb records it; its full name is the ARN after
    `loadbalancer/app/` (`<name>/<id>`), as Argo cuts it."""
    arn = str(lb.get("LoadBalancerArn") or "")
    return AwsResourceRef(
        name=str(lb.get("LoadBalancerName") or ""), arn=arn, full_name=_full_name(arn, 2)
    )


def update_target_group_status(
    status: ALBStatus, group: TargetGroupMeta, *, tag: str, canary_id: str, stable_id: str
) -> None:
    """Record the target group as the canary's or the stable's when its tag names that Service
    (the full name is the ARN after `targetgroup/`)."""
    ref = AwsResourceRef(name=group.name, arn=group.arn, full_name=_full_name(group.arn, 1))
    if group.tags.get(tag) == canary_id:
        status.canary_target_group = ref
    elif group.tags.get(tag) == stable_id:
        status.stable_target_group = ref
