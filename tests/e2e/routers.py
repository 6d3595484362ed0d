"""The traffic-router scenarios (nginx, ALB, SMI, Istio, Gateway API, Traefik, APISIX,
Ambassador, App Mesh), run concurrently with the scenarios of test_rollouts.py by the RBAC audit
(test_rbac.py) on both CRD shapes, with real watcher, beat and worker processes. The routers'
CRDs are installed through the embedded API's CRD support (tests/support/routercrds.py); the
weights are read from the router's own object (for ALB, the action annotation on the user's
Ingress):

- the weights follow setWeight step by step, and end 0/100 after promotion with the stable
  Service on the new pod hash;
- on abort the weight goes back to the stable before the canary is scaled down;
- Istio and Gateway API: a header route and a mirror route appear at their steps and are gone
  at the end; ALB: a header route; nginx, SMI, Traefik, APISIX, Ambassador and App Mesh:
  setCanaryScale keeps the canary at its replicas while the weight moves;
- Ambassador and App Mesh: someone else's edit of the weight (and App Mesh's VirtualNode hash)
  is put back while paused, and what the router made goes at the end (Ambassador's canary
  Mapping, 5 s after its weight went to 0). App Mesh's edit is of its VirtualRouter, which no
  rollout names: it reaches the rollout through the VirtualNodes its routes target.
- ALB: someone else's edit of the action annotation is put back (the Ingress's event wakes the
  rollout), their other annotations kept.
- Gateway API: an experiment template's Service is a backendRef of the route, with its weight,
  while the experiment runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import NotFound
from rollout_workers.routerrefs import GATEWAY_API_PLUGIN

if TYPE_CHECKING:
    from tests.e2e.test_rollouts import World

Obj = dict[str, Any]
TIMEOUT = 150.0

HEADER_ROUTE = {"setHeaderRoute": {"name": "header", "match": [
    {"headerName": "x-canary", "headerValue": {"exact": "yes"}}]}}  # fmt: skip
MIRROR_ROUTE = {"setMirrorRoute": {"name": "mirror", "percentage": 50, "match": [
    {"method": {"exact": "GET"}, "path": {"prefix": "/"}}]}}  # fmt: skip
MANAGED_ROUTES = [{"name": "header"}, {"name": "mirror"}]


@dataclass(frozen=True)
class Router:
    """How a scenario sets up one router and reads its state back."""

    name: str
    objects: Callable[[str, str], list[Obj]]  # (rollout, namespace) -> router objects to apply
    routing: Callable[[str, str], Obj]  # (rollout, namespace) -> trafficRouting
    weight: Callable[[World, str], int | None]  # the canary's weight on the router's object
    routes: Callable[[World, str], int]  # how many header/mirror routes the object holds
    #: The pod hash each subset selects (subset-level routing), else None.
    subsets: Callable[[World, str], dict[str, str]] | None = None
    #: Header and mirror routes (Istio, Gateway API); the others run setCanaryScale instead.
    managed_routes: bool = False
    #: Someone else's edit of the router's objects (the canary's weight to 90, ...), which the
    #: controller puts back: the edit scenario runs for the routers that have one.
    tamper: Callable[[World, str], None] | None = None
    #: What the router made for the update is gone (checked after promotion), else None.
    cleaned: Callable[[World, str], bool] | None = None
    #: A header route only (ALB, which has no mirror routes), instead of setCanaryScale.
    header_routes: bool = False


def services(name: str) -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-{kind}"},
         "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}
        for kind in ("stable", "canary")
    ]  # fmt: skip


def get(w: World, resource: r.Resource, name: str) -> Obj | None:
    try:
        return w.kube.get(resource, w.namespace, name)
    except NotFound:
        return None


# -- nginx --------------------------------------------------------------------------------------

NGINX_WEIGHT = "nginx.ingress.kubernetes.io/canary-weight"


def nginx_objects(name: str, ns: str) -> list[Obj]:
    """A stable Ingress `<name>-ing` sending `/` to the stable Service."""
    backend = {"service": {"name": f"{name}-stable", "port": {"number": 80}}}
    return [{
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": f"{name}-ing"},
        "spec": {"rules": [{"host": f"{name}.example", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": backend}]}}]},
    }]  # fmt: skip


def nginx_weight(w: World, name: str) -> int | None:
    """The canary Ingress's canary-weight annotation (None while there is no canary Ingress)."""
    ingress = get(w, r.INGRESSES, f"{name}-{name}-ing-canary")
    if ingress is None:
        return None
    return int(ingress["metadata"]["annotations"][NGINX_WEIGHT])


NGINX = Router(
    "nginx",
    objects=nginx_objects,
    routing=lambda name, ns: {"nginx": {"stableIngress": f"{name}-ing"}},
    weight=nginx_weight,
    routes=lambda w, name: 0,
)


# -- ALB ----------------------------------------------------------------------------------------

ALB_PREFIX = "alb.ingress.kubernetes.io"


def alb_objects(name: str, ns: str) -> list[Obj]:
    """An ALB Ingress `<name>-ing` sending `/` to the stable Service on `use-annotation` (the
    AWS Load Balancer Controller reads the action annotation of that name)."""
    backend = {"service": {"name": f"{name}-stable", "port": {"name": "use-annotation"}}}
    return [{
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": f"{name}-ing", "annotations": {"kubernetes.io/ingress.class": "alb"}},
        "spec": {"rules": [{"host": f"{name}.example", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": backend}]}}]},
    }]  # fmt: skip


def alb_annotations(w: World, name: str) -> dict[str, str]:
    ingress = get(w, r.INGRESSES, f"{name}-ing") or {}
    return dict((ingress.get("metadata") or {}).get("annotations") or {})


def alb_weight(w: World, name: str) -> int | None:
    """The canary's weight in the forward action on the stable Service's action annotation."""
    action = alb_annotations(w, name).get(f"{ALB_PREFIX}/actions.{name}-stable")
    if action is None:
        return None
    groups = json.loads(action)["ForwardConfig"]["TargetGroups"]
    return next((int(g["Weight"]) for g in groups if g["ServiceName"] == f"{name}-canary"), None)


ALB = Router(
    "alb",
    objects=alb_objects,
    routing=lambda name, ns: {
        "alb": {"ingress": f"{name}-ing", "servicePort": 80},
        "managedRoutes": [{"name": "header"}],
    },
    weight=alb_weight,
    header_routes=True,
    routes=lambda w, name: sum(
        1 for key in alb_annotations(w, name) if key == f"{ALB_PREFIX}/conditions.header"
    ),
)


# -- SMI ----------------------------------------------------------------------------------------


def smi_weight(w: World, name: str) -> int | None:
    split = get(w, r.TRAFFICSPLITS[0], name)
    if split is None:
        return None
    backends = {b["service"]: int(b["weight"]) for b in split["spec"]["backends"]}
    return backends.get(f"{name}-canary")


SMI = Router(
    "smi",
    objects=lambda name, ns: [],
    routing=lambda name, ns: {"smi": {}},
    weight=smi_weight,
    routes=lambda w, name: 0,
)


# -- Istio --------------------------------------------------------------------------------------


def istio_objects(name: str, ns: str) -> list[Obj]:
    route = [
        {"destination": {"host": f"{name}-stable"}, "weight": 100},
        {"destination": {"host": f"{name}-canary"}, "weight": 0},
    ]
    return [{
        "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
        "metadata": {"name": f"{name}-vs"},
        "spec": {"hosts": [f"{name}.example"], "http": [{"name": "primary", "route": route}]},
    }]  # fmt: skip


def istio_http(w: World, name: str) -> list[Obj]:
    vs = get(w, r.VIRTUALSERVICES[0], f"{name}-vs")
    return list((vs or {}).get("spec", {}).get("http") or [])


def istio_weight(w: World, name: str) -> int | None:
    for route in istio_http(w, name):
        if route.get("name") == "primary":
            for dest in route.get("route") or []:
                if dest["destination"]["host"] == f"{name}-canary":
                    return int(dest.get("weight") or 0)
    return None


ISTIO = Router(
    "istio",
    objects=istio_objects,
    routing=lambda name, ns: {
        "istio": {"virtualService": {"name": f"{name}-vs", "routes": ["primary"]}},
        "managedRoutes": MANAGED_ROUTES,
    },
    weight=istio_weight,
    managed_routes=True,
    routes=lambda w, name: sum(
        1 for route in istio_http(w, name) if route.get("name") in ("header", "mirror")
    ),
)


def istio_subset_objects(name: str, ns: str) -> list[Obj]:
    """Subset-level: one host, its canary and stable subsets in a DestinationRule."""
    host = f"{name}-stable"
    route = [
        {"destination": {"host": host, "subset": "stable"}, "weight": 100},
        {"destination": {"host": host, "subset": "canary"}, "weight": 0},
    ]
    return [{
        "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
        "metadata": {"name": f"{name}-vs"},
        "spec": {"hosts": [f"{name}.example"], "http": [{"name": "primary", "route": route}]},
    }, {
        "apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
        "metadata": {"name": f"{name}-dr"},
        "spec": {"host": host, "subsets": [{"name": "canary"}, {"name": "stable"}]},
    }]  # fmt: skip


def istio_subset_weight(w: World, name: str) -> int | None:
    for route in istio_http(w, name):
        if route.get("name") == "primary":
            for dest in route.get("route") or []:
                if dest["destination"].get("subset") == "canary":
                    return int(dest.get("weight") or 0)
    return None


def istio_subsets(w: World, name: str) -> dict[str, str]:
    rule = get(w, r.DESTINATIONRULES[0], f"{name}-dr") or {}
    return {
        subset["name"]: (subset.get("labels") or {}).get(r.POD_TEMPLATE_HASH_LABEL, "")
        for subset in rule.get("spec", {}).get("subsets") or []
    }


ISTIO_SUBSET = Router(
    "istio-subset",
    objects=istio_subset_objects,
    routing=lambda name, ns: {
        "istio": {
            "virtualService": {"name": f"{name}-vs", "routes": ["primary"]},
            "destinationRule": {
                "name": f"{name}-dr",
                "canarySubsetName": "canary",
                "stableSubsetName": "stable",
            },
        }
    },
    weight=istio_subset_weight,
    routes=lambda w, name: 0,
    subsets=istio_subsets,
)


# -- Gateway API (the config of Argo's gatewayAPI plugin, unchanged) ----------------------------


def gateway_objects(name: str, ns: str) -> list[Obj]:
    refs = [
        {"name": f"{name}-stable", "port": 80, "weight": 100},
        {"name": f"{name}-canary", "port": 80, "weight": 0},
    ]
    return [{
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": f"{name}-route"},
        "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": refs}]},
    }]  # fmt: skip


def gateway_rules(w: World, name: str) -> list[Obj]:
    route = get(w, r.HTTPROUTES[0], f"{name}-route")
    return list((route or {}).get("spec", {}).get("rules") or [])


def gateway_weight(w: World, name: str) -> int | None:
    for rule in gateway_rules(w, name):
        names = {ref["name"]: ref for ref in rule.get("backendRefs") or []}
        if f"{name}-stable" in names and f"{name}-canary" in names:
            return int(names[f"{name}-canary"].get("weight") or 0)
    return None


def gateway_routes(w: World, name: str) -> int:
    """Header routes are rules of their own; a mirror route is, by default, a RequestMirror
    filter on the weighted rule (the plugin's `mirrorMode: filter`)."""
    rules = gateway_rules(w, name)
    mirrors = sum(
        1 for rule in rules for f in rule.get("filters") or [] if f.get("type") == "RequestMirror"
    )
    return max(0, len(rules) - 1) + min(mirrors, 1)


GATEWAY = Router(
    "gateway",
    objects=gateway_objects,
    routing=lambda name, ns: {
        "plugins": {GATEWAY_API_PLUGIN: {"httpRoute": f"{name}-route", "namespace": ns}},
        "managedRoutes": MANAGED_ROUTES,
    },
    weight=gateway_weight,
    managed_routes=True,
    routes=gateway_routes,
)


# -- Traefik -----------------------------------------------------------------------------------


def traefik_objects(name: str, ns: str) -> list[Obj]:
    """A weighted TraefikService `<name>-ts` of the stable and canary Services."""
    return [{
        "apiVersion": "traefik.io/v1alpha1", "kind": "TraefikService",
        "metadata": {"name": f"{name}-ts"},
        "spec": {"weighted": {"services": [
            {"name": f"{name}-stable", "port": 80, "weight": 100},
            {"name": f"{name}-canary", "port": 80, "weight": 0},
        ]}},
    }]  # fmt: skip


def traefik_weight(w: World, name: str) -> int | None:
    ts = get(w, r.TRAEFIKSERVICES[0], f"{name}-ts")
    if ts is None:
        return None
    weights = {s["name"]: int(s["weight"]) for s in ts["spec"]["weighted"]["services"]}
    return weights.get(f"{name}-canary")


TRAEFIK = Router(
    "traefik",
    objects=traefik_objects,
    routing=lambda name, ns: {"traefik": {"weightedTraefikServiceName": f"{name}-ts"}},
    weight=traefik_weight,
    routes=lambda w, name: 0,
)


# -- APISIX ------------------------------------------------------------------------------------


def apisix_objects(name: str, ns: str) -> list[Obj]:
    """An ApisixRoute `<name>-route` whose rule (of the same name) splits between the stable
    and canary Services."""
    return [{
        "apiVersion": "apisix.apache.org/v2", "kind": "ApisixRoute",
        "metadata": {"name": f"{name}-route"},
        "spec": {"http": [{
            "name": f"{name}-route",
            "match": {"hosts": [f"{name}.example"], "paths": ["/*"]},
            "backends": [
                {"serviceName": f"{name}-stable", "servicePort": 80, "weight": 100},
                {"serviceName": f"{name}-canary", "servicePort": 80, "weight": 0},
            ],
        }]},
    }]  # fmt: skip


def apisix_weight(w: World, name: str) -> int | None:
    route = get(w, r.APISIXROUTES[0], f"{name}-route")
    if route is None:
        return None
    backends = {b["serviceName"]: int(b["weight"]) for b in route["spec"]["http"][0]["backends"]}
    return backends.get(f"{name}-canary")


APISIX = Router(
    "apisix",
    objects=apisix_objects,
    routing=lambda name, ns: {"apisix": {"route": {"name": f"{name}-route"}}},
    weight=apisix_weight,
    routes=lambda w, name: 0,
)


# -- Ambassador --------------------------------------------------------------------------------


def ambassador_objects(name: str, ns: str) -> list[Obj]:
    """A Mapping `<name>-mapping` to the stable Service (the canary copy is the rollout's)."""
    return [{
        "apiVersion": "getambassador.io/v3alpha1", "kind": "Mapping",
        "metadata": {"name": f"{name}-mapping"},
        "spec": {"hostname": f"{name}.example", "prefix": "/", "service": f"{name}-stable:80"},
    }]  # fmt: skip


def ambassador_canary(w: World, name: str) -> Obj | None:
    return get(w, r.MAPPINGS[0], f"{name}-mapping-canary")


def ambassador_weight(w: World, name: str) -> int | None:
    """The canary Mapping's weight (0 while there is none: all to the stable Mapping)."""
    canary = ambassador_canary(w, name)
    return 0 if canary is None else int(canary["spec"].get("weight") or 0)


def ambassador_tamper(w: World, name: str) -> None:
    w.kube.patch(r.MAPPINGS[0], w.namespace, f"{name}-mapping-canary", {"spec": {"weight": 90}})


AMBASSADOR = Router(
    "ambassador",
    objects=ambassador_objects,
    routing=lambda name, ns: {"ambassador": {"mappings": [f"{name}-mapping"]}},
    weight=ambassador_weight,
    routes=lambda w, name: 0,
    tamper=ambassador_tamper,
    cleaned=lambda w, name: ambassador_canary(w, name) is None,
)


# -- App Mesh -----------------------------------------------------------------------------------


def appmesh_targets(name: str, canary: int, stable: int) -> list[Obj]:
    return [
        {"virtualNodeRef": {"name": f"{name}-vn-canary"}, "weight": canary},
        {"virtualNodeRef": {"name": f"{name}-vn-stable"}, "weight": stable},
    ]


def appmesh_objects(name: str, ns: str) -> list[Obj]:
    """A VirtualService `<name>-vs` provided by the VirtualRouter `<name>-vr`, whose route
    splits between the VirtualNodes `<name>-vn-canary` and `<name>-vn-stable`."""
    api = "appmesh.k8s.aws/v1beta2"
    nodes = [
        {
            "apiVersion": api,
            "kind": "VirtualNode",
            "metadata": {"name": f"{name}-vn-{role}"},
            "spec": {
                "podSelector": {
                    "matchLabels": {"app": name, r.POD_TEMPLATE_HASH_LABEL: f"{role}-tbd"}
                },
                "listeners": [{"portMapping": {"port": 80, "protocol": "http"}}],
                "serviceDiscovery": {"dns": {"hostname": f"{name}-{role}.{ns}.svc.cluster.local"}},
            },
        }
        for role in ("canary", "stable")
    ]
    return [{
        "apiVersion": api, "kind": "VirtualService", "metadata": {"name": f"{name}-vs"},
        "spec": {"provider": {"virtualRouter": {"virtualRouterRef": {"name": f"{name}-vr"}}}},
    }, {
        "apiVersion": api, "kind": "VirtualRouter", "metadata": {"name": f"{name}-vr"},
        "spec": {
            "listeners": [{"portMapping": {"port": 80, "protocol": "http"}}],
            "routes": [{"name": "primary", "httpRoute": {
                "match": {"prefix": "/"},
                "action": {"weightedTargets": appmesh_targets(name, 0, 100)},
            }}],
        },
    }, *nodes]  # fmt: skip


def appmesh_weight(w: World, name: str) -> int | None:
    router = get(w, r.APPMESH_VIRTUALROUTERS[0], f"{name}-vr")
    if router is None:
        return None
    targets = router["spec"]["routes"][0]["httpRoute"]["action"]["weightedTargets"]
    weights = {t["virtualNodeRef"]["name"]: int(t["weight"]) for t in targets}
    return weights.get(f"{name}-vn-canary")


def appmesh_subsets(w: World, name: str) -> dict[str, str]:
    """The pod hash each VirtualNode selects."""
    found = {}
    for role in ("canary", "stable"):
        node = get(w, r.APPMESH_VIRTUALNODES[0], f"{name}-vn-{role}") or {}
        labels = node.get("spec", {}).get("podSelector", {}).get("matchLabels") or {}
        found[role] = str(labels.get(r.POD_TEMPLATE_HASH_LABEL, ""))
    return found


def appmesh_tamper(w: World, name: str) -> None:
    """The weights swapped on the VirtualRouter, and the canary VirtualNode pointed elsewhere."""
    route = {
        "name": "primary",
        "httpRoute": {
            "match": {"prefix": "/"},
            "action": {"weightedTargets": appmesh_targets(name, 90, 10)},
        },
    }
    w.kube.patch(
        r.APPMESH_VIRTUALROUTERS[0], w.namespace, f"{name}-vr", {"spec": {"routes": [route]}}
    )
    w.kube.patch(r.APPMESH_VIRTUALNODES[0], w.namespace, f"{name}-vn-canary", {"spec": {
        "podSelector": {"matchLabels": {r.POD_TEMPLATE_HASH_LABEL: "someone-elses"}}}})  # fmt: skip


APPMESH = Router(
    "appmesh",
    objects=appmesh_objects,
    routing=lambda name, ns: {
        "appMesh": {
            "virtualService": {"name": f"{name}-vs"},
            "virtualNodeGroup": {
                "canaryVirtualNodeRef": {"name": f"{name}-vn-canary"},
                "stableVirtualNodeRef": {"name": f"{name}-vn-stable"},
            },
        }
    },
    weight=appmesh_weight,
    routes=lambda w, name: 0,
    subsets=appmesh_subsets,
    tamper=appmesh_tamper,
)


# -- the scenarios -------------------------------------------------------------------------------


def routed_canary(w: World, router: Router, name: str, steps: list[Obj], **strategy: Any) -> None:
    from tests.e2e.test_rollouts import canary

    ro = canary(name, 5, steps)
    ro["spec"]["strategy"]["canary"].update(
        stableService=f"{name}-stable",
        canaryService=f"{name}-canary",
        trafficRouting=router.routing(name, w.namespace),
        **strategy,
    )
    w.apply(*services(name), *router.objects(name, w.namespace), ro)


def weights_follow_the_steps(router: Router) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        from tests.e2e.test_rollouts import phase, promoted, selector, status

        name = f"{router.name[:2]}w"
        with_routes = router.managed_routes or router.header_routes
        first = [{"setCanaryScale": {"replicas": 2}}] if not with_routes else []
        extra = [HEADER_ROUTE, MIRROR_ROUTE] if router.managed_routes else []
        extra = [HEADER_ROUTE] if router.header_routes else extra
        steps = [*first, {"setWeight": 20}, *extra, {"pause": {}}, {"setWeight": 60}, {"pause": {}}]
        routed_canary(w, router, name, steps)
        w.wait(name, lambda o: promoted(o) and router.weight(w, name) == 0, "first deploy")
        w.cli("set", "image", name, "app=demo:2")
        first_pause = len(first) + 1 + len(extra)
        paused = w.wait(
            name,
            lambda o: (
                phase(o) == "Paused"
                and status(o).get("currentStepIndex") == first_pause
                and router.weight(w, name) == 20
            ),
            "paused at weight 20",
        )
        new = paused["status"]["currentPodHash"]
        if with_routes:
            assert router.routes(w, name) == len(extra), "the header (and mirror) routes are set"
        else:
            assert w.replicas(name)[new] == 2, "setCanaryScale holds the canary at 2 replicas"
        w.cli("promote", name)
        w.wait(
            name,
            lambda o: (
                phase(o) == "Paused"
                and status(o).get("currentStepIndex") == first_pause + 2
                and router.weight(w, name) == 60
            ),
            "paused at weight 60",
        )
        if not with_routes:
            assert w.replicas(name)[new] == 2, "setCanaryScale still holds while the weight moves"
        w.cli("promote", name)
        done = w.wait(
            name, lambda o: promoted(o) and router.weight(w, name) == 0, "promoted, weight 0"
        )
        assert status(done)["stableRS"] == new and selector(w, f"{name}-stable") == new
        assert router.routes(w, name) == 0, "the managed routes are gone at the end"

    scenario.__name__ = f"{router.name}_1_weights_follow_the_steps"
    return scenario


def abort_weight_back_before_scale_down(router: Router) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        from tests.e2e.test_rollouts import phase, promoted, selector, status

        name = f"{router.name[:2]}{router.name[-1]}a"
        steps = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 60}, {"pause": {}}]
        routed_canary(w, router, name, steps, abortScaleDownDelaySeconds=10)
        stable = w.wait(name, promoted, "first deploy")["status"]["stableRS"]
        w.cli("set", "image", name, "app=demo:2")
        new = w.wait(
            name,
            lambda o: phase(o) == "Paused" and router.weight(w, name) == 20,
            "paused at weight 20",
        )["status"]["currentPodHash"]
        if router.subsets is not None:
            assert router.subsets(w, name) == {"canary": new, "stable": stable}
        w.cli("abort", name)
        weight_back: int | None = None
        deadline = time.monotonic() + TIMEOUT
        while True:
            weight, replicas = router.weight(w, name), w.replicas(name).get(new)
            if weight == 0 and weight_back is None:
                weight_back = replicas
            if replicas == 0:
                break
            assert time.monotonic() < deadline, f"canary not scaled down: {weight=} {replicas=}"
            time.sleep(0.1)
        assert weight_back == 1, f"the weight went back to 0 with {weight_back} canary replicas"
        aborted = w.wait(name, lambda o: phase(o) == "Degraded", "aborted")
        assert status(aborted)["stableRS"] == stable and selector(w, f"{name}-stable") == stable
        if router.subsets is not None:
            # Argo's UpdateHash: the canary subset follows the new ReplicaSet (still there,
            # scaled to 0), the stable subset the stable.
            assert router.subsets(w, name)["stable"] == stable

    scenario.__name__ = f"{router.name.replace('-', '_')}_2_abort_weight_back_before_scale_down"
    return scenario


def edit_put_back(router: Router) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        from tests.e2e.test_rollouts import phase, promoted

        assert router.tamper is not None
        name = f"{router.name[:2]}{router.name[-1]}e"
        routed_canary(w, router, name, [{"setWeight": 30}, {"pause": {}}])
        w.wait(name, lambda o: promoted(o) and router.weight(w, name) == 0, "first deploy")
        w.cli("set", "image", name, "app=demo:2")
        new = w.wait(
            name,
            lambda o: phase(o) == "Paused" and router.weight(w, name) == 30,
            "paused at weight 30",
        )["status"]["currentPodHash"]
        router.tamper(w, name)
        w.wait(
            name,
            lambda o: (
                router.weight(w, name) == 30
                and (router.subsets is None or router.subsets(w, name)["canary"] == new)
            ),
            "someone else's edit put back",
        )
        assert phase(w.rollout(name)) == "Paused", "the edit moved no step"
        w.cli("promote", name)
        w.wait(
            name,
            lambda o: (
                promoted(o)
                and router.weight(w, name) == 0
                and (router.cleaned is None or router.cleaned(w, name))
            ),
            "promoted, weight 0, what the router made is gone",
        )

    scenario.__name__ = f"{router.name}_3_someone_elses_edit_put_back"
    return scenario


def gateway_3_experiment_service_on_the_route(w: World) -> None:
    """Gateway API: an experiment step's template with a weight gets its Service added to the
    route's weighted rule with that weight, at the Service's port named http (the plugin's
    HandleExperiment), while the experiment runs; the backendRef is gone once it is over."""
    from tests.e2e.test_rollouts import canary, phase, promoted, status

    name = "gwx"
    template = {"name": "exp", "specRef": "canary", "weight": 10}
    steps = [{"setWeight": 20}, {"experiment": {"duration": "15s", "templates": [template]}},
             {"pause": {}}]  # fmt: skip
    ro = canary(name, 2, steps)
    ro["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "metrics", "containerPort": 9090},
        {"name": "http", "containerPort": 8080},
    ]
    ro["spec"]["strategy"]["canary"].update(
        stableService=f"{name}-stable",
        canaryService=f"{name}-canary",
        trafficRouting=GATEWAY.routing(name, w.namespace),
    )
    w.apply(*services(name), *GATEWAY.objects(name, w.namespace), ro)
    w.wait(name, lambda o: promoted(o) and gateway_weight(w, name) == 0, "first deploy")
    w.cli("set", "image", name, "app=demo:2")

    def experiment_refs() -> list[tuple[Any, Any]]:
        own = {f"{name}-stable", f"{name}-canary"}
        return [
            (ref.get("weight"), ref.get("port"))
            for rule in gateway_rules(w, name)
            for ref in rule.get("backendRefs") or []
            if ref.get("name") not in own
        ]

    w.wait(
        name,
        lambda o: experiment_refs() == [(10, 8080)] and gateway_weight(w, name) == 20,
        "the experiment's Service on the route",
    )
    created = {
        str(t["serviceName"])
        for ex in w.list(r.EXPERIMENTS)
        if ex["metadata"]["name"].startswith(f"{name}-")
        for t in (ex.get("status") or {}).get("templateStatuses") or []
        if t.get("serviceName")
    }
    assert len(created) == 1, created
    w.wait(
        name,
        lambda o: (
            phase(o) == "Paused"
            and status(o).get("currentStepIndex") == 2
            and experiment_refs() == []
        ),
        "past the experiment, its backendRef removed",
    )
    # The experiment deletes its Service once its pods are scaled down (the worker's delete).
    w.wait(
        name,
        lambda o: all(get(w, r.SERVICES, svc) is None for svc in created),
        "the experiment's Service deleted",
    )
    w.cli("promote", name)
    w.wait(name, lambda o: promoted(o) and gateway_weight(w, name) == 0, "promoted, weight 0")


def alb_3_an_edit_of_the_action_is_put_back(w: World) -> None:
    """Someone else sets the canary's weight in the action annotation (and adds an annotation of
    their own): the Ingress's event wakes the rollout, which puts its weight back and leaves
    their annotation alone."""
    from tests.e2e.test_rollouts import phase, promoted

    name = "ale"
    routed_canary(w, ALB, name, [{"setWeight": 30}, {"pause": {}}])
    w.wait(name, lambda o: promoted(o) and ALB.weight(w, name) == 0, "first deploy")
    w.cli("set", "image", name, "app=demo:2")
    w.wait(
        name,
        lambda o: phase(o) == "Paused" and ALB.weight(w, name) == 30,
        "paused at weight 30",
    )
    key = f"{ALB_PREFIX}/actions.{name}-stable"
    edited = json.loads(alb_annotations(w, name)[key])
    for group in edited["ForwardConfig"]["TargetGroups"]:
        group["Weight"] = 90 if group["ServiceName"] == f"{name}-canary" else 10
    w.kube.patch(
        r.INGRESSES,
        w.namespace,
        f"{name}-ing",
        {"metadata": {"annotations": {key: json.dumps(edited), "team": "payments"}}},
    )
    deadline = time.monotonic() + TIMEOUT
    while ALB.weight(w, name) != 30:
        assert time.monotonic() < deadline, f"the weight was not put back: {ALB.weight(w, name)}"
        time.sleep(0.1)
    assert alb_annotations(w, name)["team"] == "payments"
    assert phase(w.rollout(name)) == "Paused"


def scenarios(*routers: Router) -> list[Callable[[World], None]]:
    """Both scenarios for each router, and the edit one for those with a tamper; subset-level
    Istio (a variant) runs the abort one, Gateway API the experiment Service one, and ALB an
    edit of its annotation."""
    found = [
        make(router)
        for router in routers
        for make in (weights_follow_the_steps, abort_weight_back_before_scale_down)
    ]
    found += [edit_put_back(router) for router in routers if router.tamper is not None]
    if ISTIO in routers:
        found.append(abort_weight_back_before_scale_down(ISTIO_SUBSET))
    if GATEWAY in routers:
        found.append(gateway_3_experiment_service_on_the_route)
    if ALB in routers:
        found.append(alb_3_an_edit_of_the_action_is_put_back)
    return found
