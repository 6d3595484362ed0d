"""The ALB router, after argo-rollouts' rollout/trafficrouting/alb/alb_test.go: the action
annotation (weights, experiment Services, stickiness) and the managed-alb-annotations entry on
one Ingress or several (TestSetInitialDesiredWeight, TestUpdateDesiredWeight, TestNoChanges,
TestSetWeightPingPong, TestSetWeightWithMultipleBackends, ...), its errors (TestIngressNotFound,
TestServiceNotFoundInIngress, TestErrorOnInvalidManagedBy, TestErrorPatching,
TestGetForwardActionString...), header routes (TestSetHeaderRoute..., TestRemoveManagedRoutes),
no mirror routes (TestSetMirrorRoute), and the weight verified against the load balancer
(TestVerifyWeight, TestVerifyWeightMultiIngress, TestVerifyWeightWithAdditionalDestinations)
through a fake ELBv2 API. Then reconciles through the one-sync fixture: the weight step by step,
back to the stable on abort, someone else's edit put back, several Ingresses, a header route,
ping-pong, and a weight not yet verified holding the step and the promotion.

Unlike Argo's tests, a write here replaces the context's copy of the Ingress (the informer
cache of Argo's tests never sees the fake client's patches), so a second call starts from what
the first wrote.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from rollout_workers.api.rollout import (
    ALBStatus,
    AwsResourceRef,
    RolloutStatus,
    SetHeaderRoute,
    SetMirrorRoute,
    WeightDestination,
)
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import KubeError
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.controller import (
    INVALID_SPEC_REQUEUE,
    STALE_REQUEUE,
    RolloutController,
    aws_verification,
)
from rollout_workers.rollout.trafficrouting import (
    TrafficRoutingError,
    WeightNotVerified,
    WeightVerifyError,
    alb,
)
from rollout_workers.rollout.trafficrouting.elbv2 import TargetGroupVerification
from rollout_workers.rollout.trafficrouting.plugins import unsupported_router
from rollout_workers.rollout.trafficrouting.weights import VERIFY_RETRY_SECONDS
from rollout_workers.rollout.trafficstep import routers_for
from rollout_workers.settings import AwsSettings
from rollout_workers.workqueue import Outcome
from tests.unit.rollout.onesync import NS, T0, OneSync, service
from tests.unit.rollout.test_controller import rollout
from tests.unit.rollout.test_router_cache_guard import Behind
from tests.unit.rollout.test_routing_reconcile import V1, controller_for, request, update

Obj = dict[str, Any]
STABLE_SVC, CANARY_SVC = "stable-svc", "canary-svc"
PING_SVC, PONG_SVC = "ping-service", "pong-service"
TAG = "ingress.k8s.aws/resource"
MANAGED = "rollouts.argoproj.io/managed-alb-annotations"
ACTION = "alb.ingress.kubernetes.io/actions.{}"
CONDITION = "alb.ingress.kubernetes.io/conditions.{}"
HOSTNAME = "verify-weight-test-abc-123.us-west-2.elb.amazonaws.com"
MULTI_HOSTNAME = "verify-weight-multi-ingress.us-west-2.elb.amazonaws.com"


def action(*groups: tuple[str, int, int], sticky: int | None = None) -> str:
    """A forward action as Argo marshals it: (service, port, weight) per target group."""
    tgs = ",".join(
        f'{{"ServiceName":"{s}","ServicePort":"{p}","Weight":{w}}}' for s, p, w in groups
    )
    config = f'"TargetGroups":[{tgs}]'
    if sticky is not None:
        config += f',"TargetGroupStickinessConfig":{{"Enabled":true,"DurationSeconds":{sticky}}}'
    return f'{{"Type":"forward","ForwardConfig":{{{config}}}}}'


def managed(*keys: str, rollout_name: str = "web") -> str:
    return json.dumps({rollout_name: list(keys)}, separators=(",", ":"))


def alb_rollout(
    stable: str = STABLE_SVC,
    canary: str = CANARY_SVC,
    *,
    ingresses: list[str] | None = None,
    port: int = 443,
    ping_pong: bool = False,
    steps: list[Obj] | None = None,
    **fields: Any,
) -> Obj:
    """Argo's fakeRollout (one Ingress, `ingress`) or fakeRolloutWithMultiIngress."""
    config: Obj = {"servicePort": port, **fields}
    if ingresses is None:
        config["ingress"] = "ingress"
    else:
        config["ingresses"] = ingresses
    strategy: Obj = {"trafficRouting": {"alb": config}, "steps": steps or []}
    if ping_pong:
        strategy["pingPong"] = {"pingService": PING_SVC, "pongService": PONG_SVC}
    else:
        strategy.update(stableService=stable, canaryService=canary)
    return rollout(strategy={"canary": strategy})


def ingress(
    name: str,
    *,
    stable: str = STABLE_SVC,
    canary: str = CANARY_SVC,
    action_service: str = STABLE_SVC,
    port: int = 443,
    weight: int = 0,
    sticky: bool = False,
    hostname: str | None = None,
) -> Obj:
    """Argo's test Ingress: a rule to the action Service on `use-annotation`, its action at
    `weight`, managed by the rollout."""
    key = ACTION.format(action_service)
    value = action(
        (canary, port, weight), (stable, port, 100 - weight), sticky=300 if sticky else None
    )
    backend = {"service": {"name": action_service, "port": {"name": "use-annotation"}}}
    obj: Obj = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": name,
            "namespace": NS,
            "resourceVersion": "5",
            "annotations": {key: value, MANAGED: managed(key)},
        },
        "spec": {"rules": [{"http": {"paths": [{"backend": backend}]}}]},
    }
    if hostname is not None:
        obj["status"] = {"loadBalancer": {"ingress": [{"hostname": hostname}]}}
    return obj


def router_for(
    obj: Obj,
    *found: Obj,
    status: Obj | None = None,
    aws: TargetGroupVerification | None = None,
) -> tuple[alb.ALBRouter, RecordingWriter, RolloutContext]:
    if status is not None:
        obj = {**obj, "status": status}
    writer = RecordingWriter()
    for ing in found:
        writer.seed(r.INGRESSES, copy.deepcopy(ing))
    ctx = RolloutContext.build(
        obj=obj,
        rss=[],
        now=T0,
        writer=writer,
        ingresses={i["metadata"]["name"]: copy.deepcopy(i) for i in found},
    )
    ctx.aws = aws
    [router] = routers_for(ctx)
    assert isinstance(router, alb.ALBRouter)
    return router, writer, ctx


def writes(writer: RecordingWriter) -> list[Any]:
    return [a for a in writer.actions if a.resource != "events"]


def annotations_of(writer: RecordingWriter, name: str = "ingress") -> dict[str, str]:
    stored = writer.objects[(r.INGRESSES.plural, NS, name)]
    return dict(stored["metadata"].get("annotations") or {})


# -- after alb_test.go: weights --------------------------------------------------------------


@pytest.mark.parametrize("multi", [False, True], ids=["TestType", "TestTypeMultiIngress"])
def test_type(multi: bool) -> None:
    obj = alb_rollout(ingresses=["stable-ingress", "multi-ingress"] if multi else None)
    router, _, ctx = router_for(obj)
    assert router.type == "ALB"
    assert unsupported_router(ctx.canary.traffic_routing) == ""


def test_add_managed_annotation() -> None:
    """TestAddManagedAnnotation: keys in order under the rollout's name; not JSON is an error."""
    keys = [
        "alb.ingress.kubernetes.io/actions.action1",
        "alb.ingress.kubernetes.io/conditions.action1",
    ]
    got = alb.calculate_managed({}, "argo-rollouts", add=True, keys=keys)
    assert got[MANAGED] == (
        '{"argo-rollouts":["alb.ingress.kubernetes.io/actions.action1",'
        '"alb.ingress.kubernetes.io/conditions.action1"]}'
    )
    with pytest.raises(TrafficRoutingError):
        alb.calculate_managed(
            {MANAGED: "invalid, non-json value"}, "some-rollout", add=False, keys=[]
        )


@pytest.mark.parametrize(
    ("case", "obj", "found", "message"),
    [
        (
            "TestIngressNotFound",
            alb_rollout("stable-service", "canary-service"),
            (),
            'ingress.networking.k8s.io "ingress" not found',
        ),
        (
            "TestIngressNotFoundMultiIngress",
            alb_rollout(ingresses=["stable-ingress", "multi-ingress"]),
            (),
            'ingress.networking.k8s.io "stable-ingress" not found',
        ),
        (
            "TestServiceNotFoundInIngress",
            alb_rollout("stable-stable", "canary-service", rootService="invalid-svc"),
            (ingress("ingress", weight=50),),
            "ingress does not have service `invalid-svc` in rules",
        ),
        (
            "TestServiceNotFoundInMultiIngress",
            alb_rollout(ingresses=["ingress", "multi-ingress"], rootService="invalid-svc"),
            (ingress("ingress", weight=50), ingress("multi-ingress", weight=50)),
            "ingress does not have service `invalid-svc` in rules",
        ),
    ],
)
def test_set_weight_errors(case: str, obj: Obj, found: tuple[Obj, ...], message: str) -> None:
    router, writer, _ = router_for(obj, *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == message, case
    assert writes(writer) == []


@pytest.mark.parametrize("multi", [False, True], ids=["TestNoChanges", "TestNoChangesMultiIngress"])
def test_no_changes(multi: bool) -> None:
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    found = [ingress(n, weight=10) for n in names]
    obj = alb_rollout(ingresses=names if multi else None)
    obj["metadata"]["name"] = "web"
    router, writer, ctx = router_for(obj, *found)
    router.set_weight(10)
    assert writes(writer) == [] and ctx.events == []


@pytest.mark.parametrize(
    "multi", [False, True], ids=["TestErrorOnInvalidManagedBy", "...MultiIngress"]
)
def test_error_on_invalid_managed_by(multi: bool) -> None:
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    found = [ingress(n, weight=5) for n in names]
    found[-1]["metadata"]["annotations"][MANAGED] = "test"
    router, writer, _ = router_for(alb_rollout(ingresses=names if multi else None), *found)
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert MANAGED in str(err.value)
    assert len(writes(writer)) == (1 if multi else 0)  # the first Ingress was fine


@pytest.mark.parametrize(
    "multi", [False, True], ids=["TestSetInitialDesiredWeight", "...MultiIngress"]
)
def test_set_initial_desired_weight(multi: bool) -> None:
    """No annotations yet: the action and the managed entry are added, one fenced merge patch
    per Ingress, with Argo's event."""
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    found = [ingress(n, weight=5) for n in names]
    found[0]["metadata"]["annotations"] = {}
    router, writer, ctx = router_for(alb_rollout(ingresses=names if multi else None), *found)
    router.set_weight(10)
    done = writes(writer)
    assert [(a.verb, a.resource, a.name) for a in done] == [
        ("patch", "ingresses", n) for n in names
    ]
    key = ACTION.format(STABLE_SVC)
    assert done[0].body == {
        "metadata": {
            "resourceVersion": "5",
            "annotations": {
                key: action((CANARY_SVC, 443, 10), (STABLE_SVC, 443, 90)),
                MANAGED: managed(key),
            },
        }
    }
    assert [(e.reason, e.message) for e in ctx.events] == [
        ("PatchingALBIngress", f"Updating Ingress `{n}` to desiredWeight '10'") for n in names
    ]


@pytest.mark.parametrize("multi", [False, True], ids=["TestSetWeightPingPong", "...MultiIngress"])
def test_set_weight_ping_pong(multi: bool) -> None:
    """Ping-pong: the ping and pong Services stand for the canary and stable (pong is the stable
    one here), on the root Service's action."""
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    found = [
        ingress(n, stable=PING_SVC, canary=PONG_SVC, action_service="root-service", weight=10)
        for n in names
    ]
    found[0]["metadata"]["annotations"] = {}
    obj = alb_rollout(
        ingresses=names if multi else None, ping_pong=True, rootService="root-service"
    )
    router, writer, _ = router_for(obj, *found, status={"canary": {"stablePingPong": "pong"}})
    router.set_weight(10)
    assert len(writes(writer)) == len(names)
    assert annotations_of(writer)[ACTION.format("root-service")] == action(
        (PING_SVC, 443, 10), (PONG_SVC, 443, 90)
    )


@pytest.mark.parametrize(
    ("case", "sticky_before", "config", "expected"),
    [
        (
            "TestUpdateDesiredWeight",
            False,
            None,
            action((CANARY_SVC, 443, 10), (STABLE_SVC, 443, 90)),
        ),
        (
            "TestUpdateDesiredWeightWithStickyConfig (the rollout has none: it goes)",
            True,
            None,
            action((CANARY_SVC, 443, 10), (STABLE_SVC, 443, 90)),
        ),
        (
            "stickinessConfig enabled",
            False,
            {"enabled": True, "durationSeconds": 300},
            action((CANARY_SVC, 443, 10), (STABLE_SVC, 443, 90), sticky=300),
        ),
    ],
)
def test_update_desired_weight(
    case: str, sticky_before: bool, config: Obj | None, expected: str
) -> None:
    for multi in (False, True):
        names = ["ingress", "multi-ingress"] if multi else ["ingress"]
        found = [ingress(n, weight=5, sticky=sticky_before) for n in names]
        fields: Obj = {"stickinessConfig": config} if config else {}
        obj = alb_rollout(ingresses=names if multi else None, **fields)
        router, writer, _ = router_for(obj, *found)
        router.set_weight(10)
        assert len(writes(writer)) == len(names), case
        for n in names:
            assert annotations_of(writer, n)[ACTION.format(STABLE_SVC)] == expected, case


def forward(weight: int, **config: Any) -> str:
    fields: Obj = {"stickinessConfig": config} if config else {}
    obj = alb_rollout("stable", "canary", **fields)
    router, _, _ = router_for(obj)
    return alb.calculate_forward_action(
        router.alb, canary_service="canary", stable_service="stable", weight=weight
    )


def test_forward_action_marshals_zero_and_disabled_stickiness() -> None:
    """TestGetForwardActionStringMarshalsZeroCorrectly, ...DisabledStickyConfigCorrectly."""
    assert forward(0) == action(("canary", 443, 0), ("stable", 443, 100))
    assert forward(0, enabled=False, durationSeconds=0) == forward(0)


@pytest.mark.parametrize("seconds", [0, 604801], ids=["Negative", "TooLarge"])
def test_forward_action_detects_a_bad_sticky_duration(seconds: int) -> None:
    """TestGetForwardActionStringDetects{Negative,TooLarge}StickyConfigDuration."""
    with pytest.raises(TrafficRoutingError) as err:
        forward(0, enabled=True, durationSeconds=seconds)
    assert str(err.value) == (
        "TargetGroupStickinessConfig's duration must be between 1 and 604800 seconds (7 days)!"
    )


class FailingWriter(RecordingWriter):
    def patch(self, *args: Any, **kwargs: Any) -> Obj:
        self.attempts = getattr(self, "attempts", 0) + 1
        raise KubeError(400, "BadRequest", "some error occurred")


@pytest.mark.parametrize("multi", [False, True], ids=["TestErrorPatching", "...MultiIngress"])
def test_error_patching(multi: bool) -> None:
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    router, _, ctx = router_for(
        alb_rollout(ingresses=names if multi else None), *[ingress(n, weight=5) for n in names]
    )
    ctx.writer = writer = FailingWriter()
    with pytest.raises(TrafficRoutingError) as err:
        router.set_weight(10)
    assert str(err.value) == "error patching alb ingress `ingress`: some error occurred"
    assert writer.attempts == 1


@pytest.mark.parametrize(
    "multi", [False, True], ids=["TestSetWeightWithMultipleBackends", "...MultiIngress"]
)
def test_set_weight_with_multiple_backends(multi: bool) -> None:
    """Experiment Services between the canary and the stable, which gets what is left."""
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    router, writer, _ = router_for(
        alb_rollout(ingresses=names if multi else None), *[ingress(n) for n in names]
    )
    router.set_weight(10, EXPERIMENT)
    assert len(writes(writer)) == len(names)
    assert annotations_of(writer)[ACTION.format(STABLE_SVC)] == (
        '{"Type":"forward","ForwardConfig":{"TargetGroups":['
        '{"ServiceName":"canary-svc","ServicePort":"443","Weight":10},'
        '{"ServiceName":"ex-svc-1","ServicePort":"443","Weight":2},'
        '{"ServiceName":"ex-svc-2","ServicePort":"443","Weight":3},'
        '{"ServiceName":"stable-svc","ServicePort":"443","Weight":85}]}}'
    )


EXPERIMENT = [
    WeightDestination(service_name="ex-svc-1", pod_template_hash="", weight=2),
    WeightDestination(service_name="ex-svc-2", pod_template_hash="", weight=3),
]


# -- after alb_test.go: header routes ---------------------------------------------------------


def header_rollout(multi: bool = False) -> Obj:
    obj = alb_rollout(ingresses=["ingress", "multi-ingress"] if multi else None)
    obj["spec"]["strategy"]["canary"]["trafficRouting"]["managedRoutes"] = [
        {"name": "header-route"}
    ]
    return obj


def header_route(*matches: tuple[str, str]) -> SetHeaderRoute:
    return SetHeaderRoute.from_dict(
        {
            "name": "header-route",
            "match": [{"headerName": n, "headerValue": {"exact": v}} for n, v in matches],
        }
    )


def conditions(*headers: tuple[str, list[str]]) -> str:
    return json.dumps(
        [
            {"field": "http-header", "httpHeaderConfig": {"httpHeaderName": n, "values": v}}
            for n, v in headers
        ],
        separators=(",", ":"),
    )


def paths(writer: RecordingWriter, name: str = "ingress") -> list[str]:
    stored = writer.objects[(r.INGRESSES.plural, NS, name)]
    return [p["backend"]["service"]["name"] for p in stored["spec"]["rules"][0]["http"]["paths"]]


@pytest.mark.parametrize(
    ("case", "route", "expected"),
    [
        (
            "TestSetHeaderRoute (a prefix: ALB takes exact values only; validation refuses it)",
            SetHeaderRoute.from_dict(
                {
                    "name": "header-route",
                    "match": [{"headerName": "Agent", "headerValue": {"prefix": "Chrome"}}],
                }
            ),
            conditions(("Agent", [""])),
        ),
        (
            "TestSetHeaderRouteWithDifferentHeaderNames",
            header_route(("origin", "https://www.fake-origin1.com"), ("Agent", "Chrome")),
            conditions(("origin", ["https://www.fake-origin1.com"]), ("Agent", ["Chrome"])),
        ),
        (
            "TestSetHeaderRouteWithDuplicateHeaderNameMatches",
            header_route(
                ("origin", "https://www.fake-origin1.com"),
                ("origin", "https://www.fake-origin2.com"),
            ),
            conditions(
                ("origin", ["https://www.fake-origin1.com", "https://www.fake-origin2.com"])
            ),
        ),
    ],
)
def test_set_header_route(case: str, route: SetHeaderRoute, expected: str) -> None:
    """The route's action (all to the canary) and conditions, in the managed entry, and a path
    `/*` to its action first in the rule; then removed with the managed routes."""
    for multi in (False, True):
        names = ["ingress", "multi-ingress"] if multi else ["ingress"]
        found = [
            ingress(n, action_service=f"action{i + 1}", weight=10) for i, n in enumerate(names)
        ]
        router, writer, ctx = router_for(header_rollout(multi), *found)
        router.set_header_route(route)
        assert len(writes(writer)) == len(names), case
        got = annotations_of(writer)
        assert got[ACTION.format("header-route")] == action((CANARY_SVC, 443, 100)), case
        assert got[CONDITION.format("header-route")] == expected, case
        assert got[MANAGED] == managed(
            ACTION.format("action1"),
            ACTION.format("header-route"),
            CONDITION.format("header-route"),
        )
        assert paths(writer) == ["header-route", "action1"]
        stored = writer.objects[(r.INGRESSES.plural, NS, "ingress")]
        assert stored["spec"]["rules"][0]["http"]["paths"][0] == {
            "path": "/*",
            "pathType": "ImplementationSpecific",
            "backend": {"service": {"name": "header-route", "port": {"name": "use-annotation"}}},
        }
        message = ctx.events[0].message
        assert message.startswith(
            "Updating Ingress `ingress` to headerRoute '&{%!d(string=header-route) [{"
        )
        router.set_header_route(route)  # again: nothing to change
        assert len(writes(writer)) == len(names)
        router.remove_managed_routes()
        assert len(writes(writer)) == 2 * len(names)
        assert annotations_of(writer) == {
            ACTION.format("action1"): found[0]["metadata"]["annotations"][ACTION.format("action1")],
            MANAGED: managed(ACTION.format("action1")),
        }
        assert paths(writer) == ["action1"]
        assert ctx.events[-1].message.endswith("removing managed routes")


def routed_ingress(name: str) -> Obj:
    """TestRemoveManagedRoutes's Ingress: a route's action, conditions and path in place."""
    obj = ingress(name, action_service="action1", weight=10)
    notes = obj["metadata"]["annotations"]
    notes[ACTION.format("header-route")] = "{}"
    notes[CONDITION.format("header-route")] = "{}"
    notes[MANAGED] = managed(
        ACTION.format("action1"), ACTION.format("header-route"), CONDITION.format("header-route")
    )
    backend = {"service": {"name": "header-route", "port": {"name": "use-annotation"}}}
    obj["spec"]["rules"].append({"http": {"paths": [{"backend": backend}]}})
    return obj


@pytest.mark.parametrize("multi", [False, True], ids=["TestRemoveManagedRoutes", "...MultiIngress"])
@pytest.mark.parametrize("how", ["a step without matches", "remove_managed_routes"])
def test_remove_managed_routes(multi: bool, how: str) -> None:
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    router, writer, _ = router_for(header_rollout(multi), *[routed_ingress(n) for n in names])
    if how == "remove_managed_routes":
        router.remove_managed_routes()
    else:
        router.set_header_route(SetHeaderRoute(name="header-route"))
    assert len(writes(writer)) == len(names)
    for name in names:
        assert sorted(annotations_of(writer, name)) == [ACTION.format("action1"), MANAGED]
        assert annotations_of(writer, name)[MANAGED] == managed(ACTION.format("action1"))
        stored = writer.objects[(r.INGRESSES.plural, NS, name)]
        assert [rule["http"]["paths"] for rule in stored["spec"]["rules"]][1] == []
    router.remove_managed_routes()
    assert len(writes(writer)) == len(names)


def test_no_managed_routes_no_changes() -> None:
    router, writer, _ = router_for(alb_rollout(), routed_ingress("ingress"))
    router.remove_managed_routes()
    assert writes(writer) == []


@pytest.mark.parametrize("multi", [False, True], ids=["TestSetMirrorRoute", "...MultiIngress"])
def test_set_mirror_route(multi: bool) -> None:
    names = ["ingress", "multi-ingress"] if multi else ["ingress"]
    router, writer, _ = router_for(
        alb_rollout(ingresses=names if multi else None), *[ingress(n, weight=10) for n in names]
    )
    router.set_mirror_route(
        SetMirrorRoute.from_dict({"name": "mirror-route", "match": [{"method": {"exact": "GET"}}]})
    )
    router.remove_managed_routes()
    router.update_hash("abc", "def")
    assert writes(writer) == []


# -- after alb_test.go: verification --------------------------------------------------------


LB_ARN = (
    "arn:aws:elasticloadbalancing:us-east-2:123456789012:loadbalancer/app/lb-abc123-name/"
    "1234567890123456"
)
MULTI_LB_ARN = LB_ARN.replace("lb-abc123-name", "multi-lb-abc123-name")


def tg_arn(name: str) -> str:
    return (
        f"arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/{name}/1234567890123456"
    )


@dataclass
class FakeElbv2:
    """A boto3 elbv2 client over fixed load balancers and target groups: every load balancer
    has the same target groups (as Argo's fakeAWSClient returns them all)."""

    load_balancers: list[Obj] = field(default_factory=list)
    target_groups: list[tuple[str, str, int | None, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def describe_load_balancers(self, **params: Any) -> Obj:
        self.calls.append("DescribeLoadBalancers")
        return {"LoadBalancers": self.load_balancers}

    def describe_target_groups(self, **params: Any) -> Obj:
        return {
            "TargetGroups": [
                {"TargetGroupName": n, "TargetGroupArn": a} for n, a, _, _ in self.target_groups
            ]
        }

    def describe_tags(self, ResourceArns: list[str]) -> Obj:
        tags = {a: t for _, a, _, t in self.target_groups}
        return {
            "TagDescriptions": [
                {"ResourceArn": a, "Tags": [{"Key": TAG, "Value": tags[a]}]} for a in ResourceArns
            ]
        }

    def describe_listeners(self, **params: Any) -> Obj:
        return {"Listeners": [{"ListenerArn": "listener"}]}

    def describe_rules(self, **params: Any) -> Obj:
        forward = [{"TargetGroupArn": a, "Weight": w} for _, a, w, _ in self.target_groups]
        return {
            "Rules": [
                {"Actions": [{"Type": "forward", "ForwardConfig": {"TargetGroups": forward}}]}
            ]
        }


class NoBindings:
    """A cluster whose Services have no TargetGroupBindings (instance mode, or none)."""

    def target_group_bindings(self, namespace: str) -> list[Obj]:
        return []

    def endpoints(self, namespace: str, name: str) -> Obj:
        raise AssertionError("not read without bindings")


def fake_aws(client: FakeElbv2) -> TargetGroupVerification:
    return TargetGroupVerification(reader=NoBindings(), clients=lambda: client)


def lb(arn: str = LB_ARN, dns: str = HOSTNAME) -> Obj:
    return {"LoadBalancerName": arn.split("/")[2], "LoadBalancerArn": arn, "DNSName": dns}


def groups(weights: dict[str, int | None], ingress_name: str = "ingress") -> list[Any]:
    """Target groups of the canary, experiment and stable Services (in that order) at these
    weights, tagged for the Ingress."""
    return [
        (
            f"{svc.removesuffix('-svc')}-tg-abc123-name",
            tg_arn(f"{svc.removesuffix('-svc')}-tg-abc123-name"),
            w,
            f"default/{ingress_name}-{svc}:443",
        )
        for svc, w in weights.items()
    ]


def alb_status(ingress_name: str, lb_arn: str, canary: str, stable: str) -> ALBStatus:
    """Argo's getAlbStatus: the load balancer and the canary and stable target groups."""

    def ref(arn: str, skip: int) -> AwsResourceRef:
        parts = arn.split("/")
        return AwsResourceRef(name=parts[skip], arn=arn, full_name="/".join(parts[skip:]))

    return ALBStatus(
        ingress=ingress_name,
        load_balancer=ref(lb_arn, 2),
        canary_target_group=ref(tg_arn(canary), 1),
        stable_target_group=ref(tg_arn(stable), 1),
    )


def verifying(*, multi: bool = False, weight: int = 5, **status: Any) -> Obj:
    """TestVerifyWeight's rollout: mid-update (a stable) at a setWeight 10 step."""
    obj = alb_rollout(ingresses=["ingress", "multi-ingress"] if multi else None)
    obj["spec"]["strategy"]["canary"]["steps"] = [{"setWeight": 10}]
    obj["status"] = {"stableRS": "a45fe23", **status}
    return obj


def verify(
    obj: Obj, client: FakeElbv2, weight: int = 10, additional: list[WeightDestination] | None = None
) -> tuple[bool | None, RolloutContext]:
    names = (
        ["ingress", "multi-ingress"]
        if obj["spec"]["strategy"]["canary"]["trafficRouting"]["alb"].get("ingresses")
        else ["ingress"]
    )
    found = [
        ingress(n, weight=5, hostname=HOSTNAME if n == "ingress" else MULTI_HOSTNAME) for n in names
    ]
    router, _, ctx = router_for(obj, *found, aws=fake_aws(client))
    return router.verify_weight(weight, additional or []), ctx


def test_verify_weight_load_balancer_not_found() -> None:
    for multi in (False, True):
        verified, ctx = verify(verifying(multi=multi), FakeElbv2())
        assert verified is False
        assert ctx.new_status.alb == ALBStatus() and len(ctx.new_status.albs or []) == (
            2 if multi else 1
        )
        [event] = ctx.events
        assert (event.reason, event.message, event.warning) == (
            "LoadBalancerNotFound",
            f"Failed to find load balancer: {HOSTNAME}",
            True,
        )


def test_verify_weight_not_needed() -> None:
    """Not mid-update: verified once all the same while there is no ALB status yet; once there
    is one, not at all (no AWS call)."""
    verified, ctx = verify(verifying(stableRS=""), FakeElbv2())
    assert verified is False and ctx.new_status.alb is not None
    obj = verifying(alb={})
    obj["spec"]["strategy"]["canary"]["steps"] = []
    client = FakeElbv2()
    verified, ctx = verify(obj, client)
    assert verified is None and client.calls == []
    # Off: the ALB status goes.
    router, _, ctx = router_for(verifying(alb={"ingress": "ingress"}), ingress("ingress"))
    assert router.verify_weight(10) is None
    assert ctx.new_status.alb is None and ctx.new_status.albs is None


@pytest.mark.parametrize(
    ("case", "weights", "desired", "verified"),
    [
        ("not at weight", {CANARY_SVC: 11, STABLE_SVC: 89}, 10, False),
        ("at weight", {CANARY_SVC: 10, STABLE_SVC: 11}, 10, True),
        ("at max weight, end of rollout", {CANARY_SVC: 100, STABLE_SVC: 0}, 100, True),
    ],
)
def test_verify_weight(
    case: str, weights: dict[str, int | None], desired: int, verified: bool
) -> None:
    client = FakeElbv2([lb()], groups(weights))
    got, ctx = verify(verifying(), client, desired)
    assert got is verified, case
    expected = alb_status("ingress", LB_ARN, "canary-tg-abc123-name", "stable-tg-abc123-name")
    assert ctx.new_status.alb == expected and ctx.new_status.albs == [expected]
    [event] = ctx.events
    arn = tg_arn("canary-tg-abc123-name")
    if verified:
        assert (event.reason, event.message) == (
            "TargetGroupVerified",
            f"Service canary-svc (TargetGroup {arn}) verified: canary weight {desired} set",
        )
    else:
        assert (event.reason, event.message, event.warning) == (
            "TargetGroupUnverified",
            f"Service canary-svc (TargetGroup {arn}) not verified: canary weight 10 not yet set "
            "(current: 11)",
            True,
        )
    status = RolloutStatus(alb=ctx.new_status.alb).to_dict()
    assert status["alb"]["loadBalancer"] == {
        "name": "lb-abc123-name",
        "arn": LB_ARN,
        "fullName": "lb-abc123-name/1234567890123456",
    }


def test_verify_weight_with_unparsable_arns() -> None:
    client = FakeElbv2(
        [
            {
                "LoadBalancerName": "lb-abc123-name",
                "LoadBalancerArn": "lb-abc123-arn",
                "DNSName": HOSTNAME,
            }
        ],
        [
            ("canary-tg-abc123-name", "canary-tg-abc123-arn", 10, "default/ingress-canary-svc:443"),
            ("stable-tg-abc123-name", "stable-tg-abc123-arn", 11, "default/ingress-stable-svc:443"),
        ],
    )
    verified, ctx = verify(verifying(), client)
    assert verified is True
    status = ctx.new_status.alb
    assert status is not None and status.load_balancer and status.canary_target_group
    assert status.load_balancer.full_name == "" and status.canary_target_group.full_name == ""


@pytest.mark.parametrize(
    ("case", "weights", "verified"),
    [
        ("not at weight", (11, 89), False),
        ("at weight", (10, 90), True),
    ],
)
def test_verify_weight_multi_ingress(case: str, weights: tuple[int, int], verified: bool) -> None:
    """Each Ingress's load balancer is found by its own hostname; every Ingress's canary target
    group must be at the weight. status.albs has one entry per Ingress."""
    canary, stable = weights
    client = FakeElbv2(
        [lb(), lb(MULTI_LB_ARN, MULTI_HOSTNAME)],
        groups({CANARY_SVC: canary, STABLE_SVC: stable})
        + groups({CANARY_SVC: canary, STABLE_SVC: stable}, "multi-ingress"),
    )
    client.target_groups[2:] = [
        (n.replace("-tg-", "-tg-multi-"), tg_arn(n.replace("-tg-", "-tg-multi-")), w, t)
        for n, _, w, t in client.target_groups[2:]
    ]
    got, ctx = verify(verifying(multi=True), client)
    assert got is verified, case
    assert ctx.new_status.albs == [
        alb_status("ingress", LB_ARN, "canary-tg-abc123-name", "stable-tg-abc123-name"),
        alb_status(
            "multi-ingress",
            MULTI_LB_ARN,
            "canary-tg-multi-abc123-name",
            "stable-tg-multi-abc123-name",
        ),
    ]


def test_verify_weight_multi_ingress_resizes_albs() -> None:
    """status.albs already set, of another length: one fresh entry per Ingress."""
    obj = verifying(multi=True, albs=[{"ingress": "a"}, {"ingress": "b"}, {"ingress": "c"}])
    verified, ctx = verify(obj, FakeElbv2())
    assert verified is False and ctx.new_status.albs == [ALBStatus(), ALBStatus()]


@pytest.mark.parametrize(
    ("case", "weights", "verified"),
    [
        ("experiment weights not present", {CANARY_SVC: 10, STABLE_SVC: 90}, False),
        (
            "incorrect weights",
            {CANARY_SVC: 10, "ex-svc-1": 100, "ex-svc-2": 100, STABLE_SVC: 85},
            False,
        ),
        ("all correct", {CANARY_SVC: 10, "ex-svc-1": 2, "ex-svc-2": 3, STABLE_SVC: 85}, True),
    ],
)
def test_verify_weight_with_additional_destinations(
    case: str, weights: dict[str, int | None], verified: bool
) -> None:
    """TestVerifyWeightWithAdditionalDestinations: each experiment Service's target group must
    be at its weight too."""
    got, ctx = verify(verifying(), FakeElbv2([lb()], groups(weights)), 10, EXPERIMENT)
    assert got is verified, case
    assert ctx.new_status.alb == alb_status(
        "ingress", LB_ARN, "canary-tg-abc123-name", "stable-tg-abc123-name"
    )


def test_an_aws_error_is_unverified_with_argos_events() -> None:
    class Broken(FakeElbv2):
        def describe_load_balancers(self, **params: Any) -> Obj:
            import botocore.exceptions

            raise botocore.exceptions.ClientError(
                {
                    "Error": {"Code": "AccessDenied", "Message": "no"},
                    "ResponseMetadata": {"HTTPStatusCode": 403, "RequestId": "r-1"},
                },
                "DescribeLoadBalancers",
            )

    with pytest.raises(WeightVerifyError) as err:
        verify(verifying(), Broken())
    message = (
        "operation error Elastic Load Balancing v2: DescribeLoadBalancers, https response error "
        "StatusCode: 403, RequestID: r-1, api error AccessDenied: no"
    )
    assert str(err.value) == message and err.value.verified is False


# -- through the one-sync fixture ----------------------------------------------------------------


def alb_ingress(name: str = "web-ing", **status: Any) -> Obj:
    """An ALB Ingress sending `/` to the action Service web-root on `use-annotation`."""
    backend = {"service": {"name": "web-root", "port": {"name": "use-annotation"}}}
    obj: Obj = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": name,
            "namespace": NS,
            "resourceVersion": "5",
            "annotations": {"kubernetes.io/ingress.class": "alb"},
        },
        "spec": {
            "rules": [
                {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
            ]
        },
    }
    if status:
        obj["status"] = status
    return obj


def alb_sim(
    *steps: Obj,
    ingresses: list[str] | None = None,
    aws: Any = None,
    hostname: str | None = None,
    **config: Any,
) -> OneSync:
    """A deployed rollout routing through ALB Ingresses (web-root's action), whose status may
    name their load balancer's `hostname`."""
    names = ingresses or ["web-ing"]
    obj = rollout(
        replicas=10,
        strategy={
            "canary": {
                "stableService": "web-stable",
                "canaryService": "web-canary",
                "trafficRouting": {
                    "alb": {
                        **({"ingresses": names} if ingresses else {"ingress": "web-ing"}),
                        "servicePort": 80,
                        "rootService": "web-root",
                        **config,
                    }
                },
                "steps": list(steps),
            }
        },
    )
    sim = OneSync(
        obj,
        [
            service("web-stable"),
            service("web-canary"),
            *[
                alb_ingress(
                    n,
                    **({"loadBalancer": {"ingress": [{"hostname": hostname}]}} if hostname else {}),
                )
                for n in names
            ],
        ],
        owned_only=True,
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
        aws=aws,
    )
    sim.settle()
    assert sim.rollout["status"]["stableRS"] == V1
    return sim


def weights(
    sim: OneSync, name: str = "web-ing", prefix: str = "alb.ingress.kubernetes.io"
) -> dict[str, int]:
    notes = sim.of(r.INGRESSES)[name]["metadata"]["annotations"]
    forward = json.loads(notes[f"{prefix}/actions.web-root"])
    return {g["ServiceName"]: g["Weight"] for g in forward["ForwardConfig"]["TargetGroups"]}


def test_weights_step_by_step_then_back_to_the_stable() -> None:
    sim = alb_sim({"setWeight": 20}, {"pause": {"duration": 10}}, {"setWeight": 60}, {"pause": {}})
    assert weights(sim) == {"web-canary": 0, "web-stable": 100}
    notes = sim.of(r.INGRESSES)["web-ing"]["metadata"]["annotations"]
    assert notes[MANAGED] == managed("alb.ingress.kubernetes.io/actions.web-root")
    assert notes["kubernetes.io/ingress.class"] == "alb"  # the others are left alone
    update(sim)
    sim.settle()
    assert weights(sim) == {"web-canary": 20, "web-stable": 80}
    assert sim.rollout["status"]["canary"]["weights"]["canary"]["weight"] == 20
    assert sim.rollout["status"]["canary"]["weights"].get("verified") is None
    assert "alb" not in sim.rollout["status"]  # verification is off
    sim.advance(11)
    sim.settle()
    assert weights(sim) == {"web-canary": 60, "web-stable": 40}
    sim.rollout["status"]["promoteFull"] = True
    sim.settle()
    assert weights(sim) == {"web-canary": 0, "web-stable": 100}
    assert sim.rollout["status"]["stableRS"] != V1


def test_abort_puts_the_weight_back_before_the_canary_is_scaled_down() -> None:
    sim = alb_sim({"setWeight": 30}, {"pause": {}})
    v2 = update(sim)
    sim.settle()
    assert weights(sim) == {"web-canary": 30, "web-stable": 70}
    sim.rollout["status"]["abort"] = True
    start = len(sim.writer.actions)
    sim.sync()
    acts = [a.resource for a in sim.writer.actions[start:]]
    assert acts.index("ingresses") < acts.index("replicasets")
    assert weights(sim) == {"web-canary": 0, "web-stable": 100}
    assert sim.rs(v2)["spec"]["replicas"] > 0  # abortScaleDownDelaySeconds: 30 s
    sim.advance(31)
    sim.settle()
    assert sim.rs(v2)["spec"]["replicas"] == 0 and weights(sim)["web-canary"] == 0


def test_someone_elses_edit_of_the_action_is_put_back() -> None:
    sim = alb_sim({"setWeight": 30}, {"pause": {}})
    update(sim)
    sim.settle()
    stored = sim.writer.objects[(r.INGRESSES.plural, NS, "web-ing")]
    key = "alb.ingress.kubernetes.io/actions.web-root"
    stored["metadata"]["annotations"][key] = action(("web-canary", 80, 90), ("web-stable", 80, 10))
    stored["metadata"]["annotations"]["team"] = "payments"
    version = stored["metadata"]["resourceVersion"]
    synced = sim.sync()
    [body] = synced.writes("ingresses")
    assert body["metadata"]["resourceVersion"] == version
    assert set(body["metadata"]["annotations"]) == {key}
    assert weights(sim) == {"web-canary": 30, "web-stable": 70}
    assert sim.of(r.INGRESSES)["web-ing"]["metadata"]["annotations"]["team"] == "payments"
    assert sim.sync().actions == []


def test_several_ingresses_a_prefix_and_stickiness() -> None:
    sim = alb_sim(
        {"setWeight": 25},
        {"pause": {}},
        ingresses=["web-ing", "web-ing-2"],
        annotationPrefix="custom.alb.ingress.kubernetes.io",
        stickinessConfig={"enabled": True, "durationSeconds": 3600},
    )
    update(sim)
    sim.settle()
    for name in ("web-ing", "web-ing-2"):
        notes = sim.of(r.INGRESSES)[name]["metadata"]["annotations"]
        assert notes["custom.alb.ingress.kubernetes.io/actions.web-root"] == action(
            ("web-canary", 80, 25), ("web-stable", 80, 75), sticky=3600
        )
        assert notes[MANAGED] == managed("custom.alb.ingress.kubernetes.io/actions.web-root")


def test_a_header_route_step_then_gone_at_the_end() -> None:
    obj = rollout(
        replicas=10,
        strategy={
            "canary": {
                "stableService": "web-stable",
                "canaryService": "web-canary",
                "trafficRouting": {
                    "alb": {"ingress": "web-ing", "servicePort": 80, "rootService": "web-root"},
                    "managedRoutes": [{"name": "hdr"}],
                },
                "steps": [
                    {"setWeight": 20},
                    {
                        "setHeaderRoute": {
                            "name": "hdr",
                            "match": [{"headerName": "x-canary", "headerValue": {"exact": "yes"}}],
                        }
                    },
                    {"pause": {}},
                ],
            }
        },
    )
    sim = OneSync(
        obj,
        [service("web-stable"), service("web-canary"), alb_ingress()],
        owned_only=True,
        kubelet_enabled=False,
        settle_kubelet=True,
        observed_generation=True,
    )
    sim.settle()
    update(sim)
    sim.settle()
    assert sim.rollout["status"]["currentStepIndex"] == 2
    ing = sim.of(r.INGRESSES)["web-ing"]
    notes = ing["metadata"]["annotations"]
    assert notes["alb.ingress.kubernetes.io/actions.hdr"] == action(("web-canary", 80, 100))
    assert notes["alb.ingress.kubernetes.io/conditions.hdr"] == conditions(("x-canary", ["yes"]))
    assert [p["backend"]["service"]["name"] for p in ing["spec"]["rules"][0]["http"]["paths"]] == [
        "hdr",
        "web-root",
    ]
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.rollout["status"]["stableRS"] != V1
    ing = sim.of(r.INGRESSES)["web-ing"]
    assert "alb.ingress.kubernetes.io/actions.hdr" not in ing["metadata"]["annotations"]
    assert [p["backend"]["service"]["name"] for p in ing["spec"]["rules"][0]["http"]["paths"]] == [
        "web-root"
    ]
    assert ing["metadata"]["annotations"][MANAGED] == managed(
        "alb.ingress.kubernetes.io/actions.web-root"
    )


def test_ping_pong_across_a_promotion() -> None:
    obj = rollout(
        replicas=2,
        strategy={
            "canary": {
                "pingPong": {"pingService": "ping", "pongService": "pong"},
                "trafficRouting": {
                    "alb": {"ingress": "web-ing", "servicePort": 80, "rootService": "web-root"}
                },
                "steps": [{"setWeight": 20}, {"pause": {}}],
            }
        },
    )
    sim = OneSync(obj, [service("ping"), service("pong"), alb_ingress()])
    sim.settle()
    assert sim.status["canary"]["stablePingPong"] == "ping"
    assert weights(sim) == {"pong": 0, "ping": 100}
    sim.set_image("web:2")
    sim.settle()
    assert weights(sim) == {"pong": 20, "ping": 80}
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.status["canary"]["stablePingPong"] == "pong"
    assert weights(sim) == {"ping": 0, "pong": 100}


def test_a_weight_not_verified_holds_the_step_and_the_promotion() -> None:
    """With verification on, the step waits for the load balancer's weight (requeued after the
    verify interval); at the end the reconcile stops until the full weight is verified."""
    client = FakeElbv2([lb()], [])
    sim = alb_sim(
        {"setWeight": 20}, {"pause": {"duration": 5}}, aws=fake_aws(client), hostname=HOSTNAME
    )
    # The first deploy recorded the load balancer once (no status.alb yet).
    assert sim.status["alb"]["loadBalancer"]["name"] == "lb-abc123-name"
    update(sim)

    def tagged(canary: int) -> None:
        client.target_groups = [
            ("canary", tg_arn("canary"), canary, "default/web-ing-web-canary:80"),
            ("stable", tg_arn("stable"), 100 - canary, "default/web-ing-web-stable:80"),
        ]

    tagged(0)
    sim.settle()
    assert weights(sim)["web-canary"] == 20
    status = sim.status
    assert status["currentStepIndex"] == 0 and status["canary"]["weights"]["verified"] is False
    assert sim.last is not None and sim.last.requeue_after == 10
    assert "TargetGroupUnverified" in sim.reasons()
    assert status["alb"]["canaryTargetGroup"]["arn"] == tg_arn("canary")
    tagged(20)
    done = sim.settle()
    assert "TargetGroupVerified" in done[0].reasons()
    # On to the pause: no verification there (no AWS call), so nothing is recorded as verified.
    assert sim.status["currentStepIndex"] == 1
    assert sim.status["canary"]["weights"].get("verified") is None
    sim.advance(6)
    with pytest.raises(WeightNotVerified):
        sim.settle()
    assert sim.status["stableRS"] == V1  # not promoted: the full weight is not verified
    tagged(100)
    sim.settle()
    assert sim.status["stableRS"] != V1


# -- through the controller ------------------------------------------------------------------------


def controller_sim() -> tuple[OneSync, RolloutController]:
    sim = alb_sim({"setWeight": 20}, {"pause": {}})
    return sim, controller_for(sim.writer)


def test_the_controller_reads_the_alb_ingress_from_the_cache_and_guards_it() -> None:
    """The worker hands the router the Ingress the rollout names (validated first: a missing
    one is InvalidSpec), and an Ingress cached older than our last write to it requeues the
    reconcile shortly without writing."""
    sim, controller = controller_sim()
    update(sim)
    for _ in range(4):
        sim.kubelet()
        assert controller.sync(request()).outcome != Outcome.ERROR
    assert weights(sim) == {"web-canary": 20, "web-stable": 80}
    start = len(sim.writer.actions)
    guard = Behind(stale=frozenset({("ingresses", f"{NS}/web-ing")}))
    stale = controller_for(sim.writer)
    stale.written = guard
    result = stale.sync(request())
    assert (result.outcome, result.delay) == (Outcome.AFTER, STALE_REQUEUE)
    assert sim.writer.actions[start:] == []
    del sim.writer.objects[(r.INGRESSES.plural, NS, "web-ing")]
    assert controller.sync(request()).delay == INVALID_SPEC_REQUEUE
    condition = next(c for c in sim.status_patch()["conditions"] if c["type"] == "InvalidSpec")
    assert condition["message"] == (
        'The Rollout "web" is invalid: spec.strategy.canary.trafficRouting.alb.ingress: '
        'Invalid value: "web-ing": ingress.networking.k8s.io "web-ing" not found'
    )


def test_an_unverified_weight_at_the_end_requeues_after_the_verify_interval() -> None:
    client = FakeElbv2([lb()], [])
    sim = alb_sim({"setWeight": 50}, aws=fake_aws(client), hostname=HOSTNAME)
    # The load balancer follows the step's weight, not the full weight after it.
    client.target_groups = [
        ("canary", tg_arn("canary"), 50, "default/web-ing-web-canary:80"),
        ("stable", tg_arn("stable"), 50, "default/web-ing-web-stable:80"),
    ]
    controller = controller_for(sim.writer, target_groups=fake_aws(client))
    update(sim)
    outcomes = []
    for _ in range(6):
        sim.kubelet()
        outcomes.append(controller.sync(request()))
    assert (outcomes[-1].outcome, outcomes[-1].delay) == (Outcome.AFTER, VERIFY_RETRY_SECONDS)
    assert sim.status["stableRS"] == V1 and weights(sim)["web-canary"] == 100


def test_verification_is_off_unless_the_settings_turn_it_on() -> None:
    kube: Any = object()
    assert aws_verification(kube, AwsSettings()) is None
    on = aws_verification(kube, AwsSettings(verify_target_group=True, alb_tag_key_resource_id="k"))
    assert on is not None and on.tag_key_resource_id == "k"
    assert on.reader.bindings == r.TARGETGROUPBINDINGS  # type: ignore[attr-defined]


def test_verified_once_to_record_the_load_balancer_even_when_none_is_found() -> None:
    """VerifyWeight when not needed but no ALB status yet: checked once, and the (empty) status
    written whole, as Argo's, so that later reconciles make no AWS call."""
    client = FakeElbv2([], [])
    sim = alb_sim({"setWeight": 20}, {"pause": {}}, aws=fake_aws(client), hostname=HOSTNAME)
    empty = {"name": "", "arn": "", "fullName": ""}
    assert sim.status["alb"] == {
        "loadBalancer": empty,
        "canaryTargetGroup": empty,
        "stableTargetGroup": empty,
    }
    assert sim.status["albs"] == [sim.status["alb"]]
    calls = len(client.calls)
    assert calls >= 1 and "LoadBalancerNotFound" in sim.reasons()
    synced = sim.sync()
    assert synced.actions == [] and synced.requeue_after != VERIFY_RETRY_SECONDS
    assert len(client.calls) == calls
