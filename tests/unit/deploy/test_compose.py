"""compose.yaml runs the same processes as deploy/, with real commands and options."""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.unit.deploy.render import ROOT
from tests.unit.deploy.test_manifests import parse_cli

COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]


def app_services() -> dict[str, Any]:
    return {n: s for n, s in SERVICES.items() if s.get("image") == "rollout-workers:dev"}


def test_every_process_kind_runs() -> None:
    commands = {s["command"][0] for s in app_services().values()}
    assert commands == {"watcher", "worker", "beat", "flower"}


def test_commands_are_real_with_valid_options() -> None:
    for name, service in app_services().items():
        ctx = parse_cli(list(service["command"]))
        if service["command"][0] == "flower":
            assert ctx.params["address"] == "0.0.0.0"
            assert service["environment"]["ROLLOUTS_FLOWER_BASIC_AUTH"], name


def test_redis_requires_the_password_every_process_uses() -> None:
    command = SERVICES["redis"]["command"]
    password = command[command.index("--requirepass") + 1]
    assert password.startswith("${REDIS_PASSWORD:?")
    assert "--appendonly" in command and command[command.index("--appendfsync") + 1] == "everysec"
    for name, service in app_services().items():
        url = service["environment"]["ROLLOUTS_REDIS_URL"]
        assert re.fullmatch(r"redis://:\$\{REDIS_PASSWORD:\?[^}]*\}@redis:6379/0", url), name


def test_watcher_and_workers_get_the_mounted_kubeconfig() -> None:
    for name in ("watcher", "worker"):
        env = SERVICES[name]["environment"]
        mounts = [v.rsplit(":", 2) for v in SERVICES[name]["volumes"]]
        assert any(m[1] == env["ROLLOUTS_KUBECONFIG"] and m[-1] == "ro" for m in mounts), name
    for name in ("beat", "flower"):  # no Kubernetes API
        assert "ROLLOUTS_KUBECONFIG" not in SERVICES[name]["environment"]
        assert "volumes" not in SERVICES[name]


def test_watcher_publishes_the_metrics_port() -> None:
    watcher = SERVICES["watcher"]
    port = watcher["environment"]["ROLLOUTS_METRICS_PORT"]
    assert any(p.endswith(f":{port}") for p in watcher["ports"])
