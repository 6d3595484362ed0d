"""AWS Elastic Load Balancing v2, as the ALB router and target group verification need it (Argo's
utils/aws/aws.go), with no reconcile logic: that is in rollout/targetgroups.py and alb.py.

- `Elbv2` wraps a boto3 `elbv2` client (built as analysis' CloudWatch clients are: the SDK's
  default chain, `AWS_REGION`, `AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2`): the load balancer
  whose DNS name an Ingress's status reports (DescribeLoadBalancers, 300 a page), the target
  groups behind it with their tags (DescribeTags, 20 ARNs a call) and the weight each listener
  rule forwards to them (DescribeListeners, DescribeRules), and the targets registered in a
  target group (DescribeTargetHealth). Every failure is an `AwsError` worded as the AWS SDK for
  Go words it (`operation error Elastic Load Balancing v2: DescribeLoadBalancers, ...`).
- The AWS Load Balancer Controller tags each target group it makes for an Ingress with
  `ingress.k8s.aws/resource: <namespace>/<ingress>-<service>:<port>`
  (`target_group_resource_id`); that is how a target group is tied to a Service.
- A TargetGroupBinding (elbv2.k8s.aws) binds a target group to a Service port. In IP mode
  (`targetType: ip`) the pods' IPs are the targets: `verify_target_group_binding` checks that
  every address of the Service's Endpoints is registered at the target port (health is not
  looked at, as in Argo: a registered target is what the selector change needed).
- `TargetGroupVerification` is what the `ROLLOUTS_AWS_*` settings turn on (Argo's
  `--aws-verify-target-group`); the reconcile holds None when it is off. TargetGroupBindings and
  Endpoints are read from the API when a verification runs (`KubeTargetGroupReader`), as Argo
  reads them, not cached: a cluster without the feature never lists them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from rollout_workers.analysis.providers.auth import AuthError, AwsClients, go_sdk_error
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.objects import Obj
from rollout_workers.rollout.trafficrouting import TrafficRoutingError

log = logging.getLogger(__name__)


OPERATION = "operation error Elastic Load Balancing v2: {}"
#: Argo's defaults: load balancers per DescribeLoadBalancers page, ARNs per DescribeTags call.
LOAD_BALANCER_PAGE_SIZE = 300
DESCRIBE_TAGS_LIMIT = 20
DEFAULT_TAG_KEY_RESOURCE_ID = "ingress.k8s.aws/resource"
TARGET_TYPE_IP = "ip"


class AwsError(TrafficRoutingError):
    """An ELBv2 call (or building its client) failed; the message is the Go SDK's wording."""


def target_group_resource_id(*, namespace: str, ingress: str, service: str, port: int) -> str:
    """The `ingress.k8s.aws/resource` tag of the target group the AWS Load Balancer Controller
    makes for a Service port of an Ingress (Argo's BuildTargetGroupResourceID)."""
    return f"{namespace}/{ingress}-{service}:{port}"


@dataclass
class TargetGroupMeta:
    """A target group of a load balancer, with its tags and the weight a listener rule forwards
    to it (None: no forward action names it)."""

    name: str
    arn: str
    tags: dict[str, str] = field(default_factory=dict)
    weight: int | None = None


class Elbv2:
    """The calls of Argo's aws.Client over a boto3 elbv2 client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def _call(self, operation: str, **params: Any) -> Any:
        import botocore.exceptions

        try:
            return getattr(self.client, _snake(operation))(**params)
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as err:
            raise AwsError(go_sdk_error(err, OPERATION.format(operation))) from None

    def find_load_balancer(self, dns_name: str) -> Obj | None:
        """The load balancer whose DNS name is `dns_name` (None: none is)."""
        marker: str | None = None
        while True:
            params: dict[str, Any] = {"PageSize": LOAD_BALANCER_PAGE_SIZE}
            if marker:
                params["Marker"] = marker
            page = self._call("DescribeLoadBalancers", **params)
            for lb in page.get("LoadBalancers") or []:
                if lb.get("DNSName") == dns_name:
                    return dict(lb)
            marker = page.get("NextMarker")
            if not marker:
                return None

    def target_group_metadata(self, load_balancer_arn: str) -> list[TargetGroupMeta]:
        """The load balancer's target groups in AWS's order, with tags and forward weights."""
        groups = self._call("DescribeTargetGroups", LoadBalancerArn=load_balancer_arn)
        metas = {
            tg["TargetGroupArn"]: TargetGroupMeta(
                name=str(tg.get("TargetGroupName") or ""), arn=str(tg["TargetGroupArn"])
            )
            for tg in groups.get("TargetGroups") or []
        }
        arns = list(metas)
        for start in range(0, len(arns), DESCRIBE_TAGS_LIMIT):
            described = self._call(
                "DescribeTags", ResourceArns=arns[start : start + DESCRIBE_TAGS_LIMIT]
            )
            for description in described.get("TagDescriptions") or []:
                meta = metas.get(description.get("ResourceArn"))
                if meta is None:
                    continue
                for tag in description.get("Tags") or []:
                    meta.tags[str(tag.get("Key"))] = str(tag.get("Value"))
        listeners = self._call("DescribeListeners", LoadBalancerArn=load_balancer_arn)
        for listener in listeners.get("Listeners") or []:
            rules = self._call("DescribeRules", ListenerArn=listener["ListenerArn"])
            for rule in rules.get("Rules") or []:
                for action in rule.get("Actions") or []:
                    for entry in (action.get("ForwardConfig") or {}).get("TargetGroups") or []:
                        meta = metas.get(entry.get("TargetGroupArn"))
                        if meta is None:
                            log.warning(
                                "Found ForwardConfig to TargetGroup for unknown target group: %s",
                                entry.get("TargetGroupArn"),
                            )
                            continue
                        weight = entry.get("Weight")
                        meta.weight = int(weight) if weight is not None else None
        return [metas[arn] for arn in arns]

    def target_group_health(self, target_group_arn: str) -> list[Obj]:
        """The targets registered in the target group (TargetHealthDescriptions)."""
        health = self._call("DescribeTargetHealth", TargetGroupArn=target_group_arn)
        return list(health.get("TargetHealthDescriptions") or [])


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


# -- TargetGroupBindings -----------------------------------------------------------------------


def _port_of(binding: Obj) -> int | str | None:
    ref = ((binding.get("spec") or {}).get("serviceRef") or {}).get("port")
    return ref if isinstance(ref, int | str) and not isinstance(ref, bool) else None


def bindings_of_service(bindings: list[Obj], service: Obj) -> list[Obj]:
    """The TargetGroupBindings whose `serviceRef` names this Service and one of its ports, by
    number or by name (Argo's GetTargetGroupBindingsByService)."""
    name = (service.get("metadata") or {}).get("name")
    ports = (service.get("spec") or {}).get("ports") or []
    found = []
    for binding in bindings:
        ref = (binding.get("spec") or {}).get("serviceRef") or {}
        if ref.get("name") != name:
            continue
        port = _port_of(binding)
        for svc_port in ports:
            if isinstance(port, int) and svc_port.get("port") == port:
                found.append(binding)
                break
            if isinstance(port, str) and port and svc_port.get("name") == port:
                found.append(binding)
                break
    return found


def numeric_target_port(binding: Obj, service: Obj, endpoints: Obj) -> int:
    """The port the target group's targets listen on: the matched Service port's targetPort, or
    for a named targetPort the Endpoints' port of that name (0: no match), as Argo's
    getNumericTargetPort."""
    port = _port_of(binding)
    number = port if isinstance(port, int) and port > 0 else 0
    port_name = "" if number else str(port if port is not None else 0)
    for svc_port in (service.get("spec") or {}).get("ports") or []:
        if (port_name and port_name == svc_port.get("name")) or (
            number and number == svc_port.get("port")
        ):
            target = svc_port.get("targetPort")
            if isinstance(target, int) and target > 0:
                return target
            target_name = str(target if target is not None else 0)
            for subset in endpoints.get("subsets") or []:
                for endpoint_port in subset.get("ports") or []:
                    if endpoint_port.get("name") == target_name:
                        return int(endpoint_port.get("port") or 0)
    return 0


@dataclass(frozen=True)
class VerifyResult:
    """What one TargetGroupBinding's verification found (Argo's TargetGroupVerifyResult)."""

    service: str
    verified: bool
    endpoints_registered: int
    endpoints_total: int


def verify_target_group_binding(
    elbv2: Elbv2, binding: Obj, endpoints: Obj, service: Obj
) -> VerifyResult | None:
    """Whether every address of the Service's Endpoints is a target of the bound target group,
    at the target port (Argo's VerifyTargetGroupBinding). None when it does not apply: a target
    group of instances, or a port that matches no Service port."""
    spec = binding.get("spec") or {}
    if spec.get("targetType") != TARGET_TYPE_IP:
        return None
    port = numeric_target_port(binding, service, endpoints)
    if port == 0:
        log.warning("Unable to match TargetGroupBinding spec.serviceRef.port to Service spec.ports")
        return None
    targets = elbv2.target_group_health(str(spec.get("targetGroupARN") or ""))
    expected = {
        f"{address.get('ip')}:{port}": False
        for subset in endpoints.get("subsets") or []
        for address in subset.get("addresses") or []
    }
    for description in targets:
        target = description.get("Target") or {}
        if target.get("Id") is None or target.get("Port") is None:
            log.warning("Invalid target in TargetGroup: %s", description)
            continue
        key = f"{target['Id']}:{target['Port']}"
        if key in expected:  # others are old endpoints, left to drain: ignored
            expected[key] = True
    registered = sum(expected.values())
    return VerifyResult(
        service=str((service.get("metadata") or {}).get("name") or ""),
        verified=registered == len(expected),
        endpoints_registered=registered,
        endpoints_total=len(expected),
    )


# -- what the settings turn on -----------------------------------------------------------------


class TargetGroupReader(Protocol):
    """Reads what verification needs from the API (the watcher does not cache them)."""

    def target_group_bindings(self, namespace: str) -> list[Obj]: ...

    def endpoints(self, namespace: str, name: str) -> Obj: ...


class KubeTargetGroupReader:
    """A `TargetGroupReader` over the API server."""

    def __init__(self, kube: Kube, bindings: r.Resource = r.TARGETGROUPBINDINGS) -> None:
        self.kube, self.bindings = kube, bindings

    def target_group_bindings(self, namespace: str) -> list[Obj]:
        items, _ = self.kube.list(self.bindings, namespace=namespace)
        return items

    def endpoints(self, namespace: str, name: str) -> Obj:
        return self.kube.get(r.ENDPOINTS, namespace, name)


@dataclass
class TargetGroupVerification:
    """AWS target group verification, on (Argo's --aws-verify-target-group): where the clients
    come from and the tag that ties a target group to its Ingress and Service."""

    reader: TargetGroupReader
    clients: Callable[[], Any]
    """A boto3 elbv2 client (raises AuthError: no region)."""
    tag_key_resource_id: str = DEFAULT_TAG_KEY_RESOURCE_ID

    def elbv2(self) -> Elbv2:
        try:
            return Elbv2(self.clients())
        except AuthError as err:
            raise AwsError(str(err)) from None


def target_group_verification(
    kube: Kube, *, api_version: str, tag_key_resource_id: str, clients: AwsClients
) -> TargetGroupVerification:
    """The verification the settings describe, reading from `kube`."""
    return TargetGroupVerification(
        reader=KubeTargetGroupReader(kube, r.target_group_bindings(api_version)),
        clients=clients.get,
        tag_key_resource_id=tag_key_resource_id,
    )


def load_balancer_hostnames(ingress: Obj) -> Iterator[str]:
    """The hostnames an Ingress's status reports for its load balancer, in order."""
    for entry in ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        yield str(entry.get("hostname") or "")
