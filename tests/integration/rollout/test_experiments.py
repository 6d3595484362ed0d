"""Experiments against the embedded API: standalone ones (templates, services, duration,
analyses, scale-down, invalid specs) and a canary's experiment step, reconciled one sync at a
time by the experiment, rollout and AnalysisRun controllers over the real cache."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rollout_workers.kube import resources as r
from tests.integration.rollout.conftest import NS, Harness, canary_rollout, phase
from tests.support.metrics import MetricsServer

Obj = dict[str, Any]


@pytest.fixture
def metrics() -> Iterator[MetricsServer]:
    server = MetricsServer().start()
    yield server
    server.stop()


def template(h: Harness, name: str, url: str, **metric: Any) -> None:
    """An AnalysisTemplate whose metric asks `url/{{args.value}}` and passes at >= 0.9."""
    h.kube.create(
        r.ANALYSISTEMPLATES,
        NS,
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": name},
            "spec": {
                "args": [
                    {"name": "value"},
                    {"name": "stable", "value": ""},
                    {"name": "canary", "value": ""},
                ],
                "metrics": [
                    {
                        "name": "rate",
                        "successCondition": "result >= 0.9",
                        "provider": {
                            "web": {
                                "url": url
                                + "/{{args.value}}?stable={{args.stable}}&canary={{args.canary}}"
                            }
                        },
                        **metric,
                    }
                ],
            },
        },
    )


def pod_template(app: str, image: str, port: int | None = None) -> Obj:
    container: Obj = {"name": "app", "image": image}
    if port is not None:
        container["ports"] = [{"name": "http", "containerPort": port}]
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container]}}


def experiment(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Experiment",
        "metadata": {"name": name},
        "spec": {
            "templates": [
                {
                    "name": "baseline",
                    "selector": {"matchLabels": {"app": f"{name}-baseline"}},
                    "template": pod_template(f"{name}-baseline", "app:1"),
                },
                {
                    "name": "canary",
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": f"{name}-canary"}},
                    "template": pod_template(f"{name}-canary", "app:2", port=8080),
                    "service": {},
                },
            ],
            "scaleDownDelaySeconds": 0,
            **spec,
        },
    }


def get(h: Harness, name: str) -> Obj:
    return h.kube.get(r.EXPERIMENTS, NS, name)


def drive_experiment(
    h: Harness, name: str, until: Callable[[Obj], bool], timeout: float = 30
) -> Obj:
    deadline = time.monotonic() + timeout
    while True:
        h.sync_experiments()
        h.sync_analysis_runs()
        obj = get(h, name)
        if until(obj):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last status: {obj.get('status')}")
        time.sleep(0.1)


def ex_phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def owned(h: Harness, resource: r.Resource, uid: str) -> dict[str, Obj]:
    items, _ = h.kube.list(resource, namespace=NS)
    return {
        x["metadata"]["name"]: x
        for x in items
        if any(o.get("uid") == uid for o in x["metadata"].get("ownerReferences") or [])
    }


def test_experiment_runs_its_duration_then_scales_down(
    harness: Harness, metrics: MetricsServer
) -> None:
    h = harness
    template(h, "rate", metrics.url)
    h.kube.create(
        r.EXPERIMENTS,
        NS,
        experiment(
            "exp",
            duration="2s",
            analyses=[
                {"name": "rate", "templateName": "rate", "args": [{"name": "value", "value": "1"}]}
            ],
        ),
    )
    running = drive_experiment(h, "exp", lambda o: ex_phase(o) == "Running")
    uid = running["metadata"]["uid"]
    rss = owned(h, r.REPLICASETS, uid)
    assert set(rss) == {"exp-baseline", "exp-canary"}
    canary = rss["exp-canary"]
    assert canary["metadata"]["annotations"]["experiment.argoproj.io/template-name"] == "canary"
    assert canary["spec"]["replicas"] == 2
    pod_hash = canary["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL]
    assert canary["spec"]["selector"]["matchLabels"][r.POD_TEMPLATE_HASH_LABEL] == pod_hash
    assert running["status"]["availableAt"]
    services = owned(h, r.SERVICES, uid)
    assert set(services) == {"exp-canary"}
    assert services["exp-canary"]["spec"]["selector"] == {r.POD_TEMPLATE_HASH_LABEL: pod_hash}
    assert services["exp-canary"]["spec"]["ports"][0]["port"] == 8080
    statuses = {t["name"]: t for t in running["status"]["templateStatuses"]}
    assert statuses["canary"]["serviceName"] == "exp-canary"
    assert statuses["canary"]["podTemplateHash"] == pod_hash

    done = drive_experiment(h, "exp", lambda o: ex_phase(o) == "Successful")
    statuses = {t["name"]: t for t in done["status"]["templateStatuses"]}
    assert {t["status"] for t in statuses.values()} == {"Successful"}
    progressing = next(c for c in done["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ExperimentCompleted")
    run = h.kube.get(r.ANALYSISRUNS, NS, "exp-rate")
    assert run["metadata"]["ownerReferences"][0]["kind"] == "Experiment"

    # scaleDownDelaySeconds: 0 — the ReplicaSets go to zero, then the Service goes.
    drive_experiment(
        h,
        "exp",
        lambda o: (
            all(rs["spec"]["replicas"] == 0 for rs in owned(h, r.REPLICASETS, uid).values())
            and not owned(h, r.SERVICES, uid)
        ),
    )


def test_failed_analysis_fails_the_experiment(harness: Harness, metrics: MetricsServer) -> None:
    h = harness
    template(h, "rate", metrics.url)
    h.kube.create(
        r.EXPERIMENTS,
        NS,
        experiment(
            "bad",
            analyses=[
                {
                    "name": "rate",
                    "templateName": "rate",
                    "args": [{"name": "value", "value": "0.1"}],
                }
            ],
        ),
    )
    failed = drive_experiment(h, "bad", lambda o: ex_phase(o) == "Failed")
    assert 'Metric "rate" assessed Failed' in failed["status"]["message"]
    runs = {a["name"]: a for a in failed["status"]["analysisRuns"]}
    assert runs["rate"]["phase"] == "Failed" and runs["rate"]["analysisRun"] == "bad-rate"
    uid = failed["metadata"]["uid"]
    drive_experiment(
        h,
        "bad",
        lambda o: all(rs["spec"]["replicas"] == 0 for rs in owned(h, r.REPLICASETS, uid).values()),
    )


def test_required_analysis_completes_an_experiment_without_duration(
    harness: Harness, metrics: MetricsServer
) -> None:
    h = harness
    template(h, "rate", metrics.url, count=2, interval="1s")
    h.kube.create(
        r.EXPERIMENTS,
        NS,
        experiment(
            "req",
            analyses=[
                {
                    "name": "rate",
                    "templateName": "rate",
                    "requiredForCompletion": True,
                    "args": [{"name": "value", "value": "1"}],
                }
            ],
        ),
    )
    done = drive_experiment(h, "req", lambda o: ex_phase(o) == "Successful")
    assert done["status"]["message"] == "Required AnalysisRuns completed"


def test_template_that_never_becomes_available_fails_at_the_deadline(harness: Harness) -> None:
    h = harness
    body = experiment("slow", progressDeadlineSeconds=2)
    body["spec"]["templates"][1]["template"]["spec"]["containers"][0]["image"] = "app:bad"
    h.kube.create(r.EXPERIMENTS, NS, body)
    failed = drive_experiment(h, "slow", lambda o: ex_phase(o) == "Failed")
    assert (
        failed["status"]["message"] == "Template 'canary' exceeded its progressDeadlineSeconds (2)"
    )


def test_invalid_spec_gets_a_condition_and_no_replicasets(harness: Harness) -> None:
    h = harness
    body = experiment("dup")
    body["spec"]["templates"][1]["name"] = "baseline"
    h.kube.create(r.EXPERIMENTS, NS, body)
    invalid = drive_experiment(h, "dup", lambda o: bool((o.get("status") or {}).get("conditions")))
    condition = invalid["status"]["conditions"][0]
    assert condition["type"] == "InvalidSpec"
    assert (
        condition["message"] == "Experiment dup has repeated template name 'baseline' in templates"
    )
    assert not owned(h, r.REPLICASETS, invalid["metadata"]["uid"])


def experiment_step(value: str) -> Obj:
    """Stable and canary templates and a required analysis: the experiment ends with it."""
    return {
        "experiment": {
            "templates": [
                {"name": "baseline", "specRef": "stable"},
                {"name": "canary", "specRef": "canary"},
            ],
            "analyses": [
                {
                    "name": "compare",
                    "templateName": "rate",
                    "requiredForCompletion": True,
                    "args": [
                        {"name": "value", "value": value},
                        {"name": "stable", "value": "{{templates.baseline.podTemplateHash}}"},
                        {"name": "canary", "value": "{{templates.canary.podTemplateHash}}"},
                    ],
                }
            ],
        }
    }


def set_image(h: Harness, name: str, image: str) -> None:
    h.patch(
        name, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    )


def test_experiment_step_passes_with_the_templates_hashes(
    harness: Harness, metrics: MetricsServer
) -> None:
    h = harness
    template(h, "rate", metrics.url)
    h.create(canary_rollout("exs", replicas=2, steps=[{"setWeight": 50}, experiment_step("1")]))
    h.drive("exs", lambda o: phase(o) == "Healthy")
    set_image(h, "exs", "app:2")
    in_step = h.drive(
        "exs",
        lambda o: bool(((o.get("status") or {}).get("canary") or {}).get("currentExperiment")),
    )
    name = in_step["status"]["canary"]["currentExperiment"]
    assert name == f"exs-{in_step['status']['currentPodHash']}-2-1"
    done = h.drive(
        "exs",
        lambda o: (
            phase(o) == "Healthy" and o["status"]["stableRS"] == o["status"]["currentPodHash"]
        ),
    )
    assert not (done["status"].get("canary") or {}).get("currentExperiment")
    ex = get(h, name)
    assert ex_phase(ex) == "Successful"
    rss = owned(h, r.REPLICASETS, ex["metadata"]["uid"])
    images = {
        rs["metadata"]["annotations"]["experiment.argoproj.io/template-name"]: (
            rs["spec"]["template"]["spec"]["containers"][0]["image"],
            rs["metadata"]["labels"][r.POD_TEMPLATE_HASH_LABEL],
        )
        for rs in rss.values()
    }
    assert images["baseline"][0] == "app:1" and images["canary"][0] == "app:2"
    asked = [q for q in metrics.queries if q.get("stable")]
    assert asked and asked[-1]["stable"] == [images["baseline"][1]]
    assert asked[-1]["canary"] == [images["canary"][1]]


def test_failed_experiment_step_aborts_the_rollout(
    harness: Harness, metrics: MetricsServer
) -> None:
    h = harness
    template(h, "rate", metrics.url)
    h.create(canary_rollout("exf", replicas=2, steps=[{"setWeight": 50}, experiment_step("0.1")]))
    stable = h.drive("exf", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "exf", "app:2")
    aborted = h.drive("exf", lambda o: phase(o) == "Degraded")
    assert aborted["status"]["abort"] is True
    assert 'Metric "rate" assessed Failed' in aborted["status"]["message"]
    h.drive("exf", lambda o: h.rs_replicas("exf")[stable] == 2)


def test_inconclusive_experiment_pauses_and_resume_runs_it_again(
    harness: Harness, metrics: MetricsServer
) -> None:
    h = harness
    template(h, "rate", metrics.url, failureCondition="result < 0.1")  # 0.5: Inconclusive
    h.create(canary_rollout("exi", replicas=1, steps=[experiment_step("0.5")]))
    h.drive("exi", lambda o: phase(o) == "Healthy")
    set_image(h, "exi", "app:2")
    paused = h.drive("exi", lambda o: phase(o) == "Paused")
    assert paused["status"]["pauseConditions"][0]["reason"] == "InconclusiveExperiment"
    first = paused["status"]["canary"]["currentExperiment"]
    assert ex_phase(get(h, first)) == "Inconclusive"
    for _ in range(3):  # paused: no new experiment is started
        h.sync("exi")
        h.sync_experiments()
    experiments, _ = h.kube.list(r.EXPERIMENTS, namespace=NS)
    assert [x["metadata"]["name"] for x in experiments] == [first]
    h.patch("exi", {"status": {"pauseConditions": None}}, status=True)  # promote
    again = h.drive(
        "exi",
        lambda o: (
            ((o.get("status") or {}).get("canary") or {}).get("currentExperiment")
            not in (None, first)
        ),
    )
    assert again["status"]["canary"]["currentExperiment"] == f"{first}-1"
