"""Ephemeral metadata: the pure pieces after Argo's utils/replicaset/canary_test.go
(TestSyncEphemeralPodMetadata, TestSyncReplicaSetEphemeralPodMetadata), and the step after
rollout/ephemeralmetadata_test.go, in the one-sync fixture."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rollout_workers.rollout import podmetadata as pm
from tests.unit.rollout.onesync import OneSync, rollout, service

Obj = dict[str, Any]

ROLE = "role"
CANARY = {"labels": {ROLE: "canary"}, "annotations": {"note": "canary"}}
STABLE = {"labels": {ROLE: "stable"}, "annotations": {}}


@pytest.mark.parametrize(
    ("meta", "injected", "desired", "patch"),
    [
        pytest.param({}, None, None, {}, id="nothing"),
        pytest.param(
            {"labels": {"app": "x"}},
            None,
            {"labels": {ROLE: "canary"}, "annotations": {"a": "1"}},
            {"annotations": {"a": "1"}, "labels": {ROLE: "canary"}},
            id="inject",
        ),
        pytest.param(
            {"labels": {ROLE: "canary"}},
            {"labels": {ROLE: "canary"}, "annotations": {}},
            {"labels": {ROLE: "canary"}, "annotations": {}},
            {},
            id="already-there",
        ),
        pytest.param(
            {"labels": {ROLE: "canary", "app": "x"}},
            {"labels": {ROLE: "canary"}, "annotations": {}},
            {"labels": {ROLE: "stable"}, "annotations": {}},
            {"labels": {ROLE: "stable"}},
            id="replace-value",
        ),
        pytest.param(
            {"labels": {ROLE: "canary", "app": "x"}, "annotations": {"a": "1", "b": "2"}},
            {"labels": {ROLE: "canary"}, "annotations": {"a": "1"}},
            None,
            {"annotations": {"a": None}, "labels": {ROLE: None}},
            id="remove-only-what-was-injected",
        ),
        pytest.param(
            {"labels": {"app": "x"}},
            {"labels": {ROLE: "canary"}, "annotations": {}},
            None,
            {},
            id="injected-key-already-gone",
        ),
        pytest.param(
            {"labels": {"istio": "sidecar", "old": "1"}},
            {"labels": {"old": "1"}, "annotations": {}},
            {"labels": {"new": "2"}, "annotations": {}},
            {"labels": {"new": "2", "old": None}},
            id="swap-keys-leave-foreign",
        ),
    ],
)
def test_calculate_metadata_patch(meta: Obj, injected: Obj, desired: Obj, patch: Obj) -> None:
    assert pm.calculate_metadata_patch(meta, injected=injected, desired=desired) == patch


def rs_with(template_labels: dict[str, str], recorded: str | None) -> Obj:
    annotations = {pm.EPHEMERAL_METADATA_ANNOTATION: recorded} if recorded is not None else {}
    return {
        "metadata": {"name": "rs", "annotations": annotations},
        "spec": {"template": {"metadata": {"labels": template_labels}}},
    }


def test_rs_patch_records_what_it_injects_as_go_marshals_it() -> None:
    patch = pm.calculate_rs_patch(rs_with({"app": "x"}, None), CANARY)
    assert patch == {
        "metadata": {
            "annotations": {
                pm.EPHEMERAL_METADATA_ANNOTATION: (
                    '{"labels":{"role":"canary"},"annotations":{"note":"canary"}}'
                )
            }
        },
        "spec": {
            "template": {
                "metadata": {"annotations": {"note": "canary"}, "labels": {ROLE: "canary"}}
            }
        },
    }


def test_rs_patch_removes_record_and_injected_keys_when_the_role_ends() -> None:
    rs = rs_with({"app": "x", ROLE: "canary"}, json.dumps({"labels": {ROLE: "canary"}}))
    assert pm.calculate_rs_patch(rs, None) == {
        "metadata": {"annotations": {pm.EPHEMERAL_METADATA_ANNOTATION: None}},
        "spec": {"template": {"metadata": {"labels": {ROLE: None}}}},
    }


def test_rs_patch_keeps_removed_keys_recorded_while_pods_follow() -> None:
    """The ReplicaSet is written before its pods: until they are clean, the record keeps the
    keys being removed, and a second patch shrinks it."""
    rs = rs_with({"app": "x", ROLE: "canary"}, json.dumps({"labels": {ROLE: "canary"}}))
    tier = {"labels": {"tier": "s"}, "annotations": {}}
    patch = pm.calculate_rs_patch(rs, tier, pods_follow=True)
    recorded = patch["metadata"]["annotations"][pm.EPHEMERAL_METADATA_ANNOTATION]
    assert json.loads(recorded) == {"labels": {ROLE: "canary", "tier": "s"}}
    assert patch["spec"]["template"]["metadata"] == {"labels": {"tier": "s", ROLE: None}}
    written = rs_with({"app": "x", "tier": "s"}, recorded)
    assert pm.calculate_rs_patch(written, tier, pods_follow=True) == {}
    assert pm.settled_record_patch(written, tier) == {
        "metadata": {"annotations": {pm.EPHEMERAL_METADATA_ANNOTATION: '{"labels":{"tier":"s"}}'}}
    }
    assert pm.settled_record_patch(written, None) == {
        "metadata": {"annotations": {pm.EPHEMERAL_METADATA_ANNOTATION: None}}
    }
    settled = rs_with({"app": "x", "tier": "s"}, '{"labels":{"tier":"s"}}')
    assert pm.settled_record_patch(settled, tier) == {}


def test_unreadable_record_injects_again_and_removes_nothing() -> None:
    rs = rs_with({"app": "x", ROLE: "old"}, "{not json")
    assert pm.calculate_injected(rs) is None
    assert pm.calculate_rs_patch(rs, None) == {}


def test_strip_injected_gives_the_template_as_the_rollout_wrote_it() -> None:
    rs = rs_with({"app": "x", ROLE: "canary"}, json.dumps({"labels": {ROLE: "canary"}}))
    assert pm.strip_injected(rs) == {"metadata": {"labels": {"app": "x"}}}


# -- the step, one sync at a time --------------------------------------------------------------


def canary_rollout(**canary: Any) -> Obj:
    return rollout(
        strategy={
            "canary": {
                "canaryService": "canary",
                "stableService": "stable",
                "canaryMetadata": CANARY,
                "stableMetadata": {"labels": {ROLE: "stable"}},
                "steps": [{"setWeight": 50}, {"pause": {}}],
                **canary,
            }
        },
        replicas=2,
    )


def labels_of(pods: list[Obj]) -> list[str | None]:
    return sorted(str(p["metadata"]["labels"].get(ROLE)) for p in pods)


def test_canary_roles_on_replicasets_and_live_pods_through_a_promotion() -> None:
    """TestSyncCanaryEphemeralMetadataInitialRevision, ...SecondRevision, and the promotion."""
    sim = OneSync(canary_rollout(), [service("canary"), service("stable")])
    sim.settle()
    stable_hash = sim.status["stableRS"]
    # A brand-new rollout's ReplicaSet will be the stable: created with the stable role.
    assert labels_of(sim.pods(stable_hash)) == ["stable", "stable"]
    assert sim.rs(stable_hash)["spec"]["template"]["metadata"]["labels"][ROLE] == "stable"

    sim.set_image("web:2")
    sim.settle()
    canary_hash = sim.status["currentPodHash"]
    assert canary_hash != stable_hash
    assert sim.status["currentStepIndex"] == 1  # paused at the pause step
    canary_rs = sim.rs(canary_hash)
    assert canary_rs["spec"]["template"]["metadata"]["labels"][ROLE] == "canary"
    assert canary_rs["spec"]["template"]["metadata"]["annotations"]["note"] == "canary"
    assert labels_of(sim.pods(canary_hash)) == ["canary"]
    assert all(p["metadata"]["annotations"]["note"] == "canary" for p in sim.pods(canary_hash))
    assert labels_of(sim.pods(stable_hash)) == ["stable"]  # 50%: one of two pods left

    # Promotion: the canary becomes the stable, its live pods take the stable role and lose
    # the canary-only annotation.
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.status["stableRS"] == canary_hash
    assert labels_of(sim.pods(canary_hash)) == ["stable", "stable"]
    assert all("note" not in p["metadata"]["annotations"] for p in sim.pods(canary_hash))
    recorded = sim.rs(canary_hash)["metadata"]["annotations"][pm.EPHEMERAL_METADATA_ANNOTATION]
    assert json.loads(recorded) == {"labels": {ROLE: "stable"}}
    # The previous stable is neither role any more.
    old = sim.rs(stable_hash)
    assert ROLE not in old["spec"]["template"]["metadata"]["labels"]
    assert pm.EPHEMERAL_METADATA_ANNOTATION not in old["metadata"]["annotations"]


def test_an_edit_of_the_metadata_follows_on_replicasets_and_pods() -> None:
    """TestSyncCanaryEphemeralMetadataSecondRevision: an edited role's metadata replaces the
    old one's keys, and removing the field removes what was injected."""
    sim = OneSync(canary_rollout(), [service("canary"), service("stable")])
    sim.settle()
    stable_hash = sim.status["stableRS"]
    canary = sim.rollout["spec"]["strategy"]["canary"]
    sim.edit_spec(strategy={"canary": {**canary, "stableMetadata": {"labels": {"tier": "s"}}}})
    sim.settle()
    pods = sim.pods(stable_hash)
    assert all(p["metadata"]["labels"].get("tier") == "s" for p in pods)
    assert all(ROLE not in p["metadata"]["labels"] for p in pods)
    without = {k: v for k, v in canary.items() if k not in ("stableMetadata", "canaryMetadata")}
    sim.edit_spec(strategy={"canary": without})
    sim.settle()
    assert all("tier" not in p["metadata"]["labels"] for p in sim.pods(stable_hash))
    assert pm.EPHEMERAL_METADATA_ANNOTATION not in (
        sim.rs(stable_hash)["metadata"].get("annotations") or {}
    )


def test_a_pod_template_change_with_metadata_is_still_found_as_the_new_replicaset() -> None:
    """The injected labels make the ReplicaSet's template differ from the rollout's; it is
    still the new ReplicaSet (no second one is created)."""
    sim = OneSync(canary_rollout(), [service("canary"), service("stable")])
    sim.settle()
    sim.settle()
    assert len(sim.replicasets()) == 1


def test_bluegreen_preview_then_active_role() -> None:
    """TestSyncBlueGreenEphemeralMetadata...: preview metadata on the new pods until the
    active Service switches, then active metadata."""
    obj = rollout(
        strategy={
            "blueGreen": {
                "activeService": "active",
                "previewService": "preview",
                "autoPromotionEnabled": False,
                "previewMetadata": {"labels": {ROLE: "preview"}},
                "activeMetadata": {"labels": {ROLE: "active"}},
            }
        },
        replicas=1,
    )
    sim = OneSync(obj, [service("active"), service("preview")])
    sim.settle()
    first = sim.status["stableRS"]
    assert labels_of(sim.pods(first)) == ["active"]
    sim.set_image("web:2")
    sim.settle()
    second = sim.status["currentPodHash"]
    assert labels_of(sim.pods(second)) == ["preview"]
    assert labels_of(sim.pods(first)) == ["active"]
    sim.rollout["status"]["pauseConditions"] = None
    sim.settle()
    assert sim.status["stableRS"] == second
    assert labels_of(sim.pods(second)) == ["active"]


def test_no_metadata_configured_lists_no_pods() -> None:
    """Without role metadata and nothing recorded, the step reads no pods and writes nothing."""
    obj = rollout(strategy={"canary": {"steps": [{"setWeight": 50}]}}, replicas=1)
    sim = OneSync(obj)
    calls: list[str] = []
    original = sim.writer.list_pods

    def counting(namespace: str, selector: str) -> list[Obj]:
        calls.append(selector)
        return original(namespace, selector)

    sim.writer.list_pods = counting  # type: ignore[method-assign]
    sim.settle()
    assert calls == []


def test_a_reconcile_killed_between_the_replicaset_and_its_pods_still_cleans_the_pods() -> None:
    """Killed after the ReplicaSet's write and before its pods', the next reconcile still
    knows which keys the pods must lose (Argo forgets them: its record is already the new one)."""
    sim = OneSync(canary_rollout(), [service("canary"), service("stable")])
    sim.settle()
    stable_hash = sim.status["stableRS"]
    canary = sim.rollout["spec"]["strategy"]["canary"]
    sim.edit_spec(strategy={"canary": {**canary, "stableMetadata": {"labels": {"tier": "s"}}}})
    original = sim.writer.patch

    def killed_at_pods(resource: Any, namespace: str, name: str, body: Obj) -> Obj:
        if resource.plural == "pods":
            raise SystemExit("kill -9")
        return original(resource, namespace, name, body)

    sim.writer.patch = killed_at_pods  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        sim.sync()
    sim.writer.patch = original  # type: ignore[method-assign]
    assert all(p["metadata"]["labels"].get(ROLE) == "stable" for p in sim.pods(stable_hash))
    sim.settle()
    pods = sim.pods(stable_hash)
    assert all(p["metadata"]["labels"].get("tier") == "s" for p in pods)
    assert all(ROLE not in p["metadata"]["labels"] for p in pods)
    recorded = sim.rs(stable_hash)["metadata"]["annotations"][pm.EPHEMERAL_METADATA_ANNOTATION]
    assert json.loads(recorded) == {"labels": {"tier": "s"}}
