"""Rendering a notification from templates, as notifications-engine's templaters do.

``api.Send`` (``pkg/api/api.go``, engine v0.5.0, which Argo Rollouts v1.9.1 pins) builds the
variables from Argo's ``getVars`` (utils/record/record.go: ``rollout``, ``analysisRuns``,
``time``, ``secrets``) plus ``serviceType`` (the destination's *service name*, e.g. ``github``
for ``service.webhook.github``) and ``recipient``; then ``templates.FormatNotification`` runs
each named template's templater, in the order given, on one ``Notification``. A template's
templater renders ``message`` and then its service blocks, in the engine's fixed order, each field
as that block's ``GetTemplater`` does (``pkg/services/*.go``). That is how several templates
merge, and the engine is not uniform about it:

- ``message``, ``email.*``, ``teams.*``, ``teams-workflows.*``, ``googlechat.*``: set only when
  the rendered text is not empty, so a later template with an empty or absent field keeps an
  earlier one's value.
- ``slack.username/icon/attachments/blocks/groupingKey``, ``mattermost.attachments``,
  ``rocketchat.attachments``, ``opsgenie``'s strings: always set, so a later template that has
  the block but not the field clears it. ``slack.notifyBroadcast``/``deliveryPolicy`` are copied.
- ``webhook.<name>``: ``body`` and ``path`` rendered, ``method`` copied, the entry replaced.
- ``opsgenie.details/actions/tags/visibleTo``: each entry rendered, replacing the whole value
  when the template has it.

A block the engine knows but this module does not render yet (``github``, ``alertmanager``,
``awssqs``, ``pagerduty``, ``pagerdutyv2``, ``newrelic``) is named in
``Notification.unsupported`` rather than rendered wrongly; a key the engine does not know is
ignored, as its YAML decoding ignores it. ``secrets`` is not passed: Go gives templates the
Secret as ``map[string][]byte`` and the template engine has no byte slices yet.

A template error (an unknown template, a non-string where the engine expects a string, a Go
execution error) is a :class:`RenderError` naming the template and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollout_workers.notifications import gotemplate
from rollout_workers.notifications.config import Config, Template
from rollout_workers.notifications.gotemplate import TemplateError, argo_time_vars

# GetTemplater's source order (pkg/services/services.go); the first error wins.
BLOCK_ORDER = (
    "awssqs",
    "slack",
    "mattermost",
    "rocketchat",
    "email",
    "webhook",
    "opsgenie",
    "github",
    "teams",
    "teams-workflows",  # after v0.5.0: the engine's later GetTemplater has it here
    "alertmanager",
    "googlechat",
    "pagerduty",
    "pagerdutyv2",
    "newrelic",
)
UNSUPPORTED = frozenset(
    {"awssqs", "github", "alertmanager", "pagerduty", "pagerdutyv2", "newrelic"}
)

SET = "set"  # always assigned
NONEMPTY = "nonempty"  # assigned when the rendered text is not empty

# Templated string fields of the simple blocks, in the order the templater renders them.
FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "slack": (
        ("username", SET),
        ("icon", SET),
        ("attachments", SET),
        ("blocks", SET),
        ("groupingKey", SET),
    ),
    "mattermost": (("attachments", SET),),
    "rocketchat": (("attachments", SET),),
    "email": (("subject", NONEMPTY), ("body", NONEMPTY)),
    "teams": tuple(
        (f, NONEMPTY)
        for f in (
            "template",
            "title",
            "summary",
            "text",
            "themeColor",
            "facts",
            "sections",
            "potentialAction",
        )
    ),
    "teams-workflows": tuple(
        (f, NONEMPTY)
        for f in (
            "template",
            "title",
            "summary",
            "text",
            "themeColor",
            "facts",
            "sections",
            "potentialAction",
            "adaptiveCard",
        )
    ),
    "googlechat": (("cards", NONEMPTY), ("cardsV2", NONEMPTY), ("threadKey", NONEMPTY)),
    "opsgenie": tuple(
        (f, SET) for f in ("description", "alias", "note", "entity", "user", "priority")
    ),
}
# Fields copied from the template as written (not templated); the engine always assigns them.
COPIED: dict[str, dict[str, Any]] = {
    "slack": {"notifyBroadcast": False, "deliveryPolicy": None},
}
OPSGENIE_RESPONDER_FIELDS = ("id", "type", "name", "username")


class RenderError(Exception):
    """A template could not be rendered; the message names the template and the field."""

    def __init__(self, template: str, field: str, message: str) -> None:
        super().__init__(f"template {template!r}, {field}: {message}")
        self.template = template
        self.field = field


@dataclass
class Notification:
    """The engine's ``services.Notification``: ``message`` and one dict per rendered service
    block, keyed as the engine's JSON (``{"slack": {"attachments": ...}}``,
    ``{"webhook": {"github": {"method": ..., "path": ..., "body": ...}}}``)."""

    message: str = ""
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsupported: tuple[str, ...] = ()


def notification_vars(
    rollout: Mapping[str, Any],
    service: str,
    recipient: str,
    analysis_runs: Sequence[Mapping[str, Any]] | None = None,
    time_vars: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``api.Send`` gives the templates for Argo Rollouts: ``rollout`` (the object as JSON
    decodes it; with a workloadRef, the caller restores ``spec.template``/``spec.selector`` as
    Argo's ``toObjectMap`` does), ``analysisRuns`` (the current pod hash's runs of the current
    revision, newest first, or None), ``time``, ``serviceType`` (the destination's service name)
    and ``recipient``."""
    return {
        "rollout": rollout,
        "analysisRuns": None if analysis_runs is None else list(analysis_runs),
        "time": argo_time_vars() if time_vars is None else time_vars,
        "serviceType": service,
        "recipient": recipient,
    }


def render(config: Config, template_names: Sequence[str], vars: Mapping[str, Any]) -> Notification:
    """``FormatNotification(vars, template_names...)``: each template, in order, on one
    notification."""
    out = Notification()
    unsupported: list[str] = []
    for name in template_names:
        tmpl = config.templates.get(name)
        if tmpl is None:
            why = next((e.message for e in config.errors if e.key == f"template.{name}"), "")
            raise RenderError(
                name,
                "template",
                f"template {name!r} is not supported" + (f": {why}" if why else ""),
            )
        _apply(tmpl, vars, out, unsupported)
    out.unsupported = tuple(dict.fromkeys(unsupported))
    return out


def _apply(
    tmpl: Template, vars: Mapping[str, Any], out: Notification, unsupported: list[str]
) -> None:
    message = _render(tmpl, ("message",), tmpl.message or "", vars)
    if message:
        out.message = message
    for block in BLOCK_ORDER:
        if block not in tmpl.blocks:
            continue
        if block in UNSUPPORTED:
            unsupported.append(block)
            continue
        source = tmpl.blocks[block]
        if block == "webhook":
            _webhook(tmpl, source, vars, out)
            continue
        target = out.blocks.setdefault(block, {})
        for name, mode in FIELDS[block]:
            text = _string(tmpl, (block, name), source.get(name))
            value = _render(tmpl, (block, name), text, vars)
            if mode == SET or value:
                target[name] = value
        for name, default in COPIED.get(block, {}).items():
            target[name] = source.get(name, default)
        if block == "opsgenie":
            _opsgenie_collections(tmpl, source, vars, target)


def _webhook(
    tmpl: Template, source: Mapping[str, Any], vars: Mapping[str, Any], out: Notification
) -> None:
    target = out.blocks.setdefault("webhook", {})
    for hook in sorted(source):  # a Go map: the engine's order is random
        spec = source[hook]
        if not isinstance(spec, Mapping):
            raise RenderError(tmpl.name, f"webhook.{hook}", "expected a map")
        go_name = tmpl.name + hook  # texttemplate.New(name + k)
        body = _render(
            tmpl,
            ("webhook", hook, "body"),
            _string(tmpl, ("webhook", hook, "body"), spec.get("body")),
            vars,
            go_name,
        )
        path = _render(
            tmpl,
            ("webhook", hook, "path"),
            _string(tmpl, ("webhook", hook, "path"), spec.get("path")),
            vars,
            go_name,
        )
        target[hook] = {
            "method": _string(tmpl, ("webhook", hook, "method"), spec.get("method")),
            "body": body,
            "path": path,
        }


def _opsgenie_collections(
    tmpl: Template, source: Mapping[str, Any], vars: Mapping[str, Any], target: dict[str, Any]
) -> None:
    name = tmpl.name
    details = source.get("details")
    if details is not None:
        if not isinstance(details, Mapping):
            raise RenderError(name, "opsgenie.details", "expected a map of strings")
        target["details"] = {
            k: _render(
                tmpl,
                ("opsgenie", "details", k),
                _string(tmpl, ("opsgenie", "details", k), v),
                vars,
                f"{name}_detail_{k}",
            )
            for k, v in details.items()
        }
    responders = source.get("visibleTo")
    if responders is not None:
        if not isinstance(responders, list):
            raise RenderError(name, "opsgenie.visibleTo", "expected a list")
        rendered = []
        for i, responder in enumerate(responders):
            if not isinstance(responder, Mapping):
                raise RenderError(name, f"opsgenie.visibleTo.{i}", "expected a map")
            entry = {}
            for f in OPSGENIE_RESPONDER_FIELDS:
                path = ("opsgenie", "visibleTo", str(i), f)
                text = _string(tmpl, path, responder.get(f))
                entry[f] = _render(tmpl, path, text, vars, f"{name}_responder_{i}_{f}")
            rendered.append(entry)
        target["visibleTo"] = rendered
    for key, label in (("actions", "action"), ("tags", "tag")):
        items = source.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise RenderError(name, f"opsgenie.{key}", "expected a list of strings")
        target[key] = [
            _render(
                tmpl,
                ("opsgenie", key, str(i)),
                _string(tmpl, ("opsgenie", key, str(i)), v),
                vars,
                f"{name}_{label}_{i}",
            )
            for i, v in enumerate(items)
        ]


def _string(tmpl: Template, path: tuple[str, ...], value: Any) -> str:
    """A field the engine decodes into a Go string (absent or null is empty)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        # sigs.k8s.io/yaml fails the template: "cannot unmarshal ... into Go struct field".
        raise RenderError(
            tmpl.name, ".".join(path), f"expected a string, got {type(value).__name__}"
        )
    return value


def _render(
    tmpl: Template,
    path: tuple[str, ...],
    text: str,
    vars: Mapping[str, Any],
    go_name: str | None = None,
) -> str:
    where = ".".join(path)
    try:
        parsed = tmpl.parsed.get(path) if go_name is None else None
        if parsed is None or parsed.text != text:
            parsed = gotemplate.parse(text, name=go_name or tmpl.name)
        return parsed.render(vars)
    except TemplateError as e:
        raise RenderError(tmpl.name, where, str(e)) from None
