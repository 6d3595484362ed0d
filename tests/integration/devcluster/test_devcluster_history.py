"""The default watch history is near a real watch cache's: a watch a few thousand writes old
gets 410 Gone (reason Expired), so the controller's relist path is exercised as on a cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from devcluster.history import DEFAULT_HISTORY_SIZE
from devcluster.server import DevClusterThread, run_in_thread


@pytest.fixture
def fresh() -> Iterator[DevClusterThread]:
    handle = run_in_thread()  # the defaults, on purpose
    yield handle
    handle.stop()


def test_watch_from_a_few_thousand_writes_ago_is_gone(
    fresh: DevClusterThread, tmp_path: Path
) -> None:
    api = config.new_client_from_config(config_file=str(fresh.write_kubeconfig(tmp_path / "kc")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"n": "0"}})
    first = core.read_namespaced_config_map("c", "default").metadata.resource_version
    writes = 2_000
    assert writes > DEFAULT_HISTORY_SIZE
    for i in range(1, writes + 1):
        core.patch_namespaced_config_map("c", "default", {"data": {"n": str(i)}})
    old = core.list_namespaced_config_map(
        "default", watch=True, resource_version=first, timeout_seconds=1, _preload_content=False
    )
    (error,) = [json.loads(x) for x in old.read().splitlines()]
    assert error["type"] == "ERROR"
    assert error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    # A recent resourceVersion still resumes.
    recent = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("c", "default", {"data": {"n": "last"}})
    resumed = core.list_namespaced_config_map(
        "default", watch=True, resource_version=recent, timeout_seconds=1, _preload_content=False
    )
    assert [json.loads(x)["type"] for x in resumed.read().splitlines()] == ["MODIFIED"]
