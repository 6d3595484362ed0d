"""Rollout spec validation: Argo Rollouts' checks and messages, as pure functions.

A Rollout whose spec is invalid gets an `InvalidSpec` condition whose message is exactly what
Argo Rollouts writes (users and dashboards grep for those texts), and is not reconciled further
until the spec changes. This module decides *whether* a spec is invalid and *what the message
says*; setting the condition and choosing a slow requeue is the caller's business.

What is ported, from argo-rollouts (newest copy read: `pkg/apis/rollouts/validation/`):

- `ValidateRollout` / `ValidateRolloutSpec` / `ValidateRolloutStrategy{BlueGreen,Canary}` and the
  step checks, in Argo's order: `spec_errors` returns every error, the controller shows the first.
- `validation_references.go` for the objects the caller passes in (`ReferencedResources`):
  services exist, select the template's labels and are not managed by another rollout; analysis
  templates exist, and their arguments resolve with the rollout's. The not-found messages are the
  ones `rollout/controller.go` builds while fetching the references.
- The message of the condition, as `createInvalidRolloutCondition` formats it
  (`invalid_spec_message`), with each error rendered like apimachinery's `field.Error`.

Argo's field paths are kept even where they look odd: `ValidateRolloutStrategyCanary` is called
with the path `spec.strategy`, so canary errors read `spec.strategy.steps[0].setWeight`, and a
missing strategy reads `spec.strategy.strategy`.

The referenced objects of the Ambassador router (each Mapping exists and defines no weight) and
of the App Mesh router (the VirtualService and the VirtualRouter its provider names exist, and
every route of that VirtualRouter has exactly two weighted targets) are checked as Argo's
controller checks them. App Mesh's `virtualNodeGroup`, which Argo dereferences without a check
(a nil one panics its reconcile), is required here.

Traffic routers this controller does not implement (ALB), and traffic router plugins the
settings do not enable, are refused by the controller (`trafficrouting.unsupported_router`), not
here: such a spec is valid Argo. The Gateway API
router's config (the gatewayAPI plugin's) is checked here as the plugin would fail on it: a
config naming no route (the plugin's message), a route kind the API server does not serve, and a
route that does not exist (the API server's NotFound message, which the plugin reports). Its
route selectors (`httpRouteSelector`, ...), which this controller does not apply, are refused
(Forbidden) after Argo's own spec checks, so that a manifest using them fails instead of
routing through fewer routes than the plugin would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from enum import StrEnum
from typing import Any

import pydantic

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.analysis import AnalysisTemplate, ClusterAnalysisTemplate, Metric
from rollout_workers.api.base import IntOrString, LabelSelector
from rollout_workers.api.rollout import (
    AnalysisRunArgument,
    AntiAffinity,
    CanaryStep,
    CanaryStrategy,
    HeaderRoutingMatch,
    IstioTrafficRouting,
    IstioVirtualService,
    ManagedRoute,
    Rollout,
    RolloutAnalysis,
    RolloutTrafficRouting,
    SetHeaderRoute,
    SetMirrorRoute,
    StringMatch,
)
from rollout_workers.kube import resources as r
from rollout_workers.rollout.trafficrouting import (
    TrafficRoutingError,
    ambassador,
    appmesh,
    gatewayapi,
    not_served_message,
)
from rollout_workers.rollout.trafficrouting import istio as istiorouter
from rollout_workers.rollout.trafficrouting.nginx import uses_service
from rollout_workers.rollout.trafficrouting.pingpong import stable_and_canary_services
from rollout_workers.routerrefs import (
    GATEWAY_API_PLUGIN,
    RouterRef,
    split_namespaced,
    virtual_router_ref,
)
from rollout_workers.timefmt import TimeError, parse_duration

# -- Argo's messages (validation.go) -----------------------------------------------------------

MISSING_FIELD_MESSAGE = "Rollout has missing field '{}'"
INVALID_SET_WEIGHT_MESSAGE = "SetWeight needs to be between 0 and {}"
INVALID_MAX_TRAFFIC_WEIGHT_MESSAGE = "MaxTrafficWeight needs to be greater than 0"
INVALID_EXPERIMENT_WEIGHT_WITHOUT_TRAFFIC_ROUTING = (
    "Experiment template weight cannot be set unless TrafficRouting is enabled"
)
INVALID_EXPERIMENT_WEIGHT_ROUTER = (
    "Experiment template weight is only available for TrafficRouting with SMI, ALB, Istio and "
    "Plugins at this time"
)
INVALID_SET_CANARY_SCALE_TRAFFIC_POLICY = "SetCanaryScale requires TrafficRouting to be set"
INVALID_SET_HEADER_ROUTE_TRAFFIC_POLICY = (
    "SetHeaderRoute requires TrafficRouting, supports Istio and ALB and Apisix"
)
INVALID_SET_MIRROR_ROUTE_TRAFFIC_POLICY = (
    "SetMirrorRoute requires TrafficRouting, supports Istio and Plugins"
)
INVALID_STRING_MATCH_MULTIPLE_VALUE_POLICY = (
    "StringMatch match value must have exactly one of the following: exact, regex, prefix"
)
INVALID_STRING_MATCH_MISSED_VALUE_POLICY = (
    "StringMatch value missed, match value must have one of the following: exact, regex, prefix"
)
INVALID_SET_HEADER_ROUTE_ALB_VALUE_POLICY = (
    "SetHeaderRoute match value invalid. ALB supports 'exact' value only"
)
INVALID_DURATION_MESSAGE = "Duration needs to be greater than 0"
INVALID_MAX_SURGE_MAX_UNAVAILABLE = "MaxSurge and MaxUnavailable both can not be zero"
INVALID_STEP_MESSAGE = (
    "Step must have one of the following set: experiment, setWeight, setCanaryScale, plugin or "
    "pause"
)
INVALID_STRATEGY_MESSAGE = "Multiple Strategies can not be listed"
DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE = (
    "This rollout uses the same service for the active and preview services, but two different "
    "services are required."
)
DUPLICATED_SERVICES_CANARY_MESSAGE = (
    "This rollout uses the same service for the stable and canary services, but two different "
    "services are required."
)
INVALID_ANTI_AFFINITY_STRATEGY_MESSAGE = "AntiAffinity must have exactly one strategy listed"
INVALID_ANTI_AFFINITY_WEIGHT_MESSAGE = "AntiAffinity weight must be between 1-100"
SCALE_DOWN_LIMIT_LARGER_THAN_REVISION_LIMIT = (
    "This rollout's revision history limit can not be smaller than the rollout's scale down limit"
)
INVALID_TRAFFIC_ROUTING_MESSAGE = (
    "Canary service and Stable service must to be set to use Traffic Routing"
)
INVALID_ANALYSIS_ARGS_MESSAGE = (
    "Analyses arguments must refer to valid object metadata supported by downwardAPI"
)
INVALID_CANARY_SCALE_DOWN_DELAY = (
    "Canary scaleDownDelaySeconds can only be used with traffic routing"
)
INVALID_CANARY_DYNAMIC_STABLE_SCALE = (
    "Canary dynamicStableScale can only be used with traffic routing"
)
INVALID_CANARY_DYNAMIC_STABLE_SCALE_WITH_SCALE_DOWN_DELAY = (
    "Canary dynamicStableScale cannot be used with scaleDownDelaySeconds"
)
INVALID_CANARY_MAX_WEIGHT_ONLY_NGINX_AND_PLUGINS = (
    "Canary maxTrafficWeight in traffic routing only supported in Nginx and Plugins"
)
INVALID_PING_PONG_PROVIDED_MESSAGE = (
    "Ping service and Pong service must to be set to use Ping-Pong feature"
)
DUPLICATED_PING_PONG_SERVICES_MESSAGE = (
    "This rollout uses the same service for the ping and pong services, but two different "
    "services are required."
)
MISSED_ALB_ROOT_SERVICE_MESSAGE = (
    "Root service field is required for the configuration with ALB and ping-pong feature enabled"
)
PING_PONG_WITH_ROUTER_ONLY_MESSAGE = (
    "Ping-pong feature works with the ALB, Istio, and plugin-based traffic routers only"
)
STEP_ROUTE_NOT_IN_MANAGED_ROUTES = (
    "Steps define a route that does not exist in spec.strategy.canary.trafficRouting.managedRoutes"
)
EMPTY_SELECTOR_MESSAGE = "empty selector is invalid for deployment"
WORKLOAD_REF_WITH_TEMPLATE_MESSAGE = "template must be empty for workload reference rollout"
SELECTOR_MISMATCH_MESSAGE = "`selector` does not match template `labels`"
NON_NEGATIVE_MESSAGE = "must be greater than or equal to 0"
PROGRESS_DEADLINE_MESSAGE = "must be greater than minReadySeconds"

# -- Argo's messages (references) --------------------------------------------------------------

SERVICE_MANAGED_BY_ANOTHER_ROLLOUT = 'Service "{}" is managed by another Rollout'
SERVICE_UNMATCHED_LABEL = 'Service "{}" has unmatch label "{}" in rollout'
SERVICE_NOT_FOUND = 'services "{}" not found'
ANALYSIS_TEMPLATE_NOT_FOUND = "AnalysisTemplate '{}' not found"
CLUSTER_ANALYSIS_TEMPLATE_NOT_FOUND = "ClusterAnalysisTemplate '{}' not found"
MISSING_BACKGROUND_ARGS = "missing analysis arguments in rollout spec"
#: The annotation with which a Service names the rollout that manages it.
MANAGED_BY_ROLLOUTS_ANNOTATION = "argo-rollouts.argoproj.io/managed-by-rollouts"

INGRESS_NOT_FOUND = 'ingress.networking.k8s.io "{}" not found'
INGRESS_WITHOUT_STABLE_RULE = "ingress `{}` has no rules using service {} backend"
NGINX_BOTH_INGRESSES = (
    "Either StableIngress or StableIngresses must be configured. Both are configured."
)
ALB_BOTH_INGRESSES = "Either Ingress or Ingresses must be configured. Both are configured."
ALB_NO_INGRESS = "Either Ingress or Ingresses must be configured. Neither are configured."
NGINX_NO_INGRESS = (
    "Either StableIngress or StableIngresses must be configured. Neither are configured."
)
ISTIO_VIRTUAL_SERVICES_CONFIG = "either VirtualService or VirtualServices must be configured"
VIRTUAL_SERVICE_NOT_FOUND = istiorouter.VS_NOT_FOUND
VIRTUAL_SERVICE_WITHOUT_ROUTES = (
    "Unable to get any of the HTTP, TCP or TLS routes for the Istio VirtualService"
)
VIRTUAL_SERVICE_INVALID_ROUTES = "Istio VirtualService has invalid {} routes. Error: {}"
AMBASSADOR_NO_MAPPINGS = "must provide at least one mapping"
APP_MESH_NO_VIRTUAL_SERVICE = "must provide virtual-service"
APP_MESH_NO_ROUTES = "No routes defined for AppMesh virtual-router {}"
APP_MESH_INVALID_ROUTE = "Invalid route was found for AppMesh virtual-router {} at index {}"
APP_MESH_ROUTE_DETAILS = (
    "Error getting route details for AppMesh virtual-router {} and route {}. Error: {}"
)
APP_MESH_INVALID_ACTION = "Invalid route action found for AppMesh virtual-router {} and route {}"
APP_MESH_TARGET_COUNT = (
    "Invalid number of weightedTargets ({}) for AppMesh virtual-router {} and route {}, expected 2"
)

# -- defaults (utils/defaults/defaults.go) ---------------------------------------------------

DEFAULT_REPLICAS = 1
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_MAX_TRAFFIC_WEIGHT = 100


class ErrorType(StrEnum):
    """apimachinery's `field.ErrorType`, as its `String()` renders it."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    FORBIDDEN = "Forbidden"
    INTERNAL = "Internal error"
    NOT_SUPPORTED = "Unsupported value"


@dataclass(frozen=True)
class ValidationError:
    """One `field.Error`: the field path, Argo's message (its `Detail`), and the bad value.

    `value` is already rendered the way Go's `ErrorBody` prints it (`"x"` for strings, `5`,
    `true`, `null`, `%#v` for structs); it is unused for Required, Forbidden and Internal errors.
    """

    field: str
    message: str
    type: ErrorType = ErrorType.INVALID
    value: str | None = None

    def __str__(self) -> str:
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.INTERNAL):
            body = str(self.type)
        else:
            body = f"{self.type}: {self.value if self.value is not None else 'null'}"
        if self.message:
            body += f": {self.message}"
        return f"{self.field}: {body}"


@dataclass(frozen=True)
class ReferencedResources:
    """The objects a rollout refers to, as the caller found them in the cache (by name; a name
    that is absent was not found). Services are plain decoded objects."""

    services: Mapping[str, Mapping[str, Any]] = dataclass_field(default_factory=dict)
    ingresses: Mapping[str, Mapping[str, Any]] = dataclass_field(default_factory=dict)
    analysis_templates: Mapping[str, AnalysisTemplate] = dataclass_field(default_factory=dict)
    cluster_analysis_templates: Mapping[str, ClusterAnalysisTemplate] = dataclass_field(
        default_factory=dict
    )
    #: The router objects the rollout names that exist (routerrefs.py), and the kinds
    #: the API server serves; None when they were not looked up (nothing to check against).
    router_objects: Mapping[RouterRef, Mapping[str, Any]] = dataclass_field(default_factory=dict)
    served_router_kinds: frozenset[str] | None = None
    #: The version spoken of each served router kind (its group and plural name what is not
    #: found); a kind absent here is named at its newest version.
    router_versions: Mapping[str, r.Resource] = dataclass_field(default_factory=dict)


def invalid_spec_message(name: str, error: ValidationError) -> str:
    """The InvalidSpec condition's message, as Argo's `createInvalidRolloutCondition` writes it."""
    return f'The Rollout "{name}" is invalid: {error}'


def validate(
    rollout: Rollout, references: ReferencedResources | None = None
) -> ValidationError | None:
    """The first reason the rollout is invalid, or None: the spec checks, then (when
    `references` is given) the referenced objects."""
    for error in spec_errors(rollout):
        return error
    if references is not None:
        for error in reference_errors(rollout, references):
            return error
    return None


def validate_raw(
    obj: Mapping[str, Any],
    references: ReferencedResources | None = None,
    *,
    parsed: Rollout | None = None,
) -> ValidationError | None:
    """Like `validate`, for a decoded object that may not even fit the model (`parsed`: the
    caller's model of `obj`, which spares parsing it again).

    A spec the model rejects (a string where an integer belongs, a required field missing) is
    reported on the first offending field, in the same `field.Error` form.
    """
    if parsed is None:
        try:
            parsed = Rollout.from_dict(dict(obj))
        except pydantic.ValidationError as exc:
            return _from_pydantic(exc)
    return validate(parsed, references)


# -- Go rendering ------------------------------------------------------------------------------


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def _go_string_map(value: Mapping[str, str] | None) -> str:
    """`%#v` of a `map[string]string` (Go prints map keys sorted)."""
    if value is None:
        return "map[string]string(nil)"
    items = ", ".join(f"{go_quote(k)}:{go_quote(value[k])}" for k in sorted(value))
    return "map[string]string{" + items + "}"


def _go_int_or_string(value: IntOrString) -> str:
    """`%#v` of an `intstr.IntOrString` value."""
    if isinstance(value, int):
        return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'
    return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"


def _go_label_selector(selector: LabelSelector) -> str:
    """`%#v` of a `metav1.LabelSelector` that selects everything (the only one printed)."""
    labels = _go_string_map(selector.match_labels)
    if selector.match_expressions is None:
        expressions = "[]v1.LabelSelectorRequirement(nil)"
    else:
        expressions = "[]v1.LabelSelectorRequirement{}"
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"


def _go_string_match(match: StringMatch | None) -> str:
    if match is None:
        return "null"
    exact, prefix, regex = (go_quote(v or "") for v in (match.exact, match.prefix, match.regex))
    return f"v1alpha1.StringMatch{{Exact:{exact}, Prefix:{prefix}, Regex:{regex}}}"


def _go_pointer(type_name: str, present: bool) -> str:
    # Go prints a heap address here; no stable rendering can match it.
    return f"(*v1alpha1.{type_name})(0xc000000000)" if present else f"(*v1alpha1.{type_name})(nil)"


def _go_header_route(route: SetHeaderRoute) -> str:
    def one(m: HeaderRoutingMatch) -> str:
        value = _go_pointer("StringMatch", m.header_value is not None)
        return (
            f"v1alpha1.HeaderRoutingMatch{{HeaderName:{go_quote(m.header_name)}, "
            f"HeaderValue:{value}}}"
        )

    matches = (
        "[]v1alpha1.HeaderRoutingMatch(nil)"
        if route.match is None
        else "[]v1alpha1.HeaderRoutingMatch{" + ", ".join(one(m) for m in route.match) + "}"
    )
    return f"v1alpha1.SetHeaderRoute{{Name:{go_quote(route.name or '')}, Match:{matches}}}"


def _go_mirror_route(route: SetMirrorRoute) -> str:
    matches = "[]v1alpha1.RouteMatch(nil)" if route.match is None else "[]v1alpha1.RouteMatch{...}"
    percentage = _go_pointer("int32", route.percentage is not None).replace("v1alpha1.", "")
    return (
        f"v1alpha1.SetMirrorRoute{{Name:{go_quote(route.name)}, Match:{matches}, "
        f"Percentage:{percentage}}}"
    )


# -- helpers -----------------------------------------------------------------------------------


def _required(path: str, message: str) -> ValidationError:
    return ValidationError(path, message, ErrorType.REQUIRED)


def _invalid(path: str, value: str, message: str) -> ValidationError:
    return ValidationError(path, message, ErrorType.INVALID, value)


def _non_negative(value: int, path: str) -> Iterator[ValidationError]:
    if value < 0:
        yield _invalid(path, str(value), NON_NEGATIVE_MESSAGE)


def _int_value(text: str) -> int:
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
    return _int_value(value)


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
            yield _required("spec.selector", MISSING_FIELD_MESSAGE.format(".spec.selector"))
        else:
            yield from _label_selector_errors(spec.selector, "spec.selector")
            selector = spec.selector
            if not selector.match_labels and not selector.match_expressions:
                yield _invalid(
                    "spec.selector", _go_label_selector(selector), EMPTY_SELECTOR_MESSAGE
                )

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
        yield _invalid("spec.progressDeadlineSeconds", str(deadline), PROGRESS_DEADLINE_MESSAGE)

    yield from _strategy_errors(rollout, "spec.strategy")
    yield from _gateway_api_unsupported_errors(rollout)
    yield from _app_mesh_required_errors(rollout)


def _gateway_api_path(routing: RolloutTrafficRouting) -> str:
    if routing.gateway_api is not None:
        return f"{_ROUTING_PATH}.gatewayAPI"
    return f"{_ROUTING_PATH}.plugins[{GATEWAY_API_PLUGIN}]"


def _gateway_api_unsupported_errors(rollout: Rollout) -> Iterator[ValidationError]:
    """The gatewayAPI plugin's config fields this controller refuses (route selectors)."""
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    if routing is None:
        return
    try:
        config = gatewayapi.config_of(routing)
    except TrafficRoutingError:
        return  # an undecodable config: reported with the references (_gateway_api_errors)
    if config is None:
        return
    path = _gateway_api_path(routing)
    for field in gatewayapi.route_selectors(config):
        message = gatewayapi.route_selector_message(field)
        yield ValidationError(f"{path}.{field}", message, ErrorType.FORBIDDEN)


def _app_mesh_required_errors(rollout: Rollout) -> Iterator[ValidationError]:
    """App Mesh's virtualNodeGroup, which Argo's reconciler dereferences unchecked."""
    routing = _routing(rollout)
    app_mesh = routing.app_mesh if routing is not None else None
    if app_mesh is not None and app_mesh.virtual_node_group is None:
        yield _required(f"{_ROUTING_PATH}.appMesh.virtualNodeGroup", "")


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
                yield _required(
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
            yield _invalid(
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
        yield _invalid(
            "spec.template.metadata.labels", _go_string_map(labels), SELECTOR_MISMATCH_MESSAGE
        )
    pod_spec = template.get("spec") or {}
    containers = pod_spec.get("containers") or []
    if not containers:
        yield _required("spec.template.spec.containers", "")
    for i, container in enumerate(containers):
        if not (container or {}).get("name"):
            yield _required(f"spec.template.spec.containers[{i}].name", "")
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
        yield _required(f"{path}.strategy", message)
    elif blue_green is not None and canary is not None:
        yield _invalid(
            f"{path}.strategy", go_quote("blueGreen: true canary: true"), INVALID_STRATEGY_MESSAGE
        )
    elif blue_green is not None:
        if blue_green.active_service == (blue_green.preview_service or ""):
            yield _invalid(
                f"{path}.activeService",
                go_quote(blue_green.active_service),
                DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE,
            )
        history = rollout.spec.revision_history_limit
        history = DEFAULT_REVISION_HISTORY_LIMIT if history is None else history
        limit = blue_green.scale_down_delay_revision_limit
        if limit is not None and history < limit:
            yield _invalid(
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
            f"{_go_bool(preferred is not None)} "
            "antiAffinity.RequiredDuringSchedulingIgnoredDuringExecution: "
            f"{_go_bool(required is not None)}"
        )
        yield _invalid(path, go_quote(value), INVALID_ANTI_AFFINITY_STRATEGY_MESSAGE)
    if preferred is not None and not 1 <= preferred.weight <= 100:
        yield _invalid(
            f"{path}.weight", str(preferred.weight), INVALID_ANTI_AFFINITY_WEIGHT_MESSAGE
        )


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
        yield _invalid(
            f"{path}.maxSurge", _go_int_or_string(max_surge), INVALID_MAX_SURGE_MAX_UNAVAILABLE
        )

    stable_service = canary.stable_service or ""
    canary_service = canary.canary_service or ""
    if canary_service and stable_service and canary_service == stable_service:
        yield _invalid(
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
            yield _invalid(f"{path}.trafficRouting.alb", "null", PING_PONG_WITH_ROUTER_ONLY_MESSAGE)
        if not ping_pong.ping_service:
            yield _invalid(
                f"{path}.pingPong.pingService",
                go_quote(ping_pong.ping_service),
                INVALID_PING_PONG_PROVIDED_MESSAGE,
            )
        if not ping_pong.pong_service:
            yield _invalid(
                f"{path}.pingPong.pongService",
                go_quote(ping_pong.pong_service),
                INVALID_PING_PONG_PROVIDED_MESSAGE,
            )
        if ping_pong.ping_service == ping_pong.pong_service:
            yield _invalid(
                f"{path}.pingPong.pingService",
                go_quote(ping_pong.ping_service),
                DUPLICATED_PING_PONG_SERVICES_MESSAGE,
            )
        if routing is not None and routing.alb is not None and not routing.alb.root_service:
            yield _invalid(
                f"{path}.trafficRouting.alb.rootService",
                go_quote(routing.alb.root_service or ""),
                MISSED_ALB_ROOT_SERVICE_MESSAGE,
            )

    if _requires_canary_stable_services(canary):
        if not stable_service:
            yield _invalid(f"{path}.stableService", '""', INVALID_TRAFFIC_ROUTING_MESSAGE)
        if not canary_service:
            yield _invalid(f"{path}.canaryService", '""', INVALID_TRAFFIC_ROUTING_MESSAGE)

    dynamic = bool(canary.dynamic_stable_scale)
    if routing is None:
        if canary.scale_down_delay_seconds is not None:
            yield _invalid(
                f"{path}.scaleDownDelaySeconds",
                str(canary.scale_down_delay_seconds),
                INVALID_CANARY_SCALE_DOWN_DELAY,
            )
        if dynamic:
            yield _invalid(
                f"{path}.dynamicStableScale", "true", INVALID_CANARY_DYNAMIC_STABLE_SCALE
            )
    else:
        if canary.scale_down_delay_seconds is not None and dynamic:
            yield _invalid(
                f"{path}.dynamicStableScale",
                "true",
                INVALID_CANARY_DYNAMIC_STABLE_SCALE_WITH_SCALE_DOWN_DELAY,
            )
        weight = routing.max_traffic_weight
        if weight is not None:
            if routing.nginx is None and not _has_plugins(routing):
                yield _invalid(
                    f"{path}.trafficRouting.maxTrafficWeight",
                    str(weight),
                    INVALID_CANARY_MAX_WEIGHT_ONLY_NGINX_AND_PLUGINS,
                )
            if weight < 1:
                yield _invalid(
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
            f"step.Experiment: {_go_bool(step.experiment is not None)} "
            f"step.Pause: {_go_bool(step.pause is not None)} "
            f"step.SetWeight: {_go_bool(step.set_weight is not None)} "
            f"step.Analysis: {_go_bool(step.analysis is not None)}"
        )
        yield _invalid(step_path, go_quote(value), INVALID_STEP_MESSAGE)
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
        yield _invalid(step_path, go_quote(value), INVALID_STEP_MESSAGE)

    max_weight = _max_traffic_weight(canary)
    if step.set_weight is not None and not 0 <= step.set_weight <= max_weight:
        yield _invalid(
            f"{step_path}.setWeight",
            str(step.set_weight),
            INVALID_SET_WEIGHT_MESSAGE.format(max_weight),
        )
    if step.pause is not None:
        seconds = pause_duration_seconds(step.pause.duration)
        if seconds < 0:
            yield _invalid(f"{step_path}.pause.duration", str(seconds), INVALID_DURATION_MESSAGE)
    if step.set_canary_scale is not None and routing is None:
        yield _required(f"{path}.trafficRouting", INVALID_SET_CANARY_SCALE_TRAFFIC_POLICY)

    header_route = step.set_header_route
    if header_route is not None:
        if routing is None or (
            routing.istio is None
            and routing.alb is None
            and _router(routing, "apisix") is None
            and not _has_plugins(routing)
        ):
            yield _invalid(
                f"{step_path}.setHeaderRoute",
                _go_header_route(header_route),
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
            yield _invalid(
                f"{step_path}.setMirrorRoute",
                _go_mirror_route(mirror_route),
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
            yield _required(f"{path}.trafficRouting.managedRoutes", message)
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
                    yield _invalid(
                        route_path, go_quote(name or ""), STEP_ROUTE_NOT_IN_MANAGED_ROUTES
                    )

    args: list[AnalysisRunArgument] = []
    if step.experiment is not None:
        for t, template in enumerate(step.experiment.templates):
            if template.weight is None:
                continue
            weight_path = f"{step_path}.experiment.templates[{t}].weight"
            if routing is None:
                yield _invalid(
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
                yield _invalid(weight_path, str(template.weight), INVALID_EXPERIMENT_WEIGHT_ROUTER)
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
            yield _invalid(f"{step_path}.analyses", value, INVALID_ANALYSIS_ARGS_MESSAGE)


def _alb_match_errors(match: StringMatch | None, path: str) -> Iterator[ValidationError]:
    if match is None:
        yield _invalid(path, "null", INVALID_STRING_MATCH_MISSED_VALUE_POLICY)
    elif not match.exact or match.regex or match.prefix:
        yield _invalid(path, _go_string_match(match), INVALID_SET_HEADER_ROUTE_ALB_VALUE_POLICY)


def _string_match_errors(match: StringMatch | None, path: str) -> Iterator[ValidationError]:
    if match is None:
        yield _invalid(path, "null", INVALID_STRING_MATCH_MISSED_VALUE_POLICY)
        return
    count = sum(bool(v) for v in (match.exact, match.regex, match.prefix))
    if count > 1:
        yield _invalid(path, _go_string_match(match), INVALID_STRING_MATCH_MULTIPLE_VALUE_POLICY)
    if count == 0:
        yield _invalid(path, _go_string_match(match), INVALID_STRING_MATCH_MISSED_VALUE_POLICY)


# -- references --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AnalysisRef:
    path: str
    analysis: RolloutAnalysis
    background: bool


def _service_refs(rollout: Rollout) -> list[tuple[str, str, str]]:
    """(role, field path, service name) of every service the rollout names, in Argo's order."""
    strategy = rollout.spec.strategy
    refs: list[tuple[str, str, str]] = []
    if strategy is None:
        return refs
    if strategy.blue_green is not None:
        bg = strategy.blue_green
        refs.append(("active", "spec.strategy.blueGreen.activeService", bg.active_service))
        refs.append(("preview", "spec.strategy.blueGreen.previewService", bg.preview_service or ""))
    elif strategy.canary is not None:
        canary = strategy.canary
        base = "spec.strategy.canary"
        refs.append(("stable", f"{base}.stableService", canary.stable_service or ""))
        refs.append(("canary", f"{base}.canaryService", canary.canary_service or ""))
        if canary.ping_pong is not None:
            refs.append(("ping", f"{base}.pingPong.pingService", canary.ping_pong.ping_service))
            refs.append(("pong", f"{base}.pingPong.pongService", canary.ping_pong.pong_service))
    return [ref for ref in refs if ref[2]]


def _analysis_refs(rollout: Rollout) -> list[_AnalysisRef]:
    strategy = rollout.spec.strategy
    refs: list[_AnalysisRef] = []
    if strategy is None:
        return refs
    if strategy.blue_green is not None:
        bg = strategy.blue_green
        base = "spec.strategy.blueGreen"
        if bg.pre_promotion_analysis is not None:
            path = f"{base}.prePromotionAnalysis.templates"
            refs.append(_AnalysisRef(path, bg.pre_promotion_analysis, False))
        if bg.post_promotion_analysis is not None:
            path = f"{base}.postPromotionAnalysis.templates"
            refs.append(_AnalysisRef(path, bg.post_promotion_analysis, False))
    elif strategy.canary is not None:
        canary = strategy.canary
        for i, step in enumerate(canary.steps or []):
            if step.analysis is not None:
                path = f"spec.strategy.canary.steps[{i}].analysis.templates"
                refs.append(_AnalysisRef(path, step.analysis, False))
        if canary.analysis is not None:
            path = "spec.strategy.canary.analysis.templates"
            refs.append(_AnalysisRef(path, canary.analysis, True))
    return refs


def reference_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """Argo's checks of the objects a rollout refers to: first the look-ups (a missing service
    or template ends them, as in Argo's controller), then `ValidateRolloutReferencedResources`."""
    services = _service_refs(rollout)
    for _role, path, name in services:
        if name not in references.services:
            return [_invalid(path, go_quote(name), SERVICE_NOT_FOUND.format(name))]
    resolved: list[
        tuple[_AnalysisRef, list[tuple[str, AnalysisTemplate | ClusterAnalysisTemplate]]]
    ]
    resolved = []
    for ref in _analysis_refs(rollout):
        templates: list[tuple[str, AnalysisTemplate | ClusterAnalysisTemplate]] = []
        for template_ref in ref.analysis.templates or []:
            name = template_ref.template_name or ""
            if template_ref.cluster_scope:
                cluster = references.cluster_analysis_templates.get(name)
                if cluster is None:
                    message = CLUSTER_ANALYSIS_TEMPLATE_NOT_FOUND.format(name)
                    return [_invalid(ref.path, go_quote(name), message)]
                templates.append((name, cluster))
            else:
                namespaced = references.analysis_templates.get(name)
                if namespaced is None:
                    message = ANALYSIS_TEMPLATE_NOT_FOUND.format(name)
                    return [_invalid(ref.path, go_quote(name), message)]
                templates.append((name, namespaced))
        resolved.append((ref, templates))
    ingress_lookup = _ingress_lookup_errors(rollout, references)
    if ingress_lookup:
        return ingress_lookup
    virtual_service_lookup = _virtual_service_lookup_errors(rollout, references)
    if virtual_service_lookup:
        return virtual_service_lookup
    mapping_lookup = _ambassador_lookup_errors(rollout, references)
    if mapping_lookup:
        return mapping_lookup
    app_mesh_lookup = _app_mesh_lookup_errors(rollout, references)
    if app_mesh_lookup:
        return app_mesh_lookup
    gateway_lookup = _gateway_api_errors(rollout, references)
    if gateway_lookup:
        return gateway_lookup

    errors: list[ValidationError] = []
    for role, path, name in services:
        errors.extend(_service_errors(rollout, role, path, references.services[name]))
    for ref, templates in resolved:
        errors.extend(_analysis_template_errors(rollout, ref, templates))
    errors.extend(_ingress_errors(rollout, references))
    errors.extend(_virtual_service_errors(rollout, references))
    errors.extend(_ambassador_errors(rollout, references))
    errors.extend(_app_mesh_errors(rollout, references))
    return errors


_ROUTING_PATH = "spec.strategy.canary.trafficRouting"
_NGINX_PATH = f"{_ROUTING_PATH}.nginx"
_ALB_PATH = f"{_ROUTING_PATH}.alb"


def _go_strings(names: list[str]) -> str:
    return "[]string{" + ", ".join(go_quote(n) for n in names) + "}"


def _nginx_ingress_refs(rollout: Rollout) -> list[tuple[str, str, str]]:
    """(field path, Go-rendered field value, name) of each stable Ingress the nginx router
    uses: `stableIngresses` when set, else `stableIngress`."""
    strategy = rollout.spec.strategy
    canary = strategy.canary if strategy else None
    routing = canary.traffic_routing if canary else None
    nginx = routing.nginx if routing else None
    if nginx is None:
        return []
    if nginx.stable_ingresses is not None:
        value = _go_strings(nginx.stable_ingresses)
        return [(f"{_NGINX_PATH}.stableIngresses", value, n) for n in nginx.stable_ingresses]
    name = nginx.stable_ingress or ""
    return [(f"{_NGINX_PATH}.stableIngress", go_quote(name), name)]


def _alb_ingress_refs(rollout: Rollout) -> list[tuple[str, str, str]]:
    """(field path, Go-rendered field value, name) of each Ingress the ALB router uses:
    `ingresses` when set, else `ingress`."""
    strategy = rollout.spec.strategy
    canary = strategy.canary if strategy else None
    routing = canary.traffic_routing if canary else None
    alb = routing.alb if routing else None
    if alb is None:
        return []
    if alb.ingresses is not None:
        value = _go_strings(alb.ingresses)
        return [(f"{_ALB_PATH}.ingresses", value, n) for n in alb.ingresses]
    name = alb.ingress or ""
    return [(f"{_ALB_PATH}.ingress", go_quote(name), name)]


def _ingress_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    """Argo's ValidateRolloutNginxIngressesConfig and ValidateRolloutAlbIngressesConfig, then
    the look-up of each Ingress (the ALB router's when it is configured, else nginx's)."""
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    if routing is None:
        return []
    nginx, alb = routing.nginx, routing.alb
    if nginx is not None:
        single, multiple = bool(nginx.stable_ingress), nginx.stable_ingresses is not None
        if single and multiple:
            return [ValidationError(_NGINX_PATH, NGINX_BOTH_INGRESSES, ErrorType.INTERNAL)]
        if not single and not multiple:
            return [ValidationError(_NGINX_PATH, NGINX_NO_INGRESS, ErrorType.INTERNAL)]
    if alb is not None:
        single, multiple = bool(alb.ingress), alb.ingresses is not None
        if single and multiple:
            return [ValidationError(_ALB_PATH, ALB_BOTH_INGRESSES, ErrorType.INTERNAL)]
        if not single and not multiple:
            return [ValidationError(_ALB_PATH, ALB_NO_INGRESS, ErrorType.INTERNAL)]
    refs = _alb_ingress_refs(rollout) if alb is not None else _nginx_ingress_refs(rollout)
    for path, value, name in refs:
        if name not in references.ingresses:
            return [_invalid(path, value, INGRESS_NOT_FOUND.format(name))]
    return []


def _ingress_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """Argo's ValidateIngress: each Ingress routes to the stable Service (nginx), or to the ALB
    router's action Service (`rootService`, else the stable one). Argo validates the Ingresses
    it looked up: the ALB router's when it is configured, else nginx's."""
    strategy = rollout.spec.strategy
    canary = strategy.canary if strategy else None
    stable_service = (canary.stable_service if canary else "") or ""
    routing = canary.traffic_routing if canary else None
    errors = []
    if routing is not None and routing.alb is not None:
        action = routing.alb.root_service or stable_service
        multiple = routing.alb.ingresses is not None
        for path, value, name in _alb_ingress_refs(rollout):
            ingress = references.ingresses[name]
            if not uses_service(dict(ingress), action):
                message = INGRESS_WITHOUT_STABLE_RULE.format(name, action)
                errors.append(_invalid(path, go_quote(name) if multiple else value, message))
        return errors
    for path, _value, name in _nginx_ingress_refs(rollout):
        ingress = references.ingresses[name]
        if not uses_service(dict(ingress), stable_service):
            message = INGRESS_WITHOUT_STABLE_RULE.format(name, stable_service)
            errors.append(_invalid(path, go_quote(name), message))
    return errors


_ISTIO_PATH = "spec.strategy.canary.trafficRouting.istio"


def _istio(rollout: Rollout) -> IstioTrafficRouting | None:
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    return routing.istio if routing else None


def _virtual_service_refs(
    rollout: Rollout,
) -> list[tuple[str, IstioVirtualService, RouterRef]]:
    """(field path, spec, reference) of each VirtualService the Istio router re-weights."""
    istio = _istio(rollout)
    if istio is None:
        return []
    field = "virtualServices" if istio.virtual_services else "virtualService"
    namespace = rollout.metadata.namespace or ""
    return [
        (
            f"{_ISTIO_PATH}.{field}.name",
            vs,
            RouterRef("VirtualService", *split_namespaced(vs.name, namespace)),
        )
        for vs in istiorouter.virtual_services(istio)
    ]


def _virtual_service_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    """Argo's ValidateRolloutVirtualServicesConfig, then the look-up of each VirtualService
    (skipped when the router objects were not looked up)."""
    istio = _istio(rollout)
    if istio is None:
        return []
    if bool(istio.virtual_services) == (istio.virtual_service is not None):
        return [ValidationError(_ISTIO_PATH, ISTIO_VIRTUAL_SERVICES_CONFIG, ErrorType.INTERNAL)]
    served = references.served_router_kinds
    if served is None:
        return []
    for path, _vs, ref in _virtual_service_refs(rollout):
        if "VirtualService" not in served or ref not in references.router_objects:
            return [_invalid(path, go_quote(ref.name), VIRTUAL_SERVICE_NOT_FOUND.format(ref.name))]
    return []


def _virtual_service_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    """Argo's ValidateVirtualService: the routes the rollout names exist in each
    VirtualService, and send traffic to both the canary and the stable."""
    istio = _istio(rollout)
    if istio is None or references.served_router_kinds is None:
        return []
    strategy = rollout.spec.strategy
    canary = strategy.canary if strategy else None
    rule = istio.destination_rule
    stable_service, canary_service = (
        stable_and_canary_services(canary, rollout.status, ping_pong_preferred=False)
        if canary is not None
        else ("", "")
    )
    targets = istiorouter.Targets(
        canary_service=canary_service,
        stable_service=stable_service,
        canary_subset=rule.canary_subset_name if rule else "",
        stable_subset=rule.stable_subset_name if rule else "",
        subset_level=rule is not None,
    )
    routing = canary.traffic_routing if canary else None
    managed = list((routing.managed_routes if routing else None) or [])
    errors = []
    for path, vs, ref in _virtual_service_refs(rollout):
        obj = references.router_objects.get(ref)
        if obj is None:
            continue
        spec = dict(obj.get("spec") or {})
        value = go_quote(ref.name)
        http, tls, tcp = (istiorouter.route_list(spec, f) for f in ("http", "tls", "tcp"))
        if http is None and tls is None and tcp is None:
            errors.append(_invalid(path, value, VIRTUAL_SERVICE_WITHOUT_ROUTES))
        for kind, routes in (("HTTP", http), ("TLS", tls), ("TCP", tcp)):
            if routes is None:
                continue
            try:
                _check_istio_routes(kind, routes, vs=vs, targets=targets, managed=managed)
            except TrafficRoutingError as err:
                message = VIRTUAL_SERVICE_INVALID_ROUTES.format(kind, err)
                errors.append(_invalid(path, value, message))
    return errors


def _check_istio_routes(
    kind: str,
    routes: list[dict[str, Any]],
    *,
    vs: IstioVirtualService,
    targets: istiorouter.Targets,
    managed: list[ManagedRoute],
) -> None:
    if kind == "HTTP":
        istiorouter.validate_http_routes(
            route_names=vs.routes or [], http=routes, targets=targets, managed=managed
        )
    elif kind == "TLS":
        istiorouter.validate_tls_routes(wanted=vs.tls_routes or [], tls=routes, targets=targets)
    else:
        istiorouter.validate_tcp_routes(wanted=vs.tcp_routes or [], tcp=routes, targets=targets)


def _routing(rollout: Rollout) -> RolloutTrafficRouting | None:
    strategy = rollout.spec.strategy
    return strategy.canary.traffic_routing if strategy and strategy.canary else None


def _router_version(references: ReferencedResources, kind: str) -> r.Resource:
    return references.router_versions.get(kind) or r.ROUTER_OBJECTS[kind][0]


_AMBASSADOR_PATH = f"{_ROUTING_PATH}.ambassador.mappings"


def _ambassador_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    """Argo's getAmbassadorMappings: at least one Mapping, each found (the API server's
    NotFound; a kind not served reads the same, as from Argo's dynamic client)."""
    routing = _routing(rollout)
    config = routing.ambassador if routing else None
    if config is None:
        return []
    if not config.mappings:
        return [_invalid(_AMBASSADOR_PATH, "null", AMBASSADOR_NO_MAPPINGS)]
    if references.served_router_kinds is None:
        return []
    namespace = rollout.metadata.namespace or ""
    resource = _router_version(references, ambassador.KIND)
    for name in config.mappings:
        ref = RouterRef(ambassador.KIND, namespace, name)
        if ambassador.KIND not in references.served_router_kinds or (
            ref not in references.router_objects
        ):
            message = ambassador.not_found_message(resource, name)
            return [_invalid(_AMBASSADOR_PATH, go_quote(name), message)]
    return []


def _ambassador_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """Argo's ValidateAmbassadorMapping: a Mapping the canary copies must not set a weight
    (the field path is Argo's, the Mapping's own)."""
    routing = _routing(rollout)
    config = routing.ambassador if routing else None
    if config is None:
        return []
    namespace = rollout.metadata.namespace or ""
    errors = []
    for name in config.mappings:
        mapping = references.router_objects.get(RouterRef(ambassador.KIND, namespace, name))
        if mapping is not None and ambassador.mapping_weight(dict(mapping)) != 0:
            message = ambassador.WEIGHT_DEFINED_MESSAGE.format(name)
            errors.append(_invalid("spec.weight", go_quote(name), message))
    return errors


#: Argo's path, in lower case as it writes it.
_APP_MESH_PATH = f"{_ROUTING_PATH}.appmesh.virtualService"


def _app_mesh_router(
    rollout: Rollout, references: ReferencedResources
) -> tuple[list[ValidationError], Mapping[str, Any] | None]:
    """Argo's getReferencedAppMeshResources: (its error, the VirtualRouter found). A
    VirtualService whose provider is not a VirtualRouter fails Argo's sync without a spec error:
    left to the reconcile (appmesh.reference_error)."""
    routing = _routing(rollout)
    config = routing.app_mesh if routing else None
    if config is None:
        return [], None
    if config.virtual_service is None:
        return [_invalid(_APP_MESH_PATH, "null", APP_MESH_NO_VIRTUAL_SERVICE)], None
    served = references.served_router_kinds
    if served is None:
        return [], None
    namespace = rollout.metadata.namespace or ""
    name = config.virtual_service.name
    value = go_quote(f"{name}.{namespace}")
    vs = references.router_objects.get(RouterRef(appmesh.VIRTUAL_SERVICE, namespace, name))
    if appmesh.VIRTUAL_SERVICE not in served or vs is None:
        resource = _router_version(references, appmesh.VIRTUAL_SERVICE)
        message = f'{resource.plural}.{resource.group} "{name}" not found'
        return [_invalid(_APP_MESH_PATH, value, message)], None
    ref = virtual_router_ref(dict(vs))
    if ref is None:
        return [], None
    router = references.router_objects.get(ref)
    if appmesh.VIRTUAL_ROUTER not in served or router is None:
        resource = _router_version(references, appmesh.VIRTUAL_ROUTER)
        message = f'{resource.plural}.{resource.group} "{ref.name}" not found'
        return [_invalid(_APP_MESH_PATH, value, message)], None
    return [], router


def _app_mesh_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    return _app_mesh_router(rollout, references)[0]


def _go_any(value: Any) -> str:
    """Go's `%s` of a decoded JSON value (a route's name)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return f"%!s(bool={_go_bool(value)})"
    if isinstance(value, int | float):
        return f"%!s({'int64' if isinstance(value, int) else 'float64'}={value})"
    return _go_value(value)


def _app_mesh_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """Argo's ValidateAppMeshVirtualRouter: routes, each of a supported type with exactly two
    weighted targets (the first error only, as Argo returns)."""
    _, router = _app_mesh_router(rollout, references)
    if router is None:
        return []
    name = str((router.get("metadata") or {}).get("name", ""))
    value = go_quote(name)
    routes = (router.get("spec") or {}).get("routes")
    if not isinstance(routes, list) or not routes:
        return [_invalid("spec.routes", value, APP_MESH_NO_ROUTES.format(name))]
    for index, route in enumerate(routes):
        path = f"spec.routes[{index}]"
        if not isinstance(route, dict):
            return [_invalid(path, value, APP_MESH_INVALID_ROUTE.format(name, index))]
        route_name = _go_any(route.get("name"))
        try:
            rule, route_type = appmesh.route_rule(route)
        except TrafficRoutingError as err:
            message = APP_MESH_ROUTE_DETAILS.format(name, route_name, err)
            return [_invalid(path, value, message)]
        targets_path = f"{path}.{route_type}.action.weightedTargets"
        action = rule.get("action")
        targets = action.get("weightedTargets") if isinstance(action, dict) else None
        if not isinstance(targets, list):
            message = APP_MESH_INVALID_ACTION.format(name, route_name)
            return [_invalid(targets_path, value, message)]
        if len(targets) != 2:
            message = APP_MESH_TARGET_COUNT.format(len(targets), name, route_name)
            return [_invalid(targets_path, value, message)]
    return []


def _gateway_api_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """The Gateway API router's routes: at least one named, each of a kind the API server
    serves, each found (in the config's namespace, else the rollout's)."""
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    if routing is None:
        return []
    path = _gateway_api_path(routing)
    try:
        config = gatewayapi.config_of(routing)
    except TrafficRoutingError as err:
        return [ValidationError(path, str(err), ErrorType.INVALID, "{...}")]
    if config is None:
        return []
    routes = gatewayapi.routes(config)
    if not routes:
        return [ValidationError(path, gatewayapi.NO_ROUTES_MESSAGE, ErrorType.REQUIRED)]
    if references.served_router_kinds is None:
        return []
    namespace = config.namespace or rollout.metadata.namespace or ""
    for route in routes:
        field = f"{path}.{gatewayapi.FIELDS[route.kind]}"
        if route.kind not in references.served_router_kinds:
            message = not_served_message(route.kind)
            return [_invalid(field, go_quote(route.name), message)]
        if RouterRef(route.kind, namespace, route.name) not in references.router_objects:
            message = gatewayapi.not_found_message(route.kind, route.name)
            return [_invalid(field, go_quote(route.name), message)]
    return []


def _has_rule_with_service(ingress: Mapping[str, Any], service: str) -> bool:
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            if ((path.get("backend") or {}).get("service") or {}).get("name") == service:
                return True
    return False


def _service_errors(
    rollout: Rollout, role: str, path: str, service: Mapping[str, Any]
) -> Iterator[ValidationError]:
    meta = service.get("metadata") or {}
    name = str(meta.get("name") or "")
    selector = (service.get("spec") or {}).get("selector") or {}
    template_labels = ((rollout.spec.template or {}).get("metadata") or {}).get("labels") or {}
    extra = _role_labels(rollout, role, name)
    for key in sorted(selector):  # Go ranges over the map in random order; sorted is stable
        if key == "rollouts-pod-template-hash":
            continue
        value = selector[key]
        if template_labels.get(key) != value and extra.get(key) != value:
            yield _invalid(path, go_quote(name), SERVICE_UNMATCHED_LABEL.format(name, key))
    managed_by = (meta.get("annotations") or {}).get(MANAGED_BY_ROLLOUTS_ANNOTATION)
    if managed_by is not None and managed_by != rollout.metadata.name:
        yield _invalid(path, go_quote(name), SERVICE_MANAGED_BY_ANOTHER_ROLLOUT.format(name))


def _role_labels(rollout: Rollout, role: str, service_name: str) -> Mapping[str, str]:
    """The labels the rollout adds to pods in the service's role (`validSvcSelectorForType`)."""
    strategy = rollout.spec.strategy
    if strategy is None:
        return {}
    canary, bg = strategy.canary, strategy.blue_green
    candidates = {
        "stable": (canary and canary.stable_service, canary and canary.stable_metadata),
        "canary": (canary and canary.canary_service, canary and canary.canary_metadata),
        "active": (bg and bg.active_service, bg and bg.active_metadata),
        "preview": (bg and bg.preview_service, bg and bg.preview_metadata),
    }
    owner, metadata = candidates.get(role, (None, None))
    if owner != service_name or not metadata:
        return {}
    return metadata.labels or {}


def _analysis_template_errors(
    rollout: Rollout,
    ref: _AnalysisRef,
    templates: Sequence[tuple[str, AnalysisTemplate | ClusterAnalysisTemplate]],
) -> Iterator[ValidationError]:
    names = "[" + " ".join(name for name, _ in templates) + "]"
    value = go_quote(f"templateNames: {names}")
    merge_error = _merge_args_error(ref.analysis, [t for _, t in templates])
    if merge_error is not None:
        yield _invalid(ref.path, value, merge_error)
        return
    for name, template in templates:
        args = template.spec.args or []
        if not ref.background:
            for arg in args:
                if arg.value is not None and arg.value_from is not None:
                    message = f"arg '{arg.name}' has both Value and ValueFrom fields"
                    yield _invalid(ref.path, go_quote(name), f"AnalysisTemplate {name}: {message}")
                    break
            else:
                for metric in template.spec.metrics or []:
                    if _runs_indefinitely(metric):
                        count = "<nil>" if metric.count is None else str(metric.count)
                        message = (
                            f"AnalysisTemplate {name} has metric {metric.name} which runs "
                            f"indefinitely. Invalid value for count: {count}"
                        )
                        yield _invalid(ref.path, go_quote(name), message)
        else:
            rollout_args = {arg.name for arg in ref.analysis.args or []}
            for arg in args:
                if arg.value is not None or arg.value_from is not None:
                    continue
                if ref.analysis.args is None:
                    yield _invalid(ref.path, go_quote(name), MISSING_BACKGROUND_ARGS)
                elif arg.name not in rollout_args:
                    yield _invalid(ref.path, go_quote(name), arg.name)


def _runs_indefinitely(metric: Metric) -> bool:
    """`Metric.EffectiveCount() == nil`: no (or a zero) count, with an interval."""
    count = metric.count
    zero = count is None or (_int_value(count) if isinstance(count, str) else count) == 0
    return zero and bool(metric.interval)


def _merge_args_error(
    analysis: RolloutAnalysis, templates: Sequence[AnalysisTemplate | ClusterAnalysisTemplate]
) -> str | None:
    """Argo's `flattenArgs` + `MergeArgs`: template arguments combined, then given values by the
    rollout; an argument left without a value or valueFrom is an error."""
    combined: dict[str, tuple[str | None, bool]] = {}
    # Argo flattens namespaced templates before cluster templates.
    ordered: list[AnalysisTemplate | ClusterAnalysisTemplate] = [
        t for t in templates if isinstance(t, AnalysisTemplate)
    ]
    ordered += [t for t in templates if isinstance(t, ClusterAnalysisTemplate)]
    for template in ordered:
        for arg in template.spec.args or []:
            new = (arg.value, arg.value_from is not None)
            if arg.name in combined:
                prev_value, _ = combined[arg.name]
                if prev_value is not None and arg.value is not None and prev_value != arg.value:
                    return (
                        f"Argument `{arg.name}` specified multiple times with different values: "
                        f"'{prev_value}', '{arg.value}'"
                    )
                if prev_value is None:
                    combined[arg.name] = new
            else:
                combined[arg.name] = new
    # Every rollout argument resolves (a value, or a pod-template hash or field reference).
    for rollout_arg in analysis.args or []:
        if rollout_arg.name in combined:
            combined[rollout_arg.name] = (rollout_arg.value or "", True)
    for name, (value, has_value_from) in combined.items():
        if value is None and not has_value_from:
            return f"args.{name} was not resolved"
    return None


# -- model errors ------------------------------------------------------------------------------

_TYPE_TAGS = frozenset({"int", "str", "bool", "float", "list", "dict", "none"})


def _from_pydantic(exc: pydantic.ValidationError) -> ValidationError:
    errors = exc.errors()
    first = errors[0]

    def base(loc: Sequence[int | str]) -> tuple[int | str, ...]:
        return tuple(p for p in loc if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p)))

    loc = base(first["loc"])
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    path = path or "<root>"
    if first["type"] == "missing":
        return _required(path, "")
    same = [e for e in errors if base(e["loc"]) == loc]
    if len(same) > 1:
        tags = [str(e["loc"][-1]) for e in same if e["loc"] and e["loc"][-1] != loc[-1:][0]]
        message = "Input should be a valid " + " or ".join(tags) if tags else first["msg"]
    else:
        message = first["msg"]
    return _invalid(path, _go_value(first.get("input")), message)


def _go_value(value: Any) -> str:
    if isinstance(value, bool):
        return _go_bool(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
