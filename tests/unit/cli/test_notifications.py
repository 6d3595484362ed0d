"""`rollouts notifications`: the tables and formats of notifications-engine's CLI (its
`pkg/cmd` tests: TestTriggerRun, TestTriggerGet, TestTemplateGet, TestTemplateNotifyConsole),
the config and rollout read from files or from a recording fake of the API, and every mistake
as one line on stderr with exit code 1."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from rollout_workers.cli import cluster
from rollout_workers.cli.notifications import notifications, parse_recipient, template_preview
from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import Resource
from rollout_workers.notifications.config import parse_config
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, registry
from rollout_workers.notifications.source import CONFIGMAP_NAME, SECRET_NAME
from rollout_workers.notifications.state import Destination

Obj = dict[str, Any]

CONFIG_NS = "argo-rollouts"

DATA = {
    "service.webhook.hook": "url: $hook-url\n",
    "template.rollout-completed": (
        "message: |\n"
        "  Rollout {{.rollout.metadata.name}} is {{.rollout.status.phase}} <ok>\n"
        "  details follow\n"
    ),
    "template.hook-only": (
        "webhook:\n"
        "  hook:\n"
        "    method: POST\n"
        '    body: \'{"rollout": "{{.rollout.metadata.name}}", "to": "{{.recipient}}"}\'\n'
    ),
    "template.runs": (
        "message: '{{if .analysisRuns}}{{(index .analysisRuns 0).metadata.name}}"
        "{{else}}no runs{{end}}'\n"
    ),
    "trigger.on-rollout-completed": (
        "- when: rollout.status.phase == 'Healthy'\n"
        "  send: [rollout-completed]\n"
        "- when: rollout.status.phase == 'Degraded'\n"
        "  oncePer: rollout.metadata.name\n"
        "  send: [rollout-completed, hook-only]\n"
    ),
    "trigger.on-rollout-aborted": (
        "- when: rollout.status.abort == true\n  send: [rollout-completed]\n"
    ),
}


def configmap(data: Mapping[str, str], name: str = CONFIGMAP_NAME) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(string_data: Mapping[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME},
        "stringData": dict(string_data),
    }


def rollout(name: str = "web", phase: str = "Healthy", **status: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "namespace": "shop"},
        "status": {"phase": phase, **status},
    }


def write(path: Path, *docs: Obj) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@dataclass
class FakeKube:
    """Objects by (plural, namespace, name); records each read with its namespace."""

    objects: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    lists: dict[tuple[str, str], list[Obj]] = field(default_factory=dict)
    calls: list[tuple[str, str, str | None, str]] = field(default_factory=list)

    def add(self, resource: str, namespace: str, obj: Obj) -> None:
        self.objects[(resource, namespace, obj["metadata"]["name"])] = obj

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        self.calls.append(("get", resource.plural, namespace, name))
        try:
            return self.objects[(resource.plural, namespace or "", name)]
        except KeyError:
            raise NotFound(404, "NotFound", f"{name} not found") from None

    def list(
        self, resource: Resource, *, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[Obj], str]:
        self.calls.append(("list", resource.plural, namespace, ""))
        return self.lists.get((resource.plural, namespace or ""), []), "1"


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    fake = FakeKube()

    def connect(**kwargs: Any) -> cluster.Target:
        return cluster.Target(fake, kwargs["namespace"] or "default")  # type: ignore[arg-type]

    monkeypatch.setattr(cluster, "connect", connect)
    monkeypatch.setenv("ROLLOUTS_NOTIFICATIONS_NAMESPACE", CONFIG_NS)
    yield fake


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands given only files must not connect."""

    def connect(**kwargs: Any) -> cluster.Target:
        raise AssertionError("connected to the cluster")

    monkeypatch.setattr(cluster, "connect", connect)


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    cm = write(tmp_path / "cm.yaml", configmap(DATA))
    return ["--config-map", cm, "--secret", ":empty"]


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(notifications, list(args), input=input)


def failed(result: Result, message: str) -> None:
    """One line on stderr, exit code 1, nothing on stdout, no traceback."""
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"rollouts: {message}\n")


# -- template get ------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_cluster")
def test_template_get_prints_names_and_previews(files: list[str]) -> None:
    result = invoke("template", "get", *files)
    assert result.exit_code == 0, result.stderr
    hook_json = (
        '{"webhook":{"hook":{"method":"POST","body":"{\\"rollout\\": '
        '\\"{{.rollout.metadata.name}}\\", \\"to\\": \\"{{.recipient}}\\"}"}}}'
    )
    assert len(hook_json) > 100
    assert result.stdout == (
        "NAME               PREVIEW\n"
        f"hook-only          {hook_json[:99]}...\n"
        "rollout-completed  Rollout {{.rollout.metadata.name}} is {{.rollout.status.phase}} "
        "<ok>\n"
        "runs               {{if .analysisRuns}}{{(index .analysisRuns 0).metadata.name}}"
        "{{else}}no runs{{end}}\n"
    )


PREVIEWS = {
    "message: its first line": ("message: |\n  one\n  two\n", "one"),
    "no message: compact JSON, Go's escapes": (
        "email:\n  subject: a <b> & c\n",
        '{"email":{"subject":"a \\u003cb\\u003e \\u0026 c"}}',
    ),
    "empty message: the blocks": (
        "message: ''\nslack:\n  username: bot\n",
        '{"slack":{"username":"bot"}}',
    ),
    "longer than 100: 99 characters and an ellipsis": (
        f"message: {'x' * 101}\n",
        "x" * 99 + "...",
    ),
    "exactly 100: whole": (f"message: {'y' * 100}\n", "y" * 100),
}


@pytest.mark.parametrize(("text", "want"), PREVIEWS.values(), ids=PREVIEWS.keys())
def test_template_preview(text: str, want: str) -> None:
    config = parse_config({"template.t": text}, {})
    assert template_preview(config.templates["t"]) == want


@pytest.mark.usefixtures("no_cluster")
def test_template_get_one_as_yaml_json_and_name(files: list[str]) -> None:
    as_yaml = invoke("template", "get", "hook-only", "-o", "yaml", *files)
    assert as_yaml.exit_code == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == {
        "hook-only": {
            "webhook": {
                "hook": {
                    "method": "POST",
                    "body": '{"rollout": "{{.rollout.metadata.name}}", "to": "{{.recipient}}"}',
                }
            }
        }
    }
    as_json = invoke("template", "get", "rollout-completed", "-o", "json", *files)
    assert as_json.stdout == (
        "{\n"
        '  "rollout-completed": {\n'
        '    "message": "Rollout {{.rollout.metadata.name}} is {{.rollout.status.phase}} '
        '\\u003cok\\u003e\\ndetails follow\\n"\n'
        "  }\n"
        "}\n"
    )
    names = invoke("template", "get", "-o", "name", *files)
    assert names.stdout == "hook-only\nrollout-completed\nruns\n"


@pytest.mark.usefixtures("no_cluster")
def test_template_get_mistakes(files: list[str], tmp_path: Path) -> None:
    failed(invoke("template", "get", "nope", *files), "template 'nope' is not configured")
    failed(
        invoke("template", "get", "-o", "xml", *files),
        "output 'xml' is not supported (one of wide|yaml|json|name)",
    )
    broken = write(tmp_path / "broken.yaml", configmap({**DATA, "template.bad": "message: '{{.x'"}))
    failed(
        invoke("template", "get", "bad", "--config-map", broken, "--secret", ":empty"),
        "invalid template.bad: message: template: bad:1: unclosed action",
    )
    # Listing all of them: the broken key is a warning, the others still print.
    listed = invoke("template", "get", "-o", "name", "--config-map", broken, "--secret", ":empty")
    assert listed.exit_code == 0
    assert listed.stdout == "hook-only\nrollout-completed\nruns\n"
    assert listed.stderr == (
        "rollouts: warning: template.bad: message: template: bad:1: unclosed action\n"
    )


# -- trigger get -------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_cluster")
def test_trigger_get_prints_a_row_per_condition(files: list[str]) -> None:
    result = invoke("trigger", "get", *files)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "NAME                  TEMPLATE                      CONDITION\n"
        "on-rollout-aborted    rollout-completed             rollout.status.abort == true\n"
        "on-rollout-completed  rollout-completed             rollout.status.phase == 'Healthy'\n"
        "                      rollout-completed, hook-only  rollout.status.phase == 'Degraded'\n"
    )


@pytest.mark.usefixtures("no_cluster")
def test_trigger_get_one_as_yaml_json_and_name(files: list[str]) -> None:
    as_yaml = invoke("trigger", "get", "on-rollout-completed", "-o", "yaml", *files)
    assert as_yaml.stdout == (
        "on-rollout-completed:\n"
        "- send:\n"
        "  - rollout-completed\n"
        "  when: rollout.status.phase == 'Healthy'\n"
        "- oncePer: rollout.metadata.name\n"
        "  send:\n"
        "  - rollout-completed\n"
        "  - hook-only\n"
        "  when: rollout.status.phase == 'Degraded'\n"
    )
    as_json = invoke("trigger", "get", "on-rollout-aborted", "-o", "json", *files)
    assert json.loads(as_json.stdout) == {
        "on-rollout-aborted": [
            {"when": "rollout.status.abort == true", "send": ["rollout-completed"]}
        ]
    }
    names = invoke("trigger", "get", "-o", "name", *files)
    assert names.stdout == "on-rollout-aborted\non-rollout-completed\n"
    failed(invoke("trigger", "get", "nope", *files), "trigger 'nope' is not configured")


# -- trigger run -------------------------------------------------------------------------------


RUNS = {
    "healthy: the first condition": ("Healthy", "true", "false"),
    "degraded: the second": ("Degraded", "false", "true"),
    "progressing: neither": ("Progressing", "false", "false"),
}


@pytest.mark.usefixtures("no_cluster")
@pytest.mark.parametrize(("phase", "first", "second"), RUNS.values(), ids=RUNS.keys())
def test_trigger_run_from_a_file(
    files: list[str], tmp_path: Path, phase: str, first: str, second: str
) -> None:
    ro = write(tmp_path / "ro.yaml", rollout(phase=phase))
    result = invoke("trigger", "run", "on-rollout-completed", ro, *files)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "CONDITION                           RESULT\n"
        f"rollout.status.phase == 'Healthy'   {first}\n"
        f"rollout.status.phase == 'Degraded'  {second}\n"
    )


def test_trigger_run_reads_the_rollout_from_its_namespace(kube: FakeKube, files: list[str]) -> None:
    kube.add("rollouts", "shop", rollout(abort=True))
    result = invoke("trigger", "run", "on-rollout-aborted", "web", "-n", "shop", *files)
    assert result.stdout == (
        "CONDITION                     RESULT\nrollout.status.abort == true  true\n"
    )
    assert ("get", "rollouts", "shop", "web") in kube.calls


@pytest.mark.usefixtures("no_cluster")
def test_trigger_run_an_evaluation_error_is_false_with_a_warning(tmp_path: Path) -> None:
    cm = write(
        tmp_path / "cm2.yaml",
        configmap({"trigger.odd": "- when: rollout.status.phase +\n  send: [x]\n"}),
    )
    ro = write(tmp_path / "ro.yaml", rollout())
    result = invoke("trigger", "run", "odd", ro, "--config-map", cm, "--secret", ":empty")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1].split() == ["rollout.status.phase", "+", "false"]
    assert result.stderr.startswith("rollouts: warning: rollout.status.phase +: failed to")


def test_trigger_run_mistakes(kube: FakeKube, files: list[str]) -> None:
    failed(
        invoke("trigger", "run", "on-nothing", "web", *files),
        "trigger with name 'on-nothing' does not exist "
        "(found on-rollout-aborted, on-rollout-completed)",
    )
    failed(
        invoke("trigger", "run", "on-rollout-completed", "ghost", "-n", "shop", *files),
        'rollout "ghost" not found in namespace "shop"',
    )


# -- where the config comes from ---------------------------------------------------------------


def test_config_from_the_cluster_in_the_notifications_namespace(kube: FakeKube) -> None:
    kube.add("configmaps", CONFIG_NS, configmap(DATA))
    result = invoke("trigger", "get", "-o", "name", "-n", "shop")
    assert result.stdout == "on-rollout-aborted\non-rollout-completed\n"
    assert kube.calls == [
        ("get", "configmaps", CONFIG_NS, CONFIGMAP_NAME),
        ("get", "secrets", CONFIG_NS, SECRET_NAME),  # missing: an empty Secret, no error
    ]


def test_config_namespace_option(kube: FakeKube) -> None:
    kube.add("configmaps", "team-a", configmap({"trigger.mine": "[]"}))
    result = invoke("trigger", "get", "-o", "name", "--config-namespace", "team-a")
    assert result.stdout == "mine\n"


def test_missing_configmap_in_the_cluster(kube: FakeKube) -> None:
    failed(
        invoke("template", "get"),
        f'configmap "{CONFIGMAP_NAME}" not found in namespace "{CONFIG_NS}"',
    )


def test_secret_from_the_cluster_fills_references(kube: FakeKube) -> None:
    data = {"service.webhook.hook": "url: $hook-url", "template.t": "message: hi"}
    kube.add("configmaps", CONFIG_NS, configmap(data))
    kube.add("secrets", CONFIG_NS, secret({"hook-url": "http://127.0.0.1:1/x"}))
    kube.add("rollouts", "default", rollout())
    sent = fake_sender()
    result = invoke("template", "notify", "t", "web", "--recipient", "hook:ops")
    assert result.exit_code == 0, result.stderr
    assert sent == [({"url": "http://127.0.0.1:1/x"}, "hi", "ops")]


@pytest.mark.usefixtures("no_cluster")
def test_config_files_pick_the_named_objects(tmp_path: Path) -> None:
    both = write(
        tmp_path / "both.yaml",
        configmap({"template.other": "message: no"}, name="something-else"),
        configmap({"template.t": "message: '{{.rollout.metadata.name}} $never'"}),
        secret({"never": "x"}),
    )
    ro = write(tmp_path / "ro.yaml", rollout())
    result = invoke("template", "get", "-o", "name", "--config-map", both, "--secret", both)
    assert result.stdout == "t\n"
    notified = invoke("template", "notify", "t", ro, "--config-map", both, "--secret", both)
    # Secret references are for service options, not templates.
    assert notified.stdout == "message: web $never\n"


@pytest.mark.usefixtures("no_cluster")
def test_config_map_from_stdin(tmp_path: Path) -> None:
    text = yaml.safe_dump(configmap(DATA))
    result = invoke("trigger", "get", "-o", "name", "--config-map", "-", "--secret", ":empty",
                    input=text)  # fmt: skip
    assert result.stdout == "on-rollout-aborted\non-rollout-completed\n"


@pytest.mark.usefixtures("no_cluster")
def test_config_file_mistakes(tmp_path: Path) -> None:
    other = write(tmp_path / "other.yaml", configmap(DATA, name="x"))
    failed(
        invoke("template", "get", "--config-map", other, "--secret", ":empty"),
        f"file '{other}' does not have '/ConfigMap/{CONFIGMAP_NAME}'",
    )
    missing = str(tmp_path / "missing.yaml")
    failed(
        invoke("template", "get", "--config-map", missing, "--secret", ":empty"),
        f"cannot read {missing}: No such file or directory",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    result = invoke("template", "get", "--config-map", str(bad), "--secret", ":empty")
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"rollouts: failed to unmarshal manifest {bad}:")


# -- template notify ---------------------------------------------------------------------------


def fake_sender() -> list[tuple[Obj, str, str]]:
    """Registers a `webhook` sender that records what it is given (the registry may not have
    one in this branch); returns its record. Undone by the `senders` fixture."""
    sent: list[tuple[Obj, str, str]] = []

    def sender(
        options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
    ) -> None:
        if recipient == "fail":
            raise SendError("400 Bad Request: no such channel", final=True, status=400)
        body = notification.message or notification.blocks["webhook"]["hook"]["body"]
        sent.append((dict(options), body, recipient))

    registry.SENDERS["webhook"] = sender
    return sent


@pytest.fixture(autouse=True)
def senders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "SENDERS", dict(registry.SENDERS))


@pytest.mark.usefixtures("no_cluster")
def test_notify_prints_to_the_console_by_default(files: list[str], tmp_path: Path) -> None:
    ro = write(tmp_path / "ro.yaml", rollout())
    result = invoke("template", "notify", "rollout-completed", ro, *files)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "message: |\n  Rollout web is Healthy <ok>\n  details follow\n"
    blocks = invoke("template", "notify", "hook-only", ro, "--recipient", "console:me", *files)
    assert yaml.safe_load(blocks.stdout) == {
        "webhook": {
            "hook": {"method": "POST", "path": "", "body": '{"rollout": "web", "to": "me"}'}
        }
    }


def test_notify_sends_through_the_service(kube: FakeKube, files: list[str]) -> None:
    sent = fake_sender()
    kube.add("rollouts", "shop", rollout())
    result = invoke(
        "template", "notify", "hook-only", "web", "-n", "shop",
        "--recipient", "hook:ops", "--recipient", "hook", *files,
    )  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "notification 'hook-only' sent to 'hook:ops'\nnotification 'hook-only' sent to 'hook'\n"
    )
    # `:empty` Secret: the reference stays as written.
    assert sent == [
        ({"url": "$hook-url"}, '{"rollout": "web", "to": "ops"}', "ops"),
        ({"url": "$hook-url"}, '{"rollout": "web", "to": ""}', ""),
    ]


def test_notify_gives_the_rollouts_analysis_runs(kube: FakeKube, files: list[str]) -> None:
    ro = rollout(currentPodHash="6b7f")
    ro["metadata"]["annotations"] = {"rollout.argoproj.io/revision": "2"}
    kube.add("rollouts", "shop", ro)

    def run(name: str, pod_hash: str, created: str) -> Obj:
        return {
            "metadata": {
                "name": name,
                "creationTimestamp": created,
                "labels": {"rollouts-pod-template-hash": pod_hash},
                "annotations": {"rollout.argoproj.io/revision": "2"},
            }
        }

    kube.lists[("analysisruns", "shop")] = [
        run("web-6b7f-2-old", "6b7f", "2024-01-01T00:00:00Z"),
        run("web-6b7f-2-new", "6b7f", "2024-01-02T00:00:00Z"),
        run("web-5d9c-1", "5d9c", "2024-01-03T00:00:00Z"),
    ]
    result = invoke("template", "notify", "runs", "web", "-n", "shop", *files)
    assert result.stdout == "message: web-6b7f-2-new\n"


def test_notify_mistakes(kube: FakeKube, files: list[str]) -> None:
    fake_sender()
    kube.add("rollouts", "default", rollout())
    failed(invoke("template", "notify", "nope", "web", *files), "template 'nope' is not configured")
    failed(
        invoke("template", "notify", "rollout-completed", "ghost", *files),
        'rollout "ghost" not found in namespace "default"',
    )
    failed(
        invoke("template", "notify", "rollout-completed", "web", "--recipient", "slack:x", *files),
        "failed to notify 'slack:x': notification service 'slack' is not configured",
    )
    failed(
        invoke(
            "template", "notify", "rollout-completed", "web", "--recipient", "hook:fail", *files
        ),
        "failed to notify 'hook:fail': 400 Bad Request: no such channel",
    )
    for bad in (":ops", "a:b:c", ""):
        failed(
            invoke("template", "notify", "rollout-completed", "web", "--recipient", bad, *files),
            f"invalid recipient '{bad}': expected SERVICE:RECIPIENT, e.g. slack:my-channel",
        )


@pytest.mark.usefixtures("no_cluster")
def test_notify_a_service_type_without_a_sender(tmp_path: Path) -> None:
    cm = write(
        tmp_path / "cm.yaml",
        configmap({"service.carrier-pigeon": "{}", "template.t": "message: hi"}),
    )
    ro = write(tmp_path / "ro.yaml", rollout())
    result = invoke("template", "notify", "t", ro, "--recipient", "carrier-pigeon:loft",
                    "--config-map", cm, "--secret", ":empty")  # fmt: skip
    failed(
        result,
        "failed to notify 'carrier-pigeon:loft': notification service type 'carrier-pigeon' "
        "(service 'carrier-pigeon') is not supported",
    )


@pytest.mark.usefixtures("no_cluster")
def test_notify_a_template_that_does_not_render(tmp_path: Path) -> None:
    cm = write(
        tmp_path / "cm.yaml", configmap({"template.t": "message: '{{.rollout.metadata.name.foo}}'"})
    )
    ro = write(tmp_path / "ro.yaml", rollout())
    failed(
        invoke("template", "notify", "t", ro, "--config-map", cm, "--secret", ":empty"),
        "failed to notify 'console:stdout': template 't', message: template: t:1:10: executing "
        '"t" at <.rollout.metadata.name.foo>: can\'t evaluate field foo in type interface {}',
    )


# -- pure pieces -------------------------------------------------------------------------------

RECIPIENTS = {
    "service and recipient": ("slack:ops", Destination("slack", "ops")),
    "service alone": ("webhook", Destination("webhook", "")),
    "empty recipient": ("console:", Destination("console", "")),
}


@pytest.mark.parametrize(("value", "want"), RECIPIENTS.values(), ids=RECIPIENTS.keys())
def test_parse_recipient(value: str, want: Destination) -> None:
    assert parse_recipient(value) == want


def test_registered_under_rollouts() -> None:
    from rollout_workers.cli.main import cli

    result = CliRunner().invoke(cli, ["notifications", "--help"])
    assert result.exit_code == 0
    assert "template" in result.stdout and "trigger" in result.stdout
