"""Finding plugins by name: the settings enable names, entry points provide the code.

Argo Rollouts runs its plugins (step plugins, metric providers, traffic routers) as separate
binaries over RPC (hashicorp go-plugin), listed in the `argo-rollouts-config` ConfigMap; a
rollout or metric that names one the ConfigMap does not list fails with "plugin NAME not
configured in configmap". Here a plugin is a Python object. Each kind has an entry point group
and a setting that enables names in it:

| kind | entry point group | setting |
|---|---|---|
| step plugins | `rollout_workers.step_plugins` | `ROLLOUTS_PLUGINS_STEP` |
| metric providers | `rollout_workers.metric_providers` | `ROLLOUTS_PLUGINS_METRIC` |
| traffic routers | `rollout_workers.traffic_routers` | `ROLLOUTS_PLUGINS_TRAFFIC` |

An entry point's object is the plugin, or a class or factory that makes one with no arguments.
Only enabled names are ever loaded (installing a package runs none of its code), each once per
worker process, on its first use. What a plugin of each kind implements is in its protocol
module (rollout/stepplugins/protocol.py, analysis/providers/plugin.py,
rollout/trafficrouting/plugins.py), which also holds its registry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar, Generic, TypeVar, cast

log = logging.getLogger(__name__)

#: Loads the object of the entry point `name` of a group (LookupError: there is none).
Loader = Callable[[str], Any]

P = TypeVar("P")


@dataclass(frozen=True)
class PluginKind:
    """One kind of plugin: where its code is found, what enables it, and how Argo words the
    error of a plugin it cannot find (`prefix`, formatted with the name, comes before the
    ConfigMap lookup's "unable to find plugin ...")."""

    noun: str
    group: str
    setting: str
    protocol: type
    prefix: str

    def not_configured_message(self, name: str) -> str:
        """Argo's chain of wrapped errors down to the ConfigMap lookup (utils/plugin
        GetPluginInfo), and where to enable the plugin here."""
        return (
            f"{self.prefix.format(name=name)}unable to find plugin ({name}): plugin {name} not "
            f"configured in configmap (here: an entry point named {name} in the {self.group} "
            f"group, enabled by listing the name in {self.setting})"
        )


class PluginNotEnabled(LookupError):
    """A spec names a plugin that is not enabled (Argo: not in the ConfigMap)."""

    kind: ClassVar[PluginKind]

    def __init__(self, name: str) -> None:
        super().__init__(self.kind.not_configured_message(name))
        self.name = name


class PluginLoadError(RuntimeError):
    """An enabled plugin's code could not be loaded (a transient or packaging error)."""


def entry_point_loader(group: str) -> Loader:
    def load(name: str) -> Any:
        for point in entry_points(group=group).select(name=name):
            return point.load()
        raise LookupError(name)

    return load


@dataclass
class PluginRegistry(Generic[P]):
    """The enabled plugins of one kind in this process, loaded lazily by name. Subclasses name
    the kind and the errors they raise."""

    KIND: ClassVar[PluginKind]
    NOT_ENABLED: ClassVar[type[PluginNotEnabled]]
    LOAD_ERROR: ClassVar[type[PluginLoadError]] = PluginLoadError

    enabled: frozenset[str] = frozenset()
    loader: Loader | None = None
    """Where plugins come from: the kind's entry point group unless given (tests)."""
    _loaded: dict[str, P] = field(default_factory=dict, repr=False)

    def preload(self, plugins: Mapping[str, P]) -> None:
        """Enable and provide given plugin objects (tests, embedding)."""
        self.enabled = self.enabled | frozenset(plugins)
        self._loaded.update(plugins)

    def check(self, names: Iterable[str]) -> None:
        """Raise NOT_ENABLED for the first name that is not enabled."""
        for name in names:
            if name not in self.enabled:
                raise self.NOT_ENABLED(name)

    def resolve(self, name: str) -> P:
        """The plugin `name`: NOT_ENABLED when it is not enabled (or has no entry point),
        LOAD_ERROR when its code cannot be loaded or is not a plugin of this kind."""
        if name not in self.enabled:
            raise self.NOT_ENABLED(name)
        plugin = self._loaded.get(name)
        if plugin is not None:
            return plugin
        kind = self.KIND
        loader = self.loader or entry_point_loader(kind.group)
        try:
            obj = loader(name)
        except LookupError:
            raise self.NOT_ENABLED(name) from None
        except Exception as err:
            raise self.LOAD_ERROR(f"unable to load {kind.noun} ({name}): {err}") from err
        if isinstance(obj, type) or (callable(obj) and not isinstance(obj, kind.protocol)):
            try:
                obj = obj()
            except Exception as err:
                raise self.LOAD_ERROR(f"unable to create {kind.noun} ({name}): {err}") from err
        if not isinstance(obj, kind.protocol):
            raise self.LOAD_ERROR(f"entry point {name} is not a {kind.noun}: {obj!r}")
        loaded = cast(P, obj)
        self._loaded[name] = loaded
        log.info("loaded %s %s (%s)", kind.noun, name, type(obj).__qualname__)
        return loaded
