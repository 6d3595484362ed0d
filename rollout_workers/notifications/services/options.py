"""Reading a service's options as the engine's Go structs decode them.

The ConfigMap's ``service.<type>[.<name>]`` value is YAML that sigs.k8s.io/yaml turns into a
Go options struct: an absent or null field is the zero value (``""``, ``false``, ``0``, empty
map), a field of the wrong kind fails the service. Here a wrong kind is a final
:class:`SendError` naming the service and the option; keys the struct does not have are
ignored, as Go ignores them. A Secret reference (``$key``) has already been replaced, so a
number or a boolean may arrive as a string: ``"587"`` and ``"true"`` are read as their value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.services import SendError


class Options:
    """A service's options, read field by field; ``label`` names the service in errors."""

    def __init__(self, label: str, options: Mapping[str, Any]) -> None:
        self.label = label
        self._options = options

    def invalid(self, name: str, expected: str) -> SendError:
        got = type(self._options.get(name)).__name__
        return SendError(f"{self.label}: option {name!r} must be {expected}, not {got}", final=True)

    def text(self, name: str) -> str:
        value = self._options.get(name)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return value
        if isinstance(value, int | float):
            return str(value)
        raise self.invalid(name, "a string")

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

    def text_map(self, name: str) -> dict[str, str]:
        value = self._options.get(name)
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise self.invalid(name, "a map of strings")
        return {str(k): v for k, v in value.items()}

    def text_list(self, name: str) -> list[str]:
        value = self._options.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.invalid(name, "a list of strings")
        return list(value)

    def raw(self, name: str) -> Any:
        return self._options.get(name)


def label(kind: str, service: str) -> str:
    """How errors name a service: its type, and its name when that says more."""
    return f"{kind} service {service!r}" if service and service != kind else kind
