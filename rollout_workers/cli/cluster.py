"""How the plugin's commands reach the cluster: the connection (the kubeconfig context's
namespace, or the service account's in a pod), the options every such command takes, API errors
as one-line failures, and a watch that signals changes to one named object.

Commands call `cluster.connect` through this module, so a test replaces the cluster in one place.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

from rollout_workers.cli.common import (
    ActionError,
    F,
    Fail,
    load_settings,
    one_line,
    state_dir_option,
)
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import KubeError, NotFound
from rollout_workers.kube.resources import ROLLOUTS, Resource

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass
class Target:
    kube: Kube
    namespace: str


def default_namespace(kubeconfig: Path | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current or chosen) context, else `default`."""
    if kubeconfig is None:
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    from kubernetes import config as k8s_config

    contexts, current = k8s_config.list_kube_config_contexts(config_file=str(kubeconfig))
    chosen = current
    if context:
        chosen = next((c for c in contexts or [] if c.get("name") == context), None)
        if chosen is None:
            raise Fail(f"context {context!r} not found in {kubeconfig}")
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace or "default")


def connect(*, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None) -> Target:
    from kubernetes.config.config_exception import ConfigException

    from rollout_workers.kube.config import ClusterNotFound, api_client, find_kubeconfig

    settings = load_settings(state_dir=state_dir, kubeconfig=kubeconfig)
    try:
        path = find_kubeconfig(settings)
        ns = namespace or default_namespace(path, settings.kube.context)
        client = api_client(settings)
    except ClusterNotFound as err:
        raise Fail(str(err)) from None
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as err:
        raise Fail(f"cannot load kubeconfig: {one_line(err)}") from None
    return Target(Kube(client, settings.kube), ns)


@contextmanager
def api_errors(kind: str, name: str, namespace: str) -> Iterator[None]:
    """NotFound of the named object, and any other API error, as one-line failures."""
    try:
        yield
    except NotFound:
        raise Fail(f'{kind} "{name}" not found in namespace "{namespace}"') from None
    except KubeError as err:
        raise Fail(f"API error: {one_line(err)}") from None
    except ActionError as err:
        raise Fail(str(err)) from None


def cluster_options(fn: F) -> F:
    fn = click.option(
        "-n", "--namespace", default=None, help="Namespace (default: the kubeconfig context's)."
    )(fn)
    fn = click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Kubeconfig of the cluster (default: ROLLOUTS_KUBECONFIG, the embedded API, "
        "KUBECONFIG).",
    )(fn)
    return state_dir_option(fn)


class RolloutChanges:
    """Signals when the named rollout (or object of `resource`) changes, from a watch in a
    daemon thread; the screen is also redrawn every second without it (ages move), so a broken
    watch only costs latency."""

    def __init__(
        self, target: Target, name: str, resource_version: str, resource: Resource = ROLLOUTS
    ) -> None:
        self.target, self.name, self.resource = target, name, resource
        self.resource_version = resource_version
        self.changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rollout-watch", daemon=True)

    def start(self) -> RolloutChanges:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for event in self.target.kube.watch(
                    self.resource,
                    namespace=self.target.namespace,
                    resource_version=self.resource_version,
                    timeout_seconds=60,
                ):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if event.get("type") == "ERROR":
                        break
                    if version:
                        self.resource_version = str(version)
                    if (obj.get("metadata") or {}).get("name") == self.name:
                        self.changed.set()
            except Exception:
                # Best effort: the screen is redrawn every second anyway, and a CLI must not
                # print a thread's traceback over it.
                pass
            self._stop.wait(1.0)
