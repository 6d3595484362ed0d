"""Scenarios for the fields a rollout must act on as Argo does (ephemeral metadata, anti-affinity,
the rollback window), after Argo's e2e tests of the same names. The RBAC audit (test_rbac.py)
runs them on both CRD shapes, concurrently with the other scenarios, with real watcher, beat and
worker processes; what they read is what the API holds (live pods, ReplicaSets, events).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rollout_workers.kube import resources as r
from tests.e2e import test_rollouts as e2e
from tests.support.authserver import BASIC, REGION, AuthServer

if TYPE_CHECKING:
    from tests.e2e.test_rollouts import World

Obj = dict[str, Any]
TIMEOUT = 150.0


def pods_of(w: World, name: str, pod_hash: str) -> list[Obj]:
    selector = f"app={name},{r.POD_TEMPLATE_HASH_LABEL}={pod_hash}"
    items, _ = w.kube.list(r.PODS, namespace=w.namespace, label_selector=selector)
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def wait_pods(
    w: World, name: str, pod_hash: str, check: Callable[[dict[str, str]], bool], what: str
) -> None:
    """Until the revision has pods, all of whose labels pass `check`."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        pods = pods_of(w, name, pod_hash)
        if pods and all(check(p["metadata"].get("labels") or {}) for p in pods):
            return
        if time.monotonic() > deadline:
            labels = [p["metadata"].get("labels") for p in pods]
            raise AssertionError(f"{w.namespace}/{name}: {what}; pods' labels {labels}")
        time.sleep(0.25)


def role(value: str | None, key: str = "role") -> Callable[[dict[str, str]], bool]:
    def check(labels: dict[str, str]) -> bool:
        return labels.get(key) == value if value is not None else key not in labels

    return check


def both(*checks: Callable[[dict[str, str]], bool]) -> Callable[[dict[str, str]], bool]:
    return lambda labels: all(check(labels) for check in checks)


def ephemeral_metadata_canary(w: World) -> None:
    """Argo's CanarySuite.TestEphemeralMetadata: stable pods carry the stable role, the canary's
    the canary role; an edit of the canary metadata replaces its keys on live pods; after the
    promotion the revision's pods take the stable role; an edit of that follows too."""
    name = "eph"
    ro = e2e.canary(name, 2, [{"setWeight": 50}, {"pause": {}}])
    ro["spec"]["strategy"]["canary"].update(
        canaryMetadata={"labels": {"role": "canary"}},
        stableMetadata={"labels": {"role": "stable"}},
    )
    w.apply(ro)
    first = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy"))
    wait_pods(w, name, first["stableRS"], role("stable"), "revision 1 has the stable role")
    w.cli("set", "image", name, "app=demo:2")
    paused = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused at the pause"))
    second = paused["currentPodHash"]
    wait_pods(w, name, second, role("canary"), "revision 2 has the canary role")
    wait_pods(w, name, first["stableRS"], role("stable"), "revision 1 keeps the stable role")
    patch = {"spec": {"strategy": {"canary": {"canaryMetadata": {"labels": {
        "role": None, "role2": "canary2"}}}}}}  # fmt: skip
    w.kube.patch(r.ROLLOUTS, w.namespace, name, patch)
    wait_pods(w, name, second, both(role(None), role("canary2", "role2")), "canary metadata 2")
    w.cli("promote", name)
    w.wait(name, e2e.promoted, "promoted")
    wait_pods(w, name, second, both(role("stable"), role(None, "role2")), "revision 2 is stable")
    patch = {"spec": {"strategy": {"canary": {"stableMetadata": {"labels": {
        "role": None, "role2": "stable2"}}}}}}  # fmt: skip
    w.kube.patch(r.ROLLOUTS, w.namespace, name, patch)
    wait_pods(w, name, second, both(role(None), role("stable2", "role2")), "stable metadata 2")


def ephemeral_metadata_bluegreen(w: World) -> None:
    """Argo's BlueGreenSuite.TestEphemeralMetadata: the preview role on the new pods until the
    promotion, then the active role; the old revision loses its role once scaled down."""
    name = "ephbg"
    docs = e2e.bluegreen(
        name,
        1,
        autoPromotionEnabled=False,
        previewMetadata={"labels": {"role": "preview"}},
        activeMetadata={"labels": {"role": "active"}},
    )
    w.apply(*docs)
    first = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy"))
    wait_pods(w, name, first["stableRS"], role("active"), "revision 1 is active")
    w.cli("set", "image", name, "app=demo:2")
    paused = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused for promotion"))
    second = paused["currentPodHash"]
    wait_pods(w, name, second, role("preview"), "revision 2 is the preview")
    w.cli("promote", name)
    w.wait(name, e2e.promoted, "promoted")
    wait_pods(w, name, second, role("active"), "revision 2 is active")


def anti_affinity(w: World) -> None:
    """Argo's anti-affinity: during an update the new ReplicaSet's pods get a preferred
    podAntiAffinity term against the stable pods' hash on kubernetes.io/hostname."""
    name = "affine"
    ro = e2e.canary(name, 2, [{"setWeight": 50}, {"pause": {}}])
    ro["spec"]["strategy"]["canary"]["antiAffinity"] = {
        "preferredDuringSchedulingIgnoredDuringExecution": {"weight": 40}
    }
    w.apply(ro)
    first = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy"))
    (pod, *_) = pods_of(w, name, first["stableRS"])
    assert "affinity" not in pod["spec"], pod["spec"]  # nothing to avoid on the first deploy
    w.cli("set", "image", name, "app=demo:2")
    paused = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused"))
    wait_pods(w, name, paused["currentPodHash"], lambda _: True, "canary pods")
    (pod, *_) = pods_of(w, name, paused["currentPodHash"])
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term == {
        "weight": 40,
        "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [
                {"key": r.POD_TEMPLATE_HASH_LABEL, "operator": "In",
                 "values": [first["stableRS"]]}]},
            "namespaces": [w.namespace],
            "topologyKey": "kubernetes.io/hostname",
        },
    }, term  # fmt: skip


def rollback_window(w: World) -> None:
    """Argo's RollbackSuite.TestRollbackAnalysisWithinWindow and ...OutsideWindow, on one
    rollout with `rollbackWindow.revisions: 1`: back to the previous revision skips the steps
    and the analysis; back to one with another revision created since runs them."""
    name = "window"
    w.job_template("window-check", "true")
    steps = [{"setWeight": 50}, {"analysis": {"templates": [{"templateName": "window-check"}]}}]
    w.apply(e2e.canary(name, 2, steps, rollbackWindow={"revisions": 1}))
    w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy")

    def deploy(image: str, runs: int, what: str) -> None:
        w.cli("set", "image", name, f"app={image}")
        done = w.wait(
            name,
            lambda o: (
                e2e.promoted(o)
                and o["spec"]["template"]["spec"]["containers"][0]["image"] == image
                and e2e.status(o).get("observedGeneration") == str(o["metadata"]["generation"])
            ),
            what,
        )
        got = len(e2e.runs_of(w, "Step"))
        assert got == runs, f"{what}: {got} analysis runs, expected {runs}; {e2e.status(done)}"

    deploy("demo:2", 1, "revision 2")
    deploy("demo:3", 2, "revision 3")
    deploy("demo:2", 2, "back to revision 2, within the window: no analysis")
    deploy("demo:4", 3, "revision 4")
    deploy("demo:2", 4, "back to revision 2, outside the window: the analysis runs")


def route_weights(w: World, name: str) -> dict[str, int]:
    """host[/subset] -> weight of the VirtualService's primary route."""
    items, _ = w.kube.list(r.VIRTUALSERVICES[0], namespace=w.namespace)
    vs = next((x for x in items if x["metadata"]["name"] == f"{name}-vs"), None)
    out: dict[str, int] = {}
    for route in ((vs or {}).get("spec") or {}).get("http") or []:
        if route.get("name") == "primary":
            for dest in route.get("route") or []:
                d = dest["destination"]
                key = d["host"] + (f"/{d['subset']}" if d.get("subset") else "")
                out[key] = int(dest.get("weight") or 0)
    return out


def wait_weights(w: World, name: str, expected: dict[str, int], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while (got := route_weights(w, name)) != expected:
        assert time.monotonic() < deadline, f"{w.namespace}/{name}: {what}: weights {got}"
        time.sleep(0.25)


def ping_pong_istio(w: World) -> None:
    """Argo's ping-pong with Istio (host-level), across two promotions: the canary-role
    Service follows the new pods, the roles swap at each promotion, and the VirtualService's
    weights follow the roles."""
    name = "pp"
    ping, pong = f"{name}-ping", f"{name}-pong"
    services = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc},
         "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}
        for svc in (ping, pong)
    ]  # fmt: skip
    route = [{"destination": {"host": ping}, "weight": 100},
             {"destination": {"host": pong}, "weight": 0}]  # fmt: skip
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": f"{name}-vs"},
          "spec": {"hosts": [f"{name}.example"],
                   "http": [{"name": "primary", "route": route}]}}  # fmt: skip
    ro = e2e.canary(name, 2, [{"setWeight": 20}, {"pause": {}}])
    ro["spec"]["strategy"]["canary"].update(
        pingPong={"pingService": ping, "pongService": pong},
        trafficRouting={"istio": {"virtualService": {"name": f"{name}-vs", "routes": ["primary"]}}},
    )
    w.apply(*services, vs, ro)
    first = e2e.status(w.wait(name, e2e.promoted, "first deploy"))
    assert first["canary"]["stablePingPong"] == "ping"
    assert e2e.selector(w, ping) == first["stableRS"]
    for image, canary_svc, stable_svc in (("demo:2", pong, ping), ("demo:3", ping, pong)):
        w.cli("set", "image", name, f"app={image}")
        paused = e2e.status(w.wait(name, lambda o: e2e.phase(o) == "Paused", f"{image} paused"))
        wait_weights(w, name, {stable_svc: 80, canary_svc: 20}, f"{image} at 20%")
        assert e2e.selector(w, canary_svc) == paused["currentPodHash"]
        w.cli("promote", name)
        new = paused["currentPodHash"]
        done = e2e.status(
            w.wait(
                name,
                lambda o, new=new: e2e.promoted(o) and e2e.status(o)["stableRS"] == new,
                f"{image} promoted",
            )
        )
        assert done["canary"]["stablePingPong"] == canary_svc.rsplit("-", 1)[1]
        wait_weights(w, name, {stable_svc: 0, canary_svc: 100}, f"{image} promoted: all on it")
        assert e2e.selector(w, canary_svc) == new


def istio_additional_subsets_kept(w: World) -> None:
    """Argo 1.9's destinationRule.additionalSubsetNames: a destination to a listed subset keeps
    its weight through the update, and the stable gets what is left."""
    name = "addl"
    host = f"{name}-svc"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": host},
               "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}  # fmt: skip
    route = [{"destination": {"host": host, "subset": "stable"}, "weight": 80},
             {"destination": {"host": host, "subset": "canary"}, "weight": 0},
             {"destination": {"host": "legacy-svc", "subset": "legacy"}, "weight": 20}]  # fmt: skip
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": f"{name}-vs"},
          "spec": {"hosts": [f"{name}.example"],
                   "http": [{"name": "primary", "route": route}]}}  # fmt: skip
    rule = {"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
            "metadata": {"name": f"{name}-dr"},
            "spec": {"host": host,
                     "subsets": [{"name": "canary"}, {"name": "stable"}]}}  # fmt: skip
    ro = e2e.canary(name, 2, [{"setWeight": 30}, {"pause": {}}])
    ro["spec"]["strategy"]["canary"]["trafficRouting"] = {"istio": {
        "virtualService": {"name": f"{name}-vs", "routes": ["primary"]},
        "destinationRule": {"name": f"{name}-dr", "canarySubsetName": "canary",
                            "stableSubsetName": "stable", "additionalSubsetNames": ["legacy"]},
    }}  # fmt: skip
    w.apply(service, vs, rule, ro)
    w.wait(name, e2e.promoted, "first deploy")
    legacy = {"legacy-svc/legacy": 20}
    wait_weights(w, name, {f"{host}/stable": 80, f"{host}/canary": 0, **legacy}, "initial")
    w.cli("set", "image", name, "app=demo:2")
    w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused at 30%")
    wait_weights(w, name, {f"{host}/stable": 50, f"{host}/canary": 30, **legacy}, "at 30%")
    w.cli("promote", name)
    w.wait(name, e2e.promoted, "promoted")
    wait_weights(w, name, {f"{host}/stable": 80, f"{host}/canary": 0, **legacy}, "promoted")


def analysis_range_query_and_authentication(w: World) -> None:
    """An analysis step whose Prometheus metrics need authentication: a range query signed with
    SigV4 (as Amazon Managed Prometheus), and an instant query with basic auth. The local server
    recomputes each signature and checks the credentials and the range; the rollout promotes
    only if every request passed (the workers run with the server's AWS credentials)."""
    server = AuthServer().start()
    try:
        signed = {"sigv4": {"region": REGION}}
        basic = {"basicAuth": {"username": BASIC[0], "password": BASIC[1]}}
        range_query = {"start": 'now() - duration("5m")', "end": "now()", "step": "1m"}
        metrics = [
            {"name": "signed-range", "successCondition": "len(result) == 2 && result[1] == 11",
             "provider": {"prometheus": {
                 "address": server.url("/aps-workspaces/ws-1"), "query": "rate(x[1m])",
                 "rangeQuery": range_query, "authentication": signed}}},
            {"name": "basic", "successCondition": "result[0] == 10",
             "provider": {"prometheus": {
                 "address": server.url("/basic"), "query": "up", "authentication": basic}}},
        ]  # fmt: skip
        w.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
                 "metadata": {"name": "authed"}, "spec": {"metrics": metrics}})  # fmt: skip
        name = "authed"
        steps = [{"setWeight": 50}, {"analysis": {"templates": [{"templateName": "authed"}]}}]
        w.apply(e2e.canary(name, 2, steps))
        first = w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy")
        w.cli("set", "image", name, "app=demo:2")
        promoted = e2e.promoted_past(e2e.status(first)["stableRS"])
        done = w.wait(
            name,
            lambda o: promoted(o) and e2e.status(o).get("currentStepIndex") == 2,
            "promoted after the authenticated analysis",
        )
        (run,) = [x for x in e2e.runs_of(w, "Step") if x["metadata"]["name"].startswith(name)]
        assert run["status"]["phase"] == "Successful", (run["status"], server.problems)
        assert not any(server.problems), server.problems
        paths = {path for path, _ in server.seen}
        assert "/aps-workspaces/ws-1/api/v1/query_range" in paths, paths
        assert "/basic/api/v1/query" in paths, paths
        assert e2e.status(done)["stableRS"] == e2e.status(done)["currentPodHash"]
    finally:
        server.stop()


def dry_run_of_every_metric(w: World) -> None:
    """`dryRun: [{metricName: .*}]`, as Argo documents it: a failing metric is measured and
    reported in the run's dry-run summary, and the rollout is promoted all the same."""
    w.template("dry-rate")  # measures metrics/{{args.value}}, passing at >= 0.9
    name = "dry"
    step = {"analysis": {"templates": [{"templateName": "dry-rate"}],
                         "args": [{"name": "value", "value": "0.5"}],
                         "dryRun": [{"metricName": ".*"}]}}  # fmt: skip
    w.apply(e2e.canary(name, 2, [{"setWeight": 50}, step]))
    first = w.wait(name, lambda o: e2e.phase(o) == "Healthy", "first deploy")
    w.cli("set", "image", name, "app=demo:2")
    promoted = e2e.promoted_past(e2e.status(first)["stableRS"])
    w.wait(
        name,
        lambda o: promoted(o) and e2e.status(o).get("currentStepIndex") == 2,
        "promoted despite the failing dry-run metric",
    )
    # One step run; a reconcile killed after creating it and before recording it may leave a
    # `.1` sibling (Argo's collision counter): the one that decided is Successful.
    runs = [x for x in e2e.runs_of(w, "Step") if x["metadata"]["name"].startswith(name)]
    assert len({x["metadata"]["name"].split(".")[0] for x in runs}) == 1, runs
    passed = [x for x in runs if (x.get("status") or {}).get("phase") == "Successful"]
    assert passed, [x.get("status") for x in runs]
    summary = passed[-1]["status"].get("dryRunSummary") or {}
    assert summary.get("failed") == 1, passed[-1]["status"]


SCENARIOS = [
    ephemeral_metadata_canary,
    ephemeral_metadata_bluegreen,
    anti_affinity,
    rollback_window,
    ping_pong_istio,
    istio_additional_subsets_kept,
    analysis_range_query_and_authentication,
    dry_run_of_every_metric,
]
