"""Finding step plugins by name: the settings enable names, entry points provide the code.

Argo lists step plugins in the `argo-rollouts-config` ConfigMap (`stepPlugins: [{name,
location}]`) and refuses a rollout that names one it does not list. Here `plugins.step` lists
the enabled names (`ROLLOUTS_PLUGINS_STEP=rollout-workers/webhook,acme/slack`) and each name is
an entry point of the `rollout_workers.step_plugins` group whose object is a plugin, or a class
or factory that makes one with no arguments. A plugin is loaded once per worker process, on its
first use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from rollout_workers.api.rollout import StepPluginStatus
from rollout_workers.rollout.stepplugins.protocol import StepPlugin

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rollout_workers.step_plugins"

Loader = Callable[[str], Any]


class UnknownStepPlugin(LookupError):
    """The rollout names a step plugin that is not enabled (Argo: not in the ConfigMap)."""

    def __init__(self, name: str) -> None:
        # Argo's chain of wrapped errors, from the resolver down to the ConfigMap lookup.
        super().__init__(
            f"failed to get step plugin {name}: unable to start plugin system: unable to find "
            f"plugin ({name}): plugin {name} not configured in configmap"
        )
        self.name = name


class StepPluginLoadError(RuntimeError):
    """An enabled plugin's code could not be loaded (a transient or packaging error)."""


@dataclass(frozen=True)
class StepPluginTimings:
    """Argo's step plugin timings (rollout/stepplugin.go, rollout/steps/plugin/plugin.go), in
    seconds. A Running plugin's requested requeue is used only above `requeue_min`, else
    `requeue_default`; an Error is retried after `error_backoff`; the rollout is looked at again
    `backoff_delay` after the backoff ends; a plugin that cannot be loaded is tried again after
    `controller_error_backoff`."""

    requeue_min: float = 10.0
    requeue_default: float = 30.0
    error_backoff: float = 30.0
    backoff_delay: float = 5.0
    controller_error_backoff: float = 30.0


def _entry_point_loader(name: str) -> Any:
    found = entry_points(group=ENTRY_POINT_GROUP).select(name=name)
    for point in found:
        return point.load()
    raise LookupError(name)


@dataclass
class StepPluginRegistry:
    """The enabled step plugins of this process, loaded lazily by name."""

    enabled: frozenset[str] = frozenset()
    timings: StepPluginTimings = field(default_factory=StepPluginTimings)
    loader: Loader = _entry_point_loader
    _loaded: dict[str, StepPlugin] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls,
        plugins: Mapping[str, StepPlugin],
        timings: StepPluginTimings | None = None,
    ) -> StepPluginRegistry:
        """A registry of given plugin objects (tests, embedding)."""
        registry = cls(enabled=frozenset(plugins), timings=timings or StepPluginTimings())
        registry._loaded.update(plugins)
        return registry

    def check(self, names: Iterable[str]) -> None:
        """Raise UnknownStepPlugin for the first name that is not enabled."""
        for name in names:
            if name not in self.enabled:
                raise UnknownStepPlugin(name)

    def resolve(self, name: str) -> StepPlugin:
        if name not in self.enabled:
            raise UnknownStepPlugin(name)
        plugin = self._loaded.get(name)
        if plugin is not None:
            return plugin
        try:
            obj = self.loader(name)
        except LookupError:
            raise UnknownStepPlugin(name) from None
        except Exception as err:
            raise StepPluginLoadError(f"unable to load step plugin ({name}): {err}") from err
        if isinstance(obj, type) or (callable(obj) and not isinstance(obj, StepPlugin)):
            try:
                obj = obj()
            except Exception as err:
                raise StepPluginLoadError(f"unable to create step plugin ({name}): {err}") from err
        if not isinstance(obj, StepPlugin):
            raise StepPluginLoadError(f"entry point {name} is not a step plugin: {obj!r}")
        self._loaded[name] = obj
        log.info("loaded step plugin %s (%s)", name, type(obj).__qualname__)
        return obj


@dataclass
class StepPluginState:
    """The step plugin part of one reconcile (Argo's stepPluginContext): the registry, the
    statuses as this reconcile leaves them (None: untouched), and whether a call could not be
    made (then no plugin step counts as completed in this reconcile)."""

    registry: StepPluginRegistry = field(default_factory=StepPluginRegistry)
    statuses: list[StepPluginStatus] | None = None
    has_error: bool = False
