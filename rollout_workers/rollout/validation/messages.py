"""What a validation error says, in Argo's words and Go's formatting.

Argo's message texts (`validation.go`, the reference checks and the controller's look-ups);
apimachinery's `field.Error` (`ValidationError`: the field path, the error type, the bad value
and Argo's message, printed as `ErrorBody` prints it); the InvalidSpec condition's message as
`createInvalidRolloutCondition` formats it (`invalid_spec_message`); and the Go renderings of the
values the errors quote (`%#v` of structs, maps and IntOrStrings, `%s` of decoded JSON). Also the
error of a decoded object the model rejects (`model_error`), reported in the same form. Separate
so that both kinds of checks (`spec`, `references`) print alike, and the texts users and
dashboards grep for are in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pydantic

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.base import IntOrString, LabelSelector
from rollout_workers.api.rollout import (
    HeaderRoutingMatch,
    SetHeaderRoute,
    SetMirrorRoute,
    StringMatch,
)
from rollout_workers.rollout.trafficrouting import istio as istiorouter

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

# -- apimachinery's field.Error ----------------------------------------------------------------


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


def required(path: str, message: str) -> ValidationError:
    return ValidationError(path, message, ErrorType.REQUIRED)


def invalid(path: str, value: str, message: str) -> ValidationError:
    return ValidationError(path, message, ErrorType.INVALID, value)


def invalid_spec_message(name: str, error: ValidationError) -> str:
    """The InvalidSpec condition's message, as Argo's `createInvalidRolloutCondition` writes it."""
    return f'The Rollout "{name}" is invalid: {error}'


# -- Go rendering ------------------------------------------------------------------------------


def go_bool(value: bool) -> str:
    return "true" if value else "false"


def go_string_map(value: Mapping[str, str] | None) -> str:
    """`%#v` of a `map[string]string` (Go prints map keys sorted)."""
    if value is None:
        return "map[string]string(nil)"
    items = ", ".join(f"{go_quote(k)}:{go_quote(value[k])}" for k in sorted(value))
    return "map[string]string{" + items + "}"


def go_int_or_string(value: IntOrString) -> str:
    """`%#v` of an `intstr.IntOrString` value."""
    if isinstance(value, int):
        return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'
    return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"


def go_label_selector(selector: LabelSelector) -> str:
    """`%#v` of a `metav1.LabelSelector` that selects everything (the only one printed)."""
    labels = go_string_map(selector.match_labels)
    if selector.match_expressions is None:
        expressions = "[]v1.LabelSelectorRequirement(nil)"
    else:
        expressions = "[]v1.LabelSelectorRequirement{}"
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"


def go_string_match(match: StringMatch | None) -> str:
    if match is None:
        return "null"
    exact, prefix, regex = (go_quote(v or "") for v in (match.exact, match.prefix, match.regex))
    return f"v1alpha1.StringMatch{{Exact:{exact}, Prefix:{prefix}, Regex:{regex}}}"


def _go_pointer(type_name: str, present: bool) -> str:
    # Go prints a heap address here; no stable rendering can match it.
    return f"(*v1alpha1.{type_name})(0xc000000000)" if present else f"(*v1alpha1.{type_name})(nil)"


def go_header_route(route: SetHeaderRoute) -> str:
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


def go_mirror_route(route: SetMirrorRoute) -> str:
    matches = "[]v1alpha1.RouteMatch(nil)" if route.match is None else "[]v1alpha1.RouteMatch{...}"
    percentage = _go_pointer("int32", route.percentage is not None).replace("v1alpha1.", "")
    return (
        f"v1alpha1.SetMirrorRoute{{Name:{go_quote(route.name)}, Match:{matches}, "
        f"Percentage:{percentage}}}"
    )


def go_strings(names: list[str]) -> str:
    return "[]string{" + ", ".join(go_quote(n) for n in names) + "}"


def go_any(value: Any) -> str:
    """Go's `%s` of a decoded JSON value (a route's name)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return f"%!s(bool={go_bool(value)})"
    if isinstance(value, int | float):
        return f"%!s({'int64' if isinstance(value, int) else 'float64'}={value})"
    return _go_value(value)


# -- model errors ------------------------------------------------------------------------------

_TYPE_TAGS = frozenset({"int", "str", "bool", "float", "list", "dict", "none"})


def model_error(exc: pydantic.ValidationError) -> ValidationError:
    """The first error of a decoded object the model rejects (a string where an integer
    belongs, a required field missing), on the offending field, in the `field.Error` form."""
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
        return required(path, "")
    same = [e for e in errors if base(e["loc"]) == loc]
    if len(same) > 1:
        tags = [str(e["loc"][-1]) for e in same if e["loc"] and e["loc"][-1] != loc[-1:][0]]
        message = "Input should be a valid " + " or ".join(tags) if tags else first["msg"]
    else:
        message = first["msg"]
    return invalid(path, _go_value(first.get("input")), message)


def _go_value(value: Any) -> str:
    if isinstance(value, bool):
        return go_bool(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
