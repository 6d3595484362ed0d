"""Who is subscribed to a trigger for an object: annotations and the ConfigMap's subscriptions.

Argo Rollouts' ``sendNotifications`` (utils/record/record.go) asks notifications-engine for the
destinations of every trigger (the ConfigMap's ``subscriptions`` whose selector matches the
object's labels, ``Config.GetGlobalDestinations``, then the object's annotations,
``Annotations.GetDestinations``) and keeps those of the trigger its event maps to. This module
ports both, from ``pkg/api/config.go`` and ``pkg/subscriptions/annotations.go``:

- ``notifications.argoproj.io/subscribe.<trigger>.<service>: a;b``: recipients split on ``;``,
  blanks dropped; an empty value is one empty recipient (services such as webhook need none).
  ``subscribe.<service>`` and ``subscribe..<service>`` subscribe with the default triggers
  (``defaultTriggers.<service>`` if configured, else ``defaultTriggers``). Key parts after the
  service are ignored, as the engine ignores them.
- ``notifications.argoproj.io/subscriptions``: a YAML list of ``trigger`` (a list) and
  ``destinations`` (``service``, ``recipients``); no triggers means the default triggers, no
  destinations means nothing.
- ConfigMap ``subscriptions`` recipients are ``service:recipient`` (the engine keeps only the
  text between the first and second ``:``).

Where the engine leaks one annotation's recipients into the next annotation it visits (its
``recipients`` variable outlives the loop, so an unrelated or malformed annotation can
subscribe service "" in Go's random map order), this port does not. Annotations are visited in
sorted key order so the result is deterministic. Like Argo, destinations are not deduplicated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml

from rollout_workers.notifications.config import Config, DefaultSubscription

ANNOTATION_PREFIX = "notifications.argoproj.io"


class Destination(NamedTuple):
    """A service (its configured name) and a recipient on it (may be empty)."""

    service: str
    recipient: str


@dataclass(frozen=True)
class AnnotationSubscription:
    """One subscription read from an annotation; ``trigger`` is "" for the default triggers."""

    key: str
    trigger: str
    service: str
    recipients: tuple[str, ...]


@dataclass(frozen=True)
class AnnotationError:
    """An annotation that could not be read, and why (the engine only logs these)."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def parse_recipients(value: str) -> tuple[str, ...]:
    """``a; b;;`` -> ``("a", "b")``, as the engine's ``parseRecipients``."""
    return tuple(r for r in (part.strip() for part in value.split(";")) if r)


def subscribe_annotation_key(trigger: str, service: str, prefix: str = ANNOTATION_PREFIX) -> str:
    return f"{prefix}/subscribe.{trigger}.{service}"


def annotation_subscriptions(
    annotations: Mapping[str, str] | None, prefix: str = ANNOTATION_PREFIX
) -> tuple[list[AnnotationSubscription], list[AnnotationError]]:
    """The subscriptions an object's annotations hold (the engine's ``Annotations.iterate``)."""
    subs: list[AnnotationSubscription] = []
    errors: list[AnnotationError] = []
    subscribe = prefix + "/subscribe."
    list_form = prefix + "/subscriptions"
    for key in sorted(annotations or {}):
        value = (annotations or {})[key]
        if key.startswith(subscribe):
            parts = key[len(subscribe) :].split(".")
            trigger, service = (parts[0], parts[1]) if len(parts) >= 2 else ("", parts[0])
            recipients = ("",) if value == "" else parse_recipients(value)
            subs.append(AnnotationSubscription(key, trigger, service, recipients))
        elif key.startswith(list_form):
            try:
                subs.extend(_list_form(key, value))
            except (yaml.YAMLError, _Invalid) as e:
                errors.append(AnnotationError(key, " ".join(str(e).split())))
    return subs, errors


class _Invalid(ValueError):
    pass


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """Go's encoding/json: an exact field name first, else one equal ignoring case."""
    if name in obj:
        return obj[name]
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == name.lower():
            return v
    return None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Invalid(f"{where}: expected a list of strings")
    return tuple(value)


def _list_form(key: str, value: str) -> list[AnnotationSubscription]:
    if value == "":
        raise _Invalid("subscription is not defined")
    data = yaml.safe_load(value)
    if data is None:
        return []
    if not isinstance(data, list):
        raise _Invalid("expected a list of subscriptions")
    out: list[AnnotationSubscription] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise _Invalid(f"[{i}]: expected a map")
        triggers = _strings(_field(item, "trigger"), f"[{i}].trigger")
        raw_dests = _field(item, "destinations") or []
        if not isinstance(raw_dests, list):
            raise _Invalid(f"[{i}].destinations: expected a list")
        dests: list[tuple[str, tuple[str, ...]]] = []
        for j, d in enumerate(raw_dests):
            where = f"[{i}].destinations[{j}]"
            if not isinstance(d, dict):
                raise _Invalid(f"{where}: expected a map")
            service = _field(d, "service")
            if service is not None and not isinstance(service, str):
                raise _Invalid(f"{where}.service: expected a string")
            dests.append((service or "", _strings(_field(d, "recipients"), f"{where}.recipients")))
        # Triggers without destinations subscribe nobody; destinations without triggers get
        # the default triggers.
        for trigger in triggers or ("",):
            for service, recipients in dests:
                out.append(AnnotationSubscription(key, trigger, service, recipients))
    return out


def annotation_destinations(
    annotations: Mapping[str, str] | None,
    *,
    default_triggers: Sequence[str],
    service_default_triggers: Mapping[str, Sequence[str]],
    prefix: str = ANNOTATION_PREFIX,
) -> dict[str, list[Destination]]:
    """Destinations by trigger from annotations (the engine's ``GetDestinations``)."""
    dests: dict[str, list[Destination]] = {}
    subs, _errors = annotation_subscriptions(annotations, prefix)
    for sub in subs:
        if sub.trigger:
            triggers: Sequence[str] = (sub.trigger,)
        else:
            triggers = service_default_triggers.get(sub.service, default_triggers)
        for recipient in sub.recipients:
            for trigger in triggers:
                dests.setdefault(trigger, []).append(Destination(sub.service, recipient))
    return dests


def _recipient_destination(recipient: str) -> Destination:
    parts = recipient.split(":")
    return Destination(parts[0], parts[1] if len(parts) > 1 else "")


def global_destinations(
    subscriptions: Sequence[DefaultSubscription],
    labels: Mapping[str, str] | None,
    default_triggers: Sequence[str],
) -> dict[str, list[Destination]]:
    """Destinations by trigger from the ConfigMap's subscriptions (``GetGlobalDestinations``)."""
    dests: dict[str, list[Destination]] = {}
    for sub in subscriptions:
        for trigger in sub.triggers or default_triggers:
            if sub.matches_trigger(trigger) and sub.selector.matches(labels):
                for recipient in sub.recipients:
                    dests.setdefault(trigger, []).append(_recipient_destination(recipient))
    return dests


def destinations(config: Config, obj: Mapping[str, Any], trigger: str) -> list[Destination]:
    """Who gets ``trigger`` for ``obj`` (a JSON object with ``metadata``): the ConfigMap's
    matching subscriptions, then the object's annotations, as Argo's ``sendNotifications``."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    found = global_destinations(config.subscriptions, labels, config.default_triggers).get(
        trigger, []
    )
    found += annotation_destinations(
        annotations,
        default_triggers=config.default_triggers,
        service_default_triggers=config.service_default_triggers,
    ).get(trigger, [])
    return found
