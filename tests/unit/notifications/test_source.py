"""source: which configs apply to an object's events, the Secret decoded, and parsing once per
ConfigMap and Secret version."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from rollout_workers.notifications import source
from rollout_workers.notifications.source import (
    CONFIGMAP_NAME,
    SECRET_NAME,
    ConfigCache,
    secret_values,
)
from rollout_workers.settings import Settings

Obj = dict[str, Any]


def obj(version: str, **fields: Any) -> Obj:
    return {"metadata": {"uid": "u", "resourceVersion": version}, **fields}


def test_secret_values_are_decoded_and_bad_ones_skipped() -> None:
    secret = {
        "data": {"token": base64.b64encode(b"s3cret").decode(), "bad": "%%%"},
        "stringData": {"plain": "x"},
    }
    assert secret_values(secret) == {"token": "s3cret", "plain": "x"}
    assert secret_values(None) == {}


def test_configs_parse_once_per_version(monkeypatch: pytest.MonkeyPatch) -> None:
    objects: dict[tuple[str, str], Obj] = {
        ("ctl", CONFIGMAP_NAME): obj("1", data={"trigger.a": "- send: [x]"}),
        ("team", CONFIGMAP_NAME): obj("1", data={"trigger.b": "- send: [x]"}),
        ("ctl", SECRET_NAME): obj("1", data={}),
    }
    parsed: list[dict[str, str]] = []
    real = source.parse_config

    def counting(data: dict[str, str], secret: dict[str, str]) -> Any:
        parsed.append(data)
        return real(data, secret)

    monkeypatch.setattr(source, "parse_config", counting)

    def cache(self_service: bool) -> ConfigCache:
        return ConfigCache(
            configmaps=lambda ns, name: objects.get((ns, name)),
            secrets=lambda ns, name: objects.get((ns, name)),
            controller_namespace="ctl",
            self_service=self_service,
        )

    plain, own = cache(False), cache(True)
    assert [c.namespace for c in plain.for_object("team")] == ["ctl"]
    assert [c.namespace for c in own.for_object("team")] == ["ctl", "team"]
    assert [c.namespace for c in own.for_object("ctl")] == ["ctl"]
    assert [c.namespace for c in own.for_object("nobody")] == ["ctl"]  # no ConfigMap there
    before = len(parsed)
    plain.for_object("team")
    assert len(parsed) == before  # unchanged: not parsed again
    objects[("ctl", SECRET_NAME)] = obj("2", data={})
    (config,) = plain.for_object("team")
    assert len(parsed) == before + 1 and "a" in config.config.triggers


def test_a_config_is_read_again_only_after_the_recheck_window() -> None:
    reads: list[str] = []
    objects: dict[tuple[str, str], Obj] = {("ctl", CONFIGMAP_NAME): obj("1", data={})}
    now = [100.0]

    def read(ns: str, name: str) -> Obj | None:
        reads.append(name)
        return objects.get((ns, name))

    cache = ConfigCache(
        configmaps=read, secrets=read, controller_namespace="ctl", self_service=False,
        recheck_after=1.0, clock=lambda: now[0],
    )  # fmt: skip
    assert cache.namespace("ctl") is not None
    first = len(reads)
    objects[("ctl", CONFIGMAP_NAME)] = obj("2", data={"trigger.a": "- send: [x]"})
    now[0] += 0.5
    config = cache.namespace("ctl")
    assert len(reads) == first and config is not None and not config.triggers  # not read
    now[0] += 0.6
    config = cache.namespace("ctl")
    assert len(reads) > first and config is not None and "a" in config.triggers
    # No ConfigMap and no absent_recheck: read every time, so one created now applies at once.
    assert cache.namespace("team") is None and cache.namespace("team") is None
    objects[("team", CONFIGMAP_NAME)] = obj("1", data={})
    assert cache.namespace("team") is not None


def test_a_missing_config_is_looked_for_again_after_its_own_window() -> None:
    reads: list[str] = []
    objects: dict[tuple[str, str], Obj] = {}
    now = [100.0]

    def read(ns: str, name: str) -> Obj | None:
        reads.append(f"{ns}/{name}")
        return objects.get((ns, name))

    cache = ConfigCache(
        configmaps=read, secrets=read, controller_namespace="ctl", self_service=False,
        recheck_after=1.0, absent_recheck=0.1, clock=lambda: now[0],
    )  # fmt: skip
    assert cache.namespace("ctl") is None
    assert reads == [f"ctl/{CONFIGMAP_NAME}"]  # no Secret is read without a ConfigMap
    objects[("ctl", CONFIGMAP_NAME)] = obj("1", data={"trigger.a": "- send: [x]"})
    now[0] += 0.05
    assert cache.namespace("ctl") is None and len(reads) == 1  # not looked for again yet
    now[0] += 0.06
    config = cache.namespace("ctl")
    assert config is not None and "a" in config.triggers  # found once the window is over
    # An existing config keeps the longer window.
    del objects[("ctl", CONFIGMAP_NAME)]
    now[0] += 0.5
    assert cache.namespace("ctl") is config


@pytest.mark.parametrize(
    ("env", "namespace", "expected"),
    [
        ({}, "", "argo-rollouts"),
        ({}, "team", "team"),
        ({"POD_NAMESPACE": "pod"}, "team", "pod"),
        ({"POD_NAMESPACE": "pod", "ROLLOUTS_NOTIFICATIONS_NAMESPACE": "mine"}, "team", "mine"),
    ],
)
def test_the_notifications_namespace(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], namespace: str, expected: str
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.delenv("ROLLOUTS_NOTIFICATIONS_NAMESPACE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    settings = Settings()
    # CLI options are applied by validating again (cli/common.py): resolved then too.
    data = settings.model_dump()
    data["kube"]["namespace"] = namespace
    assert Settings.model_validate(data).notifications_namespace == expected
