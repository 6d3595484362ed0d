"""One devcluster per test session, reached through a kubeconfig and the official client.

Each test gets a fresh namespace for isolation. Helpers live in devcluster_helpers.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from devcluster.server import DevClusterThread, run_in_thread
from tests.integration.devcluster.devcluster_helpers import BOOKMARK_INTERVAL, READY_DELAY


@pytest.fixture(scope="session")
def devcluster() -> Iterator[DevClusterThread]:
    handle = run_in_thread(ready_delay=READY_DELAY, bookmark_interval=BOOKMARK_INTERVAL)
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def kubeconfig(devcluster: DevClusterThread, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return devcluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")


@pytest.fixture(scope="session")
def api_client(kubeconfig: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kubeconfig))


@pytest.fixture(scope="session")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def batch(api_client: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api_client)


@pytest.fixture(scope="session")
def networking(api_client: client.ApiClient) -> client.NetworkingV1Api:
    return client.NetworkingV1Api(api_client)


@pytest.fixture(scope="session")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)
