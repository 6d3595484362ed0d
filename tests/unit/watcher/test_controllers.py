"""Controller subsets: the types a watcher mirrors for the controllers it serves."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from rollout_workers.cache import Change
from rollout_workers.cli.main import cli
from rollout_workers.kube import resources as r
from rollout_workers.kube.errors import Unavailable
from rollout_workers.settings import CONTROLLERS, Settings
from rollout_workers.watcher.controllers import NEEDS, queued_kinds, served_version, watched
from rollout_workers.watcher.eventkeys import woken_keys

OWNER_KINDS = ("Rollout", "Experiment", "AnalysisRun")


def any_change(resource: r.Resource, owner: str) -> Change:
    meta: dict[str, Any] = {"name": "x", "namespace": "ns"}
    meta["ownerReferences"] = [{"kind": owner, "name": "o", "uid": "u", "controller": True}]
    return Change("MODIFIED", "ns/x", {"metadata": meta}, None)


def everything(plural: str, index: str, value: str) -> list[str]:
    return ["ns/referencing"]


def test_every_type_that_wakes_a_kind_is_watched_for_its_controller() -> None:
    for resource in r.WATCHED.values():
        for owner in OWNER_KINDS:
            for kind in woken_keys(resource, any_change(resource, owner), everything):
                (controller,) = [c for c, k in CONTROLLERS.items() if k == kind]
                assert resource in NEEDS[controller], (resource.plural, controller)


def test_every_lister_a_handler_reads_is_watched() -> None:
    # What make_handler of each controller builds Listers over (rollout/, analysis/, experiment/).
    reads = {
        "rollouts": {"rollouts", "replicasets", "services", "analysistemplates",
                     "clusteranalysistemplates", "analysisruns", "experiments"},
        "analysis": {"analysisruns", "jobs"},
        "experiments": {"experiments", "replicasets", "services", "analysisruns",
                        "analysistemplates", "clusteranalysistemplates"},
    }  # fmt: skip
    for controller, plurals in reads.items():
        assert plurals <= {res.plural for res in NEEDS[controller]}, controller


@pytest.mark.parametrize(
    ("controllers", "namespace", "expected"),
    [
        (list(CONTROLLERS), "", [res.plural for res in r.WATCHED.values()]),
        (["analysis"], "", ["analysisruns", "jobs"]),
        (["rollouts"], "", ["rollouts", "replicasets", "services", "analysisruns",
                            "analysistemplates", "clusteranalysistemplates", "experiments",
                            "ingresses"]),
        (list(CONTROLLERS), "team-a",
         [res.plural for res in r.WATCHED.values() if res.namespaced]),
    ],
)  # fmt: skip
def test_watched(controllers: list[str], namespace: str, expected: list[str]) -> None:
    assert [res.plural for res in watched(controllers, namespace=namespace)] == expected


def test_queued_kinds() -> None:
    assert queued_kinds(["analysis", "experiments"]) == {"analysisruns", "experiments"}


def test_settings_take_comma_separated_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUTS_WATCHER_CONTROLLERS", "analysis, experiments")
    monkeypatch.setenv("ROLLOUTS_WORKER_QUEUES", "analysis,system")
    s = Settings()
    assert s.watcher.controllers == ["analysis", "experiments"]
    assert s.worker.queues == ["analysis", "system"]
    monkeypatch.setenv("ROLLOUTS_WORKER_QUEUES", '["rollouts"]')
    assert Settings().worker.queues == ["rollouts"]
    monkeypatch.setenv("ROLLOUTS_WATCHER_CONTROLLERS", "bogus")
    with pytest.raises(ValueError, match="unknown controllers"):
        Settings()


def test_watcher_cli_rejects_unknown_controllers() -> None:
    result = CliRunner().invoke(cli, ["watcher", "--controllers", "rollouts,bogus"])
    assert result.exit_code == 2
    assert "unknown ['bogus']" in result.output


def test_ingresses_are_reflected_at_the_newest_version_served() -> None:
    v1, networking_beta, extensions_beta = r.INGRESS_VERSIONS
    assert served_version(r.INGRESSES, lambda res: True) == v1
    assert served_version(r.INGRESSES, lambda res: res.version == "v1beta1") == networking_beta
    assert served_version(r.INGRESSES, lambda res: res.group == "extensions") == extensions_beta
    # Nothing answers (discovery unreachable, or no Ingress at all): v1, as before.
    assert served_version(r.INGRESSES, lambda res: False) == v1

    def unreachable(res: r.Resource) -> bool:
        raise Unavailable(503, "ServiceUnavailable", "down")

    assert served_version(r.INGRESSES, unreachable) == v1
    assert served_version(r.SERVICES, unreachable) == r.SERVICES
