"""`rollouts notifications`: the notification tools of `kubectl argo rollouts notifications`.

The plugin embeds notifications-engine's CLI (``pkg/cmd``), so the commands, arguments, flags
and tables are the engine's:

- ``template get [NAME]``: NAME and PREVIEW (the message's first line, else the template as
  compact JSON, cut at 100 characters); ``-o yaml|json|name`` print the templates instead.
- ``template notify NAME ROLLOUT --recipient SERVICE:RECIPIENT``: renders the template with
  the rollout and sends it through the configured service; the default recipient,
  ``console:stdout``, prints the rendered notification as YAML instead of sending it.
- ``trigger get [NAME]``: NAME, TEMPLATE and CONDITION, one row per condition (the name on
  the first only); ``-o yaml|json|name`` as for templates.
- ``trigger run NAME ROLLOUT``: each condition's ``when`` and whether it holds (CONDITION and
  RESULT).

As the engine, ``--config-map FILE`` and ``--secret FILE`` read the ConfigMap and Secret from
a manifest file (``-`` for stdin; ``--secret :empty`` for no Secret) instead of the cluster,
and ROLLOUT may be the path of a manifest file instead of a rollout's name. Where this differs
from the engine:

- The config is read from the controller's notifications namespace
  (``ROLLOUTS_NOTIFICATIONS_NAMESPACE``), or ``--config-namespace``; ``-n/--namespace`` is the
  rollout's, as for the other commands. The engine reads both from its one ``--namespace``.
- A missing Secret in the cluster is an empty one, as for the controller.
- A config key that does not load is a warning in a listing (the engine refuses the whole
  config), and an error when it is the template or trigger asked for; other commands ignore it.
- ``analysisRuns`` is given to the templates and conditions as the controller gives it, for a
  rollout read from the cluster (the plugin passes none).
- ``get NAME`` of an unknown name is an error (the engine prints an empty table); a recipient
  with a second ``:`` is refused (the engine drops what follows it).
- Every failure (an unknown template, trigger or rollout, a missing ConfigMap, a bad recipient,
  a failed send) is one line on stderr and exit code 1; the engine prints it and exits 0.
- YAML prints multi-line strings as literal blocks, so a rendered message reads as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import requests
import yaml

from rollout_workers.cli import cluster
from rollout_workers.cli.common import F, Fail, load_settings, one_line
from rollout_workers.cli.table import align
from rollout_workers.kube.errors import KubeError, NotFound
from rollout_workers.kube.resources import ANALYSISRUNS, CONFIGMAPS, ROLLOUTS, SECRETS
from rollout_workers.notifications.config import Condition, Config, Template
from rollout_workers.notifications.delivery import analysis_runs_of
from rollout_workers.notifications.render import (
    Notification,
    RenderError,
    notification_vars,
    render,
)
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.registry import send
from rollout_workers.notifications.source import (
    CONFIGMAP_NAME,
    SECRET_NAME,
    config_from_objects,
)
from rollout_workers.notifications.subscriptions import Destination
from rollout_workers.notifications.triggers import ExprEvaluator, run_conditions
from rollout_workers.objects import Obj
from rollout_workers.settings import Settings

EMPTY_SECRET = ":empty"
STDIN = "-"
CONSOLE = "console"
DEFAULT_RECIPIENT = "console:stdout"
OUTPUTS = ("wide", "yaml", "json", "name")
PREVIEW_LENGTH = 100
# The fields of the engine's services.Notification, in its JSON order.
NOTIFICATION_FIELDS = (
    "message",
    "awssqs",
    "email",
    "slack",
    "mattermost",
    "rocketchat",
    "teams",
    "webhook",
    "opsgenie",
    "github",
    "alertmanager",
    "googlechat",
    "pagerduty",
    "pagerdutyv2",
    "newrelic",
)


class ManifestError(ValueError):
    """A --config-map or --secret file that cannot be used."""


# -- pure: files, documents, tables ------------------------------------------------------------


def load_manifests(text: str, path: str) -> list[Obj]:
    """The YAML (or JSON) documents of a file, empty ones skipped."""
    try:
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        raise ManifestError(f"failed to unmarshal manifest {path}: {one_line(err)}") from None
    for doc in docs:
        if not isinstance(doc, dict):
            raise ManifestError(f"failed to unmarshal manifest {path}: not an object")
    return docs


def find_manifest(docs: Sequence[Obj], *, kind: str, name: str, path: str) -> Obj:
    """The core/v1 object of `kind` named `name` in a file's documents (the engine's
    unmarshalFromFile)."""
    for doc in docs:
        group = str(doc.get("apiVersion") or "").rpartition("/")[0]
        meta = doc.get("metadata") or {}
        if doc.get("kind") == kind and not group and meta.get("name") == name:
            return doc
    raise ManifestError(f"file '{path}' does not have '/{kind}/{name}'")


def go_json(value: Any, *, indent: int | None = None) -> str:
    """JSON as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped, other
    text as is."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def _field_order(key: str) -> tuple[int, str]:
    try:
        return NOTIFICATION_FIELDS.index(key), key
    except ValueError:
        return len(NOTIFICATION_FIELDS), key


def template_document(tmpl: Template) -> Obj:
    """A template as the engine prints it: its services.Notification (an empty message
    omitted), the fields in the engine's order."""
    doc: Obj = {"message": tmpl.message} if tmpl.message else {}
    for block in sorted(tmpl.blocks, key=_field_order):
        doc[block] = tmpl.blocks[block]
    return doc


def template_preview(tmpl: Template) -> str:
    """The engine's Notification.Preview: the message, else the template as compact JSON;
    its first line, at most 100 characters."""
    preview = tmpl.message or go_json(template_document(tmpl))
    preview = preview.split("\n")[0]
    if len(preview) > PREVIEW_LENGTH:
        preview = preview[: PREVIEW_LENGTH - 1] + "..."
    return preview


def condition_document(cond: Condition) -> Obj:
    """A trigger condition as the engine prints it (empty fields omitted)."""
    doc: Obj = {}
    for key, value in (
        ("oncePer", cond.once_per),
        ("when", cond.when),
        ("description", cond.description),
        ("send", list(cond.send)),
    ):
        if value:
            doc[key] = value
    return doc


def template_table(templates: Mapping[str, Template]) -> list[str]:
    rows = [["NAME", "PREVIEW"]]
    rows += [[name, template_preview(templates[name])] for name in sorted(templates)]
    return align(rows)


def trigger_table(triggers: Mapping[str, tuple[Condition, ...]]) -> list[str]:
    rows = [["NAME", "TEMPLATE", "CONDITION"]]
    for name in sorted(triggers):
        for i, cond in enumerate(triggers[name]):
            rows.append([name if i == 0 else "", ", ".join(cond.send), cond.when])
    return align(rows)


def formatted(items: Mapping[str, Any], output: str) -> str:
    """`-o yaml` or `-o json` of a map of name to document (names sorted, as Go's maps)."""
    ordered = {name: items[name] for name in sorted(items)}
    if output == "json":
        return go_json(ordered, indent=2) + "\n"
    return _yaml(ordered)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so a rendered message reads as written."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value.strip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _yaml(value: Any) -> str:
    # sigs.k8s.io/yaml, which the engine prints with, sorts every map's keys.
    return yaml.dump(value, Dumper=_Dumper, sort_keys=True, allow_unicode=True, width=2**31)


def notification_document(notification: Notification) -> Obj:
    doc: Obj = {"message": notification.message} if notification.message else {}
    doc.update({k: v for k, v in notification.blocks.items() if v})
    return doc


def console_text(notification: Notification) -> str:
    """What the engine's console service prints: the notification as YAML."""
    doc = notification_document(notification)
    return _yaml(doc) if doc else "{}\n"


def parse_recipient(value: str) -> Destination:
    """`SERVICE:RECIPIENT`, or a bare `SERVICE` for a service without recipients."""
    parts = value.split(":")
    if not parts[0] or len(parts) > 2:
        raise Fail(
            f"invalid recipient '{value}': expected SERVICE:RECIPIENT, e.g. slack:my-channel"
        )
    return Destination(parts[0], parts[1] if len(parts) > 1 else "")


# -- the sources: files or the cluster ---------------------------------------------------------


@dataclass
class Sources:
    """Where a command reads the config and the rollout from; it connects to the cluster only
    when something is read from it."""

    settings: Settings
    state_dir: Path | None
    kubeconfig: Path | None
    namespace: str | None
    config_namespace: str
    config_map: str | None
    secret: str | None
    _target: cluster.Target | None = field(default=None, repr=False)

    def target(self) -> cluster.Target:
        if self._target is None:
            self._target = cluster.connect(
                state_dir=self.state_dir, kubeconfig=self.kubeconfig, namespace=self.namespace
            )
        return self._target

    def _file_object(self, path: str, kind: str, name: str) -> Obj:
        try:
            text = sys.stdin.read() if path == STDIN else Path(path).read_text()
            return find_manifest(load_manifests(text, path), kind=kind, name=name, path=path)
        except OSError as err:
            raise Fail(f"cannot read {path}: {err.strerror or err}") from None
        except (ManifestError, UnicodeDecodeError) as err:
            raise Fail(one_line(err)) from None

    def configmap(self) -> Obj:
        if self.config_map:
            return self._file_object(self.config_map, "ConfigMap", CONFIGMAP_NAME)
        ns = self.config_namespace
        with cluster.api_errors("configmap", CONFIGMAP_NAME, ns):
            return self.target().kube.get(CONFIGMAPS, ns, CONFIGMAP_NAME)

    def secret_object(self) -> Obj | None:
        if self.secret == EMPTY_SECRET:
            return None
        if self.secret:
            return self._file_object(self.secret, "Secret", SECRET_NAME)
        ns = self.config_namespace
        try:
            return self.target().kube.get(SECRETS, ns, SECRET_NAME)
        except NotFound:
            return None  # as for the controller: no `$key` reference resolves
        except KubeError as err:
            raise Fail(f"API error: {one_line(err)}") from None

    def config(self) -> Config:
        config = config_from_objects(self.configmap(), self.secret_object())
        assert config is not None  # a ConfigMap was given
        return config

    def rollout(self, name: str) -> tuple[Obj, list[Obj] | None]:
        """The rollout, from a manifest file when `name` is one, else from the cluster with
        its analysis runs (the controller's ``analysisRuns``)."""
        path = Path(name)
        if path.is_file():
            try:
                docs = load_manifests(path.read_text(), name)
            except OSError as err:
                raise Fail(f"cannot read {name}: {err.strerror or err}") from None
            except (ManifestError, UnicodeDecodeError) as err:
                raise Fail(one_line(err)) from None
            if not docs:
                raise Fail(f"file '{name}' has no object")
            return docs[0], None
        target = self.target()
        ns = target.namespace
        with cluster.api_errors("rollout", name, ns):
            ro = target.kube.get(ROLLOUTS, ns, name)
            runs, _ = target.kube.list(ANALYSISRUNS, namespace=ns)
        return ro, analysis_runs_of(ro, runs)


def warn_config_errors(config: Config) -> None:
    for error in config.errors:
        click.echo(f"rollouts: warning: {error}", err=True)


def _check_loaded(config: Config, key: str) -> None:
    """Fail when the key asked for is one that did not load (the others do not matter to a
    command about one template or trigger)."""
    for error in config.errors:
        if error.key == key:
            raise Fail(f"invalid {error}")


def _check_output(output: str) -> None:
    if output not in OUTPUTS:
        raise Fail(f"output '{output}' is not supported (one of {'|'.join(OUTPUTS)})")


# -- commands ----------------------------------------------------------------------------------


def source_options(fn: F) -> F:
    """Where the config and the rollout come from: the engine's persistent flags, on each
    command (click's group options would have to come before the subcommand)."""
    fn = click.option(
        "--secret",
        default=None,
        metavar="FILE",
        help=f"{SECRET_NAME}.yaml file path ('-': stdin). Use an empty secret if the value is "
        f"'{EMPTY_SECRET}'.",
    )(fn)
    fn = click.option(
        "--config-map",
        default=None,
        metavar="FILE",
        help=f"{CONFIGMAP_NAME}.yaml file path ('-': stdin).",
    )(fn)
    fn = click.option(
        "--config-namespace",
        default=None,
        help="Namespace of the ConfigMap and Secret (default: ROLLOUTS_NOTIFICATIONS_NAMESPACE, "
        "else $POD_NAMESPACE, else argo-rollouts).",
    )(fn)
    return cluster.cluster_options(fn)


def sources(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    config_namespace: str | None,
    config_map: str | None,
    secret: str | None,
) -> Sources:
    settings = load_settings(state_dir=state_dir)
    return Sources(
        settings=settings,
        state_dir=state_dir,
        kubeconfig=kubeconfig,
        namespace=namespace,
        config_namespace=config_namespace or settings.notifications_namespace,
        config_map=config_map,
        secret=secret,
    )


def output_option(fn: F) -> F:
    return click.option(
        "-o", "--output", default="wide", help=f"Output format. One of: {'|'.join(OUTPUTS)}."
    )(fn)


@click.group("notifications")
def notifications() -> None:
    """Inspect and try out the notification templates and triggers."""


@notifications.group("template")
def template_group() -> None:
    """Notification templates."""


@notifications.group("trigger")
def trigger_group() -> None:
    """Notification triggers."""


def _print_names(names: Sequence[str]) -> None:
    for name in sorted(names):
        click.echo(name)


@template_group.command("get")
@source_options
@output_option
@click.argument("name", required=False)
def template_get(*, name: str | None, output: str, **source: Any) -> None:
    """Print the configured templates (or the one named): NAME and PREVIEW, or -o yaml|json|name.

    \b
      rollouts notifications template get
      rollouts notifications template get on-rollout-completed -o yaml
    """
    _check_output(output)
    config = sources(**source).config()
    if name is not None:
        _check_loaded(config, f"template.{name}")
        if name not in config.templates:
            raise Fail(f"template '{name}' is not configured")
    else:
        warn_config_errors(config)
    items = {n: t for n, t in config.templates.items() if name in (None, n)}
    if output == "wide":
        click.echo("\n".join(template_table(items)))
    elif output == "name":
        _print_names(list(items))
    else:
        click.echo(formatted({n: template_document(t) for n, t in items.items()}, output), nl=False)


@template_group.command("notify")
@source_options
@click.option(
    "--recipient",
    "recipients",
    multiple=True,
    default=(DEFAULT_RECIPIENT,),
    show_default=True,
    help="SERVICE:RECIPIENT to send to (repeatable); console:stdout prints the notification.",
)
@click.argument("name")
@click.argument("rollout")
def template_notify(*, name: str, rollout: str, recipients: tuple[str, ...], **source: Any) -> None:
    """Render template NAME with ROLLOUT (a name, or a manifest file) and send it to each
    recipient.

    \b
      rollouts notifications template notify on-rollout-completed my-app
      rollouts notifications template notify on-rollout-completed my-app --recipient slack:ops
    """
    destinations = [parse_recipient(r) for r in recipients]
    src = sources(**source)
    config = src.config()
    _check_loaded(config, f"template.{name}")
    if name not in config.templates:
        raise Fail(f"template '{name}' is not configured")
    ro, runs = src.rollout(rollout)
    with requests.Session() as session:
        context = SendContext(session=session, timeout=src.settings.notifications.timeout)
        for dest in destinations:
            notify(config=config, template=name, ro=ro, runs=runs, dest=dest, context=context)


def notify(
    *,
    config: Config,
    template: str,
    ro: Obj,
    runs: list[Obj] | None,
    dest: Destination,
    context: SendContext,
) -> None:
    """One recipient: console prints the notification; any other service sends it."""
    label = f"{dest.service}:{dest.recipient}" if dest.recipient else dest.service
    # The engine's CLI adds a console service that overrides any configured one.
    service = None if dest.service == CONSOLE else config.services.get(dest.service)
    if dest.service != CONSOLE and service is None:
        raise Fail(f"failed to notify '{label}': notification service '{dest.service}' is not "
                   "configured")  # fmt: skip
    vars = notification_vars(ro, dest.service, dest.recipient, runs)
    try:
        notification = render(config, [template], vars)
    except RenderError as err:
        raise Fail(f"failed to notify '{label}': {one_line(err)}") from None
    if notification.unsupported:
        click.echo(
            f"rollouts: warning: template '{template}': not rendered yet: "
            + ", ".join(notification.unsupported),
            err=True,
        )
    if service is None:
        click.echo(console_text(notification), nl=False)
        return
    try:
        send(service, notification, dest.recipient, context)
    except SendError as err:
        raise Fail(f"failed to notify '{label}': {one_line(err)}") from None
    except Exception as err:  # a sender's bug: still one line, as the delivery reports it
        raise Fail(f"failed to notify '{label}': {type(err).__name__}: {one_line(err)}") from None
    click.echo(f"notification '{template}' sent to '{label}'")


@trigger_group.command("get")
@source_options
@output_option
@click.argument("name", required=False)
def trigger_get(*, name: str | None, output: str, **source: Any) -> None:
    """Print the configured triggers (or the one named): NAME, TEMPLATE and CONDITION of each
    condition, or -o yaml|json|name.

    \b
      rollouts notifications trigger get
      rollouts notifications trigger get on-rollout-completed -o yaml
    """
    _check_output(output)
    config = sources(**source).config()
    if name is not None:
        _check_loaded(config, f"trigger.{name}")
        if name not in config.triggers:
            raise Fail(f"trigger '{name}' is not configured")
    else:
        warn_config_errors(config)
    items = {n: t for n, t in config.triggers.items() if name in (None, n)}
    if output == "wide":
        click.echo("\n".join(trigger_table(items)))
    elif output == "name":
        _print_names(list(items))
    else:
        docs = {n: [condition_document(c) for c in conds] for n, conds in items.items()}
        click.echo(formatted(docs, output), nl=False)


@trigger_group.command("run")
@source_options
@click.argument("name")
@click.argument("rollout")
def trigger_run(*, name: str, rollout: str, **source: Any) -> None:
    """Evaluate trigger NAME's conditions over ROLLOUT (a name, or a manifest file) and print
    each one's result.

    \b
      rollouts notifications trigger run on-rollout-completed my-app
      rollouts notifications trigger run on-rollout-completed ./rollout.yaml --config-map cm.yaml
    """
    src = sources(**source)
    config = src.config()
    _check_loaded(config, f"trigger.{name}")
    conditions = config.triggers.get(name)
    if conditions is None:
        found = ", ".join(sorted(config.triggers))
        raise Fail(f"trigger with name '{name}' does not exist (found {found})")
    ro, runs = src.rollout(rollout)
    env = notification_vars(ro, "", "", runs)
    results = run_conditions(conditions, env, ExprEvaluator())
    for cond, result in zip(conditions, results, strict=True):
        if result.error:
            click.echo(f"rollouts: warning: {cond.when}: {one_line(result.error)}", err=True)
    rows = [["CONDITION", "RESULT"]]
    rows += [
        [cond.when, "true" if result.triggered else "false"]
        for cond, result in zip(conditions, results, strict=True)
    ]
    click.echo("\n".join(align(rows)))
