"""The checks of a Rollout's own spec: Argo's `ValidateRollout` (`validation.go`).

`ValidateRollout` / `ValidateRolloutSpec` / `ValidateRolloutStrategy{BlueGreen,Canary}` and the
step checks, in Argo's order: `spec_errors` returns every error, the controller shows the first.
They need nothing but the rollout, so `rollouts lint` runs them offline; the checks that need the
objects a rollout names are in `references`.

Argo's field paths are kept even where they look odd: `ValidateRolloutStrategyCanary` is called
with the path `spec.strategy`, so canary errors read `spec.strategy.steps[0].setWeight`, and a
missing strategy reads `spec.strategy.strategy`.

Two checks are this controller's own. App Mesh's `virtualNodeGroup`, which Argo dereferences
without a check (a nil one panics its reconcile), is required. The Gateway API router's route
selectors (`httpRouteSelector`, ...), which this controller does not apply, are refused
(Forbidden) after Argo's own spec checks, so that a manifest using them fails instead of routing
through fewer routes than the plugin would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.base import IntOrString, LabelSelector
from rollout_workers.api.rollout import (
    AnalysisRunArgument,
    AntiAffinity,
    CanaryStep,
    CanaryStrategy,
    Rollout,
    RolloutTrafficRouting,
    StringMatch,
)
from rollout_workers.rollout.trafficrouting import TrafficRoutingError, gatewayapi
from rollout_workers.rollout.validation.messages import (
    DUPLICATED_PING_PONG_SERVICES_MESSAGE,
    DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE,
    DUPLICATED_SERVICES_CANARY_MESSAGE,
    EMPTY_SELECTOR_MESSAGE,
    INVALID_ANALYSIS_ARGS_MESSAGE,
    INVALID_ANTI_AFFINITY_STRATEGY_MESSAGE,
    INVALID_ANTI_AFFINITY_WEIGHT_MESSAGE,
    INVALID_CANARY_DYNAMIC_STABLE_SCALE,
    INVALID_CANARY_DYNAMIC_STABLE_SCALE_WITH_SCALE_DOWN_DELAY,
    INVALID_CANARY_MAX_WEIGHT_ONLY_NGINX_AND_PLUGINS,
    INVALID_CANARY_SCALE_DOWN_DELAY,
    INVALID_DURATION_MESSAGE,
    INVALID_EXPERIMENT_WEIGHT_ROUTER,
    INVALID_EXPERIMENT_WEIGHT_WITHOUT_TRAFFIC_ROUTING,
    INVALID_MAX_SURGE_MAX_UNAVAILABLE,
    INVALID_MAX_TRAFFIC_WEIGHT_MESSAGE,
    INVALID_PING_PONG_PROVIDED_MESSAGE,
    INVALID_SET_CANARY_SCALE_TRAFFIC_POLICY,
    INVALID_SET_HEADER_ROUTE_ALB_VALUE_POLICY,
    INVALID_SET_HEADER_ROUTE_TRAFFIC_POLICY,
    INVALID_SET_MIRROR_ROUTE_TRAFFIC_POLICY,
    INVALID_SET_WEIGHT_MESSAGE,
    INVALID_STEP_MESSAGE,
    INVALID_STRATEGY_MESSAGE,
    INVALID_STRING_MATCH_MISSED_VALUE_POLICY,
    INVALID_STRING_MATCH_MULTIPLE_VALUE_POLICY,
    INVALID_TRAFFIC_ROUTING_MESSAGE,
    MISSED_ALB_ROOT_SERVICE_MESSAGE,
    MISSING_FIELD_MESSAGE,
    NON_NEGATIVE_MESSAGE,
    PING_PONG_WITH_ROUTER_ONLY_MESSAGE,
    PROGRESS_DEADLINE_MESSAGE,
    SCALE_DOWN_LIMIT_LARGER_THAN_REVISION_LIMIT,
    SELECTOR_MISMATCH_MESSAGE,
    STEP_ROUTE_NOT_IN_MANAGED_ROUTES,
    WORKLOAD_REF_WITH_TEMPLATE_MESSAGE,
    ErrorType,
    ValidationError,
    go_bool,
    go_header_route,
    go_int_or_string,
    go_label_selector,
    go_mirror_route,
    go_string_map,
    go_string_match,
    invalid,
    required,
)
from rollout_workers.routerrefs import GATEWAY_API_PLUGIN
from rollout_workers.timefmt import TimeError, parse_duration

# -- defaults (utils/defaults/defaults.go) ---------------------------------------------------

DEFAULT_REPLICAS = 1
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_MAX_TRAFFIC_WEIGHT = 100

#: Where the field paths of the traffic routers' checks start.
ROUTING_PATH = "spec.strategy.canary.trafficRouting"

# -- helpers -----------------------------------------------------------------------------------


def _non_negative(value: int, path: str) -> Iterator[ValidationError]:
    if value < 0:
        yield invalid(path, str(value), NON_NEGATIVE_MESSAGE)


def int_value(text: str) -> int:
    """intstr's `IntValue()` of a string: Atoi, 0 when it does not parse."""
    try:
        return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else 0
    except ValueError:  # pragma: no cover - the pattern admits only integers
        return 0


def _int_or_percent(value: IntOrString) -> int:
    """Argo's `getIntOrPercentValue`: "25%" is 25, "5" is 5, 5 is 5, anything else 0."""
    if isinstance(value, int):
        return value
    if re.fullmatch(r"[0-9]+%", value):
        return int(value[:-1])
    return int_value(value)


def pause_duration_seconds(duration: IntOrString | None) -> int:
    """Argo's `RolloutPause.DurationSeconds()`: 0 when unset, -1 when the string is invalid."""
    if duration is None:
        return 0
    if isinstance(duration, int):
        return duration
    if re.fullmatch(r"[+-]?[0-9]+", duration):
        seconds = int(duration)
        if -(2**31) <= seconds < 2**31:
            return seconds
    try:
        return int(parse_duration(duration) / 1_000_000_000)
    except TimeError:
        return -1


def _max_traffic_weight(canary: CanaryStrategy) -> int:
    routing = canary.traffic_routing
    if routing is not None and routing.max_traffic_weight is not None:
        return routing.max_traffic_weight
    return DEFAULT_MAX_TRAFFIC_WEIGHT


def _router(routing: RolloutTrafficRouting, name: str) -> Any:
    """A traffic router by its JSON name, modelled or kept as an extra field."""
    extra = routing.model_extra or {}
    if name in extra:
        return extra[name]
    attr = {"appMesh": "app_mesh"}.get(name, name)
    return getattr(routing, attr, None)


def _has_plugins(routing: RolloutTrafficRouting) -> bool:
    """Plugins configured; the first-class gatewayAPI field stands for Argo's plugin."""
    return bool(routing.plugins) or routing.gateway_api is not None


_LABEL_KEY_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _is_qualified_name(value: str) -> bool:
    """apimachinery's `IsQualifiedName`, as a yes/no."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_KEY_NAME.fullmatch(name))


def _metadata_field_path_ok(path: str) -> bool:
    """Whether k8s `fieldpath.ExtractFieldPathAsString` accepts a `metadata...` path."""
    if path.endswith("']"):
        head, sep, subscript = path[:-2].partition("['")
        if sep and head:
            if head == "metadata.annotations":
                return _is_qualified_name(subscript.lower())
            if head == "metadata.labels":
                return _is_qualified_name(subscript)
            return False
    return path in (
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
    )


def _selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or []:
        values = req.values or []
        present = req.key in labels
        if req.operator == "In" and not (present and labels[req.key] in values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def traffic_routing(rollout: Rollout) -> RolloutTrafficRouting | None:
    """The canary's traffic routing; None for a blue-green rollout or a canary without one."""
    strategy = rollout.spec.strategy
    return strategy.canary.traffic_routing if strategy and strategy.canary else None


# -- ValidateRolloutSpec -----------------------------------------------------------------------


def spec_errors(rollout: Rollout) -> list[ValidationError]:
    """Every error of Argo's `ValidateRollout`, in its order (the first one is reported)."""
    return list(_spec_errors(rollout))


def _spec_errors(rollout: Rollout) -> Iterator[ValidationError]:
    spec = rollout.spec
    replicas = DEFAULT_REPLICAS if spec.replicas is None else spec.replicas
    yield from _non_negative(replicas, "spec.replicas")

    if spec.workload_ref is None:
        if spec.selector is None:
            yield required("spec.selector", MISSING_FIELD_MESSAGE.format(".spec.selector"))
        else:
            yield from _label_selector_errors(spec.selector, "spec.selector")
            selector = spec.selector
            if not selector.match_labels and not selector.match_expressions:
                yield invalid("spec.selector", go_label_selector(selector), EMPTY_SELECTOR_MESSAGE)

    template = spec.template or {}
    template_meta = template.get("metadata") or {}
    if spec.workload_ref is not None and (
        template_meta.get("labels") or template_meta.get("annotations")
    ):
        yield ValidationError(
            "spec.template", WORKLOAD_REF_WITH_TEMPLATE_MESSAGE, ErrorType.INTERNAL
        )

    # Without a resolved workloadRef there is no template to check (Argo's lint path).
    if spec.workload_ref is None and _selector_valid(spec.selector):
        yield from _template_errors(template, spec.selector)

    min_ready = spec.min_ready_seconds or 0
    yield from _non_negative(min_ready, "spec.minReadySeconds")
    history = (
        DEFAULT_REVISION_HISTORY_LIMIT
        if spec.revision_history_limit is None
        else spec.revision_history_limit
    )
    yield from _non_negative(history, "spec.revisionHistoryLimit")
    deadline = (
        DEFAULT_PROGRESS_DEADLINE_SECONDS
        if spec.progress_deadline_seconds is None
        else spec.progress_deadline_seconds
    )
    yield from _non_negative(deadline, "spec.progressDeadlineSeconds")
    if deadline <= min_ready:
        yield invalid("spec.progressDeadlineSeconds", str(deadline), PROGRESS_DEADLINE_MESSAGE)

    yield from _strategy_errors(rollout, "spec.strategy")
    yield from _gateway_api_unsupported_errors(rollout)
    yield from _app_mesh_required_errors(rollout)


def gateway_api_path(routing: RolloutTrafficRouting) -> str:
    if routing.gateway_api is not None:
        return f"{ROUTING_PATH}.gatewayAPI"
    return f"{ROUTING_PATH}.plugins[{GATEWAY_API_PLUGIN}]"


def _gateway_api_unsupported_errors(rollout: Rollout) -> Iterator[ValidationError]:
    """The gatewayAPI plugin's config fields this controller refuses (route selectors)."""
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    if routing is None:
        return
    try:
        config = gatewayapi.config_of(routing)
    except TrafficRoutingError:
        return  # an undecodable config: reported by the reference checks (references)
    if config is None:
        return
    path = gateway_api_path(routing)
    for field in gatewayapi.route_selectors(config):
        message = gatewayapi.route_selector_message(field)
        yield ValidationError(f"{path}.{field}", message, ErrorType.FORBIDDEN)


def _app_mesh_required_errors(rollout: Rollout) -> Iterator[ValidationError]:
    """App Mesh's virtualNodeGroup, which Argo's reconciler dereferences unchecked."""
    routing = traffic_routing(rollout)
    app_mesh = routing.app_mesh if routing is not None else None
    if app_mesh is not None and app_mesh.virtual_node_group is None:
        yield required(f"{ROUTING_PATH}.appMesh.virtualNodeGroup", "")


def _selector_valid(selector: LabelSelector | None) -> bool:
    """Whether `metav1.LabelSelectorAsSelector` would accept the selector."""
    if selector is None:
        return True
    for req in selector.match_expressions or []:
        if req.operator in ("In", "NotIn") and not req.values:
            return False
        if req.operator in ("Exists", "DoesNotExist") and req.values:
            return False
        if req.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _label_selector_errors(selector: LabelSelector, path: str) -> Iterator[ValidationError]:
    """The operator/values rules of apimachinery's `ValidateLabelSelectorRequirement`."""
    for i, req in enumerate(selector.match_expressions or []):
        req_path = f"{path}.matchExpressions[{i}]"
        if req.operator in ("In", "NotIn"):
            if not req.values:
                yield required(
                    f"{req_path}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                yield ValidationError(
                    f"{req_path}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ErrorType.FORBIDDEN,
                )
        else:
            yield invalid(
                f"{req_path}.operator", go_quote(req.operator), "not a valid selector operator"
            )


def _template_errors(
    template: Mapping[str, Any], selector: LabelSelector | None
) -> Iterator[ValidationError]:
    """The parts of `ValidatePodTemplateSpecForReplicaSet` that need no pod-spec validator."""
    meta = template.get("metadata") or {}
    labels = meta.get("labels")
    selects = selector is not None and bool(selector.match_labels or selector.match_expressions)
    if selects and selector is not None and not _selector_matches(selector, labels or {}):
        yield invalid(
            "spec.template.metadata.labels", go_string_map(labels), SELECTOR_MISMATCH_MESSAGE
        )
    pod_spec = template.get("spec") or {}
    containers = pod_spec.get("containers") or []
    if not containers:
        yield required("spec.template.spec.containers", "")
    for i, container in enumerate(containers):
        if not (container or {}).get("name"):
            yield required(f"spec.template.spec.containers[{i}].name", "")
    restart = pod_spec.get("restartPolicy") or "Always"
    if restart != "Always":
        yield ValidationError(
            "spec.template.spec.restartPolicy",
            'supported values: "Always"',
            ErrorType.NOT_SUPPORTED,
            go_quote(str(restart)),
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        yield ValidationError(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
            ErrorType.FORBIDDEN,
        )


# -- ValidateRolloutStrategy -------------------------------------------------------------------


def _strategy_errors(rollout: Rollout, path: str) -> Iterator[ValidationError]:
    strategy = rollout.spec.strategy
    blue_green = strategy.blue_green if strategy else None
    canary = strategy.canary if strategy else None
    if blue_green is None and canary is None:
        message = MISSING_FIELD_MESSAGE.format(".spec.strategy.canary or .spec.strategy.blueGreen")
        yield required(f"{path}.strategy", message)
    elif blue_green is not None and canary is not None:
        yield invalid(
            f"{path}.strategy", go_quote("blueGreen: true canary: true"), INVALID_STRATEGY_MESSAGE
        )
    elif blue_green is not None:
        if blue_green.active_service == (blue_green.preview_service or ""):
            yield invalid(
                f"{path}.activeService",
                go_quote(blue_green.active_service),
                DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE,
            )
        history = rollout.spec.revision_history_limit
        history = DEFAULT_REVISION_HISTORY_LIMIT if history is None else history
        limit = blue_green.scale_down_delay_revision_limit
        if limit is not None and history < limit:
            yield invalid(
                f"{path}.scaleDownDelayRevisionLimit",
                str(limit),
                SCALE_DOWN_LIMIT_LARGER_THAN_REVISION_LIMIT,
            )
        yield from _anti_affinity_errors(blue_green.anti_affinity, f"{path}.antiAffinity")
    elif canary is not None:
        yield from _canary_errors(rollout, canary, path)


def _anti_affinity_errors(
    anti_affinity: AntiAffinity | None, path: str
) -> Iterator[ValidationError]:
    if anti_affinity is None:
        return
    preferred = anti_affinity.preferred_during_scheduling_ignored_during_execution
    required = anti_affinity.required_during_scheduling_ignored_during_execution
    if (preferred is None) == (required is None):
        value = (
            "antiAffinity.PreferredDuringSchedulingIgnoredDuringExecution: "
            f"{go_bool(preferred is not None)} "
            "antiAffinity.RequiredDuringSchedulingIgnoredDuringExecution: "
            f"{go_bool(required is not None)}"
        )
        yield invalid(path, go_quote(value), INVALID_ANTI_AFFINITY_STRATEGY_MESSAGE)
    if preferred is not None and not 1 <= preferred.weight <= 100:
        yield invalid(f"{path}.weight", str(preferred.weight), INVALID_ANTI_AFFINITY_WEIGHT_MESSAGE)


def _requires_canary_stable_services(canary: CanaryStrategy) -> bool:
    routing = canary.traffic_routing
    if routing is None:
        return False
    istio = routing.istio
    return (
        (routing.alb is not None and canary.ping_pong is None)
        or (istio is not None and istio.destination_rule is None and canary.ping_pong is None)
        or any(
            _router(routing, name) is not None
            for name in ("smi", "apisix", "ambassador", "nginx", "appMesh", "traefik")
        )
    )


def _canary_errors(
    rollout: Rollout, canary: CanaryStrategy, path: str
) -> Iterator[ValidationError]:
    strategy = rollout.spec.strategy
    blue_green = strategy.blue_green if strategy else None
    max_surge = DEFAULT_MAX_SURGE if canary.max_surge is None else canary.max_surge
    max_unavailable: IntOrString = DEFAULT_MAX_UNAVAILABLE
    if blue_green is not None and blue_green.max_unavailable is not None:
        max_unavailable = blue_green.max_unavailable
    elif canary.max_unavailable is not None:
        max_unavailable = canary.max_unavailable
    if _int_or_percent(max_surge) == 0 and _int_or_percent(max_unavailable) == 0:
        yield invalid(
            f"{path}.maxSurge", go_int_or_string(max_surge), INVALID_MAX_SURGE_MAX_UNAVAILABLE
        )

    stable_service = canary.stable_service or ""
    canary_service = canary.canary_service or ""
    if canary_service and stable_service and canary_service == stable_service:
        yield invalid(
            f"{path}.stableService", go_quote(stable_service), DUPLICATED_SERVICES_CANARY_MESSAGE
        )

    routing = canary.traffic_routing
    ping_pong = canary.ping_pong
    if ping_pong is not None:
        if (
            routing is not None
            and routing.alb is None
            and routing.istio is None
            and not _has_plugins(routing)
        ):
            yield invalid(f"{path}.trafficRouting.alb", "null", PING_PONG_WITH_ROUTER_ONLY_MESSAGE)
        if not ping_pong.ping_service:
            yield invalid(
                f"{path}.pingPong.pingService",
                go_quote(ping_pong.ping_service),
                INVALID_PING_PONG_PROVIDED_MESSAGE,
            )
        if not ping_pong.pong_service:
            yield invalid(
                f"{path}.pingPong.pongService",
                go_quote(ping_pong.pong_service),
                INVALID_PING_PONG_PROVIDED_MESSAGE,
            )
        if ping_pong.ping_service == ping_pong.pong_service:
            yield invalid(
                f"{path}.pingPong.pingService",
                go_quote(ping_pong.ping_service),
                DUPLICATED_PING_PONG_SERVICES_MESSAGE,
            )
        if routing is not None and routing.alb is not None and not routing.alb.root_service:
            yield invalid(
                f"{path}.trafficRouting.alb.rootService",
                go_quote(routing.alb.root_service or ""),
                MISSED_ALB_ROOT_SERVICE_MESSAGE,
            )

    if _requires_canary_stable_services(canary):
        if not stable_service:
            yield invalid(f"{path}.stableService", '""', INVALID_TRAFFIC_ROUTING_MESSAGE)
        if not canary_service:
            yield invalid(f"{path}.canaryService", '""', INVALID_TRAFFIC_ROUTING_MESSAGE)

    dynamic = bool(canary.dynamic_stable_scale)
    if routing is None:
        if canary.scale_down_delay_seconds is not None:
            yield invalid(
                f"{path}.scaleDownDelaySeconds",
                str(canary.scale_down_delay_seconds),
                INVALID_CANARY_SCALE_DOWN_DELAY,
            )
        if dynamic:
            yield invalid(f"{path}.dynamicStableScale", "true", INVALID_CANARY_DYNAMIC_STABLE_SCALE)
    else:
        if canary.scale_down_delay_seconds is not None and dynamic:
            yield invalid(
                f"{path}.dynamicStableScale",
                "true",
                INVALID_CANARY_DYNAMIC_STABLE_SCALE_WITH_SCALE_DOWN_DELAY,
            )
        weight = routing.max_traffic_weight
        if weight is not None:
            if routing.nginx is None and not _has_plugins(routing):
                yield invalid(
                    f"{path}.trafficRouting.maxTrafficWeight",
                    str(weight),
                    INVALID_CANARY_MAX_WEIGHT_ONLY_NGINX_AND_PLUGINS,
                )
            if weight < 1:
                yield invalid(
                    f"{path}.trafficRouting.maxTrafficWeight",
                    str(weight),
                    INVALID_MAX_TRAFFIC_WEIGHT_MESSAGE,
                )

    for i, step in enumerate(canary.steps or []):
        yield from _step_errors(rollout, canary, step, path, i)

    yield from _anti_affinity_errors(canary.anti_affinity, f"{path}.antiAffinity")


def _step_errors(
    rollout: Rollout, canary: CanaryStrategy, step: CanaryStep, path: str, index: int
) -> Iterator[ValidationError]:
    step_path = f"{path}.steps[{index}]"
    routing = canary.traffic_routing

    kinds = [step.set_weight, step.pause, step.experiment, step.analysis]
    if sum(kind is not None for kind in kinds) > 1:
        value = (
            f"step.Experiment: {go_bool(step.experiment is not None)} "
            f"step.Pause: {go_bool(step.pause is not None)} "
            f"step.SetWeight: {go_bool(step.set_weight is not None)} "
            f"step.Analysis: {go_bool(step.analysis is not None)}"
        )
        yield invalid(step_path, go_quote(value), INVALID_STEP_MESSAGE)
    actions = {
        "Experiment": step.experiment,
        "Pause": step.pause,
        "SetWeight": step.set_weight,
        "Analysis": step.analysis,
        "SetCanaryScale": step.set_canary_scale,
        "SetHeaderRoute": step.set_header_route,
        "SetMirrorRoute": step.set_mirror_route,
        "Plugin": step.plugin,
    }
    if all(action is None for action in actions.values()):
        # Argo prints "is nil" for each action here, hence all true.
        value = " ".join(f"step.{name}: true" for name in actions)
        yield invalid(step_path, go_quote(value), INVALID_STEP_MESSAGE)

    max_weight = _max_traffic_weight(canary)
    if step.set_weight is not None and not 0 <= step.set_weight <= max_weight:
        yield invalid(
            f"{step_path}.setWeight",
            str(step.set_weight),
            INVALID_SET_WEIGHT_MESSAGE.format(max_weight),
        )
    if step.pause is not None:
        seconds = pause_duration_seconds(step.pause.duration)
        if seconds < 0:
            yield invalid(f"{step_path}.pause.duration", str(seconds), INVALID_DURATION_MESSAGE)
    if step.set_canary_scale is not None and routing is None:
        yield required(f"{path}.trafficRouting", INVALID_SET_CANARY_SCALE_TRAFFIC_POLICY)

    header_route = step.set_header_route
    if header_route is not None:
        if routing is None or (
            routing.istio is None
            and routing.alb is None
            and _router(routing, "apisix") is None
            and not _has_plugins(routing)
        ):
            yield invalid(
                f"{step_path}.setHeaderRoute",
                go_header_route(header_route),
                INVALID_SET_HEADER_ROUTE_TRAFFIC_POLICY,
            )
        else:
            for j, match in enumerate(header_route.match or []):
                match_path = f"{step_path}.setHeaderRoute.match[{j}]"
                if routing.alb is not None:
                    yield from _alb_match_errors(match.header_value, match_path)
                else:
                    yield from _string_match_errors(match.header_value, match_path)

    mirror_route = step.set_mirror_route
    if mirror_route is not None:
        if routing is None or (routing.istio is None and not _has_plugins(routing)):
            yield invalid(
                f"{step_path}.setMirrorRoute",
                go_mirror_route(mirror_route),
                INVALID_SET_MIRROR_ROUTE_TRAFFIC_POLICY,
            )
        for j, route_match in enumerate(mirror_route.match or []):
            match_path = f"{step_path}.setMirrorRoute.match[{j}]"
            # Argo checks method twice (and headers never); kept for identical output.
            for string_match in (route_match.method, route_match.path, route_match.method):
                if string_match is not None:
                    yield from _string_match_errors(string_match, match_path)

    if routing is not None and (header_route is not None or mirror_route is not None):
        if routing.managed_routes is None:
            message = MISSING_FIELD_MESSAGE.format(
                "spec.strategy.canary.trafficRouting.managedRoutes"
            )
            yield required(f"{path}.trafficRouting.managedRoutes", message)
        else:
            names = {route.name for route in routing.managed_routes}
            for route_path, name in (
                (f"{step_path}.setHeaderRoute", header_route.name if header_route else None),
                (f"{step_path}.setMirrorRoute", mirror_route.name if mirror_route else None),
            ):
                if route_path.endswith("HeaderRoute") and header_route is None:
                    continue
                if route_path.endswith("MirrorRoute") and mirror_route is None:
                    continue
                if (name or "") not in names:
                    yield invalid(
                        route_path, go_quote(name or ""), STEP_ROUTE_NOT_IN_MANAGED_ROUTES
                    )

    args: list[AnalysisRunArgument] = []
    if step.experiment is not None:
        for t, template in enumerate(step.experiment.templates):
            if template.weight is None:
                continue
            weight_path = f"{step_path}.experiment.templates[{t}].weight"
            if routing is None:
                yield invalid(
                    weight_path,
                    str(template.weight),
                    INVALID_EXPERIMENT_WEIGHT_WITHOUT_TRAFFIC_ROUTING,
                )
            elif (
                routing.alb is None
                and routing.smi is None
                and routing.istio is None
                and not _has_plugins(routing)
            ):
                yield invalid(weight_path, str(template.weight), INVALID_EXPERIMENT_WEIGHT_ROUTER)
        for analysis in step.experiment.analyses or []:
            args.extend(analysis.args or [])
    if step.analysis is not None:
        args.extend(step.analysis.args or [])
    for arg in args:
        field_ref = arg.value_from.field_ref if arg.value_from else None
        path = field_ref.field_path if field_ref is not None else ""
        if path.startswith("metadata") and not _metadata_field_path_ok(path):
            # Go prints the argument list with %#v, heap addresses included.
            value = f"[]v1alpha1.AnalysisRunArgument{{...}} (len {len(args)})"
            yield invalid(f"{step_path}.analyses", value, INVALID_ANALYSIS_ARGS_MESSAGE)


def _alb_match_errors(match: StringMatch | None, path: str) -> Iterator[ValidationError]:
    if match is None:
        yield invalid(path, "null", INVALID_STRING_MATCH_MISSED_VALUE_POLICY)
    elif not match.exact or match.regex or match.prefix:
        yield invalid(path, go_string_match(match), INVALID_SET_HEADER_ROUTE_ALB_VALUE_POLICY)


def _string_match_errors(match: StringMatch | None, path: str) -> Iterator[ValidationError]:
    if match is None:
        yield invalid(path, "null", INVALID_STRING_MATCH_MISSED_VALUE_POLICY)
        return
    count = sum(bool(v) for v in (match.exact, match.regex, match.prefix))
    if count > 1:
        yield invalid(path, go_string_match(match), INVALID_STRING_MATCH_MULTIPLE_VALUE_POLICY)
    if count == 0:
        yield invalid(path, go_string_match(match), INVALID_STRING_MATCH_MISSED_VALUE_POLICY)
