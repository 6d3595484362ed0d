"""The requests each action sends, compared with the plugin's patch bodies as JSON; then each
command against a recording fake of `Kube` (which (sub)resource, which patch type, in what
order), in argo-rollouts' style of asserting the recorded API actions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from rollout_workers.cli import cluster, common, edit, lifecycle, plugin
from rollout_workers.kube.errors import Conflict, Invalid, NotFound
from rollout_workers.kube.resources import Resource

Obj = dict[str, Any]
Calls = list[tuple[Any, ...]]


def compact(body: Any) -> str | None:
    return None if body is None else json.dumps(body, separators=(",", ":"))


def canary(*, index: int | None = None, steps: int = 4, paused: bool = False, **status: Any) -> Obj:
    ro: Obj = {
        "metadata": {"name": "app", "namespace": "default", "uid": "ro-uid"},
        "spec": {
            "paused": paused,
            "strategy": {"canary": {"steps": [{"setWeight": 25}, {"pause": {}}] * (steps // 2)}},
        },
        "status": dict(status),
    }
    if index is not None:
        ro["status"]["currentStepIndex"] = index
    return ro


def blue_green(*, paused: bool = False, **status: Any) -> Obj:
    return {
        "metadata": {"name": "app", "namespace": "default", "uid": "ro-uid"},
        "spec": {"paused": paused, "strategy": {"blueGreen": {"activeService": "svc"}}},
        "status": dict(status),
    }


PAUSED = [{"reason": "CanaryPauseStep", "startTime": "2024-01-01T00:00:00Z"}]
INCONCLUSIVE_PAUSE = [{"reason": "InconclusiveAnalysisRun", "startTime": "2024-01-01T00:00:00Z"}]


def inconclusive_step(run_phase: str = "Inconclusive") -> Obj:
    return {"currentStepAnalysisRunStatus": {"name": "app-6b7f-2-1", "status": run_phase}}


UNPAUSE = '{"spec":{"paused":false}}'
CLEAR = '{"status":{"pauseConditions":null}}'
UNIFIED = '{"spec":{"paused":false},"status":{"pauseConditions":null}}'

# name: (rollout, flags, spec patch, status patch, unified patch): the bodies promote.go's
# getPatches (v1.8+) builds for that rollout, written out from its constants.
PROMOTE_CASES: dict[str, tuple[Obj, dict[str, bool], str | None, str | None, str | None]] = {
    "canary paused by a pause step": (
        canary(index=1, pauseConditions=PAUSED, controllerPause=True),
        {},
        None,
        CLEAR,
        UNIFIED,
    ),
    "paused by the user and by a step": (
        canary(index=1, paused=True, pauseConditions=PAUSED, controllerPause=True),
        {},
        UNPAUSE,
        CLEAR,
        UNIFIED,
    ),
    "paused by the user only": (
        canary(index=1, paused=True),
        {},
        UNPAUSE,
        '{"status":{"pauseConditions":null,"currentStepIndex":2}}',
        '{"spec":{"paused":false},"status":{"pauseConditions":null,"currentStepIndex":2}}',
    ),
    "inconclusive step analysis paused by the controller: next step": (
        canary(
            index=2,
            pauseConditions=INCONCLUSIVE_PAUSE,
            controllerPause=True,
            canary=inconclusive_step(),
        ),
        {},
        None,
        '{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":3}}',
        UNIFIED,  # the plugin's fallback for this case only clears the conditions
    ),
    "inconclusive step analysis, also paused by the user": (
        canary(
            index=0,
            paused=True,
            pauseConditions=INCONCLUSIVE_PAUSE,
            controllerPause=True,
            canary=inconclusive_step(),
        ),
        {},
        UNPAUSE,
        '{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":1}}',
        UNIFIED,
    ),
    "inconclusive past the last step keeps the index": (
        canary(
            index=4,
            pauseConditions=INCONCLUSIVE_PAUSE,
            controllerPause=True,
            canary=inconclusive_step(),
        ),
        {},
        None,
        '{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":4}}',
        UNIFIED,
    ),
    "inconclusive without controllerPause only clears": (
        canary(index=2, pauseConditions=INCONCLUSIVE_PAUSE, canary=inconclusive_step()),
        {},
        None,
        CLEAR,
        UNIFIED,
    ),
    "inconclusive background analysis only clears": (
        canary(
            index=2,
            pauseConditions=INCONCLUSIVE_PAUSE,
            controllerPause=True,
            canary={
                "currentStepAnalysisRunStatus": {"name": "s", "status": "Successful"},
                "currentBackgroundAnalysisRunStatus": {"name": "b", "status": "Inconclusive"},
            },
        ),
        {},
        None,
        CLEAR,
        UNIFIED,
    ),
    "inconclusive on a canary without steps: no status patch": (
        canary(
            steps=0,
            pauseConditions=INCONCLUSIVE_PAUSE,
            controllerPause=True,
            canary=inconclusive_step(),
        ),
        {},
        None,
        None,
        UNIFIED,
    ),
    "canary mid analysis step: next step": (
        canary(index=2, canary=inconclusive_step("Running")),
        {},
        None,
        '{"status":{"pauseConditions":null,"currentStepIndex":3}}',
        '{"spec":{"paused":false},"status":{"pauseConditions":null,"currentStepIndex":3}}',
    ),
    "canary without an index starts from step 0": (
        canary(),
        {},
        None,
        '{"status":{"pauseConditions":null,"currentStepIndex":1}}',
        '{"spec":{"paused":false},"status":{"pauseConditions":null,"currentStepIndex":1}}',
    ),
    "canary past the last step stays there (already fully promoted)": (
        canary(index=4, currentPodHash="same", stableRS="same"),
        {},
        None,
        '{"status":{"pauseConditions":null,"currentStepIndex":4}}',
        '{"spec":{"paused":false},"status":{"pauseConditions":null,"currentStepIndex":4}}',
    ),
    "canary without steps, not paused: nothing to send": (
        canary(steps=0),
        {},
        None,
        None,
        UNIFIED,
    ),
    "blue-green paused by the user": (blue_green(paused=True), {}, UNPAUSE, None, UNIFIED),
    "blue-green paused before promotion": (
        blue_green(pauseConditions=[{"reason": "BlueGreenPause"}], controllerPause=True),
        {},
        None,
        CLEAR,
        UNIFIED,
    ),
    "blue-green not paused: nothing to send": (blue_green(), {}, None, None, UNIFIED),
    "full mid update": (
        canary(index=1, currentPodHash="new", stableRS="old"),
        {"full": True},
        None,
        '{"status":{"promoteFull":true}}',
        None,
    ),
    "full while paused by the user leaves spec.paused": (
        canary(index=1, paused=True, currentPodHash="new", stableRS="old"),
        {"full": True},
        None,
        '{"status":{"promoteFull":true}}',
        None,
    ),
    "full of a blue-green": (
        blue_green(
            pauseConditions=[{"reason": "BlueGreenPause"}], currentPodHash="b", stableRS="a"
        ),
        {"full": True},
        None,
        '{"status":{"promoteFull":true}}',
        None,
    ),
    "full when already fully promoted": (
        canary(index=4, currentPodHash="same", stableRS="same"),
        {"full": True},
        None,
        None,
        None,
    ),
    "deprecated skip current step": (
        canary(index=1),
        {"skip_current_step": True},
        None,
        '{"status":{"currentStepIndex":2}}',
        '{"status":{"currentStepIndex":2}}',
    ),
    "deprecated skip current step past the last": (
        canary(index=4),
        {"skip_current_step": True},
        None,
        '{"status":{"currentStepIndex":4}}',
        '{"status":{"currentStepIndex":4}}',
    ),
    "deprecated skip all steps": (
        canary(index=1),
        {"skip_all_steps": True},
        None,
        '{"status":{"currentStepIndex":4}}',
        '{"status":{"currentStepIndex":4}}',
    ),
}


@pytest.mark.parametrize(
    ("ro", "flags", "spec", "status", "unified"), PROMOTE_CASES.values(), ids=PROMOTE_CASES.keys()
)
def test_promote_patches(
    ro: Obj,
    flags: dict[str, bool],
    spec: str | None,
    status: str | None,
    unified: str | None,
) -> None:
    patches = lifecycle.calculate_promote_patches(ro, **flags)
    assert (compact(patches.spec), compact(patches.status), compact(patches.unified)) == (
        spec,
        status,
        unified,
    )


@pytest.mark.parametrize(
    ("ro", "flags", "message"),
    [
        (
            canary(index=0),
            {"skip_current_step": True, "skip_all_steps": True},
            "Cannot use skip-current-step and skip-all-steps flags at the same time",
        ),
        (
            blue_green(),
            {"skip_all_steps": True},
            "Cannot skip steps of a bluegreen rollout. Run without a flags",
        ),
        (
            canary(steps=0),
            {"skip_current_step": True},
            "Cannot skip steps of a rollout without steps",
        ),
    ],
    ids=["both skip flags", "skip on blue-green", "skip without steps"],
)
def test_promote_refuses(ro: Obj, flags: dict[str, bool], message: str) -> None:
    with pytest.raises(common.ActionError, match=message):
        lifecycle.calculate_promote_patches(ro, **flags)


CONSTANT_PATCHES = {
    "abort": (lifecycle.ABORT_PATCH, '{"status":{"abort":true}}'),
    "retry rollout": (lifecycle.RETRY_PATCH, '{"status":{"abort":false}}'),
    "retry experiment": (lifecycle.RETRY_EXPERIMENT_PATCH, '{"status":null}'),
    "pause": (lifecycle.PAUSE_PATCH, '{"spec":{"paused":true}}'),
    "restart": (
        edit.restart_patch(datetime(2024, 5, 1, 10, 0, 30, 123456, tzinfo=UTC)),
        '{"spec":{"restartAt":"2024-05-01T10:00:30Z"}}',
    ),
    "restart from another zone": (
        edit.restart_patch(datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))),
        '{"spec":{"restartAt":"2024-05-01T12:00:00Z"}}',
    ),
}


@pytest.mark.parametrize(("body", "want"), CONSTANT_PATCHES.values(), ids=CONSTANT_PATCHES.keys())
def test_constant_patches(body: Obj, want: str) -> None:
    assert compact(body) == want


DURATIONS = {
    "seconds": ("30s", 30.0),
    "minutes": ("5m", 300.0),
    "compound": ("1h30m", 5400.0),
    "fraction": ("1.5h", 5400.0),
    "milliseconds": ("250ms", 0.25),
    "bare number is seconds": ("45", 45.0),
}


@pytest.mark.parametrize(("text", "seconds"), DURATIONS.values(), ids=DURATIONS.keys())
def test_parse_duration(text: str, seconds: float) -> None:
    assert common.parse_duration(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5 m", "5x", "m", "1h-"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(common.ActionError, match="invalid duration"):
        common.parse_duration(text)


def pod_spec_rollout() -> Obj:
    return {
        "metadata": {"name": "app", "resourceVersion": "7"},
        "spec": {
            "template": {
                "spec": {
                    "initContainers": [{"name": "init", "image": "busybox:1"}],
                    "containers": [
                        {"name": "web", "image": "web:1"},
                        {"name": "sidecar", "image": "proxy:1"},
                    ],
                    "ephemeralContainers": [{"name": "debug", "image": "debug:1"}],
                }
            }
        },
    }


def images_of(ro: Obj) -> dict[str, str]:
    spec = ro["spec"]["template"]["spec"]
    return {c["name"]: c["image"] for key in edit.CONTAINER_LISTS for c in spec.get(key, [])}


SET_IMAGE_CASES = {
    "one container": (
        [("web", "web:2")],
        {"init": "busybox:1", "web": "web:2", "sidecar": "proxy:1", "debug": "debug:1"},
    ),
    "several": (
        [("web", "web:2"), ("init", "busybox:2"), ("debug", "debug:2")],
        {"init": "busybox:2", "web": "web:2", "sidecar": "proxy:1", "debug": "debug:2"},
    ),
    "star sets all": (
        [("*", "all:9")],
        {"init": "all:9", "web": "all:9", "sidecar": "all:9", "debug": "all:9"},
    ),
}


@pytest.mark.parametrize(("pairs", "want"), SET_IMAGE_CASES.values(), ids=SET_IMAGE_CASES.keys())
def test_set_image(pairs: list[tuple[str, str]], want: dict[str, str]) -> None:
    ro = pod_spec_rollout()
    updated = edit.calculate_set_image(ro, pairs)
    assert images_of(updated) == want
    assert updated["metadata"]["resourceVersion"] == "7"  # the update is conditional
    assert images_of(ro)["web"] == "web:1"  # the input is not modified


def test_set_image_unknown_container() -> None:
    with pytest.raises(common.ActionError, match='unable to find container named "nope"'):
        edit.calculate_set_image(pod_spec_rollout(), [("web", "web:2"), ("nope", "x:1")])


@pytest.mark.parametrize("value", ["web", "web=a=b", "=img", "web="])
def test_image_assignment_syntax(value: str) -> None:
    with pytest.raises(click.UsageError, match="CONTAINER=IMAGE"):
        edit.parse_image_assignments((value,))


def rs(name: str, revision: str | None, image: str = "web:1", *, uid: str = "ro-uid") -> Obj:
    annotations = {} if revision is None else {"rollout.argoproj.io/revision": revision}
    return {
        "metadata": {
            "name": name,
            "annotations": annotations,
            "ownerReferences": [{"uid": uid, "controller": True, "kind": "Rollout"}],
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web", "rollouts-pod-template-hash": name}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": image, "imagePullPolicy": "IfNotPresent"}
                    ],
                    "dnsPolicy": "ClusterFirst",
                },
            }
        },
    }


REVISIONS = [rs("r1", "1"), rs("r3", "3"), rs("rx", "x"), rs("r2", "2")]
SELECT_CASES = {
    "previous of the newest": (REVISIONS, 0, "r2"),
    "explicit revision": (REVISIONS, 1, "r1"),
    "no annotation counts as 0": ([rs("r0", None), rs("r5", "5")], 0, "r0"),
}


@pytest.mark.parametrize(("sets", "to", "want"), SELECT_CASES.values(), ids=SELECT_CASES.keys())
def test_select_revision(sets: list[Obj], to: int, want: str) -> None:
    assert edit.select_revision("app", sets, to)["metadata"]["name"] == want


@pytest.mark.parametrize(
    ("sets", "to", "message"),
    [
        (REVISIONS, 9, "unable to find specified revision 9 in history"),
        ([rs("r1", "1")], 0, 'no revision found for rollout "app"'),
        ([], 0, 'no revision found for rollout "app"'),
    ],
    ids=["missing revision", "only one revision", "no replicasets"],
)
def test_select_revision_fails(sets: list[Obj], to: int, message: str) -> None:
    with pytest.raises(common.ActionError, match=message):
        edit.select_revision("app", sets, to)


def rollout_template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": image}]},
    }


def test_template_matches_ignores_defaults_and_hash() -> None:
    candidate = rs("r1", "1")["spec"]["template"]
    assert edit.template_matches(rollout_template("web:1"), candidate)
    assert not edit.template_matches(rollout_template("web:2"), candidate)
    extra = rollout_template("web:1")
    extra["metadata"]["labels"]["tier"] = "front"
    assert not edit.template_matches(extra, candidate)


def test_undo_patch_is_a_json_patch_without_the_hash_label() -> None:
    source = rs("r1", "1", "web:0")
    patch = edit.undo_patch(source)
    assert compact(patch) == compact(
        [
            {
                "op": "replace",
                "path": "/spec/template",
                "value": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "web", "image": "web:0", "imagePullPolicy": "IfNotPresent"}
                        ],
                        "dnsPolicy": "ClusterFirst",
                    },
                },
            }
        ]
    )
    assert "rollouts-pod-template-hash" in source["spec"]["template"]["metadata"]["labels"]


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        (None, None),
        ({}, ""),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {
                "matchLabels": {"app": "x"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["web", "api"]},
                    {"key": "env", "operator": "NotIn", "values": ["dev"]},
                    {"key": "team", "operator": "Exists"},
                    {"key": "old", "operator": "DoesNotExist"},
                ],
            },
            "app=x,tier in (api,web),env notin (dev),team,!old",
        ),
    ],
    ids=["missing", "empty", "labels", "expressions"],
)
def test_label_selector(selector: Obj | None, want: str | None) -> None:
    assert edit.label_selector(selector) == want


# -- the commands against a recording fake ------------------------------------------------------


@dataclass
class FakeKube:
    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)
    lists: dict[str, list[Obj]] = field(default_factory=dict)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    status_subresource: bool = True
    conflicts: int = 0
    fail_with: Exception | None = None

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        self.calls.append(("get", resource.plural, name))
        if self.fail_with is not None:
            raise self.fail_with
        try:
            return self.objects[(resource.plural, name)]
        except KeyError:
            raise NotFound(404, "NotFound", f"{name} not found") from None

    def list(
        self, resource: Resource, *, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[Obj], str]:
        self.calls.append(("list", resource.plural, label_selector))
        return self.lists.get(resource.plural, []), "1"

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        patch_type: str = "application/merge-patch+json",
    ) -> Obj:
        self.calls.append(("patch", resource.plural, name, subresource, patch_type, compact(body)))
        if (resource.plural, name) not in self.objects:
            raise NotFound(404, "NotFound", "gone")
        if subresource == "status" and not self.status_subresource:
            raise NotFound(404, "NotFound", "no status subresource")
        return self.objects[(resource.plural, name)]

    def json(self, method: str, path: str, **kwargs: Any) -> Obj:
        self.calls.append((method, path, compact(kwargs.get("body"))))
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "Conflict", "the object has been modified")
        return {}

    def patches(self) -> Calls:
        return [c[1:] for c in self.calls if c[0] == "patch"]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    kube = FakeKube()

    def connect(**kwargs: Any) -> cluster.Target:
        return cluster.Target(kube, kwargs["namespace"] or "default")  # type: ignore[arg-type]

    monkeypatch.setattr(cluster, "connect", connect)
    yield kube


def invoke(*args: str) -> Any:
    group = click.Group("rollouts")
    plugin.register(group)
    return CliRunner().invoke(group, list(args), catch_exceptions=False)


MERGE, STATUS = "application/merge-patch+json", "status"


def test_promote_sends_status_then_spec(fake: FakeKube) -> None:
    fake.objects[("rollouts", "app")] = canary(index=1, paused=True, pauseConditions=PAUSED)
    result = invoke("promote", "app")
    assert result.output == "rollout 'app' promoted\n"
    assert fake.patches() == [
        ("rollouts", "app", STATUS, MERGE, '{"status":{"pauseConditions":null}}'),
        ("rollouts", "app", "", MERGE, '{"spec":{"paused":false}}'),
    ]


def test_promote_without_status_subresource_sends_one_unified_patch(fake: FakeKube) -> None:
    fake.status_subresource = False
    fake.objects[("rollouts", "app")] = canary(index=1, pauseConditions=PAUSED)
    assert invoke("promote", "app").exit_code == 0
    assert fake.patches()[-1] == (
        "rollouts",
        "app",
        "",
        MERGE,
        '{"spec":{"paused":false},"status":{"pauseConditions":null}}',
    )


def test_promote_full(fake: FakeKube) -> None:
    fake.objects[("rollouts", "app")] = canary(index=1, currentPodHash="b", stableRS="a")
    result = invoke("promote", "app", "--full")
    assert result.output == "rollout 'app' fully promoted\n"
    assert fake.patches() == [("rollouts", "app", STATUS, MERGE, '{"status":{"promoteFull":true}}')]


INCONCLUSIVE_ROLLOUT = canary(
    index=2, pauseConditions=INCONCLUSIVE_PAUSE, controllerPause=True, canary=inconclusive_step()
)
INCONCLUSIVE_STEP = (
    '{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":3}}'
)

# name: (rollout, extra args, status subresource served, requests in order, output): what
# PromoteRollout sends: the status patch first; on 404 the unified patch replaces the spec one.
PROMOTE_REQUESTS: dict[str, tuple[Obj, list[str], bool, Calls, str]] = {
    "user pause": (
        blue_green(paused=True),
        [],
        True,
        [("rollouts", "app", "", MERGE, UNPAUSE)],
        "rollout 'app' promoted\n",
    ),
    "controller pause at a pause step": (
        canary(index=1, pauseConditions=PAUSED, controllerPause=True),
        [],
        True,
        [("rollouts", "app", STATUS, MERGE, CLEAR)],
        "rollout 'app' promoted\n",
    ),
    "user and controller pause: status, then spec": (
        canary(index=1, paused=True, pauseConditions=PAUSED, controllerPause=True),
        [],
        True,
        [("rollouts", "app", STATUS, MERGE, CLEAR), ("rollouts", "app", "", MERGE, UNPAUSE)],
        "rollout 'app' promoted\n",
    ),
    "inconclusive step analysis": (
        INCONCLUSIVE_ROLLOUT,
        [],
        True,
        [("rollouts", "app", STATUS, MERGE, INCONCLUSIVE_STEP)],
        "rollout 'app' promoted\n",
    ),
    "blue-green paused before promotion": (
        blue_green(pauseConditions=[{"reason": "BlueGreenPause"}], controllerPause=True),
        [],
        True,
        [("rollouts", "app", STATUS, MERGE, CLEAR)],
        "rollout 'app' promoted\n",
    ),
    "not paused blue-green: nothing sent, no error": (
        blue_green(),
        [],
        True,
        [],
        "rollout 'app' promoted\n",
    ),
    "full": (
        canary(index=1, currentPodHash="b", stableRS="a"),
        ["--full"],
        True,
        [("rollouts", "app", STATUS, MERGE, '{"status":{"promoteFull":true}}')],
        "rollout 'app' fully promoted\n",
    ),
    "full when already fully promoted: nothing sent, no error": (
        canary(index=4, currentPodHash="a", stableRS="a"),
        ["--full"],
        True,
        [],
        "rollout 'app' fully promoted\n",
    ),
    "no status subresource: the unified patch replaces the spec patch": (
        canary(index=1, paused=True, pauseConditions=PAUSED, controllerPause=True),
        [],
        False,
        [("rollouts", "app", STATUS, MERGE, CLEAR), ("rollouts", "app", "", MERGE, UNIFIED)],
        "rollout 'app' promoted\n",
    ),
    "no status subresource, inconclusive: the unified patch only clears": (
        INCONCLUSIVE_ROLLOUT,
        [],
        False,
        [
            ("rollouts", "app", STATUS, MERGE, INCONCLUSIVE_STEP),
            ("rollouts", "app", "", MERGE, UNIFIED),
        ],
        "rollout 'app' promoted\n",
    ),
    "no status subresource, mid step": (
        canary(index=2),
        [],
        False,
        [
            (
                "rollouts",
                "app",
                STATUS,
                MERGE,
                '{"status":{"pauseConditions":null,"currentStepIndex":3}}',
            ),
            (
                "rollouts",
                "app",
                "",
                MERGE,
                '{"spec":{"paused":false},"status":{"pauseConditions":null,"currentStepIndex":3}}',
            ),
        ],
        "rollout 'app' promoted\n",
    ),
    "no status subresource, full: nothing after the 404": (
        canary(index=1, currentPodHash="b", stableRS="a"),
        ["--full"],
        False,
        [("rollouts", "app", STATUS, MERGE, '{"status":{"promoteFull":true}}')],
        "rollout 'app' fully promoted\n",
    ),
    "deprecated skip-current-step": (
        canary(index=1),
        ["--skip-current-step"],
        True,
        [("rollouts", "app", STATUS, MERGE, '{"status":{"currentStepIndex":2}}')],
        "rollout 'app' promoted\n",
    ),
    "deprecated skip-all-steps without status subresource": (
        canary(index=1),
        ["-a"],
        False,
        [
            ("rollouts", "app", STATUS, MERGE, '{"status":{"currentStepIndex":4}}'),
            ("rollouts", "app", "", MERGE, '{"status":{"currentStepIndex":4}}'),
        ],
        "rollout 'app' promoted\n",
    ),
}


@pytest.mark.parametrize(
    ("ro", "args", "subresource", "requests", "output"),
    PROMOTE_REQUESTS.values(),
    ids=PROMOTE_REQUESTS.keys(),
)
def test_promote_requests(  # noqa: PLR0917 (the table's columns)
    fake: FakeKube, ro: Obj, args: list[str], subresource: bool, requests: Calls, output: str
) -> None:
    fake.status_subresource = subresource
    fake.objects[("rollouts", "app")] = ro
    result = CliRunner().invoke(_group(), ["promote", "app", *args])
    assert result.exit_code == 0, result.output
    assert result.stdout == output
    assert fake.patches() == requests


def test_promote_with_both_skip_flags_fails_before_any_request(fake: FakeKube) -> None:
    result = CliRunner().invoke(_group(), ["promote", "app", "-c", "-a"])
    assert result.exit_code == 1
    assert result.output == (
        "rollouts: Cannot use skip-current-step and skip-all-steps flags at the same time\n"
    )
    assert fake.calls == []


def test_promote_skip_on_blue_green_is_one_line(fake: FakeKube) -> None:
    fake.objects[("rollouts", "app")] = blue_green()
    result = CliRunner().invoke(_group(), ["promote", "app", "--skip-all-steps"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Flag --skip-all-steps has been deprecated, use --full instead",
        "rollouts: Cannot skip steps of a bluegreen rollout. Run without a flags",
    ]
    assert fake.patches() == []


@pytest.mark.parametrize(
    ("args", "output", "patch"),
    [
        (["abort", "app"], "rollout 'app' aborted\n", '{"status":{"abort":true}}'),
        (["retry", "rollout", "app"], "rollout 'app' retried\n", '{"status":{"abort":false}}'),
        (["retry", "app"], "rollout 'app' retried\n", '{"status":{"abort":false}}'),
        (["retry", "ro", "app"], "rollout 'app' retried\n", '{"status":{"abort":false}}'),
        (
            ["retry", "-n", "default", "app"],
            "rollout 'app' retried\n",
            '{"status":{"abort":false}}',
        ),
    ],
    ids=["abort", "retry rollout", "retry NAME", "retry ro", "retry with option first"],
)
def test_status_actions(fake: FakeKube, args: list[str], output: str, patch: str) -> None:
    fake.objects[("rollouts", "app")] = canary()
    result = invoke(*args)
    assert result.output == output
    assert fake.patches() == [("rollouts", "app", STATUS, MERGE, patch)]


def test_abort_falls_back_to_the_object(fake: FakeKube) -> None:
    fake.status_subresource = False
    fake.objects[("rollouts", "app")] = canary()
    assert invoke("abort", "app").exit_code == 0
    assert fake.patches() == [
        ("rollouts", "app", STATUS, MERGE, '{"status":{"abort":true}}'),
        ("rollouts", "app", "", MERGE, '{"status":{"abort":true}}'),
    ]


def test_retry_experiment(fake: FakeKube) -> None:
    fake.objects[("experiments", "exp")] = {}
    assert invoke("retry", "experiment", "exp").output == "experiment 'exp' retried\n"
    assert fake.patches() == [("experiments", "exp", "", MERGE, '{"status":null}')]


def test_pause(fake: FakeKube) -> None:
    fake.objects[("rollouts", "app")] = canary()
    assert invoke("pause", "app").output == "rollout 'app' paused\n"
    assert fake.patches() == [("rollouts", "app", "", MERGE, '{"spec":{"paused":true}}')]


def test_restart_in(fake: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edit, "utcnow", lambda: datetime(2024, 5, 1, 10, 0, tzinfo=UTC))
    fake.objects[("rollouts", "app")] = canary()
    assert invoke("restart", "app", "--in", "30s").output == "rollout 'app' restarts in 30s\n"
    assert fake.patches() == [
        ("rollouts", "app", "", MERGE, '{"spec":{"restartAt":"2024-05-01T10:00:30Z"}}')
    ]


def test_set_image_retries_on_conflict(fake: FakeKube) -> None:
    fake.objects[("rollouts", "app")] = pod_spec_rollout()
    fake.conflicts = 2
    result = invoke("set", "image", "app", "web=web:2")
    assert result.output == 'rollout "app" image updated\n'
    puts = [c for c in fake.calls if c[0] == "PUT"]
    assert len(puts) == 3
    assert puts[-1][1] == "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/app"
    assert json.loads(puts[-1][2])["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"


def test_undo_restores_the_previous_template(fake: FakeKube) -> None:
    ro = canary()
    ro["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    ro["spec"]["template"] = rollout_template("web:3")
    fake.objects[("rollouts", "app")] = ro
    stranger = rs("other", "9", "web:9", uid="someone-else")
    fake.lists["replicasets"] = [rs("r1", "1", "web:1"), rs("r2", "2", "web:2"), stranger]
    assert invoke("undo", "app").output == "rollout 'app' undo\n"
    assert ("list", "replicasets", "app=web") in fake.calls
    (patch,) = fake.patches()
    assert patch[:4] == ("rollouts", "app", "", "application/json-patch+json")
    assert patch[4] == compact(edit.undo_patch(rs("r1", "1", "web:1")))


def test_undo_skips_a_matching_template(fake: FakeKube) -> None:
    ro = canary()
    ro["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    ro["spec"]["template"] = rollout_template("web:1")
    fake.objects[("rollouts", "app")] = ro
    fake.lists["replicasets"] = [rs("r1", "1", "web:1"), rs("r2", "2", "web:2")]
    result = invoke("undo", "app")
    assert result.output == "skipped rollback (current template already matches revision 0)\n"
    assert fake.patches() == []


@pytest.mark.parametrize(
    "args",
    [
        ["promote", "ghost"],
        ["abort", "ghost"],
        ["retry", "ghost"],
        ["pause", "ghost"],
        ["restart", "ghost"],
        ["undo", "ghost"],
        ["set", "image", "ghost", "web=x:1"],
        ["get", "rollout", "ghost"],
    ],
)
def test_missing_rollout_is_one_line(fake: FakeKube, args: list[str]) -> None:
    result = CliRunner().invoke(_group(), [*args, "-n", "prod"])
    assert result.exit_code == 1
    assert result.output == 'rollouts: rollout "ghost" not found in namespace "prod"\n'


def test_api_error_is_one_line(fake: FakeKube) -> None:
    fake.fail_with = Invalid(422, "Invalid", "spec.paused: Invalid value:\n  more detail")
    result = CliRunner().invoke(_group(), ["promote", "app"])
    assert result.exit_code == 1
    assert result.output == (
        "rollouts: API error: 422 Invalid: spec.paused: Invalid value: more detail\n"
    )


def _group() -> click.Group:
    group = click.Group("rollouts")
    plugin.register(group)
    return group


def test_register_joins_existing_groups() -> None:
    group = click.Group("rollouts")
    existing = click.Group("get")

    @existing.command("other")
    def other() -> None:
        """An unrelated subcommand another module added."""

    group.add_command(existing)
    plugin.register(group)
    assert group.commands["get"] is existing
    assert set(existing.commands) == {"other", "rollout", "experiment"}
    assert {
        "promote",
        "abort",
        "retry",
        "restart",
        "pause",
        "undo",
        "status",
        "terminate",
        "set",
        "list",
    } <= set(group.commands)


def test_default_namespace_comes_from_the_context(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [
                    {"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "team"}},
                    {"name": "b", "context": {"cluster": "c", "user": "u"}},
                ],
                "current-context": "a",
            }
        )
    )
    assert cluster.default_namespace(config, None) == "team"
    assert cluster.default_namespace(config, "b") == "default"


def _with_status(phase: str, message: str = "") -> Obj:
    ro = canary(index=1, phase=phase, message=message)
    ro["metadata"]["resourceVersion"] = "5"
    return ro


@pytest.mark.parametrize(
    ("phase", "code", "error"),
    [
        ("Healthy", 0, ""),
        ("Degraded", 1, 'rollouts: rollout "app" is Degraded: RolloutAborted: analysis failed'),
        ("Progressing", 1, 'rollouts: timed out after 0.2s waiting for rollout "app"'),
    ],
    ids=["healthy ends the watch", "degraded fails", "timeout fails"],
)
def test_watch_with_timeout_ends_at_a_final_phase(
    fake: FakeKube, phase: str, code: int, error: str
) -> None:
    fake.objects[("rollouts", "app")] = _with_status(phase, "RolloutAborted: analysis failed")
    result = CliRunner().invoke(_group(), ["get", "rollout", "app", "--timeout", "200ms"])
    assert result.exit_code == code
    assert f"{phase}" in result.output
    assert error in result.output
