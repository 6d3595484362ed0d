"""The nginx router: a second, controller-owned Ingress carries the canary weight.

For each stable Ingress (`stableIngress`, or each of `stableIngresses`) the controller creates
and owns `<rollout>-<ingress>-canary` (Argo's GetCanaryIngressName, cut to 253 characters): the
stable Ingress's rules that send traffic to the stable Service, pointed at the canary Service,
with its TLS, ingressClassName and `kubernetes.io/ingress.class`, plus the annotations
`<prefix>/canary: "true"`, `<prefix>/canary-weight`, `<prefix>/canary-weight-total` (when
maxTrafficWeight is set), the rollout's `additionalIngressAnnotations` (prefixed unless they
already are) and its `canaryIngressAnnotations` (full keys, as given). The prefix is
`annotationPrefix`, by default `nginx.ingress.kubernetes.io`.

The canary Ingress's annotations, labels and spec are owned whole, as Argo's two-way patch does:
each reconcile compares them with the desired ones and patches the difference, so a change made
by someone else is undone (level-triggered). The canary Ingress is written at the stable one's
version: networking.k8s.io/v1, or on a cluster older than 1.19 the v1beta1 Ingress the watcher
found served (`serviceName` backends).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence

from rollout_workers.api.rollout import (
    NginxTrafficRouting,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import AlreadyExists, Conflict
from rollout_workers.kube.patch import merge_patch
from rollout_workers.kube.writer import fenced
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import TrafficRoutingError

log = logging.getLogger(__name__)


TYPE = "Nginx"
DEFAULT_ANNOTATION_PREFIX = "nginx.ingress.kubernetes.io"
CANARY_SUFFIX = "-canary"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
MAX_NAME_LENGTH = 253


def stable_ingress_names(nginx: NginxTrafficRouting) -> list[str]:
    """`stableIngresses` when given, else `stableIngress` (Argo's SetWeight)."""
    if nginx.stable_ingresses is not None:
        return list(nginx.stable_ingresses)
    return [nginx.stable_ingress] if nginx.stable_ingress else []


def backend_service(backend: Obj) -> str | None:
    """The Service a path's backend names: `service.name` (networking.k8s.io/v1), or
    `serviceName` (the v1beta1 Ingress)."""
    if "serviceName" in backend:
        return backend.get("serviceName")
    return (backend.get("service") or {}).get("name")


def _point_backend(backend: Obj, service: str) -> None:
    if "serviceName" in backend:
        backend["serviceName"] = service
    else:
        backend["service"]["name"] = service


def uses_service(ingress: Obj, service: str) -> bool:
    """Whether a rule of the Ingress sends a path to `service` (either Ingress version)."""
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            if backend_service(path.get("backend") or {}) == service:
                return True
    return False


def ingress_resource(ingress: Obj) -> r.Resource:
    """The version to write a canary Ingress at: the stable Ingress's (its apiVersion, else
    its shape: a v1beta1 backend names `serviceName`), as Argo's ingress wrapper does."""
    api_version = ingress.get("apiVersion")
    for res in r.INGRESS_VERSIONS:
        if res.api_version == api_version:
            return res
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            if "serviceName" in (path.get("backend") or {}):
                return r.INGRESS_VERSIONS[1]
    return r.INGRESSES


def canary_ingress_name(rollout: str, stable_ingress: str) -> str:
    prefix = f"{rollout}-{stable_ingress}"[: MAX_NAME_LENGTH - len(CANARY_SUFFIX)]
    return prefix + CANARY_SUFFIX


def build_canary_ingress(
    stable: Obj,
    *,
    name: str,
    owner: Obj,
    stable_service: str,
    canary_service: str,
    weight: int,
    nginx: NginxTrafficRouting,
    max_traffic_weight: int | None,
) -> Obj:
    """The desired canary Ingress for `stable` (raises TrafficRoutingError when no rule of the
    stable Ingress uses the stable Service)."""
    spec = stable.get("spec") or {}
    rules = []
    for rule in spec.get("rules") or []:
        copied = copy.deepcopy(rule)
        uses_stable = False
        for path in (copied.get("http") or {}).get("paths") or []:
            if backend_service(path.get("backend") or {}) == stable_service:
                _point_backend(path["backend"], canary_service)
                uses_stable = True
        if uses_stable:
            rules.append(copied)
    if not rules:
        stable_name = (stable.get("metadata") or {}).get("name", "")
        raise TrafficRoutingError(
            f"ingress `{stable_name}` has no rules using service {stable_service} backend"
        )
    prefix = nginx.annotation_prefix or DEFAULT_ANNOTATION_PREFIX
    annotations: dict[str, str] = {}
    stable_class = ((stable.get("metadata") or {}).get("annotations") or {}).get(
        INGRESS_CLASS_ANNOTATION
    )
    if stable_class is not None:
        annotations[INGRESS_CLASS_ANNOTATION] = stable_class
    for key, value in (nginx.additional_ingress_annotations or {}).items():
        annotations[key if key.startswith(prefix) else f"{prefix}/{key}"] = value
    # Full keys, as given (another controller's annotations on the canary Ingress).
    annotations.update(nginx.canary_ingress_annotations or {})
    annotations[f"{prefix}/canary"] = "true"
    annotations[f"{prefix}/canary-weight"] = str(weight)
    if max_traffic_weight is not None:
        annotations[f"{prefix}/canary-weight-total"] = str(max_traffic_weight)
    desired_spec: Obj = {"rules": rules}
    if spec.get("tls") is not None:
        desired_spec["tls"] = copy.deepcopy(spec["tls"])
    if spec.get("ingressClassName") is not None:
        desired_spec["ingressClassName"] = spec["ingressClassName"]
    return {
        "apiVersion": ingress_resource(stable).api_version,
        "kind": "Ingress",
        "metadata": {
            "name": name,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Rollout",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"].get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": desired_spec,
    }


def _owned_view(ingress: Obj) -> Obj:
    meta = ingress.get("metadata") or {}
    return {
        "metadata": {k: meta[k] for k in ("annotations", "labels") if meta.get(k)},
        "spec": ingress.get("spec") or {},
    }


def calculate_ingress_patch(current: Obj, desired: Obj) -> Obj:
    """The merge patch of the owned parts (annotations, labels, spec) of `current` into
    `desired`'s; empty when they agree."""
    return merge_patch(_owned_view(current), _owned_view(desired))


def controlled_by(obj: Obj, owner_uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == owner_uid for ref in refs)


class NginxRouter:
    """Argo's nginx reconciler; reads Ingresses from the context, writes through its writer."""

    def __init__(self, ctx: RolloutContext, nginx: NginxTrafficRouting) -> None:
        self.ctx, self.nginx = ctx, nginx

    @property
    def type(self) -> str:
        return TYPE

    def update_hash(
        self, canary_hash: str, stable_hash: str, additional: Sequence[WeightDestination] = ()
    ) -> None:
        """nginx selects by Service, not by pod hash: nothing to do."""

    def set_weight(self, weight: int, additional: Sequence[WeightDestination] = ()) -> None:
        for stable_name in stable_ingress_names(self.nginx):
            self._set_weight_on(stable_name, weight)

    def _set_weight_on(self, stable_name: str, weight: int) -> None:
        ctx = self.ctx
        name = canary_ingress_name(ctx.name, stable_name)
        stable = ctx.ingresses.get(stable_name)
        if stable is None:
            raise TrafficRoutingError(
                f"error retrieving stableIngress `{stable_name}` from cache: "
                f'ingress.networking.k8s.io "{stable_name}" not found'
            )
        canary = ctx.canary_spec
        desired = build_canary_ingress(
            stable,
            name=name,
            owner=ctx.obj,
            stable_service=canary.stable_service or "",
            canary_service=canary.canary_service or "",
            weight=weight,
            nginx=self.nginx,
            max_traffic_weight=routing.max_traffic_weight
            if (routing := canary.traffic_routing)
            else None,
        )
        resource = ingress_resource(stable)
        current = ctx.ingresses.get(name)
        if current is None:
            ctx.event(
                "CreatingCanaryIngress", f"Creating canary ingress `{name}` with weight `{weight}`"
            )
            try:
                ctx.ingresses[name] = ctx.writer.create(resource, ctx.namespace, desired)
            except AlreadyExists:
                # Created since the cache was read: look again with a fresh cache.
                raise Conflict(409, "AlreadyExists", f"canary ingress {name} exists") from None
            return
        if not controlled_by(current, str(ctx.obj["metadata"].get("uid", ""))):
            raise TrafficRoutingError(f"canary ingress `{name}` controlled by different object")
        patch = calculate_ingress_patch(current, desired)
        if not patch:
            return
        log.info("%s: updating canary ingress %s to weight %d", ctx.key, name, weight)
        ctx.event("PatchingCanaryIngress", f"Updating Ingress `{name}` to desiredWeight '{weight}'")
        version = (current.get("metadata") or {}).get("resourceVersion")
        ctx.ingresses[name] = ctx.writer.patch(
            resource, ctx.namespace, name, fenced(patch, version)
        )

    def set_header_route(self, route: SetHeaderRoute) -> None:
        """Header routes are not an nginx feature in Argo (validation rejects the step)."""

    def set_mirror_route(self, route: SetMirrorRoute) -> None:
        """Mirror routes are not an nginx feature in Argo (validation rejects the step)."""

    def verify_weight(
        self, weight: int, additional: Sequence[WeightDestination] = ()
    ) -> bool | None:
        """nginx cannot report the weight it applies: None, as in Argo."""
        return None

    def remove_managed_routes(self) -> None:
        """nginx manages no header or mirror routes."""
