"""Which fields of a notification template are Go templates, one table for parsing and rendering.

notifications-engine parses a template's fields when it builds its template service (each
block's ``GetTemplater``, ``pkg/services/*.go``), and only the fields that block templates: the
rest are copied as written (webhook ``method``, slack ``notifyBroadcast``/``deliveryPolicy``) or
not read at all. ``config`` parses exactly the fields :func:`templated_fields` yields, so a
``{{`` in a copied field does not fail the config; ``render`` renders the same fields from those
parsed templates. The alertmanager block is the exception the engine makes: its templater parses
``generatorURL``, ``labels`` and ``annotations`` each time it renders, so a bad template there
fails the send, not the config; it yields nothing here.

A block the renderer does not support yet (``github``, ``awssqs``, ``pagerduty``, ``newrelic``)
yields nothing either: it is reported as unsupported when rendered.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Path = tuple[str, ...]

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
    "pagerdutyv2": tuple(
        (f, SET) for f in ("summary", "severity", "source", "component", "group", "class", "url")
    ),
}
# Fields copied from the template as written (not templated); the engine always assigns them.
COPIED: dict[str, dict[str, Any]] = {
    "slack": {"notifyBroadcast": False, "deliveryPolicy": None},
}
OPSGENIE_RESPONDER_FIELDS = ("id", "type", "name", "username")
# Blocks whose templater parses its fields when it renders (the engine's alertmanager).
PARSED_WHEN_RENDERED = frozenset({"alertmanager"})


def templated_fields(template: str, block: str, source: Any) -> Iterator[tuple[Path, Any, str]]:
    """The fields of ``block`` (as written in template ``template``) that the engine parses when
    it builds the template service: ``(path, value as written, Go template name)``. Values that
    are not strings are yielded too; the caller decides what a wrong shape means."""
    if not isinstance(source, Mapping):
        return
    if block in FIELDS:
        for name, _ in FIELDS[block]:
            yield (block, name), source.get(name), template
    if block == "webhook":
        for hook in sorted(source, key=str):
            spec = source[hook]
            if isinstance(spec, Mapping):
                for name in ("body", "path"):
                    yield ("webhook", str(hook), name), spec.get(name), template + str(hook)
    if block == "opsgenie":
        yield from _opsgenie_fields(template, source)


def _opsgenie_fields(template: str, source: Mapping[str, Any]) -> Iterator[tuple[Path, Any, str]]:
    details = source.get("details")
    if isinstance(details, Mapping):
        for key, value in details.items():
            yield ("opsgenie", "details", str(key)), value, f"{template}_detail_{key}"
    responders = source.get("visibleTo")
    if isinstance(responders, list):
        for i, responder in enumerate(responders):
            if isinstance(responder, Mapping):
                for f in OPSGENIE_RESPONDER_FIELDS:
                    path = ("opsgenie", "visibleTo", str(i), f)
                    yield path, responder.get(f), f"{template}_responder_{i}_{f}"
    for key, label in (("actions", "action"), ("tags", "tag")):
        items = source.get(key)
        if isinstance(items, list):
            for i, value in enumerate(items):
                yield ("opsgenie", key, str(i)), value, f"{template}_{label}_{i}"
