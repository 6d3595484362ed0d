"""The resource types the controller reads and writes, and their URL paths."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    plural: str
    group: str
    version: str
    kind: str
    namespaced: bool = True
    #: The cache's name for the type when it differs from `plural` (two caches of one type).
    cache: str = ""

    @property
    def cache_name(self) -> str:
        return self.cache or self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base


ROLLOUTS = Resource("rollouts", "argoproj.io", "v1alpha1", "Rollout")
ANALYSISRUNS = Resource("analysisruns", "argoproj.io", "v1alpha1", "AnalysisRun")
ANALYSISTEMPLATES = Resource("analysistemplates", "argoproj.io", "v1alpha1", "AnalysisTemplate")
CLUSTERANALYSISTEMPLATES = Resource(
    "clusteranalysistemplates", "argoproj.io", "v1alpha1", "ClusterAnalysisTemplate", False
)
EXPERIMENTS = Resource("experiments", "argoproj.io", "v1alpha1", "Experiment")
REPLICASETS = Resource("replicasets", "apps", "v1", "ReplicaSet")
SERVICES = Resource("services", "", "v1", "Service")
JOBS = Resource("jobs", "batch", "v1", "Job")
INGRESSES = Resource("ingresses", "networking.k8s.io", "v1", "Ingress")
#: The Ingress at each version a cluster may serve, newest first: networking.k8s.io/v1 since
#: Kubernetes 1.19; before it networking.k8s.io/v1beta1 and extensions/v1beta1, where a
#: backend names its Service as `serviceName`/`servicePort`. One cache holds whichever is
#: served (all are "ingresses").
INGRESS_VERSIONS = (
    INGRESSES,
    Resource("ingresses", "networking.k8s.io", "v1beta1", "Ingress"),
    Resource("ingresses", "extensions", "v1beta1", "Ingress"),
)
EVENTS = Resource("events", "", "v1", "Event")


def _versions(plural: str, group: str, kind: str, *versions: str) -> tuple[Resource, ...]:
    """One Resource per version, each cached under its own name (`<plural>-<version>`): the
    watcher lists a router kind at one version, and a worker reads that cache only at the
    version it was listed at (cache/routerobjects.py)."""
    return tuple(
        Resource(plural, group, version, kind, cache=f"{plural}-{version}") for version in versions
    )


#: The SMI TrafficSplit at each version Argo speaks, newest first.
TRAFFICSPLITS = _versions(
    "trafficsplits", "split.smi-spec.io", "TrafficSplit", "v1alpha3", "v1alpha2", "v1alpha1"
)
VIRTUALSERVICES = _versions(
    "virtualservices", "networking.istio.io", "VirtualService", "v1", "v1beta1", "v1alpha3"
)
DESTINATIONRULES = _versions(
    "destinationrules", "networking.istio.io", "DestinationRule", "v1", "v1beta1", "v1alpha3"
)
HTTPROUTES = _versions("httproutes", "gateway.networking.k8s.io", "HTTPRoute", "v1", "v1beta1")
GRPCROUTES = _versions("grpcroutes", "gateway.networking.k8s.io", "GRPCRoute", "v1", "v1alpha2")
TCPROUTES = _versions("tcproutes", "gateway.networking.k8s.io", "TCPRoute", "v1alpha2")
TLSROUTES = _versions("tlsroutes", "gateway.networking.k8s.io", "TLSRoute", "v1alpha3", "v1alpha2")
#: Traefik's TraefikService: group traefik.io since Traefik v2.10 (v3 serves only it), before
#: that traefik.containo.us. A group after the kind's first is cached under
#: `<plural>.<group>-<version>`, so the two v1alpha1 caches stay apart.
TRAEFIKSERVICES = (
    Resource(
        "traefikservices",
        "traefik.io",
        "v1alpha1",
        "TraefikService",
        cache="traefikservices-v1alpha1",
    ),
    Resource(
        "traefikservices",
        "traefik.containo.us",
        "v1alpha1",
        "TraefikService",
        cache="traefikservices.traefik.containo.us-v1alpha1",
    ),
)
#: Ambassador's (Emissary-ingress's) Mapping: getambassador.io v3alpha1 (Emissary 2 and 3) and
#: v2 (Ambassador 1, Argo's default), then the AmbassadorMapping that Emissary 2's developer
#: previews served as x.getambassador.io/v3alpha1 (Argo's `--ambassador-api-version` picks one
#: of them; here the first one served). One router kind, "Mapping", whatever the group.
MAPPINGS = (
    *_versions("mappings", "getambassador.io", "Mapping", "v3alpha1", "v2"),
    *_versions("ambassadormappings", "x.getambassador.io", "AmbassadorMapping", "v3alpha1"),
)
#: AWS App Mesh controller's objects, appmesh.k8s.aws/v1beta2 (the one version Argo speaks).
#: Its VirtualService shares Istio's kind (and plural), so as a router kind it is named
#: `VirtualService.appmesh.k8s.aws`, and cached apart from Istio's.
APPMESH_VIRTUAL_SERVICE = "VirtualService.appmesh.k8s.aws"
APPMESH_VIRTUALSERVICES = (
    Resource(
        "virtualservices",
        "appmesh.k8s.aws",
        "v1beta2",
        "VirtualService",
        cache="virtualservices.appmesh.k8s.aws-v1beta2",
    ),
)
APPMESH_VIRTUALROUTERS = _versions("virtualrouters", "appmesh.k8s.aws", "VirtualRouter", "v1beta2")
APPMESH_VIRTUALNODES = _versions("virtualnodes", "appmesh.k8s.aws", "VirtualNode", "v1beta2")
#: Apache APISIX ingress controller's ApisixRoute: apisix.apache.org v2 (Argo's default) and
#: v2beta3 before it.
APISIXROUTES = _versions("apisixroutes", "apisix.apache.org", "ApisixRoute", "v2", "v2beta3")
#: The objects of traffic routers that are CRDs (optional, in several versions), by router
#: kind (the Kubernetes kind, or `Kind.group` for a kind two routers share): the versions a
#: cluster may serve, newest first. The controller speaks the newest one served.
ROUTER_OBJECTS: dict[str, tuple[Resource, ...]] = {
    versions[0].kind: versions
    for versions in (
        TRAFFICSPLITS,
        VIRTUALSERVICES,
        DESTINATIONRULES,
        HTTPROUTES,
        GRPCROUTES,
        TCPROUTES,
        TLSROUTES,
        TRAEFIKSERVICES,
        APISIXROUTES,
        MAPPINGS,
        APPMESH_VIRTUALROUTERS,
        APPMESH_VIRTUALNODES,
    )
}
ROUTER_OBJECTS[APPMESH_VIRTUAL_SERVICE] = APPMESH_VIRTUALSERVICES
_ROUTER_KINDS = {res: kind for kind, versions in ROUTER_OBJECTS.items() for res in versions}
_ROUTER_KINDS_BY_TYPE = {(res.api_version, res.kind): kind for res, kind in _ROUTER_KINDS.items()}


def router_kind(resource: Resource) -> str | None:
    """The router kind (ROUTER_OBJECTS key) a resource is a version of; None: not a router's."""
    return _ROUTER_KINDS.get(resource)


def router_kind_of(obj: dict[str, object]) -> str | None:
    """The router kind of an object, by its apiVersion and kind (None: not a router's)."""
    return _ROUTER_KINDS_BY_TYPE.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))


PODS = Resource("pods", "", "v1", "Pod")
#: Read (not cached) by AWS target group verification: the Endpoints of a Service, and the AWS
#: Load Balancer Controller's TargetGroupBindings of it (ROLLOUTS_AWS_* settings, Argo's
#: --aws-verify-target-group).
ENDPOINTS = Resource("endpoints", "", "v1", "Endpoints")
TARGETGROUPBINDINGS = Resource(
    "targetgroupbindings", "elbv2.k8s.aws", "v1beta1", "TargetGroupBinding"
)


def target_group_bindings(api_version: str) -> Resource:
    """TargetGroupBindings at `group/version` (Argo's --aws-target-group-binding-api-version)."""
    group, _, version = api_version.rpartition("/")
    return Resource("targetgroupbindings", group, version, "TargetGroupBinding")


CONFIGMAPS = Resource("configmaps", "", "v1", "ConfigMap")
SECRETS = Resource("secrets", "", "v1", "Secret")
DEPLOYMENTS = Resource("deployments", "apps", "v1", "Deployment")
PODTEMPLATES = Resource("podtemplates", "", "v1", "PodTemplate")
#: ReplicaSets without the pod-template-hash label (a `workloadRef` may name one): the
#: REPLICASETS cache holds only those with it, so these get a cache of their own.
UNHASHED_REPLICASETS = Resource(
    "replicasets", "apps", "v1", "ReplicaSet", cache="replicasets-unhashed"
)

#: What a Rollout's `workloadRef` may name, by (group, kind): the types whose reflectors the
#: watcher starts on demand (Argo's `infoByGroupKind`), most specific cache first.
WORKLOADS: dict[tuple[str, str], tuple[Resource, ...]] = {
    ("apps", "Deployment"): (DEPLOYMENTS,),
    ("apps", "ReplicaSet"): (UNHASHED_REPLICASETS, REPLICASETS),
    ("", "PodTemplate"): (PODTEMPLATES,),
}

#: What the watcher mirrors into the cache, by plural name.
WATCHED: dict[str, Resource] = {
    r.plural: r
    for r in (
        ROLLOUTS,
        REPLICASETS,
        SERVICES,
        ANALYSISRUNS,
        ANALYSISTEMPLATES,
        CLUSTERANALYSISTEMPLATES,
        EXPERIMENTS,
        JOBS,
        INGRESSES,
    )
}

INSTANCE_ID_LABEL = "argo-rollouts.argoproj.io/controller-instance-id"
POD_TEMPLATE_HASH_LABEL = "rollouts-pod-template-hash"
ANALYSIS_RUN_UID_LABEL = "analysisrun.argoproj.io/uid"


def instance_id_selector(instance_id: str) -> str:
    """Objects of this controller instance: the label's value, or no label when unset."""
    return f"{INSTANCE_ID_LABEL}={instance_id}" if instance_id else f"!{INSTANCE_ID_LABEL}"


def watch_selector(resource: Resource, instance_id: str) -> str | None:
    """The label selector the watcher lists and watches a type with (as Argo's informers)."""
    if resource.group == "argoproj.io":
        return instance_id_selector(instance_id)
    if resource is REPLICASETS:
        return POD_TEMPLATE_HASH_LABEL
    if resource is UNHASHED_REPLICASETS:
        return f"!{POD_TEMPLATE_HASH_LABEL}"
    if resource is JOBS:
        return ANALYSIS_RUN_UID_LABEL
    return None
