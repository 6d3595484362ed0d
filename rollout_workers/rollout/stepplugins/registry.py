"""Finding step plugins by name: the settings enable names, entry points provide the code.

Argo lists step plugins in the `argo-rollouts-config` ConfigMap (`stepPlugins: [{name,
location}]`) and refuses a rollout that names one it does not list. Here `plugins.step` lists
the enabled names (`ROLLOUTS_PLUGINS_STEP=rollout-workers/webhook,acme/slack`) and each name is
an entry point of the `rollout_workers.step_plugins` group (rollout_workers/plugins.py: how
plugins of every kind are found and loaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rollout_workers.api.rollout import StepPluginStatus
from rollout_workers.plugins import PluginKind, PluginLoadError, PluginNotEnabled, PluginRegistry
from rollout_workers.rollout.stepplugins.protocol import StepPlugin

ENTRY_POINT_GROUP = "rollout_workers.step_plugins"
STEP_PLUGINS = PluginKind(
    noun="step plugin",
    group=ENTRY_POINT_GROUP,
    setting="ROLLOUTS_PLUGINS_STEP",
    protocol=StepPlugin,
    # Argo's chain of wrapped errors, from the step resolver down to the ConfigMap lookup.
    prefix="failed to get step plugin {name}: unable to start plugin system: ",
)


class UnknownStepPlugin(PluginNotEnabled):
    """The rollout names a step plugin that is not enabled (Argo: not in the ConfigMap)."""

    kind = STEP_PLUGINS


class StepPluginLoadError(PluginLoadError):
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


@dataclass
class StepPluginRegistry(PluginRegistry[StepPlugin]):
    """The enabled step plugins of this process, loaded lazily by name."""

    KIND: ClassVar[PluginKind] = STEP_PLUGINS
    NOT_ENABLED: ClassVar[type[PluginNotEnabled]] = UnknownStepPlugin
    LOAD_ERROR: ClassVar[type[PluginLoadError]] = StepPluginLoadError

    timings: StepPluginTimings = field(default_factory=StepPluginTimings)

    @classmethod
    def of(
        cls,
        plugins: Mapping[str, StepPlugin],
        timings: StepPluginTimings | None = None,
    ) -> StepPluginRegistry:
        """A registry of given plugin objects (tests, embedding)."""
        registry = cls(timings=timings or StepPluginTimings())
        registry.preload(plugins)
        return registry


@dataclass
class StepPluginState:
    """The step plugin part of one reconcile (Argo's stepPluginContext): the registry, the
    statuses as this reconcile leaves them (None: untouched), and whether a call could not be
    made (then no plugin step counts as completed in this reconcile)."""

    registry: StepPluginRegistry = field(default_factory=StepPluginRegistry)
    statuses: list[StepPluginStatus] | None = None
    has_error: bool = False
