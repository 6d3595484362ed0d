"""AWS target group verification against moto's ELBv2 in server mode, reached as the SDK reaches
a custom endpoint (`AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2`), as the CloudWatch tests reach
theirs; cases from Argo's utils/aws/aws_test.go (TestFindLoadBalancerByDNSName,
TestGetTargetGroupMetadata, TestGetTargetGroupHealth, TestGetNumericTargetPort,
TestGetTargetGroupBindingsByService, TestVerifyTargetGroupBinding...), rollout/service_test.go
(TestShouldVerifyTargetGroups, TestBlueGreenAWSVerifyTargetGroups..., TestCanaryAWSVerify...)
and the ALB router's weight verification (alb_test.go TestVerifyWeight) on a load balancer whose
listener rule moto changes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.analysis.providers.auth import elbv2_clients
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout import targetgroups
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.trafficrouting import WeightNotVerified
from rollout_workers.rollout.trafficrouting.alb import ALBRouter
from rollout_workers.rollout.trafficrouting.elbv2 import (
    AwsError,
    Elbv2,
    TargetGroupMeta,
    TargetGroupVerification,
    bindings_of_service,
    numeric_target_port,
    target_group_resource_id,
    verify_target_group_binding,
)
from tests.support.metricapis_b import moto_server, point_aws_at
from tests.unit.rollout.onesync import NS, T0, OneSync, rollout, service
from tests.unit.rollout.test_alb import alb_ingress, alb_sim, weights
from tests.unit.rollout.test_routing_reconcile import V1, update

Obj = dict[str, Any]
REGION = "us-west-2"
TAG = "ingress.k8s.aws/resource"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def aws(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh emulator, reached only through the environment (as the controller's clients)."""
    point_aws_at(
        monkeypatch,
        endpoint,
        region=REGION,
        endpoint_variable="AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2",
    )
    yield endpoint


@dataclass
class Balancer:
    """An ALB in moto with target groups tagged for Services of an Ingress, and one listener
    forwarding to them by weight."""

    endpoint: str
    elb: Any = None
    vpc: str = ""
    arn: str = ""
    dns: str = ""
    listener: str = ""
    groups: dict[str, str] = field(default_factory=dict)  # service -> target group ARN

    def __post_init__(self) -> None:
        import boto3

        def client(name: str) -> Any:
            return boto3.client(name, region_name=REGION, endpoint_url=self.endpoint)

        ec2, self.elb = client("ec2"), client("elbv2")
        self.vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=self.vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)[
                "Subnet"
            ]["SubnetId"]
            for i, zone in ((1, f"{REGION}a"), (2, f"{REGION}b"))
        ]
        lb = self.elb.create_load_balancer(Name="web-lb", Subnets=subnets)["LoadBalancers"][0]
        self.arn, self.dns = lb["LoadBalancerArn"], lb["DNSName"]

    def target_group(self, service: str, *, ingress: str = "web-ing", port: int = 80) -> str:
        arn: str = self.elb.create_target_group(
            Name=f"{service}-tg", Protocol="HTTP", Port=port, VpcId=self.vpc, TargetType="ip"
        )["TargetGroups"][0]["TargetGroupArn"]
        resource = target_group_resource_id(
            namespace=NS, ingress=ingress, service=service, port=port
        )
        self.elb.add_tags(ResourceArns=[arn], Tags=[{"Key": TAG, "Value": resource}])
        self.groups[service] = arn
        return arn

    def forward(self, weights: dict[str, int]) -> None:
        """The listener's default action: forward to the services' target groups by weight."""
        action = {
            "Type": "forward",
            "ForwardConfig": {
                "TargetGroups": [
                    {"TargetGroupArn": self.groups[s], "Weight": w} for s, w in weights.items()
                ]
            },
        }
        if not self.listener:
            self.listener = self.elb.create_listener(
                LoadBalancerArn=self.arn, Protocol="HTTP", Port=80, DefaultActions=[action]
            )["Listeners"][0]["ListenerArn"]
        else:
            self.elb.modify_listener(ListenerArn=self.listener, DefaultActions=[action])

    def register(self, service: str, *ips: str, port: int = 8080) -> None:
        self.elb.register_targets(
            TargetGroupArn=self.groups[service], Targets=[{"Id": ip, "Port": port} for ip in ips]
        )


@pytest.fixture
def balancer(aws: str) -> Balancer:
    return Balancer(aws)


def client() -> Elbv2:
    return Elbv2(elbv2_clients().get())


# -- the ELBv2 calls (aws_test.go) ---------------------------------------------------------------


def test_find_load_balancer_by_dns_name(balancer: Balancer) -> None:
    found = client().find_load_balancer(balancer.dns)
    assert found is not None and found["LoadBalancerArn"] == balancer.arn
    assert client().find_load_balancer("not-found.elb.amazonaws.com") is None


def test_target_group_metadata_has_tags_and_forward_weights(balancer: Balancer) -> None:
    canary, stable = balancer.target_group("web-canary"), balancer.target_group("web-stable")
    balancer.target_group("web-unused")  # not the load balancer's: not listed
    balancer.forward({"web-canary": 10, "web-stable": 90})
    metas = client().target_group_metadata(balancer.arn)
    assert [(m.name, m.arn, m.weight) for m in metas] == [
        ("web-canary-tg", canary, 10),
        ("web-stable-tg", stable, 90),
    ]
    assert metas[0].tags == {TAG: "default/web-ing-web-canary:80"}


def test_target_group_health_lists_the_registered_targets(balancer: Balancer) -> None:
    balancer.target_group("web-stable")
    balancer.register("web-stable", "10.0.1.5", "10.0.1.6")
    health = client().target_group_health(balancer.groups["web-stable"])
    assert sorted((t["Target"]["Id"], t["Target"]["Port"]) for t in health) == [
        ("10.0.1.5", 8080),
        ("10.0.1.6", 8080),
    ]


def test_an_api_error_is_worded_as_the_go_sdk_words_it(balancer: Balancer) -> None:
    with pytest.raises(AwsError) as err:
        client().target_group_health("arn:aws:elasticloadbalancing:us-west-2:1:targetgroup/x/1")
    assert str(err.value).startswith(
        "operation error Elastic Load Balancing v2: DescribeTargetHealth, https response error "
        "StatusCode: 400, RequestID: "
    )
    assert "api error TargetGroupNotFound: " in str(err.value)


def test_no_region_is_an_error(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")
    verification = TargetGroupVerification(reader=NoReader(), clients=elbv2_clients().get)
    with pytest.raises(AwsError) as err:
        verification.elbv2()
    assert str(err.value) == (
        "an AWS region is required, but was not found (set AWS_REGION in the controller's "
        "environment)"
    )


# -- TargetGroupBindings and Endpoints (pure) ----------------------------------------------------


def binding(
    port: int | str = 80, *, target_type: str = "ip", svc: str = "active", arn: str = "arn::1234"
) -> Obj:
    return {
        "apiVersion": "elbv2.k8s.aws/v1beta1",
        "kind": "TargetGroupBinding",
        "metadata": {"name": svc, "namespace": NS},
        "spec": {
            "serviceRef": {"name": svc, "port": port},
            "targetGroupARN": arn,
            "targetType": target_type,
        },
    }


def svc_with(*ports: Obj, name: str = "active") -> Obj:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"ports": list(ports)}}


def endpoints(*ips: str, port: int = 8080, name: str = "") -> Obj:
    return {
        "metadata": {"name": "active", "namespace": NS},
        "subsets": [
            {
                "addresses": [{"ip": ip} for ip in ips],
                "ports": [{"port": port, "protocol": "TCP", **({"name": name} if name else {})}],
            }
        ],
    }


@pytest.mark.parametrize(
    ("case", "bindings", "service", "found"),
    [
        ("by port number", [binding(80)], svc_with({"port": 80, "targetPort": 80}), [0]),
        ("by port name", [binding("foo")], svc_with({"name": "foo", "port": 80}), [0]),
        ("another port", [binding(81)], svc_with({"port": 80}), []),
        ("another service", [binding(80, svc="preview")], svc_with({"port": 80}), []),
    ],
)
def test_bindings_of_service(
    case: str, bindings: list[Obj], service: Obj, found: list[int]
) -> None:
    """TestGetTargetGroupBindingsByService."""
    assert bindings_of_service(bindings, service) == [bindings[i] for i in found], case


@pytest.mark.parametrize(
    ("case", "port", "target", "eps", "expected"),
    [
        ("a numeric target port", 80, 8080, endpoints(), 8080),
        (
            "TestGetNumericTargetPort: a named target port, from the Endpoints",
            "web",
            "http",
            {
                "subsets": [
                    {"ports": [{"name": "asdf", "port": 1234}, {"name": "http", "port": 4567}]}
                ]
            },
            4567,
        ),
        ("no Service port matches", 81, 8080, endpoints(), 0),
    ],
)
def test_numeric_target_port(
    case: str, port: int | str, target: int | str, eps: Obj, expected: int
) -> None:
    service = svc_with({"name": "web", "port": 80, "targetPort": target})
    assert numeric_target_port(binding(port), service, eps) == expected, case


@dataclass
class Health:
    """A stand-in for Elbv2 answering DescribeTargetHealth only."""

    targets: list[tuple[str, int]]

    def target_group_health(self, arn: str) -> list[Obj]:
        return [{"Target": {"Id": ip, "Port": port}} for ip, port in self.targets]


def test_verify_target_group_binding() -> None:
    """TestVerifyTargetGroupBinding: targets of other IPs or ports are ignored; one endpoint
    not registered leaves it unverified."""
    health = Health([("1.2.3.4", 8080), ("5.6.7.8", 8080), ("2.4.6.8", 8081), ("9.8.7.6", 8080)])
    service = svc_with({"protocol": "TCP", "port": 80, "targetPort": 8080})
    result = verify_target_group_binding(
        health,  # type: ignore[arg-type]
        binding(80),
        endpoints("1.2.3.4", "5.6.7.8", "2.4.6.8"),
        service,
    )
    assert result is not None
    assert (result.service, result.verified, result.endpoints_registered) == ("active", False, 2)
    assert result.endpoints_total == 3


def test_verify_target_group_binding_ignores_instance_mode() -> None:
    """TestVerifyTargetGroupBindingIgnoreInstanceMode: not applicable, no AWS call."""
    health = Health([])
    assert (
        verify_target_group_binding(
            health,  # type: ignore[arg-type]
            binding(target_type="instance"),
            endpoints(),
            svc_with({"port": 80}),
        )
        is None
    )


# -- should it verify (service_test.go TestShouldVerifyTargetGroups) ---------------------------


class NoReader:
    def target_group_bindings(self, namespace: str) -> list[Obj]:
        return []

    def endpoints(self, namespace: str, name: str) -> Obj:
        return {}


def context(strategy: Obj, *, stable: str, selector: str | None, **status: Any) -> RolloutContext:
    obj = rollout(strategy=strategy)
    rs = {
        "metadata": {
            "name": "web-new",
            "namespace": NS,
            "labels": {r.POD_TEMPLATE_HASH_LABEL: "new"},
            "ownerReferences": [{"uid": "web-uid", "controller": True}],
        },
        "spec": {"replicas": 3, "template": obj["spec"]["template"]},
    }
    obj["status"] = {"stableRS": stable, "currentPodHash": "new", **status}
    ctx = RolloutContext.build(obj=obj, rss=[rs], now=T0, writer=RecordingWriter())
    ctx.aws = TargetGroupVerification(reader=NoReader(), clients=lambda: None)
    return ctx


ALB_CANARY = {
    "canary": {
        "stableService": "stable",
        "canaryService": "canary",
        "trafficRouting": {"alb": {"ingress": "ingress", "servicePort": 80}},
    }
}
BLUE_GREEN = {"blueGreen": {"activeService": "active-svc"}}


@pytest.mark.parametrize(
    ("case", "strategy", "stable", "selector", "status", "expected"),
    [
        ("CanaryNotUsingTrafficRouting", {"canary": {}}, "new", "new", {}, False),
        ("CanaryNotFullyPromoted", ALB_CANARY, "somethingelse", "new", {}, False),
        ("CanaryFullyPromoted", ALB_CANARY, "new", "new", {}, True),
        ("BlueGreenFullyPromoted", BLUE_GREEN, "new", "new", {}, False),
        ("BlueGreenBeforePromotion", BLUE_GREEN, "oldrshash", "oldrshash", {}, False),
        (
            "BlueGreenAfterPromotionAfterPromotionAnalysisStarted",
            BLUE_GREEN,
            "oldrshash",
            "new",
            {"blueGreen": {"postPromotionAnalysisRunStatus": {"name": "a", "status": "Running"}}},
            False,
        ),
        ("BlueGreenAfterPromotion", BLUE_GREEN, "oldrshash", "new", {}, True),
    ],
)
def test_should_verify_target_groups(  # noqa: PLR0917
    case: str, strategy: Obj, stable: str, selector: str, status: Obj, expected: bool
) -> None:
    ctx = context(strategy, stable=stable, selector=selector, **status)
    svc = {"metadata": {"name": "s"}, "spec": {"selector": {r.POD_TEMPLATE_HASH_LABEL: selector}}}
    assert targetgroups.should_verify(ctx, svc) is expected, case
    ctx.aws = None  # off, as by default
    assert targetgroups.should_verify(ctx, svc) is False


# -- through the one-sync fixture ----------------------------------------------------------------


@dataclass
class Cluster:
    """The TargetGroupBindings and the Endpoints of each Service, as the API would answer: the
    Endpoints list the IPs of the pods the Service selects now (one IP per pod)."""

    sim: OneSync | None = None
    bindings: list[Obj] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)

    def target_group_bindings(self, namespace: str) -> list[Obj]:
        self.reads.append("targetgroupbindings")
        return copy.deepcopy(self.bindings)

    def endpoints(self, namespace: str, name: str) -> Obj:
        assert self.sim is not None
        self.reads.append(f"endpoints/{name}")
        selector = self.sim.services()[name]["spec"]["selector"]
        return endpoints(*self.ips(selector.get(r.POD_TEMPLATE_HASH_LABEL)), port=8080)

    def ips(self, pod_hash: str | None) -> list[str]:
        assert self.sim is not None
        pods = sorted(p["metadata"]["name"] for p in self.sim.pods(pod_hash))
        return [f"10.0.1.{i + 10}" for i, _ in enumerate(pods)] if pod_hash else []


def with_port(svc: Obj) -> Obj:
    svc["spec"]["ports"] = [{"port": 80, "targetPort": 8080}]
    return svc


def verification(cluster: Cluster) -> TargetGroupVerification:
    return TargetGroupVerification(reader=cluster, clients=elbv2_clients().get)


def test_blue_green_waits_for_the_new_pods_in_the_target_group(balancer: Balancer) -> None:
    """TestBlueGreenAWSVerifyTargetGroupsNotYetReady / ...Ready: after the active switch the
    new ReplicaSet is not stable (so the old one keeps its pods) until every endpoint of the
    active Service is registered; then it is, with Argo's events."""
    arn = balancer.target_group("active")
    cluster = Cluster(bindings=[binding(80, arn=arn)])
    obj = rollout(replicas=2, strategy={"blueGreen": {"activeService": "active"}})
    sim = OneSync(obj, [with_port(service("active"))], aws=verification(cluster))
    cluster.sim = sim
    sim.settle()
    old = sim.status["stableRS"]
    sim.set_image("web:2")
    # Only two of the new pods' IPs (as the endpoints name them) are registered, one old one.
    balancer.register("active", "10.0.1.10", "10.0.1.99")
    sim.settle()
    new = sim.status["currentPodHash"]
    assert sim.services()["active"]["spec"]["selector"][r.POD_TEMPLATE_HASH_LABEL] == new
    assert sim.status["stableRS"] == old
    assert "scale-down-deadline" not in (sim.rs(old)["metadata"].get("annotations") or {})
    assert sim.status["message"] == "waiting for post-promotion verification to complete"
    assert "TargetGroupUnverified" in sim.reasons()
    assert sim.last is not None and sim.last.requeue_after == 10
    event = next(a.body for a in reversed(sim.writer.actions) if a.resource == "events")
    assert (
        event["message"]
        == f"Service active (TargetGroup {arn}) not verified: 1/2 endpoints registered"
    )
    balancer.register("active", "10.0.1.11")
    sim.settle()
    assert sim.status["stableRS"] == new
    assert "TargetGroupVerified" in sim.reasons()
    assert "scale-down-deadline" in sim.rs(old)["metadata"]["annotations"]
    messages = [a.body["message"] for a in sim.writer.actions if a.resource == "events"]
    assert f"Service active (TargetGroup {arn}) verified: 2 endpoints registered" in messages


def test_blue_green_without_bindings_is_not_held(aws: str) -> None:
    cluster = Cluster()
    obj = rollout(replicas=1, strategy={"blueGreen": {"activeService": "active"}})
    sim = OneSync(obj, [with_port(service("active"))], aws=verification(cluster))
    cluster.sim = sim
    sim.settle()
    sim.set_image("web:2")
    sim.settle()
    assert sim.status["stableRS"] == sim.status["currentPodHash"]
    assert "targetgroupbindings" in cluster.reads
    assert not any(read.startswith("endpoints") for read in cluster.reads)


def test_an_alb_canary_keeps_the_old_stable_until_the_stable_service_is_registered(
    balancer: Balancer,
) -> None:
    """TestCanaryAWSVerifyTargetGroupsNotYetReady / ...Ready: promoted, the stable Service
    selects the new pods; the old ReplicaSet is neither scaled down nor given a deadline until
    they are in the stable Service's target group. TestCanaryAWSVerifyTargetGroupsSkip: once it
    has its deadline, no further AWS call is needed."""
    balancer.target_group("web-canary")
    arn = balancer.target_group("web-stable")
    balancer.forward({"web-canary": 0, "web-stable": 100})
    cluster = Cluster(bindings=[binding(80, svc="web-stable", arn=arn)])
    sim = alb_sim({"setWeight": 50}, aws=verification(cluster), hostname=balancer.dns)
    stable_svc = sim.writer.objects[(r.SERVICES.plural, NS, "web-stable")]
    stable_svc["spec"]["ports"] = [{"port": 80, "targetPort": 8080}]
    cluster.sim = sim
    update(sim)
    settle_following(sim, balancer)
    new = sim.status["currentPodHash"]
    assert sim.status["stableRS"] == new and weights(sim)["web-canary"] == 0
    assert sim.rs(V1)["spec"]["replicas"] == 10
    assert "scale-down-deadline" not in (sim.rs(V1)["metadata"].get("annotations") or {})
    assert "TargetGroupUnverified" in sim.reasons()
    balancer.register("web-stable", *cluster.ips(new))
    settle_following(sim, balancer)
    assert "scale-down-deadline" in sim.rs(V1)["metadata"]["annotations"]
    reads = len(cluster.reads)
    sim.advance(31)
    settle_following(sim, balancer)
    assert sim.rs(V1)["spec"]["replicas"] == 0
    assert len(cluster.reads) == reads  # verified before its deadline: not again


def settle_following(sim: OneSync, balancer: Balancer, limit: int = 30) -> None:
    """Reconcile until nothing is written, the load balancer taking each weight the Ingress's
    action names before the next reconcile (as the AWS Load Balancer Controller does)."""
    for _ in range(limit):
        sim.kubelet()
        balancer.forward(weights(sim))
        try:
            if not sim.sync().actions:
                return
        except WeightNotVerified:
            continue  # the full weight just set: verified on the next reconcile
    raise AssertionError("the rollout never settled")


def test_the_alb_weight_verified_against_the_listener(balancer: Balancer) -> None:
    """TestVerifyWeight against the load balancer: the canary's target group at the weight
    the listener forwards (not yet: the step waits), and status.alb recording what was found."""
    balancer.target_group("web-canary")
    balancer.target_group("web-stable")
    balancer.forward({"web-canary": 0, "web-stable": 100})
    cluster = Cluster()
    sim = alb_sim(
        {"setWeight": 20}, {"pause": {}}, aws=verification(cluster), hostname=balancer.dns
    )
    cluster.sim = sim
    lb_name = balancer.arn.split("/")[2]
    assert sim.status["alb"]["loadBalancer"] == {
        "name": lb_name,
        "arn": balancer.arn,
        "fullName": "/".join(balancer.arn.split("/")[2:]),
    }
    update(sim)
    sim.settle()
    assert weights(sim)["web-canary"] == 20
    assert sim.status["currentStepIndex"] == 0
    assert sim.status["canary"]["weights"]["verified"] is False
    assert sim.status["alb"]["canaryTargetGroup"]["arn"] == balancer.groups["web-canary"]
    assert sim.status["alb"]["stableTargetGroup"]["name"] == "web-stable-tg"
    balancer.forward({"web-canary": 20, "web-stable": 80})  # the controller caught up
    sim.settle()
    assert sim.status["currentStepIndex"] == 1


def test_alb_router_reads_the_metadata_from_moto(balancer: Balancer) -> None:
    balancer.target_group("web-canary")
    balancer.target_group("web-stable")
    balancer.forward({"web-canary": 30, "web-stable": 70})
    obj = rollout(
        strategy={
            "canary": {
                "stableService": "web-stable",
                "canaryService": "web-canary",
                "trafficRouting": {"alb": {"ingress": "web-ing", "servicePort": 80}},
                "steps": [{"setWeight": 30}],
            }
        }
    )
    obj["status"] = {"stableRS": "old", "currentPodHash": "new"}
    ing = alb_ingress(loadBalancer={"ingress": [{"hostname": balancer.dns}]})
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=RecordingWriter(),
        ingresses={"web-ing": ing},
    )
    ctx.aws = verification(Cluster())
    router = ALBRouter(ctx, ctx.canary.traffic_routing.alb)
    assert router.verify_weight(30) is True
    assert router.verify_weight(31) is False
    metas = client().target_group_metadata(balancer.arn)
    assert isinstance(metas[0], TargetGroupMeta) and metas[0].weight == 30
