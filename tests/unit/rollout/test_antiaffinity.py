"""Anti-affinity between revisions, after Argo's utils/replicaset/replicaset_test.go
(TestGenerateReplicaSetAffinity, TestIfInjectedAntiAffinityRuleNeedsUpdate,
TestRemoveInjectedAntiAffinityRule), and through one sync."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.rollout import antiaffinity as aa
from tests.unit.rollout.onesync import OneSync, rollout

Obj = dict[str, Any]
PREFERRED = {aa.PREFERRED: {"weight": 1}}
REQUIRED: Obj = {aa.REQUIRED: {}}
USER_RULE = {"weight": 5, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {}}}


def term(stable: str = "stable") -> Obj:
    return aa.injected_term(stable_hash=stable, namespace="default")


@pytest.mark.parametrize(
    ("affinity", "anti", "stable", "expected"),
    [
        pytest.param(None, None, "stable", None, id="no-anti-affinity"),
        pytest.param(None, PREFERRED, "", None, id="no-stable-yet"),
        pytest.param(None, PREFERRED, "current", None, id="stable-is-current"),
        pytest.param(
            None,
            PREFERRED,
            "stable",
            {"podAntiAffinity": {aa.PREFERRED: [{"weight": 1, "podAffinityTerm": term()}]}},
            id="preferred",
        ),
        pytest.param(
            None, REQUIRED, "stable", {"podAntiAffinity": {aa.REQUIRED: [term()]}}, id="required"
        ),
        pytest.param(
            {"podAntiAffinity": {aa.PREFERRED: [USER_RULE]}, "nodeAffinity": {"x": 1}},
            PREFERRED,
            "stable",
            {
                "podAntiAffinity": {
                    aa.PREFERRED: [USER_RULE, {"weight": 1, "podAffinityTerm": term()}]
                },
                "nodeAffinity": {"x": 1},
            },
            id="appended-to-the-users-rules",
        ),
    ],
)
def test_calculate_affinity(affinity: Obj, anti: Obj, stable: str, expected: Obj) -> None:
    got = aa.calculate_affinity(
        affinity=affinity,
        anti_affinity=anti,
        stable_hash=stable,
        current_hash="current",
        namespace="default",
    )
    assert got == expected


def test_the_injected_term_targets_the_stable_hash_on_each_node() -> None:
    assert term("abc") == {
        "labelSelector": {
            "matchExpressions": [
                {"key": "rollouts-pod-template-hash", "operator": "In", "values": ["abc"]}
            ]
        },
        "namespaces": ["default"],
        "topologyKey": "kubernetes.io/hostname",
    }


@pytest.mark.parametrize(
    ("stable", "expected"),
    [
        pytest.param("old", False, id="same-stable"),
        pytest.param("newer", True, id="stable-moved-on"),
        pytest.param("current", False, id="rs-is-now-the-stable"),
    ],
)
def test_needs_update(stable: str, expected: bool) -> None:
    affinity = {"podAntiAffinity": {aa.REQUIRED: [term("old")]}}
    assert (
        aa.needs_update(affinity, REQUIRED, stable_hash=stable, current_hash="current") is expected
    )


@pytest.mark.parametrize(
    ("affinity", "anti", "expected"),
    [
        pytest.param({"podAntiAffinity": {aa.REQUIRED: [term()]}}, REQUIRED, None, id="only-rule"),
        pytest.param(
            {
                "podAntiAffinity": {
                    aa.PREFERRED: [USER_RULE, {"weight": 1, "podAffinityTerm": term()}]
                }
            },
            PREFERRED,
            {"podAntiAffinity": {aa.PREFERRED: [USER_RULE]}},
            id="keeps-the-users-rule",
        ),
        pytest.param(
            {"podAntiAffinity": {aa.REQUIRED: [term()]}, "nodeAffinity": {"x": 1}},
            REQUIRED,
            {"nodeAffinity": {"x": 1}},
            id="keeps-other-affinity",
        ),
        pytest.param({"nodeAffinity": {"x": 1}}, REQUIRED, {"nodeAffinity": {"x": 1}}, id="none"),
    ],
)
def test_remove_injected(affinity: Obj, anti: Obj, expected: Obj | None) -> None:
    assert aa.remove_injected(affinity, anti) == expected


def test_anti_affinity_of_needs_a_rule() -> None:
    def ro(anti: Obj) -> Obj:
        return {"spec": {"strategy": {"canary": {"antiAffinity": anti}}}}

    assert aa.anti_affinity_of(ro({})) is None
    assert aa.anti_affinity_of(ro(REQUIRED)) == REQUIRED


def test_new_replicaset_avoids_the_stable_and_keeps_the_term_once_stable() -> None:
    """The new ReplicaSet is created with the term against the stable; after promotion the
    term stays (Argo writes no change for it), and the ReplicaSet is still found as the new
    one."""
    obj = rollout(
        strategy={
            "canary": {"antiAffinity": PREFERRED, "steps": [{"setWeight": 50}, {"pause": {}}]}
        },
        replicas=2,
    )
    sim = OneSync(obj)
    sim.settle()
    first = sim.status["stableRS"]
    assert "affinity" not in sim.rs(first)["spec"]["template"]["spec"]
    sim.set_image("web:2")
    sim.settle()
    second = sim.status["currentPodHash"]
    affinity = sim.rs(second)["spec"]["template"]["spec"]["affinity"]
    assert affinity == {
        "podAntiAffinity": {aa.PREFERRED: [{"weight": 1, "podAffinityTerm": term(first)}]}
    }
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.status["stableRS"] == second
    assert sim.rs(second)["spec"]["template"]["spec"]["affinity"] == affinity
    assert len(sim.replicasets()) == 2


def test_the_term_follows_a_new_stable_during_an_update() -> None:
    """TestIfInjectedAntiAffinityRuleNeedsUpdate through a sync: the stable changed while the
    ReplicaSet is still the canary (a rollback to it), so its term is rewritten."""
    obj = rollout(
        strategy={
            "canary": {"antiAffinity": REQUIRED, "steps": [{"setWeight": 50}, {"pause": {}}]}
        },
        replicas=2,
    )
    sim = OneSync(obj)
    sim.settle()
    first = sim.status["stableRS"]
    sim.set_image("web:2")
    sim.settle()
    second = sim.status["currentPodHash"]
    # Someone marks another stable (as a rollback would): the canary's term must follow it.
    sim.rollout["status"]["stableRS"] = "otherhash"
    synced = sim.sync()
    written = synced.writes("replicasets", sim.rs(second)["metadata"]["name"])
    assert written and written[0]["spec"]["template"]["spec"]["affinity"] == {
        "podAntiAffinity": {aa.REQUIRED: [term("otherhash")]}
    }
    assert first != second
