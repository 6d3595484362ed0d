"""The plugin's everyday commands beyond the patches of test_actions: `status` (its lines and
exit codes, watched or not), `terminate`, `undo --to-revision`, `lint` and `version`, against
the same recording fake of `Kube`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from rollout_workers.cli import cluster, edit, lifecycle, plugin, status
from rollout_workers.cli.lint import calculate_lint_errors, lint, load_documents
from rollout_workers.cli.version import version_lines
from rollout_workers.kube.resources import Resource
from tests.unit.cli.test_actions import (
    MERGE,
    FakeKube,
    canary,
    compact,
    fake,  # noqa: F401 (the fixture)
    rollout_template,
    rs,
)

Obj = dict[str, Any]


def _group() -> click.Group:
    group = click.Group("rollouts")
    plugin.register(group)
    group.add_command(lint)
    return group


def invoke(*args: str) -> Any:
    return CliRunner().invoke(_group(), list(args))


def phased(phase: str, message: str = "") -> Obj:
    ro = canary(index=1, phase=phase, message=message)
    ro["metadata"]["resourceVersion"] = "5"
    return ro


# -- status ------------------------------------------------------------------------------------

STATUS_LINES = {
    "healthy alone": ("Healthy", "", "Healthy", "Healthy"),
    "degraded alone, even with a message": (
        "Degraded",
        "RolloutAborted: failed",
        "Degraded",
        "Degraded - RolloutAborted: failed",
    ),
    "paused with its reason": (
        "Paused",
        "CanaryPauseStep",
        "Paused - CanaryPauseStep",
        "Paused - CanaryPauseStep",
    ),
    "progressing without a message": ("Progressing", "", "Progressing - ", "Progressing"),
}


@pytest.mark.parametrize(
    ("phase", "message", "once", "watched"), STATUS_LINES.values(), ids=STATUS_LINES.keys()
)
def test_status_lines(phase: str, message: str, once: str, watched: str) -> None:
    assert status.status_line(phase, message) == once
    assert status.watch_status_line(phase, message) == watched


STATUS_FAILURES = {
    "healthy": ("Healthy", False, None),
    "healthy watched": ("Healthy", True, None),
    "degraded": ("Degraded", False, "The rollout is in a degraded state with message: why"),
    "degraded watched": ("Degraded", True, "The rollout is in a degraded state with message: why"),
    "paused once is fine": ("Paused", False, None),
    "paused at the end of a watch": ("Paused", True, "Rollout status watch exceeded timeout"),
    "progressing at the end of a watch": (
        "Progressing",
        True,
        "Rollout status watch exceeded timeout",
    ),
}


@pytest.mark.parametrize(
    ("phase", "watched", "failure"), STATUS_FAILURES.values(), ids=STATUS_FAILURES.keys()
)
def test_status_failure(phase: str, watched: bool, failure: str | None) -> None:
    assert status.status_failure(phase, "why", watched=watched) == failure


@pytest.mark.parametrize(
    ("arg", "want"),
    [
        ("--watch=false", "--no-watch"),
        ("--watch=0", "--no-watch"),
        ("-w=true", "--watch"),
        ("--watch=True", "--watch"),
        ("--watch", "--watch"),
        ("--timeout=5s", "--timeout=5s"),
        ("name=x", "name=x"),
    ],
)
def test_go_bool_flags(arg: str, want: str) -> None:
    assert status.rewrite_go_bool_flag(arg) == want


def test_go_bool_flag_rejects_other_values() -> None:
    with pytest.raises(click.BadParameter, match='invalid argument "maybe"'):
        status.rewrite_go_bool_flag("--watch=maybe")


ONCE = {
    "healthy": ("Healthy", "", 0, "Healthy\n", ""),
    "paused": ("Paused", "CanaryPauseStep", 0, "Paused - CanaryPauseStep\n", ""),
    "degraded": (
        "Degraded",
        "RolloutAborted: analysis failed",
        1,
        "Degraded\n",
        "rollouts: The rollout is in a degraded state with message: "
        "RolloutAborted: analysis failed\n",
    ),
}


@pytest.mark.parametrize(("phase", "message", "code", "out", "err"), ONCE.values(), ids=ONCE.keys())
@pytest.mark.parametrize("flag", ["--watch=false", "--no-watch"])
def test_status_once(  # noqa: PLR0917 (the table's columns)
    fake: FakeKube,  # noqa: F811
    flag: str,
    phase: str,
    message: str,
    code: int,
    out: str,
    err: str,
) -> None:
    fake.objects[("rollouts", "app")] = phased(phase, message)
    result = invoke("status", "app", flag)
    assert (result.exit_code, result.stdout, result.stderr) == (code, out, err)
    assert fake.patches() == []


class ChangingKube(FakeKube):
    """Each read of the rollout returns the next state, then stays at the last one."""

    def __init__(self, states: list[Obj]) -> None:
        super().__init__()
        self.states = states

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        self.calls.append(("get", resource.plural, name))
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


@pytest.fixture
def changing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Obj]]:
    states: list[Obj] = []
    kube = ChangingKube(states)
    monkeypatch.setattr(
        cluster,
        "connect",
        lambda **kwargs: cluster.Target(kube, "default"),  # type: ignore[arg-type]
    )
    monkeypatch.setattr(status, "STATUS_POLL_SECONDS", 0.01)
    yield states


def test_status_watch_prints_each_change_until_healthy(changing: list[Obj]) -> None:
    changing += [
        phased("Progressing", "more replicas need to be updated"),
        phased("Progressing", "more replicas need to be updated"),
        phased("Paused", "CanaryPauseStep"),
        phased("Progressing", ""),
        phased("Healthy"),
    ]
    result = invoke("status", "app")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Progressing - more replicas need to be updated\n"
        "Paused - CanaryPauseStep\n"
        "Progressing\n"
        "Healthy\n"
    )


def test_status_watch_ends_failing_at_degraded(changing: list[Obj]) -> None:
    changing += [phased("Progressing", "x"), phased("Degraded", "RolloutAborted: failed")]
    result = invoke("status", "app", "-w")
    assert result.exit_code == 1
    assert result.stdout == "Progressing - x\nDegraded - RolloutAborted: failed\n"
    assert result.stderr == (
        "rollouts: The rollout is in a degraded state with message: RolloutAborted: failed\n"
    )


def test_status_watch_times_out_while_paused(changing: list[Obj]) -> None:
    changing += [phased("Paused", "CanaryPauseStep")]
    result = invoke("status", "app", "--timeout", "100ms")
    assert result.exit_code == 1
    assert result.stdout == "Paused - CanaryPauseStep\n"
    assert result.stderr == "rollouts: Rollout status watch exceeded timeout\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "ghost"], 'rollouts: rollout "ghost" not found in namespace "default"'),
        (["status", "ghost", "--watch=false"], 'rollout "ghost" not found'),
        (["terminate", "ar", "ghost"], 'analysisrun "ghost" not found in namespace "default"'),
        (["terminate", "exp", "ghost"], 'experiment "ghost" not found in namespace "default"'),
        (["get", "experiment", "ghost"], 'experiment "ghost" not found in namespace "default"'),
    ],
)
def test_missing_objects_are_one_line(
    fake: FakeKube,  # noqa: F811
    args: list[str],
    message: str,
) -> None:
    result = invoke(*args)
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [["status", "app", "--timeout", "soon"], ["status", "app", "--watch=maybe"], ["status"]],
    ids=["bad timeout", "bad watch value", "no name"],
)
def test_status_usage_errors(fake: FakeKube, args: list[str]) -> None:  # noqa: F811
    result = invoke(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert fake.calls == []


# -- terminate ---------------------------------------------------------------------------------

TERMINATE = '{"spec":{"terminate":true}}'


@pytest.mark.parametrize(
    ("args", "plural", "output"),
    [
        (["terminate", "analysisrun", "a", "b"], "analysisruns", "analysisRun '{}' terminated"),
        (["terminate", "ar", "a", "b"], "analysisruns", "analysisRun '{}' terminated"),
        (["terminate", "analysisruns", "a", "b"], "analysisruns", "analysisRun '{}' terminated"),
        (["terminate", "experiment", "a", "b"], "experiments", "experiment '{}' terminated"),
        (["terminate", "exp", "a", "b", "-n", "prod"], "experiments", "experiment '{}' terminated"),
    ],
    ids=["analysisrun", "ar", "analysisruns", "experiment", "exp"],
)
def test_terminate(
    fake: FakeKube,  # noqa: F811
    args: list[str],
    plural: str,
    output: str,
) -> None:
    fake.objects[(plural, "a")] = {}
    fake.objects[(plural, "b")] = {}
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{output.format('a')}\n{output.format('b')}\n"
    assert fake.patches() == [
        (plural, "a", "", MERGE, TERMINATE),
        (plural, "b", "", MERGE, TERMINATE),
    ]


def test_terminate_patch_is_the_plugins() -> None:
    assert compact(lifecycle.TERMINATE_PATCH) == TERMINATE


# -- undo --to-revision ------------------------------------------------------------------------


def undo_rollout(image: str) -> Obj:
    ro = canary()
    ro["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    ro["spec"]["template"] = rollout_template(image)
    return ro


def test_undo_to_revision(fake: FakeKube) -> None:  # noqa: F811
    fake.objects[("rollouts", "app")] = undo_rollout("web:3")
    fake.lists["replicasets"] = [rs("r1", "1", "web:1"), rs("r2", "2", "web:2"), rs("r3", "3")]
    result = invoke("undo", "app", "--to-revision", "1")
    assert result.stdout == "rollout 'app' undo\n"
    assert fake.patches() == [
        (
            "rollouts",
            "app",
            "",
            "application/json-patch+json",
            compact(edit.undo_patch(rs("r1", "1", "web:1"))),
        )
    ]


def test_undo_to_the_current_revision_skips(fake: FakeKube) -> None:  # noqa: F811
    fake.objects[("rollouts", "app")] = undo_rollout("web:2")
    fake.lists["replicasets"] = [rs("r1", "1", "web:1"), rs("r2", "2", "web:2")]
    result = invoke("undo", "app", "--to-revision=2")
    assert result.stdout == "skipped rollback (current template already matches revision 2)\n"
    assert fake.patches() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to-revision", "7"], "rollouts: unable to find specified revision 7 in history\n"),
        (["--to-revision", "-1"], "Invalid value for '--to-revision'"),
        (["--to-revision", "two"], "Invalid value for '--to-revision'"),
    ],
    ids=["unknown revision", "negative", "not a number"],
)
def test_undo_to_revision_errors(
    fake: FakeKube,  # noqa: F811
    args: list[str],
    message: str,
) -> None:
    fake.objects[("rollouts", "app")] = undo_rollout("web:2")
    fake.lists["replicasets"] = [rs("r1", "1", "web:1"), rs("r2", "2", "web:2")]
    result = invoke("undo", "app", *args)
    assert result.exit_code != 0
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert fake.patches() == []


# -- lint --------------------------------------------------------------------------------------

ROLLOUT_YAML = """
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: {name}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: web, image: "web:1"}}]
  strategy:
    canary:
      steps: {steps}
"""
SERVICE_YAML = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"


def manifest(*docs: str) -> str:
    return "---\n".join(docs)


def test_lint_reports_every_error_of_every_rollout_in_file_order() -> None:
    text = manifest(
        SERVICE_YAML,
        ROLLOUT_YAML.format(name="a", steps="[{setWeight: 200}, {pause: {duration: -5}}]"),
        ROLLOUT_YAML.format(name="ok", steps="[{setWeight: 20}]"),
        ROLLOUT_YAML.format(name="b", steps="[{setWeight: -1}]"),
    )
    errors = calculate_lint_errors(load_documents(text))
    assert [(e.rollout, str(e.error)) for e in errors] == [
        (
            "a",
            "spec.strategy.steps[0].setWeight: Invalid value: 200: "
            "SetWeight needs to be between 0 and 100",
        ),
        (
            "a",
            "spec.strategy.steps[1].pause.duration: Invalid value: -5: "
            "Duration needs to be greater than 0",
        ),
        (
            "b",
            "spec.strategy.steps[0].setWeight: Invalid value: -1: "
            "SetWeight needs to be between 0 and 100",
        ),
    ]
    assert errors[0].body == "Invalid value: 200: SetWeight needs to be between 0 and 100"


def test_lint_reads_json_and_ignores_other_kinds() -> None:
    text = (
        '{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "j"},'
        ' "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "j"}},'
        ' "template": {"metadata": {"labels": {"app": "j"}},'
        ' "spec": {"containers": [{"name": "j", "image": "j:1"}]}},'
        ' "strategy": {"blueGreen": {"activeService": "j", "previewService": "j"}}}}'
    )
    errors = calculate_lint_errors(load_documents(text))
    assert [e.error.message for e in errors] == [
        "This rollout uses the same service for the active and preview services, "
        "but two different services are required."
    ]
    assert calculate_lint_errors(load_documents(SERVICE_YAML)) == []


def test_lint_reports_a_spec_the_model_rejects_on_its_field() -> None:
    text = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: m}\nspec:\n"
    text += "  replicas: many\n"
    (error,) = calculate_lint_errors(load_documents(text))
    assert error.error.field == "spec.replicas"


def test_lint_reports_unknown_fields_before_the_checks() -> None:
    text = ROLLOUT_YAML.format(name="t", steps="[{setWeight: 300, pauze: {}}]")
    text = text.replace("  replicas: 2\n", "  replicas: 2\n  stratgy: {}\n")
    text = text.replace("metadata:\n  name: t", "metadata:\n  name: t\n  managedFields: []")
    text = text.replace('image: "web:1"', 'image: "web:1", whatever: 1')  # free-form template
    errors = calculate_lint_errors(load_documents(text))
    assert [str(e.error) for e in errors] == [
        'spec.stratgy: Invalid value: "stratgy": unknown field',
        'spec.strategy.canary.steps[0].pauze: Invalid value: "pauze": unknown field',
        "spec.strategy.steps[0].setWeight: Invalid value: 300: "
        "SetWeight needs to be between 0 and 100",
    ]


LINT_RUNS = {
    "clean file: silent, exit 0": (
        ROLLOUT_YAML.format(name="a", steps="[{setWeight: 5}]"),
        [],
        0,
        "",
        "",
    ),
    "errors: bodies on stdout, the first in full on stderr": (
        ROLLOUT_YAML.format(name="a", steps="[{setWeight: 200}, {setWeight: 101}]"),
        [],
        1,
        "Invalid value: 200: SetWeight needs to be between 0 and 100\n"
        "Invalid value: 101: SetWeight needs to be between 0 and 100\n",
        "rollouts: spec.strategy.steps[0].setWeight: Invalid value: 200: "
        "SetWeight needs to be between 0 and 100\n",
    ),
    "the plugin's -f": (ROLLOUT_YAML.format(name="a", steps="[]"), ["-f"], 0, "", ""),
    "not YAML": ("a: [b\n", [], 1, "", "rollouts: {path}: while parsing a flow sequence"),
}


@pytest.mark.parametrize(
    ("text", "flags", "code", "out", "err"), LINT_RUNS.values(), ids=LINT_RUNS.keys()
)
def test_lint_command(  # noqa: PLR0917 (the table's columns)
    tmp_path: Path, text: str, flags: list[str], code: int, out: str, err: str
) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text(text)
    result = invoke("lint", *flags, str(path))
    assert result.exit_code == code
    assert result.stdout == out
    assert result.stderr.startswith(err.format(path=path))
    assert len(result.stderr.splitlines()) <= 1


def test_lint_missing_file_is_one_line(tmp_path: Path) -> None:
    result = invoke("lint", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"rollouts: cannot read {tmp_path / 'nope.yaml'}: No such file or directory\n"
    )


def test_lint_without_a_file_is_a_usage_error() -> None:
    result = invoke("lint")
    assert result.exit_code == 2
    assert "give one file" in result.stderr


# -- version -----------------------------------------------------------------------------------


def test_version_lines() -> None:
    common = {"version": "0.1.0", "python": "3.12.1", "implementation": "CPython"}
    assert version_lines(**common, system="Linux", machine="x86_64", short=False) == [
        "rollouts: v0.1.0",
        "  Package: rollout-workers 0.1.0",
        "  PythonVersion: 3.12.1",
        "  Compiler: CPython",
        "  Platform: linux/amd64",
    ]
    assert version_lines(**common, system="Darwin", machine="arm64", short=True) == [
        "rollouts: v0.1.0"
    ]
