"""Where notification configuration comes from: the ConfigMap and Secret Argo Rollouts reads.

Argo's ``NewAPIFactorySettings`` (utils/record/record.go) names them
``argo-rollouts-notification-configmap`` and ``argo-rollouts-notification-secret``; they live in
the controller's namespace and, with ``--self-service-notification-enabled``, also in the
namespace of the object an event is about. The controller's namespace config applies to every
event; an object's own namespace config applies to its events only (notifications-engine's
``GetAPIsFromNamespace``).

A missing ConfigMap means no notifications from that namespace, and is not an error; a missing
Secret means no ``$key`` references resolve. :class:`ConfigCache` keeps each parsed config per
process until the ConfigMap or Secret changes (parsing every template is far costlier than
reading two cached objects).
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from rollout_workers.cache import Lister
from rollout_workers.kube import resources as r
from rollout_workers.notifications.config import Config, parse_config
from rollout_workers.objects import Obj
from rollout_workers.settings import Settings

log = logging.getLogger(__name__)

CONFIGMAP_NAME = "argo-rollouts-notification-configmap"
SECRET_NAME = "argo-rollouts-notification-secret"


def secret_values(secret: Mapping[str, Any] | None) -> dict[str, str]:
    """A Secret's ``data`` decoded (and ``stringData``, which a server folds into ``data``
    but a manifest may carry). An undecodable value is skipped with a warning."""
    if not secret:
        return {}
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            log.warning("notification secret key %r is not base64 UTF-8 text: skipped", key)
    for key, value in (secret.get("stringData") or {}).items():
        out[key] = str(value)
    return out


def config_from_objects(
    configmap: Mapping[str, Any] | None, secret: Mapping[str, Any] | None
) -> Config | None:
    """The config of one namespace; None when it has no notifications ConfigMap."""
    if configmap is None:
        return None
    data = {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}
    return parse_config(data, secret_values(secret))


def _version(obj: Mapping[str, Any] | None) -> str:
    if obj is None:
        return ""
    meta = obj.get("metadata") or {}
    return f"{meta.get('uid', '')}@{meta.get('resourceVersion', '')}"


@dataclass(frozen=True)
class NamespaceConfig:
    """One namespace's parsed config."""

    namespace: str
    config: Config


#: How long a worker uses a namespace's notification config before reading it again, seconds.
CONFIG_RECHECK = 1.0

#: How long a worker takes a namespace to have no notification ConfigMap before looking again,
#: seconds: short, so that one created applies about as soon as the watcher has cached it, but
#: a busy worker without one no longer reads the cache for every event it records.
CONFIG_ABSENT_RECHECK = 0.1

#: Reads one object by namespace and name (a cache lister's `get`, or the API's).
Getter = Callable[[str, str], Obj | None]


class ConfigCache:
    """The configs that apply to an object's events, parsed once per ConfigMap and Secret
    version. ``controller_namespace`` is where the shared config lives; ``self_service`` adds
    the object's own namespace. ``recheck_after``: for this many seconds a namespace's config
    is used without reading its ConfigMap and Secret again (every event would otherwise read
    and decode them: Argo's catalog alone is some 20 KB), so a change applies that much later;
    ``absent_recheck``: the same for a namespace found without a ConfigMap (0: looked for at
    every event)."""

    def __init__(
        self,
        *,
        configmaps: Getter,
        secrets: Getter,
        controller_namespace: str,
        self_service: bool,
        recheck_after: float = 0.0,
        absent_recheck: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._configmaps, self._secrets = configmaps, secrets
        self.controller_namespace = controller_namespace
        self.self_service = self_service
        self._recheck_after, self._absent_recheck = recheck_after, absent_recheck
        self._clock = clock
        self._lock = threading.Lock()
        #: Per namespace: the version parsed, its config, and when that version was last read.
        self._parsed: dict[str, tuple[str, Config | None, float]] = {}

    def namespace(self, namespace: str) -> Config | None:
        """The config of `namespace`, None when it has no ConfigMap."""
        now = self._clock()
        with self._lock:
            cached = self._parsed.get(namespace)
        if cached is not None:
            window = self._recheck_after if cached[1] is not None else self._absent_recheck
            if now - cached[2] < window:
                return cached[1]
        configmap = self._configmaps(namespace, CONFIGMAP_NAME)
        secret = self._secrets(namespace, SECRET_NAME) if configmap is not None else None
        version = f"{_version(configmap)}/{_version(secret)}"
        if cached is not None and cached[0] == version:
            config = cached[1]
        else:
            config = config_from_objects(configmap, secret)
            for error in config.errors if config is not None else []:
                log.error("notifications config in %s: %s", namespace, error)
        with self._lock:
            self._parsed[namespace] = (version, config, now)
        return config

    def for_object(self, namespace: str) -> list[NamespaceConfig]:
        """The configs that apply to the events of an object in `namespace`, the controller's
        first."""
        namespaces = [self.controller_namespace]
        if self.self_service and namespace != self.controller_namespace:
            namespaces.append(namespace)
        out = []
        for ns in namespaces:
            config = self.namespace(ns)
            if config is not None:
                out.append(NamespaceConfig(ns, config))
        return out


def config_cache(client: redis.Redis, settings: Settings) -> ConfigCache:
    """The notification configs as the watcher caches them."""
    prefix = settings.redis.key_prefix
    configmaps = Lister(client, prefix=prefix, resource=r.CONFIGMAPS)
    secrets = Lister(client, prefix=prefix, resource=r.SECRETS)
    return ConfigCache(
        configmaps=lambda ns, name: configmaps.get(f"{ns}/{name}"),
        secrets=lambda ns, name: secrets.get(f"{ns}/{name}"),
        controller_namespace=settings.notifications_namespace,
        self_service=settings.notifications.self_service,
        recheck_after=CONFIG_RECHECK,
        absent_recheck=CONFIG_ABSENT_RECHECK,
    )
