"""Finding the cluster: explicit kubeconfig, then the live embedded API, then KUBECONFIG."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rollout_workers.kube.config import ClusterNotFound, find_kubeconfig
from rollout_workers.settings import Settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return tmp_path


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("apiVersion: v1\n")
    return path


def record_embedded(state: Path, kubeconfig: Path, pid: int) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "devcluster.json").write_text(json.dumps({"kubeconfig": str(kubeconfig), "pid": pid}))


def test_order(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = home / "state"
    explicit = touch(home / "explicit")
    embedded = touch(state / "devcluster.kubeconfig")
    env = touch(home / "env-config")
    default = touch(home / "home" / ".kube" / "config")
    record_embedded(state, embedded, os.getpid())
    monkeypatch.setenv("KUBECONFIG", str(env))

    assert find_kubeconfig(Settings(kubeconfig=explicit, state_dir=state)) == explicit
    assert find_kubeconfig(Settings(state_dir=state)) == embedded
    record_embedded(state, embedded, 2**22 + 12345)  # its process is gone
    assert find_kubeconfig(Settings(state_dir=state)) == env
    monkeypatch.delenv("KUBECONFIG")
    assert find_kubeconfig(Settings(state_dir=state)) == default


def test_nothing_found_is_a_hint(home: Path) -> None:
    with pytest.raises(ClusterNotFound, match="start one with: rollouts devcluster"):
        find_kubeconfig(Settings(state_dir=home / "none"))


def test_missing_explicit_kubeconfig(home: Path) -> None:
    with pytest.raises(ClusterNotFound, match="does not exist"):
        find_kubeconfig(Settings(kubeconfig=home / "nope", state_dir=home))
