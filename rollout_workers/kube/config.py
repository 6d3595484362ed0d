"""Finding the cluster.

In order: an explicit kubeconfig (`--kubeconfig` or ROLLOUTS_KUBECONFIG); the embedded API
recorded in the state dir, if it is alive; KUBECONFIG or ~/.kube/config; the in-cluster service
account. With none of them, a one-line hint.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from rollout_workers import staterecords
from rollout_workers.settings import Settings

DEVCLUSTER_RECORD = "devcluster.json"


class ClusterNotFound(RuntimeError):
    pass


def embedded_kubeconfig(state_dir: Path) -> Path | None:
    """The kubeconfig of the embedded API recorded in `state_dir`, if its process is alive."""
    record = staterecords.read_live(state_dir, DEVCLUSTER_RECORD)
    path = Path(str(record.get("kubeconfig") or "")) if record is not None else None
    return path if path is not None and path.is_file() else None


def find_kubeconfig(settings: Settings) -> Path | None:
    """The kubeconfig to use, or None for in-cluster config."""
    if settings.kubeconfig is not None:
        if not settings.kubeconfig.is_file():
            raise ClusterNotFound(f"kubeconfig {settings.kubeconfig} does not exist")
        return settings.kubeconfig
    embedded = embedded_kubeconfig(settings.state_dir)
    if embedded is not None:
        return embedded
    env = os.environ.get("KUBECONFIG")
    if env:
        first = Path(env.split(os.pathsep)[0]).expanduser()
        if first.is_file():
            return first
    home = Path("~/.kube/config").expanduser()
    if home.is_file():
        return home
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    raise ClusterNotFound(
        "no cluster found (no --kubeconfig, ROLLOUTS_KUBECONFIG, embedded API in "
        f"{settings.state_dir}, KUBECONFIG or ~/.kube/config); start one with: rollouts devcluster"
    )


def api_client(settings: Settings) -> k8s.ApiClient:
    path = find_kubeconfig(settings)
    configuration = k8s.Configuration()
    if path is None:
        k8s_config.load_incluster_config(client_configuration=configuration)
    else:
        k8s_config.load_kube_config(
            config_file=str(path), context=settings.kube.context, client_configuration=configuration
        )
    # Many threads (one reflector per type, plus writers) share one client.
    configuration.connection_pool_maxsize = 32
    return k8s.ApiClient(configuration)
