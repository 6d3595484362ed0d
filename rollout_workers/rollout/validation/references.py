"""The checks of the objects a Rollout refers to: Argo's `validation_references.go`.

Given the objects the caller found (`ReferencedResources`): services exist, select the template's
labels and are not managed by another rollout; analysis templates exist, and their arguments
resolve with the rollout's; the Ingresses of the nginx and ALB routers exist and route to the
Service they should; Istio's VirtualServices exist and hold the routes the rollout names. The
not-found messages are the ones `rollout/controller.go` builds while fetching the references, and
a missing object ends the checks, as it ends Argo's fetching.

The referenced objects of the Ambassador router (each Mapping exists and defines no weight) and
of the App Mesh router (the VirtualService and the VirtualRouter its provider names exist, and
every route of that VirtualRouter has exactly two weighted targets) are checked as Argo's
controller checks them. The Gateway API router's config (the gatewayAPI plugin's) is checked as
the plugin would fail on it: a config naming no route (the plugin's message), a route kind the API
server does not serve, and a route that does not exist (the API server's NotFound message, which
the plugin reports).

Separate from `spec` because these checks need objects from the cache; `rollouts lint`, which has
none, runs only the spec checks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.analysis import AnalysisTemplate, ClusterAnalysisTemplate, Metric
from rollout_workers.api.rollout import (
    IstioTrafficRouting,
    IstioVirtualService,
    ManagedRoute,
    Rollout,
    RolloutAnalysis,
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
from rollout_workers.rollout.validation.messages import (
    ALB_BOTH_INGRESSES,
    ALB_NO_INGRESS,
    AMBASSADOR_NO_MAPPINGS,
    ANALYSIS_TEMPLATE_NOT_FOUND,
    APP_MESH_INVALID_ACTION,
    APP_MESH_INVALID_ROUTE,
    APP_MESH_NO_ROUTES,
    APP_MESH_NO_VIRTUAL_SERVICE,
    APP_MESH_ROUTE_DETAILS,
    APP_MESH_TARGET_COUNT,
    CLUSTER_ANALYSIS_TEMPLATE_NOT_FOUND,
    INGRESS_NOT_FOUND,
    INGRESS_WITHOUT_STABLE_RULE,
    ISTIO_VIRTUAL_SERVICES_CONFIG,
    MISSING_BACKGROUND_ARGS,
    NGINX_BOTH_INGRESSES,
    NGINX_NO_INGRESS,
    SERVICE_MANAGED_BY_ANOTHER_ROLLOUT,
    SERVICE_NOT_FOUND,
    SERVICE_UNMATCHED_LABEL,
    VIRTUAL_SERVICE_INVALID_ROUTES,
    VIRTUAL_SERVICE_NOT_FOUND,
    VIRTUAL_SERVICE_WITHOUT_ROUTES,
    ErrorType,
    ValidationError,
    go_any,
    go_strings,
    invalid,
)
from rollout_workers.rollout.validation.spec import (
    ROUTING_PATH,
    gateway_api_path,
    int_value,
    traffic_routing,
)
from rollout_workers.routerrefs import (
    RouterRef,
    split_namespaced,
    virtual_router_ref,
)

#: The annotation with which a Service names the rollout that manages it.
MANAGED_BY_ROLLOUTS_ANNOTATION = "argo-rollouts.argoproj.io/managed-by-rollouts"


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
            return [invalid(path, go_quote(name), SERVICE_NOT_FOUND.format(name))]
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
                    return [invalid(ref.path, go_quote(name), message)]
                templates.append((name, cluster))
            else:
                namespaced = references.analysis_templates.get(name)
                if namespaced is None:
                    message = ANALYSIS_TEMPLATE_NOT_FOUND.format(name)
                    return [invalid(ref.path, go_quote(name), message)]
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


_NGINX_PATH = f"{ROUTING_PATH}.nginx"
_ALB_PATH = f"{ROUTING_PATH}.alb"


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
        value = go_strings(nginx.stable_ingresses)
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
        value = go_strings(alb.ingresses)
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
            return [invalid(path, value, INGRESS_NOT_FOUND.format(name))]
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
                errors.append(invalid(path, go_quote(name) if multiple else value, message))
        return errors
    for path, _value, name in _nginx_ingress_refs(rollout):
        ingress = references.ingresses[name]
        if not uses_service(dict(ingress), stable_service):
            message = INGRESS_WITHOUT_STABLE_RULE.format(name, stable_service)
            errors.append(invalid(path, go_quote(name), message))
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
            return [invalid(path, go_quote(ref.name), VIRTUAL_SERVICE_NOT_FOUND.format(ref.name))]
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
            errors.append(invalid(path, value, VIRTUAL_SERVICE_WITHOUT_ROUTES))
        for kind, routes in (("HTTP", http), ("TLS", tls), ("TCP", tcp)):
            if routes is None:
                continue
            try:
                _check_istio_routes(kind, routes, vs=vs, targets=targets, managed=managed)
            except TrafficRoutingError as err:
                message = VIRTUAL_SERVICE_INVALID_ROUTES.format(kind, err)
                errors.append(invalid(path, value, message))
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


def _router_version(references: ReferencedResources, kind: str) -> r.Resource:
    return references.router_versions.get(kind) or r.ROUTER_OBJECTS[kind][0]


_AMBASSADOR_PATH = f"{ROUTING_PATH}.ambassador.mappings"


def _ambassador_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    """Argo's getAmbassadorMappings: at least one Mapping, each found (the API server's
    NotFound; a kind not served reads the same, as from Argo's dynamic client)."""
    routing = traffic_routing(rollout)
    config = routing.ambassador if routing else None
    if config is None:
        return []
    if not config.mappings:
        return [invalid(_AMBASSADOR_PATH, "null", AMBASSADOR_NO_MAPPINGS)]
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
            return [invalid(_AMBASSADOR_PATH, go_quote(name), message)]
    return []


def _ambassador_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """Argo's ValidateAmbassadorMapping: a Mapping the canary copies must not set a weight
    (the field path is Argo's, the Mapping's own)."""
    routing = traffic_routing(rollout)
    config = routing.ambassador if routing else None
    if config is None:
        return []
    namespace = rollout.metadata.namespace or ""
    errors = []
    for name in config.mappings:
        mapping = references.router_objects.get(RouterRef(ambassador.KIND, namespace, name))
        if mapping is not None and ambassador.mapping_weight(dict(mapping)) != 0:
            message = ambassador.WEIGHT_DEFINED_MESSAGE.format(name)
            errors.append(invalid("spec.weight", go_quote(name), message))
    return errors


#: Argo's path, in lower case as it writes it.
_APP_MESH_PATH = f"{ROUTING_PATH}.appmesh.virtualService"


def _app_mesh_router(
    rollout: Rollout, references: ReferencedResources
) -> tuple[list[ValidationError], Mapping[str, Any] | None]:
    """Argo's getReferencedAppMeshResources: (its error, the VirtualRouter found). A
    VirtualService whose provider is not a VirtualRouter fails Argo's sync without a spec error:
    left to the reconcile (appmesh.reference_error)."""
    routing = traffic_routing(rollout)
    config = routing.app_mesh if routing else None
    if config is None:
        return [], None
    if config.virtual_service is None:
        return [invalid(_APP_MESH_PATH, "null", APP_MESH_NO_VIRTUAL_SERVICE)], None
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
        return [invalid(_APP_MESH_PATH, value, message)], None
    ref = virtual_router_ref(dict(vs))
    if ref is None:
        return [], None
    router = references.router_objects.get(ref)
    if appmesh.VIRTUAL_ROUTER not in served or router is None:
        resource = _router_version(references, appmesh.VIRTUAL_ROUTER)
        message = f'{resource.plural}.{resource.group} "{ref.name}" not found'
        return [invalid(_APP_MESH_PATH, value, message)], None
    return [], router


def _app_mesh_lookup_errors(
    rollout: Rollout, references: ReferencedResources
) -> list[ValidationError]:
    return _app_mesh_router(rollout, references)[0]


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
        return [invalid("spec.routes", value, APP_MESH_NO_ROUTES.format(name))]
    for index, route in enumerate(routes):
        path = f"spec.routes[{index}]"
        if not isinstance(route, dict):
            return [invalid(path, value, APP_MESH_INVALID_ROUTE.format(name, index))]
        route_name = go_any(route.get("name"))
        try:
            rule, route_type = appmesh.route_rule(route)
        except TrafficRoutingError as err:
            message = APP_MESH_ROUTE_DETAILS.format(name, route_name, err)
            return [invalid(path, value, message)]
        targets_path = f"{path}.{route_type}.action.weightedTargets"
        action = rule.get("action")
        targets = action.get("weightedTargets") if isinstance(action, dict) else None
        if not isinstance(targets, list):
            message = APP_MESH_INVALID_ACTION.format(name, route_name)
            return [invalid(targets_path, value, message)]
        if len(targets) != 2:
            message = APP_MESH_TARGET_COUNT.format(len(targets), name, route_name)
            return [invalid(targets_path, value, message)]
    return []


def _gateway_api_errors(rollout: Rollout, references: ReferencedResources) -> list[ValidationError]:
    """The Gateway API router's routes: at least one named, each of a kind the API server
    serves, each found (in the config's namespace, else the rollout's)."""
    strategy = rollout.spec.strategy
    routing = strategy.canary.traffic_routing if strategy and strategy.canary else None
    if routing is None:
        return []
    path = gateway_api_path(routing)
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
            return [invalid(field, go_quote(route.name), message)]
        if RouterRef(route.kind, namespace, route.name) not in references.router_objects:
            message = gatewayapi.not_found_message(route.kind, route.name)
            return [invalid(field, go_quote(route.name), message)]
    return []


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
            yield invalid(path, go_quote(name), SERVICE_UNMATCHED_LABEL.format(name, key))
    managed_by = (meta.get("annotations") or {}).get(MANAGED_BY_ROLLOUTS_ANNOTATION)
    if managed_by is not None and managed_by != rollout.metadata.name:
        yield invalid(path, go_quote(name), SERVICE_MANAGED_BY_ANOTHER_ROLLOUT.format(name))


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
        yield invalid(ref.path, value, merge_error)
        return
    for name, template in templates:
        args = template.spec.args or []
        if not ref.background:
            for arg in args:
                if arg.value is not None and arg.value_from is not None:
                    message = f"arg '{arg.name}' has both Value and ValueFrom fields"
                    yield invalid(ref.path, go_quote(name), f"AnalysisTemplate {name}: {message}")
                    break
            else:
                for metric in template.spec.metrics or []:
                    if _runs_indefinitely(metric):
                        count = "<nil>" if metric.count is None else str(metric.count)
                        message = (
                            f"AnalysisTemplate {name} has metric {metric.name} which runs "
                            f"indefinitely. Invalid value for count: {count}"
                        )
                        yield invalid(ref.path, go_quote(name), message)
        else:
            rollout_args = {arg.name for arg in ref.analysis.args or []}
            for arg in args:
                if arg.value is not None or arg.value_from is not None:
                    continue
                if ref.analysis.args is None:
                    yield invalid(ref.path, go_quote(name), MISSING_BACKGROUND_ARGS)
                elif arg.name not in rollout_args:
                    yield invalid(ref.path, go_quote(name), arg.name)


def _runs_indefinitely(metric: Metric) -> bool:
    """`Metric.EffectiveCount() == nil`: no (or a zero) count, with an interval."""
    count = metric.count
    zero = count is None or (int_value(count) if isinstance(count, str) else count) == 0
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
