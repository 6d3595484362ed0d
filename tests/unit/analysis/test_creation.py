"""Creating runs and experiments under names that may be taken, as Argo's
CreateWithCollisionCounter and createExperimentWithCollisionHandling do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rollout_workers.analysis import creation
from rollout_workers.kube import resources as r
from rollout_workers.kube.writer import RecordingWriter
from rollout_workers.objects import Obj

OWNER = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "app", "uid": "u1"}


def run(name: str, *, uid: str = "u1", phase: str = "", **spec: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "ownerReferences": [{**OWNER, "uid": uid, "controller": True}],
        },
        "spec": {"metrics": [{"name": "m", "provider": {"job": {}}}], **spec},
        "status": {"phase": phase} if phase else {},
    }


def created_names(writer: RecordingWriter) -> list[str]:
    return [a.name for a in writer.actions if a.verb == "create"]


def test_a_name_free_is_created() -> None:
    writer = RecordingWriter()
    got = creation.create_run(writer, "ns", run("app-1-2"), [])
    assert got["metadata"]["name"] == "app-1-2"
    assert created_names(writer) == ["app-1-2"]


def test_our_run_the_cache_has_not_seen_is_taken_from_the_server() -> None:
    # A reconcile created the run and died before the status named it; the next one reads a
    # cache that has not seen the run yet. The server's copy is ours and running: no duplicate.
    writer = RecordingWriter()
    writer.seed(r.ANALYSISRUNS, run("app-1-2", phase="Running"))
    got = creation.create_run(writer, "ns", run("app-1-2"), known=[])
    assert got["metadata"]["name"] == "app-1-2"
    assert got["status"] == {"phase": "Running"}
    assert created_names(writer) == ["app-1-2"]  # the one create that found the name taken


@pytest.mark.parametrize(
    "taken",
    [
        run("app-1-2", phase="Successful"),  # finished: a new run is wanted
        run("app-1-2", uid="other"),  # another owner's
        run("app-1-2", metrics=[{"name": "other", "provider": {"job": {}}}]),  # another spec
    ],
    ids=["completed", "other-owner", "other-metrics"],
)
def test_a_name_taken_by_a_run_not_ours_counts_up(taken: Obj) -> None:
    writer = RecordingWriter()
    writer.seed(r.ANALYSISRUNS, taken)
    got = creation.create_run(writer, "ns", run("app-1-2"), known=[])
    assert got["metadata"]["name"] == "app-1-2.1"
    assert created_names(writer) == ["app-1-2", "app-1-2.1"]


def test_a_run_in_the_cache_that_is_ours_is_taken_without_a_request() -> None:
    writer = RecordingWriter()
    cached = run("app-1-2", phase="Running")
    writer.seed(r.ANALYSISRUNS, copy.deepcopy(cached))
    assert creation.create_run(writer, "ns", run("app-1-2"), [cached]) is cached
    assert writer.actions == []


def test_run_equality_is_argos_semantic_one() -> None:
    # IsSemanticallyEqual compares metrics, dryRun, measurementRetention and args only, an empty
    # list being no list; terminate (or anything else) does not make a run another one.
    ours = run("a", args=[{"name": "x", "value": "1"}])
    terminated = run("a", args=[{"name": "x", "value": "1"}], terminate=True)
    assert creation.same_run_spec(ours, terminated)
    assert creation.same_run_spec(run("a", dryRun=[]), run("a"))
    assert not creation.same_run_spec(ours, run("a", args=[{"name": "x", "value": "2"}]))
    assert not creation.same_run_spec(run("a", dryRun=[{"metricName": "m"}]), run("a"))
    assert not creation.same_run_spec(
        run("a", measurementRetention=[{"metricName": "m", "limit": 2}]), run("a")
    )


def test_experiments_count_up_with_a_dash_and_ignore_terminate() -> None:
    def experiment(name: str, **spec: Any) -> Obj:
        body = run(name, **spec)
        body["kind"] = "Experiment"
        body["spec"] = {"templates": [{"name": "canary"}], **spec}
        return body

    writer = RecordingWriter()
    writer.seed(r.EXPERIMENTS, experiment("app-1-2", terminate=True, duration="1m"))
    got, made = creation.create_counted(
        writer, r.EXPERIMENTS, "ns", experiment("app-1-2"), [], separator="-",
        same=creation.same_experiment_spec,
    )  # fmt: skip
    assert (got["metadata"]["name"], made) == ("app-1-2-1", True)
    writer = RecordingWriter()
    writer.seed(r.EXPERIMENTS, experiment("app-1-2", terminate=True))
    got, made = creation.create_counted(
        writer, r.EXPERIMENTS, "ns", experiment("app-1-2"), [], separator="-",
        same=creation.same_experiment_spec,
    )  # fmt: skip
    assert (got["metadata"]["name"], made) == ("app-1-2", False)


def test_no_free_name_is_a_clear_error() -> None:
    writer = RecordingWriter()
    writer.seed(r.ANALYSISRUNS, run("app", phase="Failed"))
    for n in range(1, creation.MAX_ATTEMPTS):
        writer.seed(r.ANALYSISRUNS, run(f"app.{n}", phase="Failed"))
    with pytest.raises(creation.NameExhausted, match="cannot find a free name for AnalysisRun app"):
        creation.create_run(writer, "ns", run("app"), [])
