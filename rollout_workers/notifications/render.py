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
- ``pagerdutyv2.*`` (summary, severity, source, component, group, class, url): always set.
- ``alertmanager``: parsed when rendered, not when the config loads. ``startsAt`` is the
  render time; ``generatorURL`` (default ``{{.app.spec.source.repoURL}}``) is set when not
  empty, then ``git@host:path`` becomes ``https://host/path`` and it must parse as a URL;
  ``labels`` (at least one, else an error) replace the previous ones, each rendered value kept
  only when not empty (else the text as written), plus ``alertname: <template name>`` when the
  template has no such label; ``annotations`` likewise, replacing the previous ones only when
  the template has some. (The engine writes the rendered values back into the template's own
  maps, so a later send starts from an earlier send's values; this module does not.)

Which fields are templates is one table, ``fields``, shared with ``config``, which parses them.

A block the engine knows but this module does not render yet (``github``, ``awssqs``,
``pagerduty``, ``newrelic``) is named in ``Notification.unsupported`` rather than rendered
wrongly; a key the engine does not know is
ignored, as its YAML decoding ignores it. ``secrets`` is not passed: Go gives templates the
Secret as ``map[string][]byte`` and the template engine has no byte slices yet.

A template error (an unknown template, a non-string where the engine expects a string, a Go
execution error) is a :class:`RenderError` naming the template and the field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollout_workers.notifications import gotemplate
from rollout_workers.notifications.config import Config, Template
from rollout_workers.notifications.fields import COPIED, FIELDS, OPSGENIE_RESPONDER_FIELDS, SET
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
UNSUPPORTED = frozenset({"awssqs", "github", "pagerduty", "newrelic"})
# The alertmanager templater's generatorURL when the template gives none (Argo CD's field;
# under Argo Rollouts it renders "<no value>").
DEFAULT_GENERATOR_URL = "{{.app.spec.source.repoURL}}"
ALERT_NAME_LABEL = "alertname"


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


def render(
    config: Config,
    template_names: Sequence[str],
    vars: Mapping[str, Any],
    *,
    clock: Callable[[], dt.datetime] | None = None,
) -> Notification:
    """``FormatNotification(vars, template_names...)``: each template, in order, on one
    notification. ``clock`` gives the alertmanager block's ``startsAt`` (default: now, UTC)."""
    out = Notification()
    unsupported: list[str] = []
    now = clock or _utc_now
    for name in template_names:
        tmpl = config.templates.get(name)
        if tmpl is None:
            why = next((e.message for e in config.errors if e.key == f"template.{name}"), "")
            raise RenderError(
                name,
                "template",
                f"template {name!r} is not supported" + (f": {why}" if why else ""),
            )
        _apply(tmpl, vars, out, unsupported, now)
    out.unsupported = tuple(dict.fromkeys(unsupported))
    return out


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _apply(
    tmpl: Template,
    vars: Mapping[str, Any],
    out: Notification,
    unsupported: list[str],
    now: Callable[[], dt.datetime],
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
        if block == "alertmanager":
            _alertmanager(tmpl, source, vars, out, now())
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


def _alertmanager(
    tmpl: Template,
    source: Mapping[str, Any],
    vars: Mapping[str, Any],
    out: Notification,
    now: dt.datetime,
) -> None:
    # The engine's templater parses these fields each time it renders (not when the config
    # loads), and an empty rendering keeps what was there: the previous template's generatorURL,
    # or a label's or annotation's text as written.
    target = out.blocks.setdefault(
        "alertmanager", {"labels": None, "annotations": None, "generatorURL": "", "startsAt": ""}
    )
    target["startsAt"] = go_rfc3339_nano(now)
    generator = _string(tmpl, ("alertmanager", "generatorURL"), source.get("generatorURL"))
    value = _render(
        tmpl, ("alertmanager", "generatorURL"), generator or DEFAULT_GENERATOR_URL, vars
    )
    if value:
        target["generatorURL"] = value
    target["generatorURL"] = git_url_to_http(target["generatorURL"])
    problem = go_url_parse_error(target["generatorURL"])
    if problem:
        raise RenderError(tmpl.name, "alertmanager.generatorURL", problem)
    labels = _string_map(tmpl, ("alertmanager", "labels"), source.get("labels"))
    if not labels:
        raise RenderError(tmpl.name, "alertmanager.labels", "at least one label pair required")
    rendered = _render_map(tmpl, ("alertmanager", "labels"), labels, vars)
    if ALERT_NAME_LABEL not in labels:
        rendered[ALERT_NAME_LABEL] = tmpl.name
    target["labels"] = rendered
    annotations = _string_map(tmpl, ("alertmanager", "annotations"), source.get("annotations"))
    if annotations:
        target["annotations"] = _render_map(
            tmpl, ("alertmanager", "annotations"), annotations, vars
        )


def _string_map(tmpl: Template, path: tuple[str, ...], value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RenderError(tmpl.name, ".".join(path), "expected a map of strings")
    return {str(k): _string(tmpl, (*path, str(k)), v) for k, v in value.items()}


def _render_map(
    tmpl: Template, path: tuple[str, ...], values: Mapping[str, str], vars: Mapping[str, Any]
) -> dict[str, str]:
    # A Go map: the engine's order (and so which error comes first) is random; ours is sorted.
    out = {}
    for key in sorted(values):
        text = values[key]
        out[key] = _render(tmpl, (*path, key), text, vars) or text
    return out


def go_rfc3339_nano(moment: dt.datetime) -> str:
    """Go's ``time.RFC3339Nano`` as ``encoding/json`` writes a ``time.Time`` (trailing zeros of
    the fraction dropped)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += "." + f"{moment.microsecond:06d}".rstrip("0")
    offset = moment.utcoffset() or dt.timedelta()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def git_url_to_http(url: str) -> str:
    """The engine's ``convertGitURLtoHTTP``: ``git@host:org/repo`` becomes
    ``https://host/org/repo``; anything else is kept."""
    if not url.startswith("git@"):
        return url
    return "https://" + url[len("git@") :].replace(":", "/", 1)


_HEX = frozenset("0123456789abcdefABCDEF")


def go_url_parse_error(url: str) -> str | None:
    """Why Go's ``url.Parse`` rejects ``url``, or None: a control character, a missing scheme
    before a leading colon, a colon in the first segment of a relative path, a bad ``%``
    escape, or a port that is not a number. (Go is lenient; these are its rejections that a
    rendered URL can hit.)"""

    def failed(reason: str) -> str:
        return f"parse {_go_quote(url)}: {reason}"

    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return failed("net/url: invalid control character in URL")
    rest, _, fragment = url.partition("#")
    if rest.startswith(":"):
        return failed("missing protocol scheme")
    scheme = ""
    head, colon, tail = rest.partition(":")
    if (
        colon
        and head
        and head[0].isascii()
        and head[0].isalpha()
        and all(c.isascii() and (c.isalnum() or c in "+-.") for c in head)
    ):
        scheme, rest = head, tail
    rest = rest.partition("?")[0]
    if scheme and not rest.startswith("/"):
        return _bad_escape(fragment, failed)  # opaque: not checked further
    if not scheme and ":" in rest.partition("/")[0]:
        return failed("first path segment in URL cannot contain colon")
    if rest.startswith("//") and (scheme or not rest.startswith("///")):
        authority, slash, path = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        port = host.rpartition("]")[2] if host.startswith("[") else host
        if ":" in port and not port.rpartition(":")[2].isdigit() and port.rpartition(":")[2]:
            return failed(f"invalid port {_go_quote(':' + port.rpartition(':')[2])} after host")
        rest = slash + path
    return _bad_escape(rest, failed) or _bad_escape(fragment, failed)


def _bad_escape(text: str, failed: Callable[[str], str]) -> str | None:
    i = text.find("%")
    while i != -1:
        escape = text[i : i + 3]
        if len(escape) < 3 or escape[1] not in _HEX or escape[2] not in _HEX:
            return failed(f"invalid URL escape {_go_quote(escape)}")
        i = text.find("%", i + 3)
    return None


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
    name = go_name or tmpl.name
    try:
        parsed = tmpl.parsed.get(path)
        if parsed is None or parsed.text != text or parsed.name != name:
            parsed = gotemplate.parse(text, name=name)
        return parsed.render(vars)
    except TemplateError as e:
        raise RenderError(tmpl.name, where, str(e)) from None
