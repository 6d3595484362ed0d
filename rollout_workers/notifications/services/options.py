"""Reading a service's options as the engine's Go structs decode them.

The ConfigMap's ``service.<type>[.<name>]`` value is YAML that sigs.k8s.io/yaml turns into a
Go options struct: an absent or null field is the zero value (``""``, ``false``, ``0``, empty
map), a field of the wrong kind fails the service. Here a wrong kind is a final
:class:`SendError` naming the service and the option; keys the struct does not have are
ignored, as Go ignores them. A Secret reference (``$key``) has already been replaced, so a
number or a boolean may arrive as a string: ``"587"`` and ``"true"`` are read as their value,
and a scalar where a string is expected is read as its string form.

A problem found in the options or the template is a :func:`config_error`: final, retrying
cannot help. The checks of values that several services accept alike (an icon emoji, an http(s)
URL) live here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.services import SendError

# ``^:.+:$`` as Go's regexp reads it: ``.`` stops at a newline, ``$`` is the end of the text.
_EMOJI = re.compile(r":[^\n]+:\Z")


class Options:
    """A service's options, read field by field; ``label`` names the service in errors."""

    def __init__(self, label: str, options: Mapping[str, Any]) -> None:
        self.label = label
        self._options = options

    def invalid(self, name: str, expected: str) -> SendError:
        got = type(self._options.get(name)).__name__
        return config_error(self.label, f"option {name!r} must be {expected}, not {got}")

    def text(self, name: str) -> str:
        value = _scalar(self._options.get(name))
        if value is None:
            raise self.invalid(name, "a string")
        return value

    def flag(self, name: str) -> bool:
        value = self._options.get(name)
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        raise self.invalid(name, "true or false")

    def integer(self, name: str) -> int:
        value = self._options.get(name)
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise self.invalid(name, "an integer")

    def base_url(self, name: str, default: str) -> str:
        """A base URL option without its trailing ``/`` (paths are appended with one), or
        ``default`` when it is empty."""
        return self.text(name).removesuffix("/") or default

    def text_map(self, name: str) -> dict[str, str]:
        value = self._options.get(name)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.invalid(name, "a map of strings")
        texts = {str(k): _scalar(v) for k, v in value.items()}
        bad = next((k for k, v in texts.items() if v is None), None)
        if bad is not None:
            raise config_error(self.label, f"option '{name}.{bad}' must be a string")
        return {k: v for k, v in texts.items() if v is not None}

    def text_list(self, name: str) -> list[str]:
        value = self._options.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.invalid(name, "a list of strings")
        return list(value)

    def raw(self, name: str) -> Any:
        return self._options.get(name)

    def basic_auth(self, name: str = "basicAuth") -> tuple[str, str] | None:
        """A ``{username, password}`` option (the engines' ``BasicAuth``); None when absent."""
        auth = self._options.get(name)
        if auth is None:
            return None
        if not isinstance(auth, Mapping):
            raise self.invalid(name, "a map with username and password")
        inner = Options(self.label, auth)
        return (inner.text("username"), inner.text("password"))

    def for_recipient(self, name: str, recipient: str, *, what: str) -> str:
        """The entry of map option ``name`` for ``recipient`` (``what`` it holds, for the error
        when there is none)."""
        value = self.text_map(name).get(recipient)
        if value is None:
            raise config_error(self.label, f"no {what} configured for recipient {recipient!r}")
        return value


def _scalar(value: Any) -> str | None:
    """A YAML scalar as the string sigs.k8s.io/yaml makes of it (null is empty); None when the
    value is not a scalar."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def config_error(label: str, problem: str) -> SendError:
    """A configuration (or template) problem of the service ``label`` names: final."""
    return SendError(f"{label}: {problem}", final=True)


def label(kind: str, service: str) -> str:
    """How errors name a service: its type, and its name when that says more."""
    return f"{kind} service {service!r}" if service and service != kind else kind


def is_emoji(icon: str) -> bool:
    """An icon written as an emoji name, ``:name:`` (the engine's ``^:.+:$``)."""
    return _EMOJI.match(icon) is not None
