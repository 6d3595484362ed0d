"""Object keys (`namespace/name`) and their validation.

A key is the only thing that travels through a queue. It is checked where it enters (the
watcher, the CLI, the workqueue API) so a malformed key never reaches a worker.
"""

from __future__ import annotations

import re
from typing import NewType

ObjectKey = NewType("ObjectKey", str)

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_LABEL = 63
_MAX_SUBDOMAIN = 253


class InvalidKey(ValueError):
    """A key that is not `namespace/name` with DNS-1123 parts."""


def _check_label(part: str, what: str, key: str) -> None:
    if len(part) > _MAX_LABEL or not _LABEL.match(part):
        raise InvalidKey(
            f"invalid key {key!r}: {what} {part!r} must be a DNS-1123 label "
            "(lowercase alphanumerics and '-', at most 63 characters)"
        )


def parse_key(raw: object) -> ObjectKey:
    """Return `raw` as an ObjectKey, or raise InvalidKey saying what is wrong with it."""
    if not isinstance(raw, str):
        raise InvalidKey(f"invalid key {raw!r}: expected a 'namespace/name' string")
    namespace, sep, name = raw.partition("/")
    if not sep or not namespace or not name:
        raise InvalidKey(f"invalid key {raw!r}: expected 'namespace/name'")
    _check_label(namespace, "namespace", raw)
    if len(name) > _MAX_SUBDOMAIN:
        raise InvalidKey(f"invalid key {raw!r}: name longer than 253 characters")
    for label in name.split("."):
        _check_label(label, "name", raw)
    return ObjectKey(raw)


def split_key(key: ObjectKey) -> tuple[str, str]:
    """The namespace and name of a valid key."""
    namespace, _, name = key.partition("/")
    return namespace, name


def own_key(prefix: str, plural: str, key: str) -> str:
    """The Redis key of the newest resourceVersion the controller of `plural` objects wrote to
    the object `key` and recorded as settling it (`cache.written`): the watcher does not queue
    the object again for that version's event, nor does the workqueue's `done` for a dirty
    mark only such events made."""
    return f"{prefix}:written-own:{plural}:{key}"
