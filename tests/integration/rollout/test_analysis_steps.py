"""Canary analysis against the embedded API: an inline analysis step and a background run,
measured by the web provider against a local metrics server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.kube import resources as r
from tests.integration.rollout.conftest import NS, Harness, canary_rollout, phase
from tests.support.metrics import MetricsServer


@pytest.fixture
def metrics() -> Iterator[str]:
    """GET /<number> answers that number as JSON."""
    server = MetricsServer().start()
    yield server.url
    server.stop()


def template(h: Harness, name: str, url: str, **metric: Any) -> None:
    h.kube.create(
        r.ANALYSISTEMPLATES,
        NS,
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": name},
            "spec": {
                "args": [{"name": "value"}],
                "metrics": [
                    {
                        "name": "rate",
                        "successCondition": "result >= 0.9",
                        "provider": {"web": {"url": url + "/{{args.value}}"}},
                        **metric,
                    }
                ],
            },
        },
    )


def analysis_step(name: str, value: str) -> dict[str, Any]:
    return {
        "analysis": {
            "templates": [{"templateName": name}],
            "args": [{"name": "value", "value": value}],
        }
    }


def set_image(h: Harness, name: str, image: str) -> None:
    h.patch(
        name, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    )


def promoted_past(o: dict[str, Any], old: str) -> bool:
    """Healthy on a new revision: the current ReplicaSet, not `old`, is stable."""
    status = o["status"]
    return phase(o) == "Healthy" and status["stableRS"] == status["currentPodHash"] != old


def runs(h: Harness) -> list[dict[str, Any]]:
    items, _ = h.kube.list(r.ANALYSISRUNS, namespace=NS)
    return items


def test_inline_analysis_step_passes(harness: Harness, metrics: str) -> None:
    h = harness
    template(h, "rate", metrics)
    h.create(
        canary_rollout("ok", replicas=2, steps=[{"setWeight": 50}, analysis_step("rate", "0.99")])
    )
    old = h.drive("ok", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "ok", "app:2")
    done = h.drive("ok", lambda o: promoted_past(o, old))
    step_runs = [x for x in runs(h) if x["metadata"]["labels"]["rollout-type"] == "Step"]
    assert len(step_runs) == 1 and step_runs[0]["status"]["phase"] == "Successful"
    assert step_runs[0]["metadata"]["name"] == f"ok-{done['status']['currentPodHash']}-2-1"
    assert step_runs[0]["metadata"]["labels"]["step-index"] == "1"


def test_failing_analysis_step_aborts(harness: Harness, metrics: str) -> None:
    h = harness
    template(h, "rate", metrics)
    h.create(
        canary_rollout("bad", replicas=2, steps=[{"setWeight": 50}, analysis_step("rate", "0.5")])
    )
    stable = h.drive("bad", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "bad", "app:2")
    aborted = h.drive("bad", lambda o: phase(o) == "Degraded")
    assert aborted["status"]["abort"] is True
    assert "RolloutAborted" in aborted["status"]["message"]
    assert 'Metric "rate" assessed Failed' in aborted["status"]["message"]
    h.drive("bad", lambda o: h.rs_replicas("bad")[stable] == 2)


def test_inconclusive_pauses_and_promote_analyses_again(harness: Harness, metrics: str) -> None:
    h = harness
    template(h, "inc", metrics, failureCondition="result < 0.1")  # 0.5: neither -> Inconclusive
    h.create(canary_rollout("inc", replicas=1, steps=[analysis_step("inc", "0.5")]))
    h.drive("inc", lambda o: phase(o) == "Healthy")
    set_image(h, "inc", "app:2")
    paused = h.drive("inc", lambda o: phase(o) == "Paused")
    assert paused["status"]["pauseConditions"][0]["reason"] == "InconclusiveAnalysisRun"
    # Promote: as in Argo, a fresh run analyses the step again.
    h.patch("inc", {"status": {"pauseConditions": None}}, status=True)
    h.drive(
        "inc",
        lambda o: (
            len([x for x in runs(h) if x["metadata"]["labels"]["rollout-type"] == "Step"]) >= 2
        ),
    )


def test_background_analysis_runs_while_paused_and_stops_on_promotion(
    harness: Harness, metrics: str
) -> None:
    h = harness
    template(h, "bg", metrics, interval="1s")
    body = canary_rollout("bga", replicas=2, steps=[{"setWeight": 50}, {"pause": {}}])
    body["spec"]["strategy"]["canary"]["analysis"] = {
        "templates": [{"templateName": "bg"}],
        "args": [{"name": "value", "value": "0.95"}],
    }
    h.create(body)
    old = h.drive("bga", lambda o: phase(o) == "Healthy")["status"]["stableRS"]
    set_image(h, "bga", "app:2")
    h.drive(
        "bga",
        lambda o: (
            phase(o) == "Paused"
            and (o["status"].get("canary") or {})
            .get("currentBackgroundAnalysisRunStatus", {})
            .get("status")
            == "Running"
        ),
    )
    h.patch("bga", {"status": {"pauseConditions": None}}, status=True)
    h.drive("bga", lambda o: promoted_past(o, old))
    background = [x for x in runs(h) if x["metadata"]["labels"]["rollout-type"] == "Background"]
    assert len(background) == 1
    assert (
        background[0]["spec"].get("terminate") is True
        or background[0]["status"]["phase"] == "Successful"
    )


def bluegreen_with(h: Harness, name: str, **strategy: Any) -> None:
    from tests.integration.rollout.test_bluegreen import bluegreen_rollout, services

    services(h, name)
    h.create(bluegreen_rollout(name, replicas=1, **strategy))


def promotion(value: str) -> dict[str, Any]:
    return {"templates": [{"templateName": "gate"}], "args": [{"name": "value", "value": value}]}


def test_bluegreen_pre_promotion_failure_then_fixed_and_retried(
    harness: Harness, metrics: str
) -> None:
    from tests.integration.rollout.test_bluegreen import selector

    h = harness
    template(h, "gate", metrics)
    bluegreen_with(h, "pre", prePromotionAnalysis=promotion("0.5"))
    old = h.drive("pre", lambda o: phase(o) == "Healthy" and selector(h, "pre-active") != "")[
        "status"
    ]["stableRS"]
    set_image(h, "pre", "app:2")
    degraded = h.drive("pre", lambda o: phase(o) == "Degraded")
    new = degraded["status"]["currentPodHash"]
    assert selector(h, "pre-preview") == new and selector(h, "pre-active") == old
    assert degraded["status"]["blueGreen"]["prePromotionAnalysisRunStatus"]["status"] == "Failed"

    # Retry only once the abort window's deadline sits on the preview ReplicaSet: the case that
    # must not be mistaken for a fast rollback.
    from tests.integration.rollout.test_bluegreen import rs_annotations

    h.drive("pre", lambda o: "scale-down-deadline" in rs_annotations(h, new))
    h.patch(
        "pre", {"spec": {"strategy": {"blueGreen": {"prePromotionAnalysis": promotion("0.99")}}}}
    )
    h.patch("pre", {"status": {"abort": False}}, status=True)  # retry
    done = h.drive("pre", lambda o: promoted_past(o, old) and selector(h, "pre-active") == new)
    assert done["status"]["blueGreen"]["prePromotionAnalysisRunStatus"]["status"] == "Successful"


def test_bluegreen_pre_and_post_then_fast_rollback_without_a_new_run(
    harness: Harness, metrics: str
) -> None:
    from tests.integration.rollout.test_bluegreen import selector

    h = harness
    template(h, "gate", metrics)
    bluegreen_with(
        h,
        "pp",
        prePromotionAnalysis=promotion("0.99"),
        postPromotionAnalysis=promotion("0.99"),
        scaleDownDelaySeconds=30,
    )
    old = h.drive("pp", lambda o: phase(o) == "Healthy" and selector(h, "pp-active") != "")[
        "status"
    ]["stableRS"]
    set_image(h, "pp", "app:2")
    done = h.drive("pp", lambda o: promoted_past(o, old))
    kinds = sorted(x["metadata"]["labels"]["rollout-type"] for x in runs(h))
    assert kinds == ["PostPromotion", "PrePromotion"]
    assert all(x["status"]["phase"] == "Successful" for x in runs(h))
    assert done["status"]["blueGreen"]["postPromotionAnalysisRunStatus"]["status"] == "Successful"

    set_image(h, "pp", "app:1")  # the old template again, inside scaleDownDelay
    h.drive("pp", lambda o: selector(h, "pp-active") == old and o["status"]["stableRS"] == old)
    assert len(runs(h)) == 2  # fast rollback: no new analysis
