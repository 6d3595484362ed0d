"""RBAC proven least-privilege: the e2e scenarios against the embedded API, each process kind
with its own identity (a kubeconfig bearer token the devcluster's audit log records), and the
calls each one made compared with the roles deploy/base binds to its ServiceAccount.

Both ways: every call made is allowed by the rendered roles, and every rule granted is used or
listed in UNUSED_BUT_NEEDED with its reason. beat makes no call at all (its Deployment mounts no
token). The scenarios are tests/e2e/test_rollouts.py's, without the chaos, plus one that reads an
analysis argument from a Secret and one that prunes history; on both CRD shapes (Argo's, where
AnalysisRun and Experiment status is written on the object, and /status on every type).
"""

from __future__ import annotations

import base64
import json
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from devcluster.server import DevClusterThread
from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube
from rollout_workers.kube.config import api_client
from rollout_workers.notifications.source import CONFIGMAP_NAME, SECRET_NAME
from rollout_workers.settings import Settings
from tests.e2e import fields, routers
from tests.e2e import test_rollouts as e2e
from tests.e2e import test_workloadref as wref
from tests.support.authserver import aws_environment
from tests.support.metrics import MetricsServer
from tests.support.procs import Processes
from tests.unit.deploy.render import rendered

Obj = dict[str, Any]
SECRETS = r.Resource("secrets", "", "v1", "Secret")

#: Rules granted in deploy/base that the scenarios do not exercise on a CRD shape (see
#: tests/e2e/conftest.py), and why they stay: (service account, group, resource, verb) ->
#: (the shapes where the rule goes unused, the reason).
UNUSED_BUT_NEEDED = {
    ("worker", "argoproj.io", "analysisruns/status", "patch"): ({"argo"},
        "status goes to /status when the installed CRD serves it (the writer asks discovery); "
        "on Argo's CRDs (and ours) it is patched on the object"),
    ("worker", "argoproj.io", "experiments/status", "patch"): ({"argo"},
        "as analysisruns/status"),
    **{
        (who, "extensions", "ingresses", verb): ({"argo", "status-everywhere"},
            "the nginx router on clusters older than 1.19, which serve only v1beta1 Ingresses")
        for who, verbs in (("watcher", ("list", "watch")), ("worker", ("create", "patch")))
        for verb in verbs
    },
    **{
        (who, group, plural, verb): ({"argo", "status-everywhere"},
            "route kinds no scenario drives: GRPCRoute, TCPRoute, TLSRoute (unit-tested in "
            "test_gatewayapi.py)")
        for group, plural in (
            ("gateway.networking.k8s.io", "grpcroutes"),
            ("gateway.networking.k8s.io", "tcproutes"),
            ("gateway.networking.k8s.io", "tlsroutes"),
        )
        for who, verbs in (("watcher", ("list", "watch")), ("worker", ("get", "patch")))
        for verb in verbs
    },
    **{
        ("worker", "apisix.apache.org", "apisixroutes", verb): ({"argo", "status-everywhere"},
            "APISIX header routes (ApisixRoutes the rollout creates and deletes): no e2e scenario "
            "sets one (unit-tested in test_apisix.py)")
        for verb in ("create", "delete")
    },
    ("worker", "elbv2.k8s.aws", "targetgroupbindings", "list"): ({"argo", "status-everywhere"},
        "AWS target group verification (ROLLOUTS_AWS_VERIFY_TARGET_GROUP) is off in the e2e "
        "runs: it needs AWS (unit-tested against moto in test_targetgroups.py)"),
    ("worker", "", "endpoints", "get"): ({"argo", "status-everywhere"},
        "as targetgroupbindings: the Endpoints of the Service whose target groups are verified"),
    **{
        (who, "x.getambassador.io", "ambassadormappings", verb): ({"argo", "status-everywhere"},
            "Emissary 2's previews serve Mappings only as x.getambassador.io AmbassadorMappings "
            "(the embedded API serves getambassador.io; unit-tested in test_ambassador.py)")
        for who, verb in (("worker", "get"), ("worker", "create"), ("worker", "patch"),
                          ("worker", "delete"), ("watcher", "list"), ("watcher", "watch"))
    },
    **{
        (who, "traefik.containo.us", "traefikservices", verb): ({"argo", "status-everywhere"},
            "Traefik before v2.10 serves TraefikService only as traefik.containo.us (the embedded "
            "API serves traefik.io; unit-tested in test_traefik.py)")
        for who, verb in (("worker", "get"), ("worker", "patch"), ("watcher", "list"),
                          ("watcher", "watch"))
    },
}  # fmt: skip

#: Rules the scenarios may or may not exercise, run to run: the worker reads a router object from
#: the API only until the watcher's on-demand reflector for its kind has listed it (after that,
#: from the cache), so whether a GET happens depends on which comes first.
SOMETIMES_USED = {
    ("worker", group, plural, "get")
    for group, plural in (
        # A ReplicaSet write that lost its race to the ReplicaSet controller (kube/writer.py
        # patch_fenced), and an experiment's Service that exists but is not cached yet.
        ("apps", "replicasets"),
        ("", "services"),
        ("split.smi-spec.io", "trafficsplits"),
        ("networking.istio.io", "virtualservices"),
        ("networking.istio.io", "destinationrules"),
        ("gateway.networking.k8s.io", "httproutes"),
        ("traefik.io", "traefikservices"),
        ("apisix.apache.org", "apisixroutes"),
        ("getambassador.io", "mappings"),
        ("appmesh.k8s.aws", "virtualservices"),
        ("appmesh.k8s.aws", "virtualrouters"),
        ("appmesh.k8s.aws", "virtualnodes"),
    )
}

#: Calls every authenticated identity may make through the default system:discovery role.
DISCOVERY_PREFIXES = ("/api", "/apis", "/version", "/openapi")


def secret_argument_then_promote(w: e2e.World) -> None:
    """An analysis argument from a Secret (valueFrom.secretKeyRef): the worker reads it."""
    w.kube.create(SECRETS, w.namespace, {
        "metadata": {"name": "rate"},
        "data": {"value": base64.b64encode(b"0.97").decode()},
    })  # fmt: skip
    metric = {
        "name": "sec-rate",
        "successCondition": "result >= 0.9",
        "provider": {"web": {"url": w.metrics.url + "/{{args.value}}"}},
    }
    arg = {"name": "value", "valueFrom": {"secretKeyRef": {"name": "rate", "key": "value"}}}
    spec = {"args": [arg], "metrics": [metric]}
    w.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
             "metadata": {"name": "sec-rate"}, "spec": spec})  # fmt: skip
    body = e2e.canary("sec", 2, [{"setWeight": 50}, {"analysis": {"templates": [
        {"templateName": "sec-rate"}]}}])  # fmt: skip
    w.apply(body)
    first = w.wait("sec", lambda o: e2e.phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "sec", "app=demo:2")
    w.wait(
        "sec", e2e.promoted_past(e2e.status(first)["stableRS"]), "promoted after the analysis step"
    )
    (run,) = [x for x in e2e.runs_of(w, "Step") if x["metadata"]["name"].startswith("sec-")]
    assert run["status"]["phase"] == "Successful"


def history_is_pruned(w: e2e.World) -> None:
    """History limits of 0 and a Job retention of 1: the old ReplicaSets, the finished runs and
    experiments of an earlier revision, and the surplus Job of a metric are deleted."""
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "check", "image": "busybox", "command": ["true"]}],
        }
    }
    metric = {
        "name": "gc-job",
        "count": 3,
        "interval": "1s",
        "provider": {"job": {"spec": {"backoffLimit": 0, "template": pod}}},
    }
    w.apply(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": "gc-job"},
            "spec": {
                "metrics": [metric],
                "measurementRetention": [{"metricName": "gc-job", "limit": 1}],
            },
        }
    )
    steps = [
        {"analysis": {"templates": [{"templateName": "gc-job"}]}},
        {"experiment": {"duration": "1s", "templates": [{"name": "canary", "specRef": "canary"}]}},
    ]
    limits = {"successfulRunHistoryLimit": 0, "unsuccessfulRunHistoryLimit": 0}
    w.apply(e2e.canary("gc", 1, steps, revisionHistoryLimit=0, analysis=limits))  # fmt: skip
    w.wait("gc", lambda o: e2e.phase(o) == "Healthy", "first deploy")
    for image in ("demo:2", "demo:3"):
        before = e2e.status(w.rollout("gc")).get("stableRS")
        w.cli("set", "image", "gc", f"app={image}")
        w.wait("gc", e2e.promoted_past(before), image)
    current = e2e.status(w.rollout("gc"))["currentPodHash"]

    def pruned() -> bool:
        runs = [x for x in w.list(r.ANALYSISRUNS) if x["metadata"]["name"].startswith("gc-")]
        exps = [x for x in w.list(r.EXPERIMENTS) if x["metadata"]["name"].startswith("gc-")]
        return set(w.replicas("gc")) == {current} and all(
            current in x["metadata"]["name"] for x in [*runs, *exps]
        )

    deadline = time.monotonic() + e2e.TIMEOUT
    while not pruned():
        assert time.monotonic() < deadline, "history was not pruned"
        time.sleep(0.25)


def experiment_aborted(w: e2e.World) -> None:
    """An abort during a running experiment step terminates the experiment (a spec patch)."""
    step = {"experiment": {"duration": "1h",
                           "templates": [{"name": "canary", "specRef": "canary"}]}}  # fmt: skip
    w.apply(e2e.canary("exab", 1, [step]))
    w.wait("exab", lambda o: e2e.phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", "exab", "app=demo:2")
    w.wait("exab", lambda o: bool(e2e.status(o).get("canary", {}).get("currentExperiment")), "exp")
    w.cli("abort", "exab")
    deadline = time.monotonic() + e2e.TIMEOUT
    while not all((x.get("spec") or {}).get("terminate") for x in w.list(r.EXPERIMENTS)):
        assert time.monotonic() < deadline, "the experiment was not terminated"
        time.sleep(0.25)


def replicaset_reference(w: e2e.World) -> None:
    """A workloadRef to a plain ReplicaSet (no pod-template-hash label) at 0 replicas."""
    rs = wref.deployment("plain", 0)
    rs["kind"] = "ReplicaSet"
    w.apply(rs)
    ro = wref.referencing("plain", 1)
    ro["spec"]["workloadRef"] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "plain"}
    w.apply(ro)
    w.wait("plain", e2e.promoted, "healthy from the ReplicaSet's template")


def granted(overlay: str) -> dict[str, set[tuple[str, str, str]]]:
    """(group, resource, verb) each ServiceAccount may use, from the rendered RBAC."""
    objs = rendered(overlay)
    roles = {
        (o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"] in ("Role", "ClusterRole")
    }
    out: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for b in (o for o in objs if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        role = roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]
        for subject in b["subjects"]:
            for rule in role["rules"]:
                for g in rule["apiGroups"]:
                    for res in rule["resources"]:
                        for verb in rule["verbs"]:
                            out[subject["name"]].add((g, res, verb))
    return out


def resource_calls(calls: list[Obj]) -> dict[str, set[tuple[str, str, str, bool]]]:
    out: dict[str, set[tuple[str, str, str, bool]]] = defaultdict(set)
    for c in calls:
        if c["path"]:
            assert c["path"].startswith(DISCOVERY_PREFIXES), c
            continue
        resource = f"{c['resource']}/{c['subresource']}" if c["subresource"] else c["resource"]
        out[c["user"]].add((c["group"], resource, c["verb"], c["namespaced"]))
    return out


@pytest.mark.slow
def test_each_process_uses_exactly_the_rbac_it_is_granted(
    procs: Processes,
    shaped_cluster: DevClusterThread,
    tmp_path: Path,
    rdb: redis.Redis,
    request: pytest.FixtureRequest,
) -> None:
    cluster = shaped_cluster
    shape = request.node.callspec.params["shaped_cluster"]
    kubeconfigs = {
        who: cluster.write_kubeconfig(tmp_path / f"{who}.kubeconfig", token=who)
        for who in ("watcher", "worker", "beat", "user")
    }
    procs.env.pop("ROLLOUTS_RECONCILE_HANDLERS", None)  # the real controllers
    # Anything not given its own kubeconfig below would show up as `beat` and fail the test.
    procs.env["ROLLOUTS_KUBECONFIG"] = str(kubeconfigs["beat"])
    procs.env["ROLLOUTS_QUEUE_STALE_AFTER"] = "5"
    # The credentials the SigV4 scenario's server checks (tests/support/authserver.py).
    procs.env.update(aws_environment(str(tmp_path)))
    procs.spawn(
        "watcher", "watcher", env={"ROLLOUTS_KUBECONFIG": str(kubeconfigs["watcher"])}
    ).wait_log(r"leads; starting", timeout=30)
    procs.beat()
    for i in range(2):
        procs.spawn(
            f"host-{i}", "worker", "-c", "2", "-n", f"host-{i}@%h",
            env={"ROLLOUTS_KUBECONFIG": str(kubeconfigs["worker"])},
        ).wait_log(r"ready\.", timeout=60)  # fmt: skip
    settings = Settings(kubeconfig=kubeconfigs["user"])
    kube = Kube(api_client(settings), settings.kube)

    scenarios = [
        *e2e.SCENARIOS,
        # Traffic routing (nginx, ALB, SMI, Istio host- and subset-level, Gateway API, Traefik,
        # APISIX, Ambassador, App Mesh): the routers' reflectors started on demand, the worker's
        # writes to their objects.
        *routers.scenarios(
            routers.NGINX,
            routers.ALB,
            routers.SMI,
            routers.ISTIO,
            routers.GATEWAY,
            routers.TRAEFIK,
            routers.APISIX,
            routers.AMBASSADOR,
            routers.APPMESH,
        ),
        # Fields acted on as Argo does: pods patched with ephemeral metadata.
        *fields.SCENARIOS,
        secret_argument_then_promote,
        experiment_aborted,
        history_is_pruned,
        # workloadRef: the watcher's on-demand Deployment and PodTemplate reflectors (and the
        # unlabelled ReplicaSets' one, started with a ReplicaSet reference), the worker's
        # scale-down of the Deployment.
        wref.scale_down_on_success,
        wref.pod_template_reference,
        replicaset_reference,
    ]
    e2e.run_all(kube, kubeconfigs["user"], scenarios)

    audit = cluster.audit()
    calls = resource_calls(audit)
    print(json.dumps({who: sorted(map(list, made)) for who, made in calls.items()}, indent=1))
    rules = granted("base")
    assert "beat" not in calls, calls.get("beat")
    assert set(rules) == {"watcher", "worker"}
    for who in ("watcher", "worker"):
        made = calls[who]
        denied = {(g, res, verb) for g, res, verb, _ in made} - rules[who]
        assert not denied, f"{who} made calls its role does not allow: {sorted(denied)}"
        unused = rules[who] - {(g, res, verb) for g, res, verb, _ in made}
        expected = {
            k[1:] for k, (shapes, _) in UNUSED_BUT_NEEDED.items() if k[0] == who and shape in shapes
        }
        unexplained = unused - expected - {k[1:] for k in SOMETIMES_USED if k[0] == who}
        assert not unexplained, f"{who} is granted rules nothing used: {sorted(unexplained)}"
        stale = expected - unused
        assert not stale, f"listed as unused but used (remove from the table): {sorted(stale)}"
    # The watcher only lists and watches: across all namespaces (the ClusterRole), and the
    # notifications ConfigMap and Secret in the controller's namespace, by name (the Role's
    # resourceNames).
    named = {"configmaps": CONFIGMAP_NAME, "secrets": SECRET_NAME}
    for call in audit:
        if call["user"] != "watcher" or call["path"]:
            continue
        assert call["verb"] in ("list", "watch"), call
        if call["resource"] in named:
            assert call["namespaced"] and call["name"] == named[call["resource"]], call
        else:
            assert not call["namespaced"], call


@pytest.mark.slow
def test_namespaced_install_stays_in_its_namespace(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path, rdb: redis.Redis
) -> None:
    """deploy/namespaced: the watcher with --namespace, and the Roles of that overlay. Every
    call is namespace-scoped (a Role grants nothing else) and allowed by the Roles; the
    cluster-scoped ClusterAnalysisTemplates are not read."""
    namespace = "team"
    kubeconfigs = {
        who: cluster.write_kubeconfig(tmp_path / f"{who}.kubeconfig", token=who)
        for who in ("watcher", "worker", "beat", "user")
    }
    procs.env.pop("ROLLOUTS_RECONCILE_HANDLERS", None)
    procs.env["ROLLOUTS_KUBECONFIG"] = str(kubeconfigs["beat"])
    procs.spawn(
        "watcher", "watcher", "--namespace", namespace,
        env={"ROLLOUTS_KUBECONFIG": str(kubeconfigs["watcher"])},
    ).wait_log(r"leads; starting", timeout=30)  # fmt: skip
    procs.beat()
    procs.spawn(
        "host-0", "worker", "-c", "3", "-n", "host-0@%h",
        env={"ROLLOUTS_KUBECONFIG": str(kubeconfigs["worker"])},
    ).wait_log(r"ready\.", timeout=60)  # fmt: skip
    settings = Settings(kubeconfig=kubeconfigs["user"])
    kube = Kube(api_client(settings), settings.kube)
    manifests.ensure_namespace(kube, namespace)
    metrics = MetricsServer().start()
    # Distinct object names, so they share the one namespace the install watches.
    scenarios = [
        e2e.scenario_1_scaling_while_paused,
        e2e.scenario_5_bluegreen_preview_and_promote,
        e2e.scenario_7_full_restart_invalid,
        e2e.analysis_1_job_steps_then_promote,
        secret_argument_then_promote,
        experiment_aborted,
    ]
    try:
        with ThreadPoolExecutor(len(scenarios)) as pool:
            world = e2e.World(kube, kubeconfigs["user"], namespace, metrics)
            for future in [pool.submit(s, world) for s in scenarios]:
                future.result()
    finally:
        metrics.stop()

    calls = resource_calls(cluster.audit())
    rules = granted("namespaced")
    assert "beat" not in calls, calls.get("beat")
    for who in ("watcher", "worker"):
        assert all(namespaced for *_, namespaced in calls[who]), sorted(calls[who])
        denied = {(g, res, verb) for g, res, verb, _ in calls[who]} - rules[who]
        assert not denied, f"{who} made calls the namespaced Role does not allow: {sorted(denied)}"
    assert not any(res == "clusteranalysistemplates" for _, res, *_ in calls["watcher"])
