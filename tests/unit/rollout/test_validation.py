"""Rollout spec validation gives Argo Rollouts' messages, field paths and order.

Cases marked `argo:` are ported from argo-rollouts' `pkg/apis/rollouts/validation/
validation_test.go`; the expected strings are `field.Error.Error()` as Argo's controller puts
them after `The Rollout "name" is invalid: `.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.analysis import AnalysisTemplate, ClusterAnalysisTemplate
from rollout_workers.api.rollout import Rollout
from rollout_workers.rollout import validation as v
from rollout_workers.rollout.validation.messages import (
    DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE,
    SCALE_DOWN_LIMIT_LARGER_THAN_REVISION_LIMIT,
    invalid_spec_message,
)
from rollout_workers.rollout.validation.references import (
    MANAGED_BY_ROLLOUTS_ANNOTATION,
    ReferencedResources,
)
from rollout_workers.rollout.validation.spec import pause_duration_seconds, spec_errors

Obj = dict[str, Any]

TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "guestbook"}},
    "spec": {"containers": [{"name": "app", "image": "guestbook:v1"}]},
}


def canary(**fields: Any) -> Obj:
    strategy: Obj = {"steps": [{"setWeight": 10}, {"pause": {}}]}
    strategy.update(fields)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": "guestbook", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "guestbook"}},
            "template": copy.deepcopy(TEMPLATE),
            "strategy": {"canary": strategy},
        },
    }


def blue_green(**fields: Any) -> Obj:
    obj = canary()
    strategy: Obj = {"activeService": "active", "previewService": "preview"}
    strategy.update(fields)
    obj["spec"]["strategy"] = {"blueGreen": strategy}
    return obj


def with_spec(obj: Obj, **fields: Any) -> Obj:
    for key, value in fields.items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    return obj


def routed(**fields: Any) -> Obj:
    """A canary with services and an SMI router (which needs both services)."""
    base: Obj = {
        "stableService": "stable",
        "canaryService": "canary",
        "trafficRouting": {"smi": {}},
    }
    base.update(fields)
    return canary(**base)


def istio(**routing: Any) -> Obj:
    tr: Obj = {"istio": {"virtualService": {"name": "vsvc"}}}
    tr.update(routing)
    return canary(stableService="stable", canaryService="canary", trafficRouting=tr)


def alb(**routing: Any) -> Obj:
    tr: Obj = {"alb": {"ingress": "ingress", "servicePort": 80, "rootService": "root"}}
    tr.update(routing)
    return canary(stableService="stable", canaryService="canary", trafficRouting=tr)


def gateway_api(config: Obj, *, first_class: bool = False) -> Obj:
    """A canary routed by the Gateway API router (Argo's gatewayAPI plugin config)."""
    tr: Obj = {"gatewayAPI": config} if first_class else {"plugins": {GATEWAY: config}}
    return canary(stableService="stable", canaryService="canary", trafficRouting=tr)


def steps(obj: Obj, *step_list: Obj) -> Obj:
    obj["spec"]["strategy"]["canary"]["steps"] = list(step_list)
    return obj


SELECTOR_SRC = "spec.template.metadata.labels"
GATEWAY = "argoproj-labs/gatewayAPI"


@dataclass(frozen=True)
class Case:
    name: str
    obj: Obj
    expected: str | None


CASES = [
    Case("valid canary", canary(), None),
    Case("valid blue-green", blue_green(), None),  # argo: successful run
    Case("argo: valid canary with traffic routing", routed(), None),
    Case(
        "SMI: maxTrafficWeight is for nginx and plugins only",
        routed(trafficRouting={"smi": {"rootService": "root"}, "maxTrafficWeight": 1000}),
        "spec.strategy.trafficRouting.maxTrafficWeight: Invalid value: 1000: "
        "Canary maxTrafficWeight in traffic routing only supported in Nginx and Plugins",
    ),
    Case(
        "SMI: experiment template weights are allowed",
        steps(
            routed(),
            {"experiment": {"templates": [{"name": "t", "specRef": "canary", "weight": 10}]}},
        ),
        None,
    ),
    Case(
        "argo: valid Istio with destinationRule and no services",
        canary(
            trafficRouting={
                "istio": {
                    "destinationRule": {
                        "name": "dr",
                        "canarySubsetName": "c",
                        "stableSubsetName": "s",
                    }
                }
            }
        ),
        None,
    ),
    Case(
        "argo: valid ping-pong without canary and stable services",
        canary(pingPong={"pingService": "ping", "pongService": "pong"}),
        None,
    ),
    Case(
        "argo: valid ping-pong with a plugin router",
        canary(
            pingPong={"pingService": "ping", "pongService": "pong"},
            trafficRouting={"plugins": {"my-org/my-plugin": {}}},
        ),
        None,
    ),
    Case(
        "argo: valid workload reference without selector or template",
        with_spec(
            canary(),
            selector=None,
            template={},
            workloadRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-deployment"},
        ),
        None,
    ),
    Case(
        "negative replicas",
        with_spec(canary(), replicas=-1),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    ),
    Case(
        "argo: missing selector",
        with_spec(canary(), selector=None),
        "spec.selector: Required value: Rollout has missing field '.spec.selector'",
    ),
    Case(
        "argo: empty selector (select-all)",
        with_spec(canary(), selector={}),
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
        "empty selector is invalid for deployment",
    ),
    Case(
        "selector operator not valid",
        with_spec(
            canary(),
            selector={"matchExpressions": [{"key": "app", "operator": "Like", "values": ["a"]}]},
        ),
        'spec.selector.matchExpressions[0].operator: Invalid value: "Like": '
        "not a valid selector operator",
    ),
    Case(
        "selector In without values",
        with_spec(canary(), selector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
        "spec.selector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'",
    ),
    Case(
        "selector does not match template labels",
        with_spec(canary(), selector={"matchLabels": {"app": "other"}}),
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"guestbook"}: '
        "`selector` does not match template `labels`",
    ),
    Case(
        "selector expression does not match template labels",
        with_spec(
            canary(),
            selector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        ),
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"guestbook"}: '
        "`selector` does not match template `labels`",
    ),
    Case(
        "template without containers",
        with_spec(canary(), template={"metadata": {"labels": {"app": "guestbook"}}}),
        "spec.template.spec.containers: Required value",
    ),
    Case(
        "template restartPolicy not Always",
        with_spec(
            canary(),
            template={
                "metadata": {"labels": {"app": "guestbook"}},
                "spec": {"containers": [{"name": "a"}], "restartPolicy": "Never"},
            },
        ),
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ),
    Case(
        "argo: workload reference with template",
        with_spec(
            canary(),
            workloadRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-deployment"},
        ),
        "spec.template: Internal error: template must be empty for workload reference rollout",
    ),
    Case(
        "negative minReadySeconds",
        with_spec(canary(), minReadySeconds=-1),
        "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
    ),
    Case(
        "negative revisionHistoryLimit",
        with_spec(canary(), revisionHistoryLimit=-1),
        "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
    ),
    Case(
        "argo: invalid progressDeadlineSeconds (minReadySeconds above the default)",
        with_spec(canary(), minReadySeconds=601),
        "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds",
    ),
    Case(
        "progressDeadlineSeconds equal to minReadySeconds",
        with_spec(canary(), minReadySeconds=30, progressDeadlineSeconds=30),
        "spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds",
    ),
    Case(
        "argo: no strategy",
        with_spec(canary(), strategy={}),
        "spec.strategy.strategy: Required value: Rollout has missing field "
        "'.spec.strategy.canary or .spec.strategy.blueGreen'",
    ),
    Case(
        "argo: both strategies",
        with_spec(
            canary(),
            strategy={"canary": {"steps": [{"setWeight": 5}]}, "blueGreen": {"activeService": "a"}},
        ),
        'spec.strategy.strategy: Invalid value: "blueGreen: true canary: true": '
        "Multiple Strategies can not be listed",
    ),
    Case(
        "argo: blue-green same active and preview service",
        blue_green(previewService="active"),
        'spec.strategy.activeService: Invalid value: "active": This rollout uses the same '
        "service for the active and preview services, but two different services are required.",
    ),
    Case(
        "argo: blue-green scaleDownDelayRevisionLimit above revisionHistoryLimit",
        blue_green(scaleDownDelayRevisionLimit=11),
        "spec.strategy.scaleDownDelayRevisionLimit: Invalid value: 11: This rollout's revision "
        "history limit can not be smaller than the rollout's scale down limit",
    ),
    Case(
        "argo: anti-affinity without a strategy",
        blue_green(antiAffinity={}),
        'spec.strategy.antiAffinity: Invalid value: "antiAffinity.'
        "PreferredDuringSchedulingIgnoredDuringExecution: false antiAffinity."
        'RequiredDuringSchedulingIgnoredDuringExecution: false": '
        "AntiAffinity must have exactly one strategy listed",
    ),
    Case(
        "argo: anti-affinity weight above 100",
        canary(antiAffinity={"preferredDuringSchedulingIgnoredDuringExecution": {"weight": 101}}),
        "spec.strategy.antiAffinity.weight: Invalid value: 101: "
        "AntiAffinity weight must be between 1-100",
    ),
    Case(
        "argo: maxSurge and maxUnavailable both 0",
        canary(maxSurge=0, maxUnavailable=0),
        'spec.strategy.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: '
        "MaxSurge and MaxUnavailable both can not be zero",
    ),
    Case(
        "argo: maxSurge 0% and maxUnavailable '0'",
        canary(maxSurge="0%", maxUnavailable="0"),
        'spec.strategy.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"0%"}: '
        "MaxSurge and MaxUnavailable both can not be zero",
    ),
    Case(
        "argo: duplicate canary and stable services",
        canary(stableService="stable", canaryService="stable"),
        'spec.strategy.stableService: Invalid value: "stable": This rollout uses the same '
        "service for the stable and canary services, but two different services are required.",
    ),
    Case(
        "argo: duplicate ping-pong services",
        canary(pingPong={"pingService": "ping", "pongService": "ping"}),
        'spec.strategy.pingPong.pingService: Invalid value: "ping": This rollout uses the same '
        "service for the ping and pong services, but two different services are required.",
    ),
    Case(
        "argo: ping service only",
        canary(pingPong={"pingService": "ping", "pongService": ""}),
        'spec.strategy.pingPong.pongService: Invalid value: "": '
        "Ping service and Pong service must to be set to use Ping-Pong feature",
    ),
    Case(
        "argo: pong service only",
        canary(pingPong={"pingService": "", "pongService": "pong"}),
        'spec.strategy.pingPong.pingService: Invalid value: "": '
        "Ping service and Pong service must to be set to use Ping-Pong feature",
    ),
    Case(
        "argo: missed ALB root service for ping-pong",
        canary(
            pingPong={"pingService": "ping", "pongService": "pong"},
            trafficRouting={"alb": {"ingress": "i", "servicePort": 80}},
        ),
        'spec.strategy.trafficRouting.alb.rootService: Invalid value: "": Root service field '
        "is required for the configuration with ALB and ping-pong feature enabled",
    ),
    Case(
        "argo: ping-pong without ALB, Istio or plugin router",
        canary(
            pingPong={"pingService": "ping", "pongService": "pong"},
            stableService="stable",
            canaryService="canary",
            trafficRouting={"nginx": {"stableIngress": "stable-ingress"}},
        ),
        "spec.strategy.trafficRouting.alb: Invalid value: null: "
        "Ping-pong feature works with the ALB, Istio, and plugin-based traffic routers only",
    ),
    Case(
        "argo: traffic routing without canary service",
        routed(canaryService=""),
        'spec.strategy.canaryService: Invalid value: "": '
        "Canary service and Stable service must to be set to use Traffic Routing",
    ),
    Case(
        "argo: traffic routing (nginx) without services",
        canary(trafficRouting={"nginx": {"stableIngress": "ingress"}}),
        'spec.strategy.stableService: Invalid value: "": '
        "Canary service and Stable service must to be set to use Traffic Routing",
    ),
    Case(
        "argo: traffic routing (Traefik, kept as an extra field) without services",
        canary(trafficRouting={"traefik": {"weightedTraefikServiceName": "x"}}),
        'spec.strategy.stableService: Invalid value: "": '
        "Canary service and Stable service must to be set to use Traffic Routing",
    ),
    Case(
        "argo: scaleDownDelaySeconds with a basic canary",
        canary(scaleDownDelaySeconds=60),
        "spec.strategy.scaleDownDelaySeconds: Invalid value: 60: "
        "Canary scaleDownDelaySeconds can only be used with traffic routing",
    ),
    Case(
        "argo: scaleDownDelaySeconds with traffic routing", routed(scaleDownDelaySeconds=60), None
    ),
    Case(
        "argo: dynamicStableScale with a basic canary",
        canary(dynamicStableScale=True),
        "spec.strategy.dynamicStableScale: Invalid value: true: "
        "Canary dynamicStableScale can only be used with traffic routing",
    ),
    Case(
        "argo: dynamicStableScale with scaleDownDelaySeconds",
        routed(dynamicStableScale=True, scaleDownDelaySeconds=60),
        "spec.strategy.dynamicStableScale: Invalid value: true: "
        "Canary dynamicStableScale cannot be used with scaleDownDelaySeconds",
    ),
    Case(
        "argo: maxTrafficWeight only with nginx or plugins",
        alb(maxTrafficWeight=1),
        "spec.strategy.trafficRouting.maxTrafficWeight: Invalid value: 1: "
        "Canary maxTrafficWeight in traffic routing only supported in Nginx and Plugins",
    ),
    Case(
        "argo: maxTrafficWeight 0",
        canary(
            stableService="stable",
            canaryService="canary",
            trafficRouting={"nginx": {"stableIngress": "i"}, "maxTrafficWeight": 0},
        ),
        "spec.strategy.trafficRouting.maxTrafficWeight: Invalid value: 0: "
        "MaxTrafficWeight needs to be greater than 0",
    ),
    # Released Argo Rollouts accepts a canary without steps (a plain rolling update).
    Case("canary without steps", canary(steps=[]), None),
    Case(
        "argo: empty step",
        steps(canary(), {}),
        'spec.strategy.steps[0]: Invalid value: "step.Experiment: true step.Pause: true '
        "step.SetWeight: true step.Analysis: true step.SetCanaryScale: true "
        'step.SetHeaderRoute: true step.SetMirrorRoute: true step.Plugin: true": '
        "Step must have one of the following set: experiment, setWeight, setCanaryScale, "
        "plugin or pause",
    ),
    Case(
        "argo: two actions in one step",
        steps(canary(), {"setWeight": 1, "pause": {"duration": 1}}),
        'spec.strategy.steps[0]: Invalid value: "step.Experiment: false step.Pause: true '
        'step.SetWeight: true step.Analysis: false": Step must have one of the following set: '
        "experiment, setWeight, setCanaryScale, plugin or pause",
    ),
    Case(
        "argo: setWeight above 100",
        steps(canary(), {"setWeight": 101}),
        "spec.strategy.steps[0].setWeight: Invalid value: 101: "
        "SetWeight needs to be between 0 and 100",
    ),
    Case(
        "negative setWeight",
        steps(canary(), {"setWeight": 5}, {"setWeight": -1}),
        "spec.strategy.steps[1].setWeight: Invalid value: -1: "
        "SetWeight needs to be between 0 and 100",
    ),
    Case(
        "setWeight above maxTrafficWeight",
        steps(
            canary(
                stableService="s",
                canaryService="c",
                trafficRouting={"nginx": {"stableIngress": "i"}, "maxTrafficWeight": 1000},
            ),
            {"setWeight": 1001},
        ),
        "spec.strategy.steps[0].setWeight: Invalid value: 1001: "
        "SetWeight needs to be between 0 and 1000",
    ),
    Case(
        "argo: negative pause duration",
        steps(canary(), {"pause": {"duration": -1}}),
        "spec.strategy.steps[0].pause.duration: Invalid value: -1: "
        "Duration needs to be greater than 0",
    ),
    Case(
        "unparsable pause duration",
        steps(canary(), {"pause": {"duration": "5 minutes"}}),
        "spec.strategy.steps[0].pause.duration: Invalid value: -1: "
        "Duration needs to be greater than 0",
    ),
    Case("pause duration with units", steps(canary(), {"pause": {"duration": "1h30m"}}), None),
    Case(
        "argo: setCanaryScale without trafficRouting",
        steps(canary(), {"setCanaryScale": {"weight": 10}}),
        "spec.strategy.trafficRouting: Required value: "
        "SetCanaryScale requires TrafficRouting to be set",
    ),
    Case(
        "argo: setHeaderRoute without trafficRouting",
        steps(
            canary(stableService="stable", canaryService="canary"),
            {
                "setHeaderRoute": {
                    "match": [{"headerName": "agent", "headerValue": {"exact": "chrome"}}]
                }
            },
        ),
        'spec.strategy.steps[0].setHeaderRoute: Invalid value: v1alpha1.SetHeaderRoute{Name:"", '
        'Match:[]v1alpha1.HeaderRoutingMatch{v1alpha1.HeaderRoutingMatch{HeaderName:"agent", '
        "HeaderValue:(*v1alpha1.StringMatch)(0xc000000000)}}}: "
        "SetHeaderRoute requires TrafficRouting, supports Istio and ALB and Apisix",
    ),
    Case(
        "argo: setMirrorRoute without trafficRouting",
        steps(
            canary(stableService="stable", canaryService="canary"),
            {"setMirrorRoute": {"name": "test-mirror-1"}},
        ),
        'spec.strategy.steps[0].setMirrorRoute: Invalid value: v1alpha1.SetMirrorRoute{Name:"'
        'test-mirror-1", Match:[]v1alpha1.RouteMatch(nil), Percentage:(*int32)(nil)}: '
        "SetMirrorRoute requires TrafficRouting, supports Istio and Plugins",
    ),
    Case(
        "argo: setHeaderRoute with Istio and several match values",
        steps(
            istio(managedRoutes=[{"name": "r"}]),
            {
                "setHeaderRoute": {
                    "name": "r",
                    "match": [
                        {
                            "headerName": "agent",
                            "headerValue": {"exact": "chrome", "regex": "chrome(.*)"},
                        }
                    ],
                }
            },
        ),
        "spec.strategy.steps[0].setHeaderRoute.match[0]: Invalid value: "
        'v1alpha1.StringMatch{Exact:"chrome", Prefix:"", Regex:"chrome(.*)"}: '
        "StringMatch match value must have exactly one of the following: exact, regex, prefix",
    ),
    Case(
        "argo: setHeaderRoute with Istio and no match value",
        steps(
            istio(managedRoutes=[{"name": "r"}]),
            {"setHeaderRoute": {"name": "r", "match": [{"headerName": "agent"}]}},
        ),
        "spec.strategy.steps[0].setHeaderRoute.match[0]: Invalid value: null: "
        "StringMatch value missed, match value must have one of the following: exact, regex, "
        "prefix",
    ),
    Case(
        "argo: setHeaderRoute with ALB and a prefix",
        steps(
            alb(managedRoutes=[{"name": "r"}]),
            {
                "setHeaderRoute": {
                    "name": "r",
                    "match": [{"headerName": "agent", "headerValue": {"prefix": "chrome"}}],
                }
            },
        ),
        "spec.strategy.steps[0].setHeaderRoute.match[0]: Invalid value: "
        'v1alpha1.StringMatch{Exact:"", Prefix:"chrome", Regex:""}: '
        "SetHeaderRoute match value invalid. ALB supports 'exact' value only",
    ),
    Case(
        "argo: setHeaderRoute route missing from managedRoutes",
        steps(
            istio(managedRoutes=[{"name": "not-in-steps"}]),
            {
                "setHeaderRoute": {
                    "match": [{"headerName": "agent", "headerValue": {"exact": "exact"}}]
                }
            },
        ),
        'spec.strategy.steps[0].setHeaderRoute: Invalid value: "": Steps define a route that '
        "does not exist in spec.strategy.canary.trafficRouting.managedRoutes",
    ),
    Case(
        "argo: setMirrorRoute with Istio and several method values",
        steps(
            istio(managedRoutes=[{"name": "test-mirror-1"}]),
            {
                "setMirrorRoute": {
                    "name": "test-mirror-1",
                    "match": [{"method": {"exact": "test", "prefix": "test"}}],
                }
            },
        ),
        "spec.strategy.steps[0].setMirrorRoute.match[0]: Invalid value: "
        'v1alpha1.StringMatch{Exact:"test", Prefix:"test", Regex:""}: '
        "StringMatch match value must have exactly one of the following: exact, regex, prefix",
    ),
    Case(
        "argo: setMirrorRoute with Istio and an empty method",
        steps(
            istio(managedRoutes=[{"name": "test-mirror-1"}]),
            {"setMirrorRoute": {"name": "test-mirror-1", "match": [{"method": {}}]}},
        ),
        "spec.strategy.steps[0].setMirrorRoute.match[0]: Invalid value: "
        'v1alpha1.StringMatch{Exact:"", Prefix:"", Regex:""}: '
        "StringMatch value missed, match value must have one of the following: exact, regex, "
        "prefix",
    ),
    Case(
        "argo: setMirrorRoute without managedRoutes",
        steps(
            istio(),
            {"setMirrorRoute": {"name": "test-mirror-1", "match": [{"method": {"exact": "GET"}}]}},
        ),
        "spec.strategy.trafficRouting.managedRoutes: Required value: Rollout has missing field "
        "'spec.strategy.canary.trafficRouting.managedRoutes'",
    ),
    Case(
        "argo: setMirrorRoute route missing from managedRoutes",
        steps(
            istio(managedRoutes=[{"name": "not-in-steps"}]),
            {"setMirrorRoute": {"name": "test-mirror-1", "match": [{"method": {"exact": "GET"}}]}},
        ),
        'spec.strategy.steps[0].setMirrorRoute: Invalid value: "test-mirror-1": Steps define a '
        "route that does not exist in spec.strategy.canary.trafficRouting.managedRoutes",
    ),
    Case(
        "argo: experiment template weight without trafficRouting",
        steps(
            canary(),
            {"experiment": {"templates": [{"name": "t", "specRef": "canary", "weight": 20}]}},
        ),
        "spec.strategy.steps[0].experiment.templates[0].weight: Invalid value: 20: "
        "Experiment template weight cannot be set unless TrafficRouting is enabled",
    ),
    Case(
        "argo: experiment template weight with nginx",
        steps(
            canary(
                stableService="s",
                canaryService="c",
                trafficRouting={"nginx": {"stableIngress": "i"}},
            ),
            {"experiment": {"templates": [{"name": "t", "specRef": "canary", "weight": 20}]}},
        ),
        "spec.strategy.steps[0].experiment.templates[0].weight: Invalid value: 20: Experiment "
        "template weight is only available for TrafficRouting with SMI, ALB, Istio and Plugins "
        "at this time",
    ),
    Case(
        "argo: experiment template weight with SMI",
        steps(
            routed(),
            {"experiment": {"templates": [{"name": "t", "specRef": "canary", "weight": 20}]}},
        ),
        None,
    ),
    Case(
        "argo: invalid metadata reference in an analysis step",
        steps(
            canary(),
            {
                "analysis": {
                    "templates": [{"templateName": "t"}],
                    "args": [
                        {
                            "name": "app",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.label['app']"}},
                        },
                        {"name": "value-key", "value": "hardcoded-value"},
                    ],
                }
            },
        ),
        "spec.strategy.steps[0].analyses: Invalid value: []v1alpha1.AnalysisRunArgument{...} "
        "(len 2): Analyses arguments must refer to valid object metadata supported by downwardAPI",
    ),
    Case(
        "valid metadata reference in an analysis step",
        steps(
            canary(),
            {
                "analysis": {
                    "templates": [{"templateName": "t"}],
                    "args": [
                        {
                            "name": "app",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}},
                        }
                    ],
                }
            },
        ),
        None,
    ),
    Case(
        "argo: invalid metadata reference in an experiment step",
        steps(
            canary(),
            {
                "experiment": {
                    "templates": [{"name": "t", "specRef": "canary"}],
                    "analyses": [
                        {
                            "name": "a",
                            "templateName": "t",
                            "args": [
                                {
                                    "name": "n",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.nam"}},
                                }
                            ],
                        }
                    ],
                }
            },
        ),
        "spec.strategy.steps[0].analyses: Invalid value: []v1alpha1.AnalysisRunArgument{...} "
        "(len 1): Analyses arguments must refer to valid object metadata supported by downwardAPI",
    ),
    # router steps are valid Argo with a router that supports them (the controller then refuses
    # routers other than nginx, see test_controller)
    Case(
        "setCanaryScale with trafficRouting",
        steps(routed(), {"setWeight": 10}, {"setCanaryScale": {"replicas": 1}}),
        None,
    ),
    Case(
        "setMirrorRoute with istio",
        steps(
            istio(managedRoutes=[{"name": "m"}]),
            {"setMirrorRoute": {"name": "m", "match": [{"method": {"exact": "GET"}}]}},
        ),
        None,
    ),
    # objects the model itself rejects
    Case(
        "malformed: string where an integer belongs",
        with_spec(canary(), replicas="three"),
        'spec.replicas: Invalid value: "three": '
        "Input should be a valid integer, unable to parse string as an integer",
    ),
    Case(
        "malformed: setWeight not an integer",
        steps(canary(), {"setWeight": "ten"}),
        'spec.strategy.canary.steps[0].setWeight: Invalid value: "ten": '
        "Input should be a valid integer, unable to parse string as an integer",
    ),
    Case(
        "malformed: maxSurge neither integer nor string",
        canary(maxSurge=[1]),
        "spec.strategy.canary.maxSurge: Invalid value: [1]: Input should be a valid int or str",
    ),
    Case(
        "malformed: blue-green without activeService",
        with_spec(canary(), strategy={"blueGreen": {"previewService": "p"}}),
        "spec.strategy.blueGreen.activeService: Required value",
    ),
    Case(
        "argo 1.9: Istio destinationRule.additionalSubsetNames is valid",
        canary(
            trafficRouting={
                "istio": {
                    "virtualService": {"name": "vsvc"},
                    "destinationRule": {
                        "name": "dr",
                        "canarySubsetName": "c",
                        "stableSubsetName": "s",
                        "additionalSubsetNames": ["legacy", "experimental"],
                    },
                }
            }
        ),
        None,
    ),
    Case(
        "malformed: additionalSubsetNames not a list",
        canary(
            trafficRouting={
                "istio": {
                    "destinationRule": {
                        "name": "dr",
                        "canarySubsetName": "c",
                        "stableSubsetName": "s",
                        "additionalSubsetNames": "legacy",
                    }
                }
            }
        ),
        "spec.strategy.canary.trafficRouting.istio.destinationRule.additionalSubsetNames: "
        'Invalid value: "legacy": Input should be a valid list',
    ),
    *(
        Case(
            f"gatewayAPI plugin: {field} is refused (routes are not discovered by label)",
            gateway_api({single: "r", field: {"matchLabels": {"app": "web"}}}),
            f"spec.strategy.canary.trafficRouting.plugins[argoproj-labs/gatewayAPI].{field}: "
            f"Forbidden: {field} is not supported by this controller: it does not discover "
            f"{kind}s by label; name them in {single} or {single}s",
        )
        for field, kind, single in (
            ("httpRouteSelector", "HTTPRoute", "httpRoute"),
            ("grpcRouteSelector", "GRPCRoute", "grpcRoute"),
            ("tcpRouteSelector", "TCPRoute", "tcpRoute"),
            ("tlsRouteSelector", "TLSRoute", "tlsRoute"),
        )
    ),
    Case(
        "first-class gatewayAPI: httpRouteSelector is refused",
        gateway_api({"httpRoute": "r", "httpRouteSelector": {}}, first_class=True),
        "spec.strategy.canary.trafficRouting.gatewayAPI.httpRouteSelector: Forbidden: "
        "httpRouteSelector is not supported by this controller: it does not discover "
        "HTTPRoutes by label; name them in httpRoute or httpRoutes",
    ),
    Case(
        "gatewayAPI plugin: the in-progress label's fields are accepted",
        gateway_api(
            {
                "httpRoute": "r",
                "disableInProgressLabel": True,
                "inProgressLabelKey": "example.com/canary",
                "inProgressLabelValue": "yes",
            }
        ),
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spec_validation(case: Case) -> None:
    error = v.validate_raw(case.obj)
    assert (str(error) if error else None) == case.expected


def test_condition_message_is_argos() -> None:
    error = v.validate_raw(steps(canary(), {"setWeight": 101}))
    assert error is not None
    assert invalid_spec_message("guestbook", error) == (
        'The Rollout "guestbook" is invalid: spec.strategy.steps[0].setWeight: '
        "Invalid value: 101: SetWeight needs to be between 0 and 100"
    )
    assert (error.field, error.message) == (
        "spec.strategy.steps[0].setWeight",
        "SetWeight needs to be between 0 and 100",
    )


def test_spec_errors_lists_every_error_in_argos_order() -> None:
    # argo: TestValidateRolloutStrategyBlueGreen expects both errors, duplicate first.
    rollout = Rollout.from_dict(blue_green(previewService="active", scaleDownDelayRevisionLimit=11))
    assert [e.message for e in spec_errors(rollout)] == [
        DUPLICATED_SERVICES_BLUE_GREEN_MESSAGE,
        SCALE_DOWN_LIMIT_LARGER_THAN_REVISION_LIMIT,
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10", 10), ("1m", 60), ("1h30m", 5400), ("1.5s", 1), ("-5s", -5), ("0", 0), ("5x", -1)],
)
def test_pause_duration_seconds(text: str, seconds: int) -> None:
    assert pause_duration_seconds(text) == seconds


# -- references --------------------------------------------------------------------------------


def service(name: str, *, managed_by: str | None = None, **selector: str) -> Obj:
    meta: Obj = {"name": name}
    if managed_by is not None:
        meta["annotations"] = {MANAGED_BY_ROLLOUTS_ANNOTATION: managed_by}
    return {"metadata": meta, "spec": {"selector": selector or {"app": "guestbook"}}}


def template(name: str, *, cluster: bool = False, **spec: Any) -> Any:
    obj = {"metadata": {"name": name}, "spec": {"metrics": [], **spec}}
    return (ClusterAnalysisTemplate if cluster else AnalysisTemplate).from_dict(obj)


def services(*names: str, **overrides: Obj) -> dict[str, Obj]:
    found = {name: service(name) for name in names}
    found.update(overrides)
    return found


def analysis_step(*templates: Obj, **fields: Any) -> Obj:
    return {"analysis": {"templates": list(templates), **fields}}


WEB: Obj = {"name": "m", "provider": {"web": {"url": "http://x"}}}


@dataclass(frozen=True)
class RefCase:
    name: str
    obj: Obj
    refs: Callable[[], ReferencedResources]
    expected: str | None


def nginx(**router: Any) -> Obj:
    """A canary with services and the nginx router on stable Ingress `ing` (unless overridden)."""
    config: Obj = {"stableIngress": "ing"}
    config.update(router)
    return routed(trafficRouting={"nginx": {k: x for k, x in config.items() if x is not None}})


def ingress(name: str, *backends: str) -> Obj:
    """An Ingress with one rule whose paths send traffic to `backends` (Services)."""
    paths = [
        {
            "path": "/",
            "pathType": "Prefix",
            "backend": {"service": {"name": b, "port": {"number": 80}}},
        }
        for b in backends
    ]
    return {"metadata": {"name": name}, "spec": {"rules": [{"http": {"paths": paths}}]}}


def ingresses(*found: Obj) -> dict[str, Obj]:
    return {i["metadata"]["name"]: i for i in found}


NGINX = "spec.strategy.canary.trafficRouting.nginx"
ALB = "spec.strategy.canary.trafficRouting.alb"


def alb_routed(**router: Any) -> Obj:
    """A canary with services and the ALB router on Ingress `ing`, root Service `root` (unless
    overridden)."""
    config: Obj = {"ingress": "ing", "servicePort": 80, "rootService": "root"}
    config.update(router)
    return routed(trafficRouting={"alb": {k: x for k, x in config.items() if x is not None}})


REF_CASES = [
    RefCase(
        "valid references",
        routed(),
        lambda: ReferencedResources(services=services("stable", "canary")),
        None,
    ),
    RefCase(
        "stable service not found",
        routed(),
        lambda: ReferencedResources(services=services("canary")),
        'spec.strategy.canary.stableService: Invalid value: "stable": services "stable" not found',
    ),
    RefCase(
        "preview service not found",
        blue_green(),
        lambda: ReferencedResources(services=services("active")),
        'spec.strategy.blueGreen.previewService: Invalid value: "preview": '
        'services "preview" not found',
    ),
    RefCase(
        "service managed by another rollout",
        blue_green(),
        lambda: ReferencedResources(
            services=services("preview", active=service("active", managed_by="other"))
        ),
        'spec.strategy.blueGreen.activeService: Invalid value: "active": '
        'Service "active" is managed by another Rollout',
    ),
    RefCase(
        "service managed by this rollout",
        blue_green(),
        lambda: ReferencedResources(
            services=services("preview", active=service("active", managed_by="guestbook"))
        ),
        None,
    ),
    RefCase(
        "service selects a label the template lacks",
        routed(),
        lambda: ReferencedResources(
            services=services("stable", canary=service("canary", app="guestbook", tier="web"))
        ),
        'spec.strategy.canary.canaryService: Invalid value: "canary": '
        'Service "canary" has unmatch label "tier" in rollout',
    ),
    RefCase(
        "service selects a label from canaryMetadata",
        routed(canaryMetadata={"labels": {"role": "canary"}}),
        lambda: ReferencedResources(
            services=services("stable", canary=service("canary", app="guestbook", role="canary"))
        ),
        None,
    ),
    RefCase(
        "analysis template not found",
        steps(canary(), {"setWeight": 10}, analysis_step({"templateName": "success-rate"})),
        ReferencedResources,
        'spec.strategy.canary.steps[1].analysis.templates: Invalid value: "success-rate": '
        "AnalysisTemplate 'success-rate' not found",
    ),
    RefCase(
        "cluster analysis template not found",
        blue_green(
            prePromotionAnalysis={"templates": [{"templateName": "t", "clusterScope": True}]}
        ),
        lambda: ReferencedResources(
            services=services("active", "preview"),
            analysis_templates={"t": template("t")},
        ),
        'spec.strategy.blueGreen.prePromotionAnalysis.templates: Invalid value: "t": '
        "ClusterAnalysisTemplate 't' not found",
    ),
    RefCase(
        "template argument not resolved",
        steps(canary(), analysis_step({"templateName": "t"})),
        lambda: ReferencedResources(
            analysis_templates={"t": template("t", args=[{"name": "service"}], metrics=[WEB])}
        ),
        "spec.strategy.canary.steps[0].analysis.templates: Invalid value: "
        '"templateNames: [t]": args.service was not resolved',
    ),
    RefCase(
        "template argument given by the rollout",
        steps(
            canary(),
            analysis_step({"templateName": "t"}, args=[{"name": "service", "value": "svc"}]),
        ),
        lambda: ReferencedResources(
            analysis_templates={"t": template("t", args=[{"name": "service"}], metrics=[WEB])}
        ),
        None,
    ),
    RefCase(
        "templates disagree on an argument's value",
        steps(canary(), analysis_step({"templateName": "a"}, {"templateName": "b"})),
        lambda: ReferencedResources(
            analysis_templates={
                "a": template("a", args=[{"name": "x", "value": "1"}]),
                "b": template("b", args=[{"name": "x", "value": "2"}]),
            }
        ),
        "spec.strategy.canary.steps[0].analysis.templates: Invalid value: "
        '"templateNames: [a b]": Argument `x` specified multiple times with different values: '
        "'1', '2'",
    ),
    RefCase(
        "step analysis metric runs indefinitely",
        steps(canary(), analysis_step({"templateName": "t"})),
        lambda: ReferencedResources(
            analysis_templates={"t": template("t", metrics=[{**WEB, "interval": "1m"}])}
        ),
        'spec.strategy.canary.steps[0].analysis.templates: Invalid value: "t": AnalysisTemplate '
        "t has metric m which runs indefinitely. Invalid value for count: <nil>",
    ),
    RefCase(
        "background analysis argument missing",
        canary(
            analysis={
                "templates": [{"templateName": "t"}],
                "args": [{"name": "other", "value": "x"}],
            }
        ),
        lambda: ReferencedResources(
            analysis_templates={
                "t": template("t", args=[{"name": "service"}, {"name": "other"}], metrics=[WEB])
            }
        ),
        'spec.strategy.canary.analysis.templates: Invalid value: "templateNames: [t]": '
        "args.service was not resolved",
    ),
    RefCase(
        "nginx stable ingress routes to the stable service",
        nginx(),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "stable"))
        ),
        None,
    ),
    RefCase(
        "argo: nginx with both stableIngress and stableIngresses",
        nginx(stableIngresses=["ing", "other"]),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f"{NGINX}: Internal error: "
        "Either StableIngress or StableIngresses must be configured. Both are configured.",
    ),
    RefCase(
        "argo: nginx with neither stableIngress nor stableIngresses",
        nginx(stableIngress=None),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f"{NGINX}: Internal error: "
        "Either StableIngress or StableIngresses must be configured. Neither are configured.",
    ),
    RefCase(
        "nginx stable ingress not found",
        nginx(),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f'{NGINX}.stableIngress: Invalid value: "ing": ingress.networking.k8s.io "ing" not found',
    ),
    RefCase(
        "nginx: the first of stableIngresses not found is reported",
        nginx(stableIngress=None, stableIngresses=["ing", "other"]),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "stable"))
        ),
        f'{NGINX}.stableIngresses: Invalid value: []string{{"ing", "other"}}: '
        'ingress.networking.k8s.io "other" not found',
    ),
    RefCase(
        "argo: nginx stable ingress without a rule using the stable service",
        nginx(),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "web"))
        ),
        f'{NGINX}.stableIngress: Invalid value: "ing": '
        "ingress `ing` has no rules using service stable backend",
    ),
    RefCase(
        "nginx: each of stableIngresses must use the stable service",
        nginx(stableIngress=None, stableIngresses=["ing", "other"]),
        lambda: ReferencedResources(
            services=services("stable", "canary"),
            ingresses=ingresses(ingress("ing", "stable"), ingress("other", "web", "canary")),
        ),
        f'{NGINX}.stableIngresses: Invalid value: "other": '
        "ingress `other` has no rules using service stable backend",
    ),
    RefCase(
        "ALB ingress routes to the root service",
        alb_routed(),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "root"))
        ),
        None,
    ),
    RefCase(
        "argo: ALB with both ingress and ingresses",
        alb_routed(ingresses=["ing", "other"]),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f"{ALB}: Internal error: "
        "Either Ingress or Ingresses must be configured. Both are configured.",
    ),
    RefCase(
        "argo: ALB with neither ingress nor ingresses",
        alb_routed(ingress=None),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f"{ALB}: Internal error: "
        "Either Ingress or Ingresses must be configured. Neither are configured.",
    ),
    RefCase(
        "ALB ingress not found",
        alb_routed(),
        lambda: ReferencedResources(services=services("stable", "canary")),
        f'{ALB}.ingress: Invalid value: "ing": ingress.networking.k8s.io "ing" not found',
    ),
    RefCase(
        "ALB: the first of ingresses not found is reported",
        alb_routed(ingress=None, ingresses=["ing", "other"]),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "root"))
        ),
        f'{ALB}.ingresses: Invalid value: []string{{"ing", "other"}}: '
        'ingress.networking.k8s.io "other" not found',
    ),
    RefCase(
        "argo: ALB ingress without a rule using the root service",
        alb_routed(),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "stable"))
        ),
        f'{ALB}.ingress: Invalid value: "ing": '
        "ingress `ing` has no rules using service root backend",
    ),
    RefCase(
        "argo: ALB without a root service: the stable service's rule",
        alb_routed(rootService=None),
        lambda: ReferencedResources(
            services=services("stable", "canary"), ingresses=ingresses(ingress("ing", "web"))
        ),
        f'{ALB}.ingress: Invalid value: "ing": '
        "ingress `ing` has no rules using service stable backend",
    ),
    RefCase(
        "ALB: each of ingresses must use the root service",
        alb_routed(ingress=None, ingresses=["ing", "other"]),
        lambda: ReferencedResources(
            services=services("stable", "canary"),
            ingresses=ingresses(ingress("ing", "root"), ingress("other", "web", "canary")),
        ),
        f'{ALB}.ingresses: Invalid value: "other": '
        "ingress `other` has no rules using service root backend",
    ),
    RefCase(
        "a missing service is reported before a missing ingress",
        nginx(),
        lambda: ReferencedResources(services=services("canary")),
        'spec.strategy.canary.stableService: Invalid value: "stable": services "stable" not found',
    ),
]


@pytest.mark.parametrize("case", REF_CASES, ids=[c.name for c in REF_CASES])
def test_reference_validation(case: RefCase) -> None:
    error = v.validate_raw(case.obj, case.refs())
    assert (str(error) if error else None) == case.expected


def test_spec_errors_come_before_reference_errors() -> None:
    error = v.validate_raw(steps(routed(), {"setWeight": 101}), ReferencedResources())
    assert error is not None and error.field == "spec.strategy.steps[0].setWeight"


def test_go_quote() -> None:
    assert go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'
