"""The notifications ConfigMap and Secret, parsed as notifications-engine parses them.

Argo Rollouts reads ``argo-rollouts-notification-configmap`` and
``argo-rollouts-notification-secret`` with notifications-engine's ``api.ParseConfig``
(``pkg/api/config.go``). Users copy Argo's catalog and their own keys verbatim, so this module
keeps the engine's key grammar and YAML shapes:

- ``service.<type>`` and ``service.<type>.<name>``: a service's options (YAML). Every string in
  them, keys included, has each ``$key`` (``[$][\\w-]+``, ASCII) replaced with that key of the
  Secret; a reference to a missing key stays as written, as the engine does.
- ``template.<name>``: ``message`` plus per-service blocks (``email``, ``slack``, ``webhook``,
  ``teams``...), kept as dicts. The fields the engine templates (``fields.templated_fields``:
  the same table the renderer uses) are parsed here as Go templates, as the engine parses them
  when it builds its template service, so a bad template is reported with its key rather than
  at send time; a field the engine copies as written (webhook ``method``) is not parsed.
- ``trigger.<name>``: a YAML list of conditions (``when``, ``send``, ``oncePer``,
  ``description``).
- ``subscriptions``: a YAML list of ``recipients`` (``service:recipient``), ``triggers`` and a
  label ``selector`` string.
- ``defaultTriggers`` and ``defaultTriggers.<service>``: YAML lists of trigger names.
- ``context``: a YAML map of strings (Argo CD's; Argo Rollouts v1.9.1 does not expose it to
  templates, it is kept for the rendering slice).

The engine fails the whole config on the first bad key; here each bad key is reported in
``Config.errors`` naming the key, and the rest of the config still loads. Like the engine
(sigs.k8s.io/yaml), a YAML scalar where a string is expected is taken as its string form.

The Secret's values are given decoded (``Secret.data`` base64-decoded, as Go's ``[]byte``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from rollout_workers.notifications import gotemplate
from rollout_workers.notifications.fields import templated_fields
from rollout_workers.notifications.selectors import Selector, SelectorError, parse_selector

SECRET_REFERENCE = re.compile(r"[$][\w-]+", re.ASCII)


@dataclass(frozen=True)
class ConfigError:
    """A ConfigMap key that could not be loaded, and why."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


@dataclass(frozen=True)
class Service:
    """A configured notification service: its name (what subscriptions say), its type (how
    to send) and its options with Secret references replaced."""

    name: str
    type: str
    options: dict[str, Any]


@dataclass(frozen=True)
class Template:
    """A notification template: ``message`` and the per-service blocks as written, and the Go
    template parsed from each templated field, keyed by its path (``("message",)``,
    ``("slack", "attachments")``, ``("webhook", "github", "body")``)."""

    name: str
    message: str | None
    blocks: dict[str, Any]
    parsed: dict[tuple[str, ...], gotemplate.Template]


@dataclass(frozen=True)
class Condition:
    """One condition of a trigger: send these templates when ``when`` holds (at most once per
    value of ``once_per``, if given)."""

    when: str = ""
    send: tuple[str, ...] = ()
    once_per: str = ""
    description: str = ""


@dataclass(frozen=True)
class DefaultSubscription:
    """A ConfigMap ``subscriptions`` entry: recipients (``service:recipient``) for the given
    triggers (all, if none) on objects whose labels match the selector."""

    recipients: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    selector: Selector = field(default_factory=Selector)

    def matches_trigger(self, trigger: str) -> bool:
        return not self.triggers or trigger in self.triggers


@dataclass
class Config:
    """Everything the notifications ConfigMap and Secret configure, and what failed to load."""

    services: dict[str, Service] = field(default_factory=dict)
    templates: dict[str, Template] = field(default_factory=dict)
    triggers: dict[str, tuple[Condition, ...]] = field(default_factory=dict)
    subscriptions: list[DefaultSubscription] = field(default_factory=list)
    default_triggers: tuple[str, ...] = ()
    service_default_triggers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    context: dict[str, str] = field(default_factory=dict)
    errors: list[ConfigError] = field(default_factory=list)


class _Invalid(ValueError):
    """A value of the wrong shape; the message says where and what."""


def parse_config(configmap_data: Mapping[str, str], secret_data: Mapping[str, str]) -> Config:
    """Parse a notifications ConfigMap's ``data`` and its Secret's decoded ``data``."""
    cfg = Config()
    service_keys: dict[str, str] = {}
    for key in sorted(configmap_data):
        text = configmap_data[key]
        name = key.partition(".")[2]
        try:
            if key == "subscriptions":
                _load_subscriptions(cfg, key, text)
            elif key == "defaultTriggers":
                cfg.default_triggers = _string_list(_load(text), "defaultTriggers")
            elif key == "context":
                cfg.context = _string_map(_load(text), "context")
            elif key.startswith("template."):
                cfg.templates[name] = _template(name, _load(text))
            elif key.startswith("service."):
                service = _service(key, _load(text), secret_data)
                if service.name in service_keys:
                    raise _Invalid(
                        f"service {service.name!r} is already configured by "
                        f"{service_keys[service.name]!r}"
                    )
                service_keys[service.name] = key
                cfg.services[service.name] = service
            elif key.startswith("trigger."):
                cfg.triggers[name] = _conditions(_load(text))
            elif key.startswith("defaultTriggers."):
                cfg.service_default_triggers[name] = _string_list(_load(text), "defaultTriggers")
        except yaml.YAMLError as e:
            cfg.errors.append(ConfigError(key, f"invalid YAML: {_one_line(e)}"))
        except (_Invalid, gotemplate.TemplateError) as e:
            cfg.errors.append(ConfigError(key, str(e)))
    return cfg


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def _load(text: str) -> Any:
    return yaml.safe_load(text)


def _as_str(value: Any, where: str) -> str:
    """A YAML scalar where the engine expects a string, as sigs.k8s.io/yaml converts it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise _Invalid(f"{where}: expected a string, got {_kind(value)}")


def _optional_str(fields: Mapping[str, Any], name: str, where: str) -> str:
    value = fields.get(name)
    return "" if value is None else _as_str(value, f"{where}.{name}")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else type(value).__name__


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid(f"{where}: expected a list of strings, got {_kind(value)}")
    return tuple(_as_str(v, f"{where}[{i}]") for i, v in enumerate(value))


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Invalid(f"{where}: expected a map, got {_kind(value)}")
    return {_as_str(k, where): v for k, v in value.items()}


def _string_map(value: Any, where: str) -> dict[str, str]:
    return {k: _as_str(v, f"{where}.{k}") for k, v in _mapping(value, where).items()}


def replace_secret_references(text: str, secret_data: Mapping[str, str]) -> str:
    """The engine's ``replaceStringSecret``: each ``$key`` becomes the Secret's value for
    ``key``; a key the Secret lacks is left as written."""
    return SECRET_REFERENCE.sub(lambda m: secret_data.get(m.group(0)[1:], m.group(0)), text)


def _replace_secrets(value: Any, secret_data: Mapping[str, str]) -> Any:
    # The engine walks every YAML string scalar, mapping keys included.
    if isinstance(value, str):
        return replace_secret_references(value, secret_data)
    if isinstance(value, dict):
        return {
            _replace_secrets(k, secret_data): _replace_secrets(v, secret_data)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_replace_secrets(v, secret_data) for v in value]
    return value


def _service(key: str, value: Any, secret_data: Mapping[str, str]) -> Service:
    parts = key.split(".")
    if len(parts) == 3:
        service_type, name = parts[1], parts[2]
    elif len(parts) == 2:
        service_type = name = parts[1]
    else:
        raise _Invalid(f"invalid service key; expected 'service.<type>(.<name>)' but got {key!r}")
    options = _mapping(_replace_secrets(value, secret_data), "options")
    return Service(name=name, type=service_type, options=options)


def _template(name: str, value: Any) -> Template:
    body = _mapping(value, "template")
    message = None
    if "message" in body:
        message = _as_str(body.pop("message"), "message")
    blocks: dict[str, Any] = {}
    for service, block in body.items():
        blocks[service] = _mapping(block, service)
    parsed: dict[tuple[str, ...], gotemplate.Template] = {}
    # The engine parses message even when it is empty.
    _parse(("message",), message or "", name, parsed)
    for service, block in blocks.items():
        for path, text, go_name in templated_fields(name, service, block):
            if text is None or isinstance(text, str):
                _parse(path, text or "", go_name, parsed)
    return Template(name=name, message=message, blocks=blocks, parsed=parsed)


def _parse(
    path: tuple[str, ...], text: str, go_name: str, out: dict[tuple[str, ...], gotemplate.Template]
) -> None:
    try:
        out[path] = gotemplate.parse(text, name=go_name)
    except gotemplate.TemplateError as e:
        raise _Invalid(f"{'.'.join(path)}: {e}") from None


def _conditions(value: Any) -> tuple[Condition, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid(f"expected a list of conditions, got {_kind(value)}")
    out: list[Condition] = []
    for i, item in enumerate(value):
        where = f"[{i}]"
        cond = _mapping(item, where)
        out.append(
            Condition(
                when=_optional_str(cond, "when", where),
                send=_string_list(cond.get("send"), f"{where}.send"),
                once_per=_optional_str(cond, "oncePer", where),
                description=_optional_str(cond, "description", where),
            )
        )
    return tuple(out)


def _load_subscriptions(cfg: Config, key: str, text: str) -> None:
    value = _load(text)
    if value is None:
        return
    if not isinstance(value, list):
        raise _Invalid(f"expected a list of subscriptions, got {_kind(value)}")
    for i, item in enumerate(value):
        where = f"[{i}]"
        try:
            sub = _mapping(item, where)
            selector_text = _optional_str(sub, "selector", where)
            try:
                selector = parse_selector(selector_text)
            except SelectorError as e:
                raise _Invalid(f"{where}.selector: {e}") from None
            cfg.subscriptions.append(
                DefaultSubscription(
                    recipients=_string_list(sub.get("recipients"), f"{where}.recipients"),
                    triggers=_string_list(sub.get("triggers"), f"{where}.triggers"),
                    selector=selector,
                )
            )
        except _Invalid as e:
            cfg.errors.append(ConfigError(key, str(e)))
